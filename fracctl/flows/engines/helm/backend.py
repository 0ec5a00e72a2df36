"""The ``helm`` backend: the chart's own ``helm upgrade`` is the recreate.

The gpu-fractioning operator's chart creates the ``default`` config as a
``post-install,post-upgrade`` hook with no delete policy (kai-scheduler/gpu-fractioning
and kai-scheduler/kai-gpu-fractioning, ``operator/charts/templates/default-cr.yaml``), so
Helm's ``before-hook-creation`` default deletes it, waits for the delete, and creates it
again on every upgrade (helm/helm ``pkg/action/hooks.go`` ``execHook``). That upgrade *is*
a recreate, whether or not the selector changes: this backend runs it as one, behind
everything ``recreate`` proves and guards, instead of leaving it to run blind or to be
refused by the guard policy half-way.

What it proves read-only before anything changes:

* the helm binary runs, and which version it is (3 and 4 both);
* the release exists, its newest revision is not an operation in progress, or is the
  one this machine's journal says a killed fracctl left (then it is recovered: marked
  ``failed``, as Helm itself marks an upgrade that stopped, before the upgrade);
* Helm's own server-side dry run of the very upgrade that follows (``helm upgrade
  --dry-run=server``; while our own revision is pending, which Helm's dry run refuses,
  ``helm template --validate``) renders the target as a hook that Helm recreates, with
  git's selector: that rendering is what ``verify`` holds the live object to;
* the API server admits that object (a dry-run create) and this identity may write the
  release's records (Secrets in the release namespace).

The delete itself is the hook's, done by helm as this same identity: ``recreate`` arms the
guard policy for it right before the upgrade. Helm 3 waits for that delete
(v3 ``pkg/action/hooks.go`` ``deleteHookByPolicy`` calls ``WaitForDelete``); Helm 4 waits
only with a waiting strategy: its default, ``hookOnly``, returns from ``WaitForDelete`` at
once (v4 ``pkg/kube/statuswait.go``), so while the operator's finalizer holds the object,
the hook's server-side apply lands on the terminating object: refused when the selector
changes, and *accepted* when it does not, after which the finalizer is released and the
config is gone. With Helm 4 this backend therefore upgrades with ``--wait=watcher``.
Never ``--atomic`` or ``--cleanup-on-fail``: a rollback would run the old chart's hook
again, and a cleanup deletes what helm created.
"""

from __future__ import annotations

import dataclasses
import os
import socket
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fracctl.core.gitops import helm_release
from fracctl.core.gitops.helm_release import Release
from fracctl.core.kube.nodes import selector_of
from fracctl.core.recreate.plan import ReleaseState
from fracctl.errors import ExternalError, FracctlError, Refused, UsageError
from fracctl.flows.context import Context
from fracctl.flows.engines import (
    BackendBase,
    BackendCheckFailed,
    HookCarrier,
    Obj,
    Proof,
    clean_desired,
    dry_run_create,
)
from fracctl.flows.engines.access import require
from fracctl.flows.engines.helm.journal import ReleaseId, journal_path, left_by_us, write_journal
from fracctl.flows.engines.helm.release import (
    SECRETS,
    deployed_revision,
    mark_failed,
    read_release,
    release_rendering,
    renders_chart,
    target_hook,
)
from fracctl.flows.render import repo_of


@dataclass
class Upgrade:
    """What the plan needs to know about the release before the proofs run."""

    release: Release | None
    pending_ours: bool  # its newest revision is pending, left by a killed fracctl here
    differs: bool  # git's chart would change the release (or the release is not deployed)
    rendered: Obj = field(default_factory=dict)  # helm's rendering: release JSON or template
    evidence: list[str] = field(default_factory=list)
    wait: bool = False  # upgrade with --wait (Helm 4: its hook's delete is waited for then)

    @property
    def state(self) -> ReleaseState:
        """What the plan reads of it."""
        return ReleaseState(differs=self.differs, interrupted=self.pending_ours)


