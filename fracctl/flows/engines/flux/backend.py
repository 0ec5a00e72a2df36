"""The ``flux`` backend: a Flux Kustomization reconciles now, and fracctl waits for it.

The target is the fractioning config unless the backend is given another
:class:`~fracctl.core.recreate.sync_target.SyncTarget` (``recreate KIND/NAME``).
"""

from __future__ import annotations

from typing import Any

from fracctl.adapters.flux import commit_of
from fracctl.core.kube.nodes import condition
from fracctl.core.recreate.sync_target import SyncTarget
from fracctl.core.text import clip
from fracctl.errors import ExternalError, FracctlError, NotFound, Refused, UsageError
from fracctl.flows.context import Context
from fracctl.flows.engines import BackendBase, Obj, Proof, clean_desired, dry_run_create
from fracctl.flows.engines.access import require

#: Kustomization fields that change what Flux applies beyond the source's files; fracctl
#: cannot rehearse them, so a Kustomization that uses one is refused.
UNREHEARSABLE = ("patches", "images", "postBuild", "components", "namePrefix", "nameSuffix")


class FluxBackend(BackendBase):
    """Ask a Flux Kustomization to reconcile now, and wait for it."""

    name = "flux"
    claim = "Flux reported Ready but the live object differs"

    def __init__(self, target: SyncTarget | None = None, *, suspended_here: bool = False) -> None:
        self.target = target  # None: the configured fractioning config
        # fracctl suspended the Kustomization itself (a held recreate a rerun resumes).
        self.suspended_here = suspended_here
        # The source revision the rehearsal rendered; the wait then wants Flux to apply it.
        self.revision: str | None = None

    def for_config(self, ctx: Context) -> Any:
        """The backend for this configuration: a HelmRelease's upgrade when one is named.

        With ``flux.helmrelease``, the config is the operator chart's hook, and the
        HelmRelease's own upgrade recreates it (:mod:`.helmrelease`).
        """
        if self.target is None and ctx.config.flux.helmrelease:
            from fracctl.flows.engines.flux.helmrelease import HelmReleaseHookBackend

            return HelmReleaseHookBackend()
        return self

    def _target(self, ctx: Context) -> SyncTarget:
        return self.target or SyncTarget.of_config(ctx.config.target)

    def validate(self, ctx: Context) -> None:
        """The Kustomization is named."""
        if not ctx.config.flux.kustomization or not ctx.config.flux.namespace:
            raise UsageError(
                "the flux backend needs the Kustomization",
                hint="set flux.namespace and flux.kustomization in fracctl.yaml",
            )

    def check(self, ctx: Context, desired: Obj) -> Proof:
        """Rehearse Flux's reconcile: it would run now, and apply git's object.

        The Kustomization exists and is not suspended, and applies here; Flux's
        controllers lead (their Leases are fresh); every Kustomization it depends on
        passes Flux's own dependency rule; its source is Ready with an artifact; that
        artifact's commit, rendered at the Kustomization's path, holds exactly one target
        object whose immutable field equals git's and no marker that makes Flux skip it,
        and the API server would admit it and the rest of the rendering (dry runs); the
        identity Flux applies as may create it; the Kustomization's last verdict fails
        only on the target's immutable field; and this identity may patch the
        Kustomization (:mod:`.proofs` cites Flux's source for each).
        """
        from fracctl.flows.engines.flux import proofs as fp

        flux = configured_kustomization(ctx)
        obj = flux.get()  # NotFound names the missing CRD or Kustomization
        where = f"{flux.namespace}/{flux.name}"
        spec = obj.get("spec") or {}
        t = self._target(ctx)
        if spec.get("suspend") and not self.suspended_here:
            raise Refused(
                f"Flux Kustomization {where} is suspended: it would not reconcile",
                hint=f"resume it first: flux resume kustomization {flux.name} -n {flux.namespace}",
            )
        evidence = [
            f"Flux Kustomization {where} exists and is not suspended"
            if not spec.get("suspend")
            else f"Flux Kustomization {where} exists, suspended by fracctl's earlier run of "
            "this procedure (resumed when the hold is released)"
        ]
        if not spec.get("suspend"):
            evidence += fp.guarded_roll(ctx, desired)
        if ctx.config.flux.leases:
            evidence += fp.controllers_lead(ctx)
        said, revision = _ready_source(flux, spec.get("sourceRef") or {})
        for dep in spec.get("dependsOn") or []:
            other = flux.kube.get_or_none(
                flux.ref, str(dep.get("name") or ""), str(dep.get("namespace") or flux.namespace)
            )
            evidence.append(fp.dependency_ready(ctx, obj, dep, other, revision))
        evidence.append(said)
        creates, rest, said = _flux_would_apply(ctx, flux, spec, revision, desired, t)
        evidence.append(said)
        evidence.append(fp.not_skipped(obj, creates))
        evidence.append(_admitted(ctx, creates, t))
        evidence += _rest_admitted(ctx, rest)
        evidence.append(fp.identity_may_create(ctx, obj, t))
        evidence.append(
            require(ctx, "patch", ref=flux.ref, name=flux.name, namespace=flux.namespace)
        )
        if spec.get("suspend"):  # suspended by fracctl: no verdict since; resumed later
            self.revision = revision
            return Proof(evidence, creates)
        if not ctx.config.flux.leases:
            said_now, obj = fp.handles_now(ctx, flux, obj)
            evidence += said_now
        evidence.append(fp.verdict_only_immutable(ctx, obj, t))
        self.revision = revision
        return Proof(evidence, creates)

    def recreate(self, ctx: Context, desired: Obj) -> str:
        """Request a reconcile and wait until it was handled and Ready settled."""
        flux = configured_kustomization(ctx)
        requested = flux.request_reconcile()
        ctx.info(f"Flux: reconcile of {flux.namespace}/{flux.name} requested ({requested})")
        from fracctl.core.clock import following

        status = flux.wait_ready(
            requested,
            timeout=ctx.config.timeouts.sync,
            clock=ctx.clock,
            revision=self.revision,
            backoff=following(),
        )
        return f"Flux applied revision {status.get('lastAppliedRevision', '?')}"


