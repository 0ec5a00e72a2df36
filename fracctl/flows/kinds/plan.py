"""Judging one object, choosing its procedure, and rehearsing every call read-only."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from fracctl.core import drift as d
from fracctl.core.kube.resources import PVCS, REPLICASETS, ResourceRef
from fracctl.core.outcome import Outcome
from fracctl.core.procedures import BRIDGE, ORPHAN_ADOPT, SURGE, Facts, Procedure, Refusal
from fracctl.errors import Conflict, UsageError
from fracctl.flows.context import Context
from fracctl.flows.engines import clean_desired
from fracctl.flows.engines import journal as journals
from fracctl.flows.engines.access import require
from fracctl.flows.engines.journal import ObjectJournal
from fracctl.flows.engines.steps import Creator
from fracctl.flows.kinds.bridge import bridge_body

Obj = dict[str, Any]
SARS = ResourceRef("authorization.k8s.io", "v1", "subjectaccessreviews", "", namespaced=False)
#: The delete's propagation: every other procedure deletes in the background.
PROPAGATION = {ORPHAN_ADOPT: "Orphan", SURGE: "Orphan"}


@dataclass
class Planned:
    """One object's plan: where it is, what git wants, and the procedure (or refusal)."""

    spec: str  # the object as the command names it, for the rerun command
    drift: d.ObjectDrift
    ref: ResourceRef
    outcome: Outcome
    procedure: Procedure | None = None
    refusal: Refusal | None = None
    journal: ObjectJournal | None = None
    facts: Facts | None = None
    resumed: bool = False
    chosen: Creator | None = None  # the run's engine's, once the plan has a procedure

    @property
    def creator(self) -> Creator:
        """The run's engine's creator for this object, once it was chosen."""
        if self.chosen is None:
            raise RuntimeError(f"{self.key}: no engine's creator was chosen for this plan")
        return self.chosen

    @property
    def key(self) -> str:
        """``Kind/namespace/name``."""
        return self.drift.key

    @property
    def live(self) -> Obj | None:
        """The live object as judged."""
        return self.drift.live

    @property
    def propagation(self) -> str:
        """The delete's propagation policy."""
        return PROPAGATION.get(self.procedure.name if self.procedure else "", "Background")


def find_desired(ctx: Context, objects: list[Obj], spec: str, namespace: str | None) -> Obj:
    """Git's object named ``Kind/name`` (in ``namespace`` when given)."""
    kind, sep, name = spec.partition("/")
    if not sep or not kind or not name or "/" in name:
        raise UsageError(f"name the object as KIND/NAME, got {spec!r}")
    default_ns = ctx.config.git.objects_namespace

    def named(o: Obj) -> bool:
        meta = o.get("metadata") or {}
        return meta.get("name") == name and namespace in (
            None,
            meta.get("namespace") or default_ns,
        )

    found = [o for o in objects if str(o.get("kind", "")).lower() == kind.lower() and named(o)]
    if not found:  # a short name, a plural, KIND.GROUP: as kubectl resolves it
        kinds = _kinds(ctx, kind)
        found = [o for o in objects if _group_kind(o) in kinds and named(o)]
        kind = "|".join(k for _, k in kinds) if kinds else kind
    if not found:
        where = f" in namespace {namespace}" if namespace else ""
        g = ctx.config.git
        raise UsageError(
            f"git has no {kind}/{name}{where} at {g.revision} under {g.path}",
            hint="check the name, -n NAMESPACE, and where git's objects are: --path, "
            "--revision, --repo (git.path, git.revision, git.repo)",
        )
    if len(found) > 1:
        spaces = ", ".join(str((o.get("metadata") or {}).get("namespace")) for o in found)
        raise UsageError(f"git has {kind}/{name} in several namespaces ({spaces}): pass -n")
    return found[0]


def _group_kind(o: Obj) -> tuple[str, str]:
    group = str(o.get("apiVersion") or "").rpartition("/")[0]
    return group, str(o.get("kind") or "")


def _kinds(ctx: Context, word: str) -> list[tuple[str, str]]:
    """The kinds ``word`` names through discovery; a usage error naming it when none."""
    import difflib

    from fracctl.core.kube.resources import kinds_named

    served = ctx.kube.served()
    kinds = kinds_named(word, served)
    if not kinds:
        names = sorted({n for r in served for n in (r.kind, r.plural, *r.short_names)})
        close = difflib.get_close_matches(word, names, n=1) or difflib.get_close_matches(
            word.lower(), [n.lower() for n in names], n=1
        )
        said = f"; did you mean {close[0]}?" if close else ""
        raise UsageError(
            f"the cluster serves no resource type {word!r}{said}",
            hint="kubectl api-resources lists the kinds, plurals and short names it takes",
        )
    return kinds


