"""The window a recreate opens, as ``benchmarks/bench_window.py`` last measured it.

The window is the time from the delete until every selected node reports ready again:
no fractional pod can be placed on those nodes in between. The bench writes its medians
per backend (and with ``--drain``) to the package's ``data/window.json``; the plan of
``recreate --dry-run`` quotes them for the chosen backend, labelled as a measurement on
the sandbox (KWOK nodes, the operator simulation), never as a promise for a cluster.
"""

from __future__ import annotations

import json
from importlib import resources
from typing import Any

DATA = "window.json"


def measured() -> dict[str, Any]:
    """The bench's last figures per backend (``{}`` when the file is absent or unreadable)."""
    try:
        text = resources.files("fracctl").joinpath("data").joinpath(DATA).read_text()
        data = json.loads(text)
    except (OSError, ValueError):
        return {}
    figures = data.get("backends") if isinstance(data, dict) else None
    return figures if isinstance(figures, dict) else {}


def expected(backend: str, *, drain: bool, figures: dict[str, Any] | None = None) -> str | None:
    """One line for the plan: the window last measured for ``backend``, or None.

    With ``drain`` the figure measured with ``--drain`` is quoted when there is one, else
    the backend's own with a note that the drain's evictions come on top.
    """
    figures = measured() if figures is None else figures
    way = f"{backend} --drain" if drain else backend
    entry, label, note = figures.get(way), way, ""
    if entry is None and drain:
        entry, label = figures.get(backend), backend
        note = "; the drain's evictions come before it"
    if not isinstance(entry, dict):
        return None
    try:
        window, mine = float(entry["window_s"]), float(entry["fracctl_s"])
        nodes, runs, on = int(entry["nodes"]), int(entry["runs"]), str(entry["measured_on"])
    except (KeyError, TypeError, ValueError):
        return None
    return (
        f"expected window: about {window:.1f}s without fractional scheduling on the selected "
        f"nodes (fracctl's own share {mine:.2f}s); measured on {on} on the sandbox "
        f"({label}, {nodes} KWOK node(s), median of "
        f"{runs} run(s)), not a promise for this cluster{note}"
    )
