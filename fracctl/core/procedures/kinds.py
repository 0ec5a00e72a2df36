"""Each built-in kind's safe procedure, and its refusals (pure).

The procedures are the community's runbooks for immutable fields: orphan the
StatefulSet's or Deployment's pods and let the recreated object adopt them (fluxcd/pkg#603,
opentelemetry-operator#5329), grow claims before the StatefulSet that templates them,
bridge a binding's permissions while its ``roleRef`` changes, run a Job again only when
asked; and refuse what no recreate can do safely (a claim's spec, a CRD's scope, an
immutable ConfigMap).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from fracctl.core.drift import ObjectDrift
from fracctl.core.fractions.memory import quantity_bytes
from fracctl.core.kube.labels import selector_matches
from fracctl.core.procedures.model import (
    BRIDGE,
    NEW_IP,
    ORPHAN_ADOPT,
    RERUN,
    SURGE,
    Choice,
    Facts,
    Obj,
    Procedure,
    Refusal,
    leaves,
)

RBAC = "rbac.authorization.k8s.io"
BRIDGE_SUFFIX = "-fracctl-bridge"


def not_known(o: ObjectDrift, facts: Facts) -> Choice:
    """A kind with no procedure: say so, and what GitOps users do by hand."""
    return Refusal(
        f"fracctl knows no safe procedure for a {o.kind}",
        f"delete {o.key} and sync, so that the GitOps engine creates it again from git "
        "(what it runs is interrupted)",
    )


def _spec(obj: Obj | None) -> Obj:
    return (obj or {}).get("spec") or {}


def _changed(o: ObjectDrift, prefix: str) -> list[str]:
    return [f.path for f in leaves(o.fields) if f.path == prefix or f.path.startswith(prefix)]


# --- StatefulSet ---------------------------------------------------------------------------


def statefulset(o: ObjectDrift, facts: Facts) -> Choice:
    """Orphan delete, recreate, adoption; claims grown first when only their size grows."""
    live, desired = _spec(o.live), _spec(o.desired)
    if _changed(o, "spec.selector"):
        return Refusal(
            "spec.selector changes: the recreated StatefulSet would not adopt the running "
            "pods, and a second set would start beside them on the same claims",
            "keep spec.selector as it is live; a new selector needs a new StatefulSet name",
        )
    expand: list[tuple[str, str, str]] = []
    notes: list[str] = []
    old = {_name(t): t for t in live.get("volumeClaimTemplates") or []}
    for tpl in desired.get("volumeClaimTemplates") or []:
        before = old.get(_name(tpl))
        if before is None:
            notes.append(f"new claim template {_name(tpl)}: pods get its claim when recreated")
            continue
        grown = _template_change(o, before, tpl, facts)
        if isinstance(grown, Refusal):
            return grown
        expand += grown
    if (live.get("persistentVolumeClaimRetentionPolicy") or {}).get("whenDeleted") == "Delete":
        notes.append(
            "persistentVolumeClaimRetentionPolicy.whenDeleted is Delete: a background "
            "delete would delete the claims, so only the orphan delete is allowed"
        )
    pods = len(facts.pods)
    strategy = (desired.get("updateStrategy") or {}).get("type") or "RollingUpdate"
    steps = [f"expand claim {c} from {a} to {b}" for c, a, b in expand]
    steps += [
        f"delete {o.key} with propagationPolicy Orphan (its {pods} pod(s) and claims stay, "
        "running)",
        "have the backend create it from git",
        f"verify the new StatefulSet adopted every pod ({pods}) with the same uid and "
        "restart count, and every claim still exists",
        f"let its update strategy ({strategy}) roll the pods to git's template",
    ]
    return Procedure(ORPHAN_ADOPT, tuple(steps), expand=tuple(expand), notes=tuple(notes))


def _name(obj: Obj) -> str:
    return str((obj.get("metadata") or {}).get("name") or "")


def _template_change(
    o: ObjectDrift, before: Obj, after: Obj, facts: Facts
) -> list[tuple[str, str, str]] | Refusal:
    """The claims to grow for one template, or why its change is refused."""
    name = _name(after)
    size_path = ("resources", "requests", "storage")
    old_spec, new_spec = _without(_spec(before), size_path), _without(_spec(after), size_path)
    if any(new_spec.get(k) not in (None, old_spec.get(k)) for k in new_spec):
        return Refusal(
            f"claim template {name} changes more than its size: the existing claims keep "
            "their spec, and a claim's spec cannot change",
            "change only resources.requests.storage, or name a new template (new, empty "
            "claims; the data stays in the old ones)",
        )
    old_size, new_size = _dig(_spec(before), size_path), _dig(_spec(after), size_path)
    if new_size is None or old_size == new_size:
        return []
    old_b, new_b = quantity_bytes(str(old_size)), quantity_bytes(str(new_size))
    if old_b is not None and new_b is not None and new_b < old_b:
        return Refusal(
            f"claim template {name} shrinks from {old_size} to {new_size}: a claim cannot shrink",
            f"keep resources.requests.storage at {old_size} or more",
        )
    return _claims_to_grow(o, name, str(new_size), new_b, facts)


def _claims_to_grow(
    o: ObjectDrift, template: str, size: str, size_b: float | None, facts: Facts
) -> list[tuple[str, str, str]] | Refusal:
    pattern = re.compile(rf"^{re.escape(template)}-{re.escape(o.name)}-\d+$")
    out: list[tuple[str, str, str]] = []
    for claim_name, claim in sorted(facts.claims.items()):
        if not pattern.match(claim_name):
            continue
        spec = _spec(claim)
        cls = str(spec.get("storageClassName") or facts.default_class)
        if not (facts.storage_classes.get(cls) or {}).get("allowVolumeExpansion"):
            return Refusal(
                f"claim {claim_name} must grow to {size}, and its StorageClass "
                f"{cls or '(none)'} does not allow volume expansion",
                f"set allowVolumeExpansion: true on StorageClass {cls}, or keep the size",
            )
        have = _dig(spec, ("resources", "requests", "storage"))
        have_b = quantity_bytes(str(have)) if have is not None else None
        if have_b is None or size_b is None or have_b < size_b:
            out.append((claim_name, str(have), size))
    return out


def _dig(obj: Any, path: tuple[str, ...]) -> Any:
    for key in path:
        obj = obj.get(key) if isinstance(obj, dict) else None
    return obj


def _without(spec: Obj, path: tuple[str, ...]) -> Obj:
    """A copy of ``spec`` with the value at ``path`` removed."""
    if not path:
        return spec
    out = dict(spec)
    head, rest = path[0], path[1:]
    if head in out:
        if rest and isinstance(out[head], dict):
            out[head] = _without(out[head], rest)
        elif not rest:
            del out[head]
    return out


# --- Deployment and DaemonSet ------------------------------------------------------------


def selector_owner(o: ObjectDrift, facts: Facts) -> Choice:
    """A Deployment's or DaemonSet's new selector: orphan and adopt when the pods fit it."""
    new = _spec(o.desired).get("selector")
    misfits = [
        p
        for p in facts.pods
        if not selector_matches(new, (p.get("metadata") or {}).get("labels") or {})
    ]
    if misfits:
        bridge = _serving_both(o, facts) if o.kind == "Deployment" else None
        if bridge is not None:
            return _surge(o, facts, bridge)
        wanted = (new or {}).get("matchLabels") or {}
        surge = (
            "; or, for a Deployment, a Service that selects both the running pods and git's "
            "template lets fracctl surge (new pods available before the old go)"
            if o.kind == "Deployment"
            else ""
        )
        return Refusal(
            f"{len(misfits)} of {len(facts.pods)} pod(s) lack the new selector's "
            f"labels (e.g. {_name(misfits[0])}): the recreated {o.kind} would start new "
            "pods beside them",
            f"make it two commits: first add {wanted} to spec.template.metadata.labels "
            f"and sync (the pods roll onto them), then change spec.selector{surge}",
        )
    owned = "ReplicaSets and pods" if o.kind == "Deployment" else "pods"
    steps = [
        f"delete {o.key} with propagationPolicy Orphan (its {owned} stay, running)",
        "have the backend create it from git",
        f"verify the new {o.kind} adopted every pod ({len(facts.pods)}) with the same uid "
        "and restart count",
    ]
    if o.kind == "Deployment":
        steps.append("delete the ReplicaSets left without pods that nothing adopted")
    return Procedure(ORPHAN_ADOPT, tuple(steps))


def _serving_both(o: ObjectDrift, facts: Facts) -> str | None:
    """A Service that selects every running pod and git's template: its name, or None."""
    template = ((_spec(o.desired).get("template") or {}).get("metadata") or {}).get("labels")
    if not facts.pods or not template:
        return None
    for svc in sorted(facts.services, key=_name):
        chosen = _spec(svc).get("selector") or {}
        if not chosen:
            continue  # selects nothing by itself (endpoints kept by hand)
        on = {"matchLabels": chosen}
        if selector_matches(on, template) and all(
            selector_matches(on, (p.get("metadata") or {}).get("labels") or {}) for p in facts.pods
        ):
            return _name(svc)
    return None


