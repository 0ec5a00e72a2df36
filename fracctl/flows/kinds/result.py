"""What ``recreate KIND/NAME`` did, or would do."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from fracctl.core.outcome import Outcome
from fracctl.core.procedures import Procedure, Refusal


@dataclass
class ObjectResult:
    """What ``recreate KIND/NAME`` did (or would do)."""

    key: str
    outcome: Outcome
    procedure: Procedure | None = None
    refusal: Refusal | None = None
    resumed: bool = False
    proofs: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    backup: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """Plain data for JSON output."""
        return {
            "object": self.key,
            "outcome": self.outcome,
            "procedure": self.procedure.to_dict() if self.procedure else None,
            "refusal": self.refusal.to_dict() if self.refusal else None,
            "resumed": self.resumed,
            "proofs": self.proofs,
            "notes": self.notes,
            "backup": self.backup,
        }
