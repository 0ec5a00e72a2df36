"""What a fleet run gave: each cluster's state and exit code, and the run's as a whole.

A cluster's result holds the single-cluster flow's own result (a drift or preflight
report, a recreate result) beside the state the summary shows and the exit code; a
failure in one cluster is that cluster's result, never an exception. The fleet's result
keeps the clusters in fleet order, exits with the worst of their codes, and for a
stopped rollout says where it stopped and which command resumes it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from fracctl.core.outcome import Outcome
from fracctl.errors import ExitCode
from fracctl.flows.fleet.membership import Member


@dataclass
class ClusterResult:
    """What one cluster's run gave: a state, its exit code, and the flow's own result."""

    member: Member
    state: Outcome
    exit_code: int = 0
    value: Any = None  # DriftReport, PreflightReport or RecreateResult
    error: str | None = None
    seconds: float = 0.0

    @property
    def name(self) -> str:
        """The cluster's name in reports."""
        return self.member.name

    def to_dict(self) -> dict[str, Any]:
        """Plain data for JSON output."""
        value = self.value.to_dict() if hasattr(self.value, "to_dict") else None
        return {
            **self.member.to_dict(),
            "state": self.state,
            "exit_code": self.exit_code,
            "error": self.error,
            "seconds": round(self.seconds, 2),
            "result": value,
        }


@dataclass
class FleetResult:
    """Every cluster's result, in fleet order, and what to run next (recreate)."""

    command: str
    results: list[ClusterResult] = field(default_factory=list)
    resume: str | None = None  # the command that resumes a stopped rollout
    stopped: str | None = None  # why a rollout stopped before every cluster ran
    seconds: float = 0.0
    audit_file: str | None = None
    interrupted: bool = False  # Ctrl-C or SIGTERM stopped the run

    @property
    def exit_code(self) -> int:
        """The worst of the clusters' exit codes (130 when the run was interrupted)."""
        worst = max((r.exit_code for r in self.results), default=0)
        return max(worst, int(ExitCode.INTERRUPTED)) if self.interrupted else worst

    def by_name(self) -> dict[str, ClusterResult]:
        """Results keyed by cluster name."""
        return {r.name: r for r in self.results}

    def to_dict(self) -> dict[str, Any]:
        """Plain data for JSON output: keyed by cluster."""
        return {
            "command": self.command,
            "exit_code": self.exit_code,
            "seconds": round(self.seconds, 2),
            "stopped": self.stopped,
            "resume": self.resume,
            "audit_file": self.audit_file,
            "clusters": {r.name: r.to_dict() for r in self.results},
        }