def cli(ctx: Context) -> Any:
    """The helm CLI, pointed at fracctl's cluster and identity."""
    from fracctl.adapters.helm import HelmCLI

    k = ctx.config.kube
    binary = ctx.config.section("helm").binary
    return HelmCLI(
        binary=ctx.expand(binary) if "/" in binary else binary,
        kubeconfig=ctx.expand(k.kubeconfig) if k.kubeconfig else None,
        context=k.context,
    )


def upgrade_facts(ctx: Context, rid: ReleaseId, *, hooks: bool = True) -> Upgrade:
    """Read the release and have helm render git's chart, read-only.

    ``hooks``: the evidence speaks of helm's hook delete (the operator chart's config).

    Raises:
        Refused: no such release, or another operation holds it.
        FracctlError: helm, git or the cluster failed.
    """
    name, ns = rid.name, rid.namespace
    helm = cli(ctx)
    major = helm.major()
    waits = (
        ": it upgrades with --wait=watcher, so its hook's delete is waited for"
        if major >= 4
        else "; it waits for the hook's delete before creating it again"
    )
    evidence = [f"helm {major} runs ({helm.binary})" + (waits if hooks else "")]
    release, ours = _upgradable(ctx, rid)
    evidence.append(
        f"release {ns}/{name} is at revision {release.version} ({release.status}, "
        f"chart {release.chart})" + (f"; {ours}: it will be marked failed first" if ours else "")
    )
    g = ctx.config.git
    tree = ctx.tree(repo_of(ctx), g.revision)  # the run's one export, at its pinned commit
    chart, commit = tree.folder(g.path), tree.commit
    values = [chart / v for v in g.helm_values]
    missing = [v for v in g.helm_values if not (chart / v).is_file()]
    if missing:
        raise ExternalError(f"helm values file {missing[0]} is not in the chart at {g.revision}")
    timeout = float(ctx.config.section("helm").timeout)
    if ours:
        rendered = _template(helm, name, chart, ns, values, timeout)
        how = "helm template --validate (helm's own upgrade dry run refuses a pending release)"
    else:
        rendered = helm.upgrade(name, chart, namespace=ns, values=values, dry_run=True,
                                timeout=timeout)  # fmt: skip
        how = "helm upgrade --dry-run=server"
    evidence.append(f"{how} of git's chart (commit {commit[:12]}) passes")
    deployed = release if release.status == helm_release.DEPLOYED else deployed_revision(ctx, rid)
    differs = (
        ours != ""
        or deployed is None
        or deployed.version != release.version
        or release_rendering(rendered)
        != (deployed.manifest, sorted((h.path, h.manifest) for h in deployed.hooks))
    )
    return Upgrade(release, bool(ours), differs, rendered, evidence, wait=hooks and major >= 4)


def _upgradable(ctx: Context, rid: ReleaseId) -> tuple[Release, str]:
    """The release's newest revision, and what says a killed fracctl here left it pending.

    Raises:
        Refused: no such release, or another operation holds it.
    """
    name, ns = rid.name, rid.namespace
    release = read_release(ctx, rid)
    if release is None:
        raise Refused(
            f"there is no Helm release {name} in namespace {ns} (no sh.helm.release.v1.{name}.* "
            "Secret): the helm backend upgrades an installed release",
            hint="set git.helm_release and git.helm_namespace to the operator's release, or "
            "install it with helm install first",
        )
    ours = left_by_us(ctx, rid, release) if release.pending else ""
    if release.pending and not ours:
        raise Refused(
            f"release {ns}/{name} revision {release.version} is {release.status}: another helm "
            "operation is in progress (or one was killed outside fracctl); nothing was changed",
            hint=f"wait for it (helm status {name} -n {ns}); if nothing runs on it, mark it "
            f"failed with: helm rollback {name} -n {ns} (or see runbooks/operator-upgrades.md)",
        )
    return release, ours


