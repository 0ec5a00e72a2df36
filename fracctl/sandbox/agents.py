"""The node agents' DaemonSets as the gpu-fractioning operator renders them from the config.

From kai-scheduler/gpu-fractioning (``operator/internal/common/daemonmgr``, commit
23ad945): each daemon is a DaemonSet ``gpu-fractioning-<component>`` in the operator's
namespace, labelled ``app.kubernetes.io/managed-by: gpu-fractioning`` and
``app.kubernetes.io/component: <component>`` (its selector and its pods' labels too);
the pods select the config's ``spec.nodeSelector``, tolerate its ``spec.tolerations``
and run with its ``spec.runtimeClassName`` (``nvidia`` when unset, none when empty;
fractiond only while ``metricsAgent.enabled``); ``mpsd`` gets
``terminationGracePeriodSeconds`` of its graceful stop delay plus 15 s (75 by default);
the config is the DaemonSets' controller owner, so deleting it garbage-collects them.
The images are this simulation's.

Every other field that upstream writes into a daemon's pod template
(:data:`fracctl.core.fractions.daemons.FIELDS`) is rendered as a container argument
``--<field>=<value>`` of the daemons it reaches, and the template carries a hash of the
whole rendered pod spec (:data:`TEMPLATE_HASH`), as upstream's template changes with
them: a change of exactly those fields rolls exactly those daemons (``RollingUpdate``).

The pod template also carries KWOK's stage annotations: how long the simulated daemons
take to start (``delay``), in place of the real images' start-up.
"""

from __future__ import annotations

import hashlib
import json
import re
from typing import Any

from fracctl.core.drift.immutability import get_path
from fracctl.core.fractions.daemons import FRACTIOND, MPSD, rolled_fields

MANAGED_BY = "app.kubernetes.io/managed-by"
MANAGED_BY_VALUE = "gpu-fractioning"
COMPONENT = "app.kubernetes.io/component"
PREFIX = "gpu-fractioning-"
IMAGE = "fracctl.local/operator-simulation/{component}:1"  # names what runs: a simulation
GRACE_BUFFER = 15  # mpsd.go: terminationGraceBuffer, added to the graceful stop delay
DEFAULT_STOP_DELAY = 60  # mpsd.go: defaultGracefulStopDelay
#: A hash of the rendered pod spec, on the template: it changes whenever the rendering does.
TEMPLATE_HASH = "sandbox.fracctl.io/template-hash"
#: Fields rendered other than as an argument (the pod spec's own fields).
_OWN_FIELDS = ("spec.nodeSelector", "spec.tolerations", "spec.runtimeClassName")

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
    spec = _spec(config)
    container: dict[str, Any] = {"name": component, "image": IMAGE.format(component=component)}
    args = _args(spec, component)
    if args:
        container["args"] = args
    pod: dict[str, Any] = {
        "nodeSelector": dict(spec.get("nodeSelector") or {}),
        "tolerations": list(spec.get("tolerations") or []),
        "containers": [container],
    }
    runtime_class = spec.get("runtimeClassName", "nvidia")
    metrics_on = bool((spec.get("metricsAgent") or {}).get("enabled"))
    if runtime_class and (component != FRACTIOND or metrics_on):
        pod["runtimeClassName"] = runtime_class
    if component == MPSD:
        stop_delay = get_path(spec, "mpsDaemon.gracefulStopDelay")
        pod["terminationGracePeriodSeconds"] = _seconds(stop_delay) + GRACE_BUFFER
    annotations = {**kwok_delays(delay), TEMPLATE_HASH: _hash(pod)}
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
                "metadata": {"labels": labels, "annotations": annotations},
                "spec": pod,
            },
        },
    }


def _spec(config: dict[str, Any]) -> dict[str, Any]:
    """The config's spec, the older generation's ``sharingAgent`` read as the agent's."""
    spec = dict(config.get("spec") or {})
    if "sharingAgent" in spec and "fractioningAgent" not in spec:
        spec["fractioningAgent"] = spec.pop("sharingAgent")
    return spec


def _args(spec: dict[str, Any], component: str) -> list[str]:
    """``--<field>=<value>`` for each set field that reaches ``component``'s template."""
    out = []
    for path in rolled_fields(component):
        if path in _OWN_FIELDS:
            continue
        value = get_path(spec, path.removeprefix("spec."))
        if value is not None:
            out.append(f"--{path.removeprefix('spec.')}={json.dumps(value, sort_keys=True)}")
    return out


def _seconds(duration: Any) -> int:
    """Whole seconds of a Go duration such as ``60s`` or ``1m30s`` (the default when unset)."""
    if not isinstance(duration, str) or not duration:
        return DEFAULT_STOP_DELAY
    scale = {"h": 3600.0, "m": 60.0, "s": 1.0, "ms": 0.001}
    parts = re.findall(r"([0-9.]+)(ms|h|m|s)", duration)
    return int(sum(float(n) * scale[u] for n, u in parts)) if parts else DEFAULT_STOP_DELAY


def _hash(pod: dict[str, Any]) -> str:
    return hashlib.sha256(json.dumps(pod, sort_keys=True).encode()).hexdigest()[:10]


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
