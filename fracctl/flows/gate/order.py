"""The gate keeps the rollout's order: a later step waits for every earlier step's cluster.

The PreSync half of a cluster whose revision restarts the daemons reads, where Argo CD
runs (the hub), its own Application, the ApplicationSet that made it and that set's
other Applications, and refuses until every cluster of every earlier step runs the
revision being synced (:mod:`fracctl.core.appset_order`). It reads with the identity of
the kubeconfig in the Secret ``fracctl-gate-fleet`` the hook mounts (the ``fleet-status``
role: get the ApplicationSet, list the Applications), and finds its Application by the
tracking id Argo CD writes on the hook's pod. Without that Secret there is no hub to
read and the order is Argo CD's alone; the result says so.
"""

from __future__ import annotations

import time
from pathlib import Path

from fracctl.core.appset_order import CHECK, behind, instance_of, progressive, short, syncing
from fracctl.errors import FracctlError, Refused, UsageError
from fracctl.flows.context import Context
from fracctl.flows.engines import Obj

#: Where the hooks mount the Secret fracctl-gate-fleet (deploy/components/argocd-gate).
FLEET_DIR = "/etc/fracctl/fleet"
SECRET = "fracctl-gate-fleet"
#: How long the hook waits for Argo CD to write the revision it resolved (it writes the
#: operation's state once more after creating the PreSync hooks).
RESOLVE_SECONDS = 30.0
RETRY = "Argo CD's retry runs this hook again"


def check_order(ctx: Context, fleet: Path | None, tracking: str) -> str:
    """A line saying the order holds, or that there is none to keep.

    Raises:
        Refused: a cluster of an earlier step does not run the revision this sync applies.
    """
    if fleet is None:
        return ""
    kubeconfig = fleet / "kubeconfig"
    if not kubeconfig.is_file():
        return (
            f"no fleet hub mounted (Secret {SECRET}): the order between the clusters "
            "is Argo CD's alone"
        )
    try:
        namespace, name = instance_of(tracking)
    except ValueError:
        raise UsageError(
            f"the fleet's hub is mounted ({fleet}) but this pod carries no Argo CD tracking "
            f"id (got {tracking!r}): the gate cannot tell which Application it gates",
            hint="keep Argo CD's annotation tracking (v3's default), which the hook reads "
            "through FRACCTL_GATE_TRACKING_ID",
        ) from None
    namespace = namespace or _namespace(fleet) or ctx.config.argocd.namespace
    try:
        return _check(ctx, kubeconfig, namespace, name)
    except FracctlError as e:
        if not isinstance(e, Refused):
            e.add_context(f"reading the fleet's hub for the rollout's order ({namespace}/{name})")
        raise


def _namespace(fleet: Path) -> str:
    path = fleet / "namespace"
    return path.read_text(encoding="utf-8").strip() if path.is_file() else ""


def _check(ctx: Context, kubeconfig: Path, namespace: str, name: str) -> str:
    from fracctl.adapters.kube import Kube
    from fracctl.flows.appset import APPLICATIONS, APPSETS

    hub = Kube.connect(kubeconfig=str(kubeconfig))
    try:
        deadline = time.monotonic() + RESOLVE_SECONDS
        while True:
            apps = hub.list(APPLICATIONS, namespace=namespace)
            me = next((a for a in apps if a["metadata"]["name"] == name), None)
            if me is None:
                raise UsageError(
                    f"no Application {namespace}/{name} on the fleet's hub",
                    hint=f"the Secret {SECRET} must point at the cluster Argo CD runs in",
                )
            revision = syncing(me)
            if revision or time.monotonic() > deadline:
                break
            time.sleep(1.0)
        owner = _owner(me)
        if owner is None:
            return f"Application {name} belongs to no ApplicationSet: no rollout order to keep"
        appset = hub.get(APPSETS, owner["name"], namespace)
    finally:
        hub.close()
    if not progressive(appset):
        return f"ApplicationSet {owner['name']} syncs all at once: no rollout order to keep"
    if not revision:
        raise _refused(f"Argo CD has not resolved the revision {name} syncs", RETRY)
    owned = [a for a in apps if _owner(a) == owner]
    try:
        lagging = behind(appset, owned, name, revision)
    except ValueError as e:
        raise _refused(str(e), f"{RETRY} once the ApplicationSet placed it") from None
    if lagging:
        raise _refused(
            f"{name} would sync {short(revision)} before the steps ahead of it run it: "
            + ", ".join(str(b) for b in lagging),
            f"let the earlier steps finish this revision first; {RETRY}",
        )
    return f"rollout order: every cluster of the steps before {name}'s runs {short(revision)}"


def _refused(evidence: str, fix: str) -> Refused:
    """A refusal in the guards' form ("CHECK: EVIDENCE -> FIX"), which fleet status reads."""
    return Refused(f"rollout order refused, nothing changed: {CHECK}: {evidence} -> {fix}")


def _owner(app: Obj) -> dict[str, str] | None:
    for ref in app["metadata"].get("ownerReferences") or []:
        if ref.get("kind") == "ApplicationSet":
            return {"name": str(ref.get("name")), "uid": str(ref.get("uid"))}
    return None
