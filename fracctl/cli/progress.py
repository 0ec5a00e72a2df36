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

        from fracctl.core.nodes import describe_condition, is_ready

        ready = sum(1 for o in nodes.values() if is_ready(o, self.condition))
        table = Table(title=f"{ready}/{len(nodes)} nodes ready", title_justify="left")
        table.add_column("node")
        table.add_column(self.condition)
        for name in sorted(nodes):
            text = describe_condition(nodes[name], self.condition)
            table.add_row(name, Text(text, style="green" if text.startswith("True") else "yellow"))
        self.live.update(table)

    def stop(self) -> None:
        """Leave the last table on screen."""
        self.live.stop()
