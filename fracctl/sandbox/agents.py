"""The node agents' DaemonSets as the gpu-fractioning operator renders them from the config.

From kai-scheduler/gpu-fractioning (``operator/internal/common/daemonmgr``, commit
23ad945): each daemon is a DaemonSet ``gpu-fractioning-<component>`` in the operator's
namespace, labelled ``app.kubernetes.io/managed-by: gpu-fractioning`` and
``app.kubernetes.io/component: <component>`` (its selector and its pods' labels too);
the pods select the config's ``spec.nodeSelector``, tolerate its ``spec.tolerations``
and run with its ``spec.runtimeClassName`` (``nvidia`` when unset, none when empty);
``mpsd`` gets ``terminationGracePeriodSeconds`` 75 (the 60 s graceful stop delay plus
15 s); the config is the DaemonSets' controller owner, so deleting it garbage-collects
them. The images are this simulation's.

The pod template also carries KWOK's stage annotations: how long the simulated daemons
take to start (``delay``), in place of the real images' start-up.
"""

from __future__ import annotations

from typing import Any

MANAGED_BY = "app.kubernetes.io/managed-by"
MANAGED_BY_VALUE = "gpu-fractioning"
COMPONENT = "app.kubernetes.io/component"
PREFIX = "gpu-fractioning-"
IMAGE = "fracctl.local/operator-simulation/{component}:1"  # names what runs: a simulation
GRACE = {"mpsd": 75}  # mpsd.go: defaultGracefulStopDelay 60s + terminationGraceBuffer 15s

#: The label selector of every agent pod (patchNodeConditions lists them by it).
POD_SELECTOR = f"{MANAGED_BY}={MANAGED_BY_VALUE}"


def component_of(daemonset: str) -> str:
    """``mpsd`` for ``gpu-fractioning-mpsd``."""
    return daemonset.removeprefix(PREFIX)


def owner_reference(config: dict[str, Any]) -> dict[str, Any]:
    """The controller reference controller-runtime's SetControllerReference writes."""
    meta = config["metadata"]
    return {
        "apiVersion": config["apiVersion"],
        "kind": config["kind"],
        "name": meta["name"],
        "uid": meta["uid"],
        "controller": True,
        "blockOwnerDeletion": True,
    }


def kwok_delays(delay: float) -> dict[str, str]:
    """KWOK's pod stages take ``delay`` to start the pod and report it Ready at once.

    KWOK returns the jitter when it is not above the delay, so both are the same value.
    """
    start = f"{max(delay, 0.0):g}s"
    return {
        "pod-create.stage.kwok.x-k8s.io/delay": start,
        "pod-create.stage.kwok.x-k8s.io/jitter-delay": start,
        "pod-ready.stage.kwok.x-k8s.io/delay": "0s",
        "pod-ready.stage.kwok.x-k8s.io/jitter-delay": "0s",
    }


def daemonset(
    name: str, namespace: str, config: dict[str, Any], *, delay: float = 1.0
) -> dict[str, Any]:
    """The DaemonSet ``name`` as the operator renders it for ``config``."""
    component = component_of(name)
    labels = {MANAGED_BY: MANAGED_BY_VALUE, COMPONENT: component}
    spec = config.get("spec") or {}
    pod: dict[str, Any] = {
        "nodeSelector": dict(spec.get("nodeSelector") or {}),
        "tolerations": list(spec.get("tolerations") or []),
        "containers": [{"name": component, "image": IMAGE.format(component=component)}],
    }
    runtime_class = spec.get("runtimeClassName", "nvidia")
    if runtime_class:
        pod["runtimeClassName"] = runtime_class
    if component in GRACE:
        pod["terminationGracePeriodSeconds"] = GRACE[component]
    return {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "labels": labels,
            "ownerReferences": [owner_reference(config)],
        },
        "spec": {
            "selector": {"matchLabels": labels},
            "updateStrategy": {"type": "RollingUpdate"},
            "template": {
                "metadata": {"labels": labels, "annotations": kwok_delays(delay)},
                "spec": pod,
            },
        },
    }


def controller_uid(obj: dict[str, Any]) -> str | None:
    """The uid of ``obj``'s controller owner, if it has one."""
    for ref in (obj.get("metadata") or {}).get("ownerReferences") or []:
        if ref.get("controller"):
            return str(ref.get("uid"))
    return None


def pod_ready(pod: dict[str, Any]) -> bool:
    """The pod's Ready condition is True (the operator's isPodReady)."""
    return any(
        c.get("type") == "Ready" and c.get("status") == "True"
        for c in (pod.get("status") or {}).get("conditions") or []
    )


def failure_reason(pod: dict[str, Any]) -> str:
    """Why an agent pod is not ready, as the operator's podFailureReason words it."""
    status = pod.get("status") or {}
    for key in ("initContainerStatuses", "containerStatuses"):
        for cs in status.get(key) or []:
            reason = ((cs.get("state") or {}).get("waiting") or {}).get("reason")
            if reason:
                return str(reason)
    return {"Pending": "Pending", "Failed": "Failed"}.get(str(status.get("phase")), "NotReady")