def _surge(o: ObjectDrift, facts: Facts, service: str) -> Procedure:
    """New pods first, beside the old, behind a Service that selects both; then the old go."""
    pods = len(facts.pods)
    replicas = _spec(o.desired).get("replicas", 1)
    return Procedure(
        SURGE,
        (
            f"delete {o.key} with propagationPolicy Orphan (its ReplicaSets and {pods} "
            "pod(s) stay, serving)",
            f"have the backend create it from git: it starts {replicas} new pod(s) beside "
            f"the old ones, and Service {service} selects both",
            "wait until the new Deployment's pods are all available",
            "delete the old ReplicaSets (their pods go); Service "
            f"{service} is served by the new pods",
        ),
        loses=f"its {pods} pod(s), replaced by new ones once those are available",
        notes=(f"Service {service} selects the running pods and git's template alike",),
    )


# --- Job ---------------------------------------------------------------------------------


def job(o: ObjectDrift, facts: Facts) -> Choice:
    """Background delete and a run from the start; refused while running unless asked."""
    active = int(((o.live or {}).get("status") or {}).get("active") or 0)
    if active and not facts.allow_active:
        return Refusal(
            f"it is running ({active} active pod(s)): recreating it kills them",
            "wait for it to finish, or pass --allow-active",
        )
    killed = f", and its {active} running pod(s) are killed" if active else ""
    return Procedure(
        RERUN,
        (
            f"delete {o.key} with propagationPolicy Background (its pods go with it)",
            "have the backend create it from git",
            "wait for the new Job's Complete or Failed condition",
        ),
        loses=f"a run of the Job from the start{killed}",
    )


