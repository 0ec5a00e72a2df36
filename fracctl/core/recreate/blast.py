"""Blast radius of recreating the fractioning config.

Deleting the config stops the node daemons (mpsd, fractiond) on every node the old
selector matches; creating it again starts them on every node the new one matches. A
node matched by both sees its daemons restart. Fractional pods on a node whose daemon
stops or restarts lose their MPS server, and with it their CUDA context. Where the
daemons go follows the selector alone, as the operator's does; a node the label policy
denies (by class or GPU product) is marked, so the plan shows it.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

from fracctl.core.kube.nodes import matches


class Effect(str, Enum):
    """What recreating does to a node's daemons."""

    RESTART = "restart"  # matched by the old and the new selector
    STOP = "stop"  # matched only by the old selector
    START = "start"  # matched only by the new selector


@dataclass(frozen=True)
class PodRef:
    """A pod, by namespace and name."""

    namespace: str
    name: str

    def __str__(self) -> str:
        return f"{self.namespace}/{self.name}"


@dataclass(frozen=True)
class BlastNode:
    """One node touched by the recreate, and the pods on it that lose their daemon."""

    name: str
    effect: Effect
    pods: tuple[PodRef, ...] = ()
    denied: bool = False  # the label policy denies this node fractions

    def __str__(self) -> str:
        return f"{self.name} (denied)" if self.denied else self.name


@dataclass(frozen=True)
class BlastRadius:
    """Every node whose daemons stop, restart or start, in name order."""

    nodes: tuple[BlastNode, ...] = field(default_factory=tuple)

    def _shown(self, effect: Effect) -> list[str]:
        return [str(n) for n in self.nodes if n.effect is effect]

    @property
    def pods(self) -> list[PodRef]:
        """The pods that would lose their GPU daemon."""
        return [p for n in self.nodes for p in n.pods]

    def summary(self) -> str:
        """One line: counts per effect and the pods hit."""
        if not self.nodes:
            return "no node matched by the old or the new selector"
        parts = []
        for effect, verb in (
            (Effect.RESTART, "restart"),
            (Effect.STOP, "stop"),
            (Effect.START, "start"),
        ):
            names = self._shown(effect)
            if names:
                shown = ", ".join(names[:5]) + (f" +{len(names) - 5}" if len(names) > 5 else "")
                parts.append(f"daemons {verb} on {len(names)} node(s) ({shown})")
        pods = self.pods
        parts.append(
            f"{len(pods)} fractional pod(s) lose their GPU daemon"
            + (": " + ", ".join(str(p) for p in pods[:5]) if pods else "")
            + (f" +{len(pods) - 5}" if len(pods) > 5 else "")
        )
        return "; ".join(parts)

    def to_dict(self) -> dict[str, Any]:
        """Plain data for ``-o json``."""
        return {
            "nodes": [
                {
                    "name": n.name,
                    "effect": n.effect.value,
                    "pods": [str(p) for p in n.pods],
                    "denied": n.denied,
                }
                for n in self.nodes
            ],
            "pods": [str(p) for p in self.pods],
        }


def blast_radius(
    nodes: Mapping[str, Mapping[str, str]],
    *,
    old: Mapping[str, str] | None,
    new: Mapping[str, str] | None,
    pods_by_node: Mapping[str, Sequence[PodRef]],
    denied: Collection[str] = (),
) -> BlastRadius:
    """The nodes a delete + recreate touches, and the pods that lose their daemon.

    Args:
        nodes: every node, ``name -> labels``.
        old: the live selector (``None`` when no config exists: nothing stops).
        new: the desired selector (``None`` when unknown: treated as selecting nothing).
        pods_by_node: the fractional pods running on each node.
        denied: the nodes the label policy denies fractions, marked in the result.

    Returns:
        The touched nodes; pods are listed only where a daemon stops or restarts.
    """
    out: list[BlastNode] = []
    for name in sorted(nodes):
        labels = nodes[name]
        was = old is not None and matches(old, labels)
        will = new is not None and matches(new, labels)
        if not (was or will):
            continue
        effect = Effect.RESTART if was and will else Effect.STOP if was else Effect.START
        pods = tuple(sorted(pods_by_node.get(name, ()), key=str)) if was else ()
        out.append(BlastNode(name, effect, pods, name in denied))
    return BlastRadius(tuple(out))