def _template(
    helm: Any, name: str, chart: Path, ns: str, values: list[Path], timeout: float
) -> Obj:
    """``helm template --validate``, shaped as the release JSON the dry run prints."""
    from fracctl.adapters.render import parse_documents

    args = ["template", name, str(chart), "--namespace", ns, "--validate"]
    for v in values:
        args += ["--values", str(v)]
    text = helm.run(*args, timeout=timeout, what=f"helm template --validate of release {name}")
    hooks, manifest = [], []
    for doc in parse_documents(text, "helm template output", stream=True):
        events = helm_release.hook_events(doc.obj)
        if events:
            meta = doc.obj.get("metadata") or {}
            ann = meta.get("annotations") or {}
            policies = str(ann.get(helm_release.HOOK_DELETE_POLICY, ""))
            hooks.append({
                "kind": doc.obj.get("kind"), "name": meta.get("name"), "path": doc.origin,
                "events": list(events), "manifest": doc.text,
                "delete_policies": [p.strip() for p in policies.split(",") if p.strip()],
            })  # fmt: skip
        else:
            manifest.append(doc.text)
    return {"manifest": "---\n".join(manifest), "hooks": hooks}


class HelmBackend(BackendBase):
    """Run the chart's ``helm upgrade``; its hook deletes and recreates the object."""

    name = "helm"
    claim = "helm reported the upgrade deployed but the live object differs"

    def __init__(self) -> None:
        self.facts: Upgrade | None = None

    def validate(self, ctx: Context) -> None:
        """The chart is rendered with helm; a usage error otherwise."""
        renders_chart(ctx, "recreate.backend helm upgrades")

    def upgrade_facts(self, ctx: Context, desired: Obj) -> Upgrade:
        """The release and helm's rendering, read once per run (the plan and proofs share it)."""
        if self.facts is None:
            try:
                self.facts = upgrade_facts(ctx, ReleaseId.configured(ctx))
            except UsageError:
                raise
            except FracctlError as e:  # read before the proofs: say so the same way
                raise BackendCheckFailed(self.name, e) from e
        return self.facts

    def release_state(self, ctx: Context, desired: Obj) -> ReleaseState:
        """The release the upgrade runs from, as the plan reads it."""
        return self.upgrade_facts(ctx, desired).state

    def hook(self) -> HookCarrier:
        """This backend: it runs the chart's upgrade, whose hook recreates the config."""
        return self

    def carries(self, ctx: Context, desired: Obj) -> tuple[list[str], Obj]:
        """The upgrade would recreate git's object, whoever runs it.

        The release is there, and helm's rendering of git's chart creates the object as a
        hook with git's selector: the proofs that do not depend on who runs fracctl (drift
        shows them too). Returns the evidence and the object the hook creates.
        """
        t = ctx.config.target
        facts = self.upgrade_facts(ctx, desired)
        creates, hook = target_hook(ctx, facts.rendered)
        want = selector_of(desired, t.selector_field)
        got = selector_of(creates, t.selector_field)
        if got != want:
            raise Refused(
                f"helm's rendering of the chart creates {t.kind}/{t.name} with nodeSelector "
                f"{got}, not git's {want}",
                hint="render git's chart the way helm upgrades it (git.helm_values, "
                "git.helm_namespace), then rerun",
            )
        return [
            *facts.evidence,
            f"the chart's hook {hook.path} ({','.join(hook.events)}, recreated by Helm's "
            f"before-hook-creation) creates {t.kind}/{t.name} with git's nodeSelector",
        ], creates

    def left(self, ctx: Context, desired: Obj) -> tuple[str, bool]:
        """What of the release the upgrade still has to do, and whether it stopped.

        "" when it is settled; stopped: an upgrade began and its newest revision is not
        deployed.
        """
        facts = self.upgrade_facts(ctx, desired)
        r, rid = facts.release, ReleaseId.configured(ctx)
        if r is None or not (facts.differs or facts.pending_ours):
            return "", False
        if r.status != helm_release.DEPLOYED:
            ours = " by a fracctl run here that stopped" if facts.pending_ours else ""
            return f"release {rid} was left {r.status}{ours} at revision {r.version}", True
        return (
            f"git's chart changes release {rid} (its values or templates differ from "
            f"revision {r.version}, deployed) though the object matches git"
        ), False

    def carried_by(self, ctx: Context, desired: Obj) -> tuple[str, str, bool]:
        """The guarded ``helm upgrade`` of the release; what of it is left."""
        left, stopped = self.left(ctx, desired)
        name = ReleaseId.configured(ctx).name
        return (
            f"fracctl recreate (recreate.backend: helm) runs release {name}'s upgrade guarded",
            left,
            stopped,
        )

    def doctor_settings(self, ctx: Context) -> dict[str, Any]:
        """The release whose upgrade fracctl guards: ``guarded_release``."""
        rid = ReleaseId.configured(ctx)
        return {"guarded_release": (rid.namespace, rid.name)}

    def check(self, ctx: Context, desired: Obj) -> Proof:
        """Helm's dry run renders git's object as a hook it recreates; the server admits it."""
        t = ctx.config.target
        evidence, creates = self.carries(ctx, desired)
        evidence += [
            *may_write_release(ctx, ReleaseId.configured(ctx), self.upgrade_facts(ctx, desired)),
            *(require(ctx, verb, ref=t.ref, name=t.name) for verb in ("create", "delete")),
        ]
        dry_run_create(ctx, creates)
        evidence.append(
            "a dry-run create of the hook's object passes RBAC, admission and validation"
        )
        return Proof(evidence, clean_desired(creates))

    def recreate(self, ctx: Context, desired: Obj) -> str:
        """``helm upgrade`` of git's chart: the hook deletes, waits for, and creates the object."""
        done = run_upgrade(ctx, ReleaseId.configured(ctx), self.upgrade_facts(ctx, desired))
        self.facts = None
        return done + "; its hook deleted and recreated the object"


