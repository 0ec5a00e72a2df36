"""``fracctl drift``: does the live cluster hold what git wants, and can it get there?

Each object is judged by its live state and two dry runs of the API server: would it
accept the desired object at all, and where live and desired differ, would it accept
the update (:mod:`~fracctl.flows.drift.judge`). The objects come from a rendering
(:mod:`~fracctl.flows.drift.checks`) or from an Argo CD application, whose claims a
report can carry (:mod:`~fracctl.flows.drift.argocd`); :mod:`~fracctl.flows.drift.command`
is the command's flow. Every public name is importable from here.
"""

from __future__ import annotations

from fracctl.flows.drift.argocd import SYNCED_BUT_DIFFERS, check_app
from fracctl.flows.drift.checks import check_objects, check_target
from fracctl.flows.drift.command import exit_code, run, summary_line
from fracctl.flows.drift.items import Obj
from fracctl.flows.drift.judge import JUDGE_THREADS

__all__ = [
    "JUDGE_THREADS",
    "SYNCED_BUT_DIFFERS",
    "Obj",
    "check_app",
    "check_objects",
    "check_target",
    "exit_code",
    "run",
    "summary_line",
]
