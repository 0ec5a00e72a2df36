"""How every cluster of a running fleet stands, as the clusters' flows report it.

:class:`FleetProgress` is what a fleet run reports to: a cluster's state, a line it
said, its nodes ready. :class:`PlainFleetProgress` writes a line on stderr per change,
each naming its cluster (the default off a terminal). The two adapters below it turn a
member's console and node progress into such reports.
"""

from __future__ import annotations

import io
import threading
from collections.abc import Callable, Sequence
from typing import Any, Protocol

from fracctl.flows.context import Context
from fracctl.flows.fleet.membership import Member


class FleetProgress(Protocol):
    """Shows how every cluster of the fleet stands."""

    def start(self, fleet: Sequence[Member]) -> None:
        """The clusters about to run."""

    def update(
        self,
        cluster: str,
        *,
        state: str | None = None,
        note: str | None = None,
        nodes: tuple[int, int] | None = None,
    ) -> None:
        """A cluster moved to ``state``, said ``note``, or has ``nodes`` (ready, total)."""

    def stop(self) -> None:
        """The run ended."""


class PlainFleetProgress:
    """A line on stderr per change, each naming its cluster (the default off a terminal)."""

    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx
        self.lock = threading.Lock()
        self.nodes: dict[str, tuple[int, int]] = {}

    def start(self, fleet: Sequence[Member]) -> None:
        """Nothing to draw before the first change."""

    def update(
        self,
        cluster: str,
        *,
        state: str | None = None,
        note: str | None = None,
        nodes: tuple[int, int] | None = None,
    ) -> None:
        """One line for a note or a change in nodes ready; states are shown by notes."""
        with self.lock:
            if note is not None:
                self.ctx.info(f"[{cluster}] {note}")
            if nodes is not None and self.nodes.get(cluster) != nodes:
                self.nodes[cluster] = nodes
                self.ctx.info(f"[{cluster}] nodes ready {nodes[0]}/{nodes[1]}")

    def stop(self) -> None:
        """Nothing to tear down."""


class Lines(io.TextIOBase):
    """A text stream that hands each complete line to ``emit`` (a member's console)."""

    def __init__(self, emit: Callable[[str], None]) -> None:
        super().__init__()
        self.emit = emit
        self.buffer_ = ""

    def writable(self) -> bool:
        """A text stream one can write to."""
        return True

    def write(self, text: str) -> int:
        """Emit each complete line of ``text``; keep the rest for the next write."""
        self.buffer_ += text
        while "\n" in self.buffer_:
            line, self.buffer_ = self.buffer_.split("\n", 1)
            if line.strip():
                self.emit(line.rstrip())
        return len(text)


class MemberNodes:
    """A member's node progress: readiness counts go to the fleet's progress."""

    def __init__(self, progress: FleetProgress, cluster: str, condition: str) -> None:
        self.progress = progress
        self.cluster = cluster
        self.condition = condition

    def show(self, nodes: dict[str, Any]) -> None:
        """Show how many of the member's ``nodes`` are ready."""
        from fracctl.core.kube.nodes import is_ready

        ready = sum(1 for o in nodes.values() if is_ready(o, self.condition))
        self.progress.update(self.cluster, nodes=(ready, len(nodes)))

    def stop(self) -> None:
        """The fleet's progress outlives one wait."""