SOURCE_API = "source.toolkit.fluxcd.io/v1"


def configured_kustomization(ctx: Context) -> Any:
    """The configured Kustomization, through the Flux adapter."""
    from fracctl.adapters.flux import Flux

    return Flux(ctx.kube, ctx.config.flux.namespace, ctx.config.flux.kustomization)


def _ready(obj: Obj) -> Obj:
    return condition(obj, "Ready") or {}


def kustomization_path(spec: Obj) -> str:
    """A Kustomization's ``spec.path`` as a path in the repository (``./a/`` is ``a``)."""
    return str(spec.get("path") or "").strip().removeprefix("./").strip("/")


def _ready_source(flux: Any, source: Obj) -> tuple[str, str]:
    """The Kustomization's source is Ready and has an artifact for Flux to apply."""
    kind = str(source.get("kind") or "GitRepository")
    name = str(source.get("name") or "")
    namespace = str(source.get("namespace") or flux.namespace)
    try:
        ref = flux.kube.resolve(str(source.get("apiVersion") or SOURCE_API), kind)
        obj = flux.kube.get_or_none(ref, name, namespace)
    except NotFound:
        obj = None
    cond = _ready(obj or {})
    revision = ((obj or {}).get("status") or {}).get("artifact", {}).get("revision")
    if obj is None or cond.get("status") != "True" or not revision:
        state = (
            "does not exist"
            if obj is None
            else (
                f"is Ready={cond.get('status') or 'Unknown'}: "
                f"{cond.get('message') or 'no artifact'}"
            )
        )
        raise Refused(
            f"the source {kind} {namespace}/{name} of Flux Kustomization "
            f"{flux.namespace}/{flux.name} {state}: Flux would have nothing to apply",
            hint=f"see `flux get sources {kind.lower()} -n {namespace}`; rerun once it is Ready",
        )
    return f"its source {kind} {namespace}/{name} is Ready at {revision}", str(revision)


def source_state(ctx: Context) -> tuple[Obj, str, str]:
    """The configured Kustomization, the revision its source holds, and its path.

    Raises:
        NotFound: no such Kustomization (or no Flux).
        Refused: its source is not Ready with an artifact.
    """
    flux = configured_kustomization(ctx)
    obj = flux.get()
    spec = obj.get("spec") or {}
    _, revision = _ready_source(flux, spec.get("sourceRef") or {})
    return obj, revision, kustomization_path(spec)


