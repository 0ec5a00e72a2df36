"""A binding's ``roleRef`` changed: no moment in which its subjects lose their access.

Before the delete, a bridge binding with the old role and the same subjects is created;
after the new binding exists, each subject's access under the new role is proven with a
``SubjectAccessReview``, and only then is the bridge removed.
"""

from __future__ import annotations

from typing import Any

from fracctl.core.kube.resources import ResourceRef
from fracctl.core.procedures.kinds import BRIDGE_SUFFIX, RBAC
from fracctl.errors import Conflict, ExternalError, NotFound
from fracctl.flows.engines.steps import Work

Obj = dict[str, Any]
BRIDGE_LABEL = "fracctl.io/bridge-for"
ROLES = {
    "Role": ResourceRef(RBAC, "v1", "roles", "Role", namespaced=True),
    "ClusterRole": ResourceRef(RBAC, "v1", "clusterroles", "ClusterRole", namespaced=False),
}
PROVE_TRIES = 20


def bridge_body(original: Obj) -> Obj:
    """The bridge: the original's roleRef and subjects under ``<name>-fracctl-bridge``."""
    meta = original["metadata"]
    body: Obj = {
        "apiVersion": original.get("apiVersion", f"{RBAC}/v1"),
        "kind": original["kind"],
        "metadata": {
            "name": meta["name"] + BRIDGE_SUFFIX,
            "labels": {BRIDGE_LABEL: meta["name"]},
        },
        "roleRef": original["roleRef"],
        "subjects": original.get("subjects") or [],
    }
    if meta.get("namespace"):
        body["metadata"]["namespace"] = meta["namespace"]
    return body


def bridge_up(w: Work, original: Obj) -> None:
    """Create the bridge (one already there from an earlier run is kept)."""
    body = bridge_body(original)
    try:
        w.ctx.kube.create(w.ref, body)
        w.say(f"created the bridge {w.kind} {body['metadata']['name']} with the old roleRef")
    except Conflict as e:
        if e.status.reason != "AlreadyExists":
            raise


def prove_access(w: Work) -> list[str]:
    """Each subject of git's binding may do what the new role grants (one review per rule)."""
    role = w.desired.get("roleRef") or {}
    ref = ROLES.get(str(role.get("kind")))
    if ref is None:
        raise ExternalError(f"{w.journal.key}'s roleRef names an unknown kind {role.get('kind')}")
    found = w.ctx.kube.get_or_none(ref, str(role.get("name")), w.ns if ref.namespaced else None)
    if found is None:
        raise ExternalError(
            f"{role.get('kind')}/{role.get('name')}, the role git's {w.journal.key} binds, "
            "does not exist: its subjects have no access (the bridge stays)",
            hint=f"create the role, then rerun; the bridge {w.name}{BRIDGE_SUFFIX} keeps "
            "the old access",
        )
    said = []
    for subject in w.desired.get("subjects") or []:
        user, groups = _who(subject)
        for verb, group, resource in _asks(found):
            target = ResourceRef(group, "v1", resource, resource, namespaced=bool(w.namespace))
            if not _allowed(w, user, groups, verb, target):
                raise ExternalError(
                    f"{subject.get('kind')} {subject.get('name')} may not {verb} {resource} "
                    f"under the new {w.journal.key}: the bridge "
                    f"{w.name}{BRIDGE_SUFFIX} stays until it may",
                    hint="check the role's rules; rerun to prove again and remove the bridge",
                )
        said.append(f"{subject.get('kind')} {subject.get('name')} has the new role's access")
    return said


def _allowed(w: Work, user: str, groups: tuple[str, ...], verb: str, ref: ResourceRef) -> bool:
    """A review, asked again for a moment: the authorizer's cache follows the new binding."""
    for _ in range(PROVE_TRIES):
        ok, _reason = w.ctx.kube.can_they(user, verb, ref, namespace=w.ns, groups=groups)
        if ok:
            return True
        w.ctx.clock.sleep(0.25)
    return False


def _who(subject: Obj) -> tuple[str, tuple[str, ...]]:
    kind, name = subject.get("kind"), str(subject.get("name") or "")
    if kind == "ServiceAccount":
        return f"system:serviceaccount:{subject.get('namespace')}:{name}", ()
    if kind == "Group":
        return "", (name,)
    return name, ()


def _asks(role: Obj) -> list[tuple[str, str, str]]:
    """One (verb, group, resource) per resource rule of the role."""
    out = []
    for rule in role.get("rules") or []:
        verbs, groups, resources = (rule.get(k) or [] for k in ("verbs", "apiGroups", "resources"))
        if verbs and resources:
            verb = "get" if verbs[0] == "*" else verbs[0]
            out.append((verb, "" if not groups else groups[0], resources[0]))
    return out


def bridge_down(w: Work) -> None:
    """Remove the bridge (gone already is fine)."""
    try:
        w.ctx.kube.delete(w.ref, w.name + BRIDGE_SUFFIX, w.ns)
        w.say(f"deleted the bridge {w.kind} {w.name}{BRIDGE_SUFFIX}")
    except NotFound:
        pass
