"""The fractional-pod scan: every unfinished pod of the cluster, and which are fractional.

The pods are read in pages, as protobuf where the server sends it, each cut down to what
the classification reads (:mod:`fracctl.adapters.kube.podpage`); the fractional ones are
kept with their node, for the guard and the drain.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from fracctl.core.fractions.fractional import (
    FINISHED_PHASES,
    Fractions,
    PodKind,
    PrefixError,
    classify_pod,
    unfinished_selector,
)
from fracctl.core.recreate.blast import PodRef
from fracctl.errors import ConfigError
from fracctl.flows.context import Context


@dataclass(frozen=True)
class ScannedPod:
    """A fractional or reservation pod found by the scan."""

    namespace: str
    name: str
    node: str | None
    keys: tuple[str, ...]

    @property
    def ref(self) -> PodRef:
        """``namespace/name``."""
        return PodRef(self.namespace, self.name)

    def to_dict(self) -> dict[str, Any]:
        """Plain data for ``-o json``."""
        return {
            "namespace": self.namespace,
            "name": self.name,
            "node": self.node,
            "keys": list(self.keys),
        }


@dataclass
class FractionalScan:
    """The result of the cluster-wide scan."""

    pods: list[ScannedPod] = field(default_factory=list)  # fractional workloads
    reservations: list[ScannedPod] = field(default_factory=list)  # KAI's own placeholders
    scanned: int = 0  # unfinished pods looked at
    pages: int = 0
    fractions: Fractions | None = None  # how a pod was judged fractional

    def by_node(self) -> dict[str, list[PodRef]]:
        """Fractional pods grouped by the node they run on."""
        out: dict[str, list[PodRef]] = {}
        for p in self.pods:
            if p.node:
                out.setdefault(p.node, []).append(p.ref)
        return out

    def to_dict(self) -> dict[str, Any]:
        """Plain data for ``-o json``."""
        return {
            "scanned": self.scanned,
            "pages": self.pages,
            "fractional": [p.to_dict() for p in self.pods],
            "reservations": [p.to_dict() for p in self.reservations],
            "prefixes": [p.to_dict() for p in self.fractions.prefixes] if self.fractions else [],
        }


#: ``live=READ``: read the live config for its annotation prefix.
READ: Final[Any] = object()


def fractions(
    ctx: Context, *, live: Mapping[str, Any] | None = READ, desired: Mapping[str, Any] | None = None
) -> Fractions:
    """How fractional pods are recognised here.

    KAI's annotations, the agents' keys under the live config's and git's annotation
    prefix and each default, and the additions.

    Args:
        ctx: the I/O context.
        live: the live config (``READ``: read it now; ``None``: there is none).
        desired: git's config, when known.

    Raises:
        ConfigError: a pattern in ``pods.fraction_annotations`` or a config's prefix is
            unusable (exit 2).
    """
    t = ctx.config.target
    if live is READ:
        live = ctx.kube.get_or_none(t.ref, t.name)
    try:
        return Fractions.of(
            ctx.config.pods.fraction_annotations,
            t.naming,
            live=live,
            desired=desired,
            kind=f"{t.kind}/{t.name}",
        )
    except PrefixError as e:
        raise ConfigError(str(e)) from None
    except ValueError as e:
        raise ConfigError(f"pods.fraction_annotations: {e}") from None


def scan_fractional_pods(ctx: Context, fr: Fractions | None = None) -> FractionalScan:
    """Find every unfinished fractional pod in the cluster, and KAI's reservation pods.

    One paged list of the pods of every namespace (``pods.page_size`` a page), finished
    pods left out by a field selector. Each pod is read only for its name, namespace,
    annotations and node (:meth:`~fracctl.adapters.kube.Kube.pod_pages`), so the scan
    needs no request per matching pod and keeps up with the API server. ``fr`` says which pods are
    fractional (:func:`fractions` of the live config when not given).
    """
    fr = fr or fractions(ctx)
    m = fr.matcher
    reservation_ns = ctx.config.pods.reservation_namespace
    scan = FractionalScan(fractions=fr)
    for page in ctx.kube.pod_pages(
        field_selector=unfinished_selector(), limit=ctx.config.pods.page_size
    ):
        scan.pages += 1
        scan.scanned += len(page.pods)
        for pod in page.pods:
            verdict = classify_pod(
                pod.namespace, pod.annotations, m, reservation_namespace=reservation_ns
            )
            if verdict.kind is PodKind.OTHER or pod.phase in FINISHED_PHASES:
                continue
            found = ScannedPod(pod.namespace, pod.name, pod.node or None, verdict.keys)
            (scan.pods if verdict.kind is PodKind.FRACTIONAL else scan.reservations).append(found)
    return scan
