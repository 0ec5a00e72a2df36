"""Live progress on a terminal: the nodes' readiness as a table that updates in place."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from fracctl.flows.context import Context


class LiveNodeTable:
    """One row per node with its readiness condition, redrawn as events arrive."""

    def __init__(self, ctx: Context, condition: str) -> None:
        from rich.live import Live

        self.condition = condition
        self.live = Live(console=ctx.err, refresh_per_second=4, transient=False)
        self.live.start()

    def show(self, nodes: dict[str, Any]) -> None:
        """Redraw the table for ``nodes``."""
        from rich.table import Table
        from rich.text import Text

        from fracctl.core.kube.nodes import describe_condition, is_ready

        ready = sum(1 for o in nodes.values() if is_ready(o, self.condition))
        table = Table(title=f"{ready}/{len(nodes)} nodes ready", title_justify="left")
        table.add_column("node")
        table.add_column(self.condition)
        for name in sorted(nodes):
            text = describe_condition(nodes[name], self.condition)
            table.add_row(name, Text(text, style="green" if text.startswith("True") else "yellow"))
        self.live.update(table, refresh=True)  # every change shows, however fast they come

    def stop(self) -> None:
        """Leave the last table on screen."""
        self.live.stop()


class LiveDrainTable:
    """The drain's evictions: totals, and a row per PodGroup still to go, redrawn."""

    def __init__(self, ctx: Context) -> None:
        from rich.live import Live

        self.live = Live(console=ctx.err, refresh_per_second=4, transient=False)
        self.live.start()

    def show(self, rows: list[tuple[str, int, int]], more: int, totals: str) -> None:
        """Redraw: ``rows`` are (PodGroup, pods, evicted so far)."""
        from rich.console import Group
        from rich.table import Table
        from rich.text import Text

        table = Table()
        table.add_column("PodGroup")
        table.add_column("pods", justify="right")
        table.add_column("evicted", justify="right")
        for label, pods, evicted in rows:
            table.add_row(label, str(pods), str(evicted))
        if more:
            table.add_row(f"… and {more} more PodGroup(s) to go", "", "")
        self.live.update(Group(Text(totals), table), refresh=True)

    def stop(self) -> None:
        """Leave the last table on screen."""
        self.live.stop()


class LiveFleetTable:
    """One row per cluster (state, nodes ready, last message), redrawn as they move."""

    def __init__(self, ctx: Context) -> None:
        import threading

        self.ctx = ctx
        self.rows: dict[str, dict[str, str]] = {}
        self.live: Any = None
        self.lock = threading.RLock()  # clusters report from several threads

    def start(self, fleet: Any) -> None:
        """Draw a row for each cluster of ``fleet`` and start redrawing."""
        from rich.live import Live

        for m in fleet:
            self.rows.setdefault(m.name, {"wave": str(m.wave), "state": "waiting"})
        if self.live is None:
            self.live = Live(console=self.ctx.err, refresh_per_second=4, transient=False)
            self.live.start()
        self._draw()

    def update(
        self,
        cluster: str,
        *,
        state: str | None = None,
        note: str | None = None,
        nodes: tuple[int, int] | None = None,
    ) -> None:
        """Change one cluster's row."""
        with self.lock:
            row = self.rows.setdefault(cluster, {"wave": "", "state": ""})
            if state is not None:
                row["state"] = state
            if note is not None:
                row["note"] = note
            if nodes is not None:
                row["nodes"] = f"{nodes[0]}/{nodes[1]}"
            self._draw()

    def _draw(self) -> None:
        from rich.table import Table
        from rich.text import Text

        if self.live is None:
            return
        table = Table(title="fleet", title_justify="left")
        for column in ("cluster", "wave", "step", "nodes ready", "last message"):
            table.add_column(column, overflow="ellipsis", no_wrap=True)
        for name, row in self.rows.items():
            table.add_row(
                Text(name),
                Text(row.get("wave", "")),
                Text(row.get("state", "")),
                Text(row.get("nodes", "")),
                Text(row.get("note", "")),
            )
        self.live.update(table, refresh=True)  # every change shows, however fast they come

    def stop(self) -> None:
        """Leave the last table on screen."""
        if self.live is not None:
            self.live.stop()
            self.live = None
