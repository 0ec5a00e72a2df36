"""The probe's pod: what it asks for, and what its status says became of it.

It asks for a GPU fraction or GPU memory, on a pool, with tolerations; its status says
whether it ran, failed, or stayed pending, and in KAI's words why.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from enum import Enum
from typing import Any

from fracctl.config import Config
from fracctl.core.fractions.kai_words import NOT_READY
from fracctl.errors import UsageError

PROBE_LABEL = "fracctl.io/probe"


class PodFate(str, Enum):
    """What became of the probe pod (its words are what ``-o json`` says as "outcome")."""

    RUNNING = "running"  # scheduled and running on a node
    NOT_READY = "not-ready"  # Pending: KAI's readiness gate refused the pool
    UNSCHEDULABLE = "unschedulable"  # Pending for another reason
    FAILED = "failed"  # the pod failed
    SCHEDULED = "scheduled"  # bound to a node, not running in time
    TIMEOUT = "timeout"  # no scheduling decision in time


_MEMORY = re.compile(r"^\s*(\d+)\s*(Mi|Gi|Ti)?\s*$")


def memory_mib(text: str) -> int:
    """``4Gi`` -> 4096 (MiB, as the ``gpu-memory`` annotation wants); plain numbers are MiB.

    Raises:
        ValueError: not a positive binary quantity.
    """
    m = _MEMORY.match(text)
    if not m or int(m.group(1)) == 0:
        raise ValueError(f"expected a size like 4Gi or 4096Mi, got {text!r}")
    return int(m.group(1)) * {None: 1, "Mi": 1, "Gi": 1024, "Ti": 1024 * 1024}[m.group(2)]


def parse_memory(text: str) -> int:
    """:func:`memory_mib` of a ``--memory`` value.

    Raises:
        UsageError: not a positive binary quantity.
    """
    try:
        return memory_mib(text)
    except ValueError as e:
        raise UsageError(f"--memory: {e}") from None


def check_fraction(fraction: float) -> float:
    """A share of one GPU: between 0 and 1, both excluded.

    Raises:
        ValueError: out of range.
    """
    if not 0 < fraction < 1:
        raise ValueError(f"must be between 0 and 1 (exclusive), got {fraction:g}")
    return fraction


def fraction_request(*, memory: str | None, fraction: float | None) -> dict[str, str]:
    """The KAI annotation for the probe's share of a GPU.

    Raises:
        UsageError: neither or both given, or out of range.
    """
    if (memory is None) == (fraction is None):
        raise UsageError("give exactly one of --memory (e.g. 4Gi) or --fraction (e.g. 0.25)")
    if fraction is not None:
        try:
            check_fraction(fraction)
        except ValueError as e:
            raise UsageError(f"--fraction {e}") from None
        return {"gpu-fraction": f"{fraction:g}"}
    return {"gpu-memory": str(parse_memory(str(memory)))}


def toleration(spec: str) -> dict[str, str]:
    """``key[=value][:effect]`` -> a pod toleration (no value: any value)."""
    rest, _, effect = spec.strip().partition(":")
    key, eq, value = rest.partition("=")
    out = {"key": key, "operator": "Equal" if eq else "Exists"}
    if eq:
        out["value"] = value
    if not key:
        out.pop("key")
    if effect:
        out["effect"] = effect
    return out


def probe_pod(
    config: Config,
    *,
    name: str,
    request: Mapping[str, str],
    pool: Mapping[str, str],
    deadline_seconds: int,
) -> dict[str, Any]:
    """The probe: non-root, read-only, tiny, for the KAI scheduler, in the pool."""
    p = config.probe
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": p.namespace,
            "labels": {
                PROBE_LABEL: "true",
                "app.kubernetes.io/managed-by": "fracctl",
                p.queue_label: p.queue,
            },
            "annotations": dict(request),
        },
        "spec": {
            "schedulerName": p.scheduler_name,
            "restartPolicy": "Never",
            # A safety net if fracctl is killed outright: the kubelet ends the pod.
            "activeDeadlineSeconds": deadline_seconds,
            "terminationGracePeriodSeconds": 0,
            "automountServiceAccountToken": False,
            "enableServiceLinks": False,
            "nodeSelector": dict(pool),
            "tolerations": [toleration(t) for t in p.tolerations],
            "securityContext": {
                "runAsNonRoot": True,
                "runAsUser": p.run_as_user,
                "runAsGroup": p.run_as_user,
                "seccompProfile": {"type": "RuntimeDefault"},
            },
            "containers": [
                {
                    "name": "probe",
                    "image": p.image,
                    "command": ["sleep", str(deadline_seconds)],
                    "resources": {
                        "requests": {"cpu": "10m", "memory": "16Mi"},
                        "limits": {"memory": "16Mi"},
                    },
                    "securityContext": {
                        "allowPrivilegeEscalation": False,
                        "readOnlyRootFilesystem": True,
                        "capabilities": {"drop": ["ALL"]},
                    },
                }
            ],
        },
    }


def decide(pod: Mapping[str, Any]) -> tuple[PodFate, str, str] | None:
    """The probe's outcome from its status: ``(outcome, reason, message)``, or ``None``."""
    status = pod.get("status") or {}
    phase = status.get("phase")
    if phase in ("Running", "Succeeded"):
        return PodFate.RUNNING, phase, ""
    if phase == "Failed":
        return PodFate.FAILED, str(status.get("reason") or ""), str(status.get("message") or "")
    for c in status.get("conditions") or ():
        if c.get("type") == "PodScheduled" and c.get("status") == "False":
            reason, message = str(c.get("reason") or ""), str(c.get("message") or "")
            if NOT_READY in message:
                return PodFate.NOT_READY, reason, message
            if reason == "Unschedulable":
                return PodFate.UNSCHEDULABLE, reason, message
    return None
