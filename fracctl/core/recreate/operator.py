"""Whether the gpu-fractioning operator runs and leads now: it alone releases the finalizer.

Deleting the config object only marks it: the object goes once the operator has cleared
the node conditions and removed its finalizer. A delete while the operator is down leaves
the object terminating until the operator returns, which then finishes the delete with
nothing to recreate it. So before a delete fracctl proves the operator runs *now*:

* its Deployment is available (this status is written by the Deployment controller and
  can be stale: a wedged or partitioned pod still counts as available for a while);
* its leader-election Lease was renewed within the Lease's own duration. A
  controller-runtime manager renews every couple of seconds while it leads, so a Lease
  older than its duration means no replica leads, whatever the Deployment says.

Pure decisions on the objects read; the reads are in :mod:`fracctl.flows.engines`.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

Obj = dict[str, Any]


@dataclass(frozen=True)
class Verdict:
    """The judgement and what it rests on (one line, evidence or the problem)."""

    ok: bool
    text: str


def deployment_available(deployment: Obj | None, where: str) -> Verdict:
    """Whether the Deployment ``where`` (``namespace/name``) reports an available replica."""
    if deployment is None:
        return Verdict(False, f"the operator's Deployment {where} does not exist")
    status = deployment.get("status") or {}
    available = int(status.get("availableReplicas") or 0)
    cond = next((c for c in status.get("conditions") or [] if c.get("type") == "Available"), None)
    if available < 1 or (cond is not None and cond.get("status") != "True"):
        why = f": {cond.get('reason')} {cond.get('message') or ''}".rstrip() if cond else ""
        return Verdict(
            False, f"the operator's Deployment {where} has {available} available replicas{why}"
        )
    return Verdict(True, f"the operator's Deployment {where} has {available} available replica(s)")


def lease_renewed(
    lease: Obj | None, where: str, *, now: float, who: str = "the operator"
) -> Verdict:
    """Whether the leader-election Lease ``where`` (``who`` holds it) was renewed in time."""
    if lease is None:
        return Verdict(False, f"{who}'s leader-election Lease {where} does not exist")
    spec = lease.get("spec") or {}
    holder = spec.get("holderIdentity") or ""
    duration = spec.get("leaseDurationSeconds")
    renewed = _seconds(spec.get("renewTime"))
    if not holder or renewed is None or not isinstance(duration, int):
        return Verdict(False, f"{who}'s Lease {where} has no holder or no renewal")
    age = now - renewed
    if age > duration:
        return Verdict(
            False,
            f"{who}'s Lease {where} was last renewed {age:.0f}s ago by {holder}, "
            f"longer than its {duration}s duration: no replica leads",
        )
    return Verdict(True, f"{who} leads: Lease {where} renewed {max(age, 0):.1f}s ago by {holder}")


def _seconds(stamp: Any) -> float | None:
    """A Kubernetes (Micro)Time as epoch seconds, or None."""
    if not isinstance(stamp, str) or not stamp:
        return None
    try:
        return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


# --- the operator moving the agents itself ---------------------------------------------

#: The config's status condition the gpu-fractioning operator sets while a driver upgrade
#: moves the agents (kai-gpu-fractioning ``api/v1alpha1/gpufractioningconfig_types.go``:
#: "Known condition types: FractiondReady, MpsdReady, Ready, DriverUpgradeInProgress").
DRIVER_UPGRADE_CONDITION = "DriverUpgradeInProgress"

#: The GPU Operator's per-node driver upgrade state (NVIDIA/k8s-operator-libs
#: ``pkg/upgrade``: ``nvidia.com/%s-driver-upgrade-state`` with driver type ``gpu``).
DRIVER_UPGRADE_LABEL = "nvidia.com/gpu-driver-upgrade-state"

#: The states in which no upgrade is under way: none yet ("") and ``upgrade-done``.
#: Every other state, ``upgrade-failed`` included, is one the GPU Operator counts as
#: incomplete (NVIDIA/gpu-operator ``isIncompleteDriverUpgradeState``).
SETTLED_UPGRADE_STATES = frozenset({"", "upgrade-done"})


def driver_upgrades(
    live: Obj | None, nodes: dict[str, dict[str, str]], selected: set[str]
) -> list[str]:
    """What says a driver upgrade moves the agents now, one line each (empty: nothing).

    Args:
        live: the live fractioning config (its status conditions are read).
        nodes: every node's labels.
        selected: the nodes the live config selects.
    """
    out: list[str] = []
    for c in ((live or {}).get("status") or {}).get("conditions") or []:
        if c.get("type") == DRIVER_UPGRADE_CONDITION and c.get("status") == "True":
            why = ": ".join(str(x) for x in (c.get("reason"), c.get("message")) if x)
            why = why or "no reason"
            out.append(f"the live config reports {DRIVER_UPGRADE_CONDITION}=True ({why})")
    for name in sorted(selected):
        state = nodes.get(name, {}).get(DRIVER_UPGRADE_LABEL, "")
        if state not in SETTLED_UPGRADE_STATES:
            out.append(f"node {name}: {DRIVER_UPGRADE_LABEL}={state}")
    return out