def plan(
    ctx: Context, desired: Obj, *, allow_active: bool, allow_new_ip: bool, dry_run: bool = False
) -> Planned:
    """Judge the object against git, read the journal, choose what to do."""
    from fracctl.flows.drift import check_objects
    from fracctl.flows.procedures import facts_for

    (o,) = check_objects(ctx, [desired]).objects
    if o.desired is not None and o.namespace:  # git may leave it to the default namespace
        o.desired = {**o.desired, "metadata": {**o.desired["metadata"], "namespace": o.namespace}}
    spec = f"{o.kind}/{o.name}" + (f" -n {o.namespace}" if o.namespace else "")
    ref = ctx.kube.resolve(o.api_version, o.kind)
    journal = journals.read(ctx, o.key)
    live_uid = (o.live or {}).get("metadata", {}).get("uid")
    if journal is not None and live_uid != journal.uid:
        steps = (
            f"resume the {journal.procedure} procedure after its step {journal.phase or 'start'}",
        )
        proc = Procedure(journal.procedure, steps)
        return Planned(spec, o, ref, Outcome.PLANNED, proc, journal=journal, resumed=True)
    if journal is not None and o.verdict != d.NEEDS_RECREATE and not dry_run:
        journals.remove(ctx, o.key)  # it names the original, which git no longer changes
    if o.verdict == d.NEEDS_RECREATE:
        from fracctl.core.procedures import choose

        facts = facts_for(ctx, o, allow_active=allow_active, allow_new_ip=allow_new_ip)
        t = ctx.config.target
        choice = choose(o, facts, target=(t.group, t.kind, t.name))
        if isinstance(choice, Refusal):
            return Planned(spec, o, ref, Outcome.REFUSED, refusal=choice, facts=facts)
        return Planned(spec, o, ref, Outcome.PLANNED, choice, journal=journal, facts=facts)
    if o.verdict in (d.IN_SYNC, d.APPLIES_IN_PLACE):
        outcome = Outcome.NOTHING_TO_DO if o.verdict == d.IN_SYNC else Outcome.APPLIES_IN_PLACE
        return Planned(spec, o, ref, outcome)
    why = o.message or o.note or o.verdict
    fix = (
        "fix the manifest in git"
        if o.verdict == d.REJECTED
        else "sync it: a create needs no recreate"
    )
    return Planned(spec, o, ref, Outcome.REFUSED, refusal=Refusal(why, fix))


def prove(ctx: Context, p: Planned) -> list[str]:
    """Rehearse, read-only, every call the procedure makes; the evidence."""
    o, ns = p.drift, p.drift.namespace or None
    said = [
        require(ctx, verb, ref=p.ref, name=o.name, namespace=ns) for verb in ("delete", "create")
    ]
    live = p.live
    if live is not None and not p.resumed:
        ctx.kube.delete(p.ref, o.name, ns, uid=live["metadata"]["uid"],
                        propagation=p.propagation, dry_run=True)  # fmt: skip
        said.append(f"a dry-run delete (propagationPolicy {p.propagation}) passes admission")
    _dry_create(ctx, p.ref, clean_desired(o.desired or {}))
    said.append("a dry-run create of git's object passes RBAC, admission and validation")
    proc = p.procedure
    for claim, _before, after in proc.expand if proc else ():
        patch = {"spec": {"resources": {"requests": {"storage": after}}}}
        ctx.kube.patch(PVCS, claim, patch, namespace=ns, dry_run=True)
        said.append(f"a dry-run expansion of claim {claim} to {after} passes")
    if proc and proc.name in (ORPHAN_ADOPT, SURGE) and o.kind == "Deployment":
        said.append(require(ctx, "delete", ref=REPLICASETS, name="", namespace=ns))
    if proc and proc.name == BRIDGE and live is not None and not p.resumed:
        _dry_create(ctx, p.ref, bridge_body(live))
        said.append("a dry-run create of the bridge passes (the identity may bind the old role)")
        said.append(require(ctx, "create", ref=SARS, name=""))
    return said + p.creator.prove(ctx, o.desired or {})


def _dry_create(ctx: Context, ref: ResourceRef, body: Obj) -> None:
    """A dry-run create; ``AlreadyExists`` comes after every check, so it passes."""
    try:
        ctx.kube.create(ref, body, dry_run=True)
    except Conflict as e:
        if e.status.reason != "AlreadyExists":
            raise