def _flux_would_apply(
    ctx: Context, flux: Any, spec: Obj, revision: str, desired: Obj, t: SyncTarget
) -> tuple[Obj, list[Obj], str]:
    """The target object Flux would apply: its source's commit rendered at its path.

    Refused when the Kustomization transforms its files in ways fracctl does not render,
    when fracctl's git lacks the commit, or when the rendering holds no target, more
    than one, or one whose immutable field differs from git's.
    """
    from fracctl.flows.render import render

    where = f"Flux Kustomization {flux.namespace}/{flux.name}"
    _refuse_unrehearsable(where, spec)
    commit = commit_of(revision)
    path = kustomization_path(spec)
    try:
        rendered = render(ctx, revision=commit, path=path).objects
    except ExternalError as e:
        raise Refused(
            f"fracctl cannot render the commit Flux would apply ({revision}, path "
            f"{path or '.'}): {e.message}",
            hint="fetch that commit into git.repo (git fetch), or reconcile the source to "
            "git's commit: flux reconcile source git <name>; then run again",
        ) from None
    found = [o for o in rendered if t.matches(o)]
    rest = [o for o in rendered if not t.matches(o)]
    if len(found) != 1:
        raise Refused(
            f"{where} would apply {len(found)} {_named(t)} objects from {revision} "
            f"(path {path or '.'}), not one",
            hint="check the Kustomization's path and its source",
        )
    theirs = _same_fields(ctx, flux, t, found[0], desired, f"{revision}, path {path or '.'}")
    creates = clean_desired(found[0])
    meta = creates.get("metadata") or {}
    if t.namespace and not meta.get("namespace"):
        creates["metadata"] = {**meta, "namespace": t.namespace}
    held = " and ".join(f"{p} {_shown(v)}" for p, v in theirs.items())
    return (
        creates,
        rest,
        f"Flux's source commit {commit[:12]} renders {_named(t)} at {path or '.'} with "
        f"{held}, as git has",
    )


def _refuse_unrehearsable(where: str, spec: Obj) -> None:
    """Refuse a Kustomization that transforms its files in ways fracctl does not render."""
    used = [k for k in UNREHEARSABLE if spec.get(k)]
    if used:
        raise Refused(
            f"{where} changes what it applies with spec.{', spec.'.join(used)}, which fracctl "
            "cannot rehearse",
            hint="keep the fractioning config in a Kustomization without them, or use "
            "--backend apply",
        )


def _same_fields(
    ctx: Context, flux: Any, t: SyncTarget, found: Obj, desired: Obj, source: str
) -> dict[str, Any]:
    """The immutable fields of the object Flux would create, which must be git's.

    ``source`` says where Flux's source is (``REVISION, path PATH``).

    Raises:
        Refused: a field differs from git's.
    """
    theirs, ours = t.values(found), t.values(desired)
    for field_path in t.fields:
        if (theirs[field_path] or {}) != (ours[field_path] or {}):
            raise Refused(
                f"Flux would create {_named(t)} with {field_path} {_shown(theirs[field_path])} "
                f"(its source is at {source}), but git has "
                f"{_shown(ours[field_path])} at {ctx.config.git.revision}",
                hint="push the change where Flux's source reads it and reconcile the source "
                f"(flux reconcile kustomization {flux.name} -n {flux.namespace} "
                "--with-source); then run again",
            )
    return theirs


def _named(t: SyncTarget) -> str:
    return t.label


def _shown(value: Any) -> str:
    return clip(str({} if value is None else value), 200)


def _rest_admitted(ctx: Context, rest: list[Obj]) -> list[str]:
    """The API server would take the rest of what Flux applies (server-side dry runs).

    Flux stops at the first object that fails (fluxcd/pkg ssa ``ApplyAll`` returns the
    first error), so any of them failing would keep the target from being recreated.
    """
    for obj in rest:
        name = f"{obj.get('kind')}/{(obj.get('metadata') or {}).get('name')}"
        try:
            ref = ctx.kube.resolve(str(obj.get("apiVersion") or ""), str(obj.get("kind") or ""))
            ctx.kube.apply(ref, clean_desired(obj), dry_run=True)
        except FracctlError as e:
            raise Refused(
                f"Flux would also apply {name}, which the API server refuses: {e.message}; "
                "Flux stops at the first failure, so the target would not be recreated",
                hint="fix that object in git, then run again",
            ) from None
    return [f"the other {len(rest)} object(s) Flux applies pass a dry-run apply"] if rest else []


def _admitted(ctx: Context, obj: Obj, t: SyncTarget) -> str:
    """The API server would admit the object Flux applies (a dry-run create)."""
    dry_run_create(ctx, obj, ref=t.ref)
    return "a dry-run create of Flux's object passes admission and validation"