def may_write_release(ctx: Context, rid: ReleaseId, facts: Upgrade) -> list[str]:
    """This identity may write the upgrade's record (the next revision's Secret)."""
    revision = facts.release.version + 1 if facts.release else 1
    name = f"{helm_release.SECRET_PREFIX}{rid.name}.v{revision}"
    return [
        require(ctx, verb, ref=SECRETS, name=name, namespace=rid.namespace)
        for verb in ("create", "update")
    ]


def run_upgrade(ctx: Context, rid: ReleaseId, facts: Upgrade) -> str:
    """``helm upgrade`` of git's chart, journaled; a pending revision of ours marked first.

    Raises:
        Refused: the release is gone.
        ExternalError: helm failed (its last lines).
    """
    from fracctl.core.clock import utc_timestamp

    release = facts.release
    if release is None:  # upgrade_facts refuses a missing release; read again since
        raise Refused("the Helm release is gone; nothing was changed")
    name, ns = rid.name, rid.namespace
    if facts.pending_ours:
        mark_failed(ctx, release)
        ctx.info(f"marked release {rid} revision {release.version} failed (it was "
                 f"left {release.status} by an interrupted fracctl)")  # fmt: skip
        release = dataclasses.replace(release, status=helm_release.FAILED)
    entry = {"from_revision": release.version, "host": socket.gethostname(),
             "run": f"pid {os.getpid()}", "pid": 0, "started": utc_timestamp()}  # fmt: skip
    write_journal(ctx, rid, entry)
    g = ctx.config.git
    helm = cli(ctx)
    chart = ctx.tree(repo_of(ctx), g.revision).folder(g.path)  # the tree the plan proved
    done = helm.upgrade(
        name,
        chart,
        namespace=ns,
        values=[chart / v for v in g.helm_values],
        dry_run=False,
        timeout=float(ctx.config.section("helm").timeout),
        wait=facts.wait,
        started=lambda pid: write_journal(ctx, rid, {**entry, "pid": pid}),
    )
    journal_path(ctx, rid).unlink(missing_ok=True)
    status = (done.get("info") or {}).get("status", "?")
    return f"helm upgrade of release {rid}: revision {done.get('version', '?')} {status}"