# --- bindings ----------------------------------------------------------------------------


def binding(o: ObjectDrift, facts: Facts) -> Choice:
    """A bridge binding keeps the old role's permissions while the binding is recreated."""
    ref = (o.live or {}).get("roleRef") or {}
    bridge = f"{o.name}{BRIDGE_SUFFIX}"
    return Procedure(
        BRIDGE,
        (
            f"create the bridge {o.kind} {bridge} with the old roleRef "
            f"{ref.get('kind')}/{ref.get('name')} and the same subjects",
            f"delete {o.key}",
            "have the backend create it from git",
            "prove each subject's access under the new role with a SubjectAccessReview",
            f"delete the bridge {bridge}",
        ),
    )


# --- refused kinds -----------------------------------------------------------------------


def service(o: ObjectDrift, facts: Facts) -> Choice:
    """A new cluster IP (or a headless switch) only with ``--allow-new-ip``."""
    before = _spec(o.live).get("clusterIP")
    after = _spec(o.desired).get("clusterIP")
    if not facts.allow_new_ip:
        return Refusal(
            f"it would get a new cluster IP ({before} -> {after or 'a new one'}): "
            "clients that resolved the old one break",
            "pass --allow-new-ip to accept it, or keep spec.clusterIP as it is live",
        )
    return Procedure(
        NEW_IP,
        (f"delete {o.key}", "have the backend create it from git"),
        loses=f"the cluster IP {before}, and the Service between the delete and the create",
    )


def claim(o: ObjectDrift, facts: Facts) -> Choice:
    """A claim's spec: never recreated (its volume's data would go)."""
    return Refusal(
        "a PersistentVolumeClaim's spec cannot change, and recreating it would "
        "release its volume and its data",
        "create a claim under a new name, copy the data, and point the workload to it "
        "(only resources.requests can grow in place)",
    )


def crd(o: ObjectDrift, facts: Facts) -> Choice:
    """A CRD's scope or names: never recreated (every object of it would go)."""
    return Refusal(
        "recreating it deletes every object of its kind",
        "serve the change as a new CRD (another group or name) and migrate the objects",
    )


def immutable_data(o: ObjectDrift, facts: Facts) -> Choice:
    """An immutable ConfigMap or Secret: a new name, not a recreate."""
    generator = "configMapGenerator" if o.kind == "ConfigMap" else "secretGenerator"
    return Refusal(
        f"the {o.kind} is immutable: pods that mounted it keep the old content until they "
        "restart, so a recreate would not reach them",
        f"give it a content-hashed name (kustomize's {generator}) so that its users "
        "roll onto the new one",
    )


Chooser = Callable[[ObjectDrift, Facts], Choice]

CHOOSERS: dict[tuple[str, str], Chooser] = {
    ("apps", "StatefulSet"): statefulset,
    ("apps", "Deployment"): selector_owner,
    ("apps", "DaemonSet"): selector_owner,
    ("batch", "Job"): job,
    (RBAC, "RoleBinding"): binding,
    (RBAC, "ClusterRoleBinding"): binding,
    ("", "Service"): service,
    ("", "PersistentVolumeClaim"): claim,
    ("apiextensions.k8s.io", "CustomResourceDefinition"): crd,
    ("", "ConfigMap"): immutable_data,
    ("", "Secret"): immutable_data,
}
