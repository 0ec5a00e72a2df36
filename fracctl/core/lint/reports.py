"""Lint's reports: findings placed in their files, and the SARIF and GitHub forms of them.

SARIF lists every registered rule (id, name, summary, severity, and its section of
``runbooks/lint-rules.md``) and points each result at its rule; GitHub workflow
commands annotate each active finding and close with a one-line summary.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from fracctl.core.lint.base import ERROR, Finding, LintRule
from fracctl.core.lint.registry import rules as registered

SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
RULES_DOC = "runbooks/lint-rules.md"


@dataclass
class Located:
    """A finding with the place it points at."""

    finding: Finding
    file: str
    line: int
    object: str

    @property
    def rule(self) -> LintRule:
        """The rule broken."""
        return self.finding.rule

    def to_dict(self) -> dict[str, Any]:
        """Plain data for ``-o json``."""
        return {
            "rule": self.rule.id,
            "name": self.rule.name,
            "severity": self.rule.severity,
            "message": self.finding.message,
            "file": self.file,
            "line": self.line,
            "object": self.object,
            "field": self.finding.path,
            "suppressed": self.finding.suppressed,
        }


@dataclass
class LintReport:
    """Every finding over every input."""

    findings: list[Located] = field(default_factory=list)
    files: int = 0
    objects: int = 0

    @property
    def active(self) -> list[Located]:
        """Findings that are not suppressed."""
        return [f for f in self.findings if f.finding.suppressed is None]

    @property
    def errors(self) -> list[Located]:
        """Active error-level findings (any makes the exit code 1)."""
        return [f for f in self.active if f.rule.severity == ERROR]

    @property
    def ok(self) -> bool:
        """No active error-level finding."""
        return not self.errors

    def to_dict(self) -> dict[str, Any]:
        """Plain data for ``-o json``."""
        return {
            "ok": self.ok,
            "files": self.files,
            "objects": self.objects,
            "errors": len(self.errors),
            "warnings": len(self.active) - len(self.errors),
            "suppressed": len(self.findings) - len(self.active),
            "findings": [f.to_dict() for f in self.findings],
        }


def _sarif_result(f: Located, index: dict[str, int]) -> dict[str, Any]:
    result: dict[str, Any] = {
        "ruleId": f.rule.id,
        "ruleIndex": index[f.rule.id],
        "level": f.rule.severity,
        "message": {"text": f"{f.object}: {f.finding.message}"},
        "locations": [
            {
                "physicalLocation": {
                    "artifactLocation": _artifact(f.file),
                    "region": {"startLine": max(1, f.line)},
                },
                "logicalLocations": [{"name": f.object, "kind": "resource"}],
            }
        ],
    }
    if f.finding.suppressed is not None:
        result["suppressions"] = [{"kind": "inSource", "justification": f.finding.suppressed}]
    return result


def _sarif_rule(r: LintRule) -> dict[str, Any]:
    return {
        "id": r.id,
        "name": r.name,
        "shortDescription": {"text": r.summary},
        "help": {"text": f"{RULES_DOC}, section {r.id} {r.name}"},
        "defaultConfiguration": {"level": r.severity},
    }


def to_sarif(
    report: LintReport, *, version: str, rules: Iterable[LintRule] | None = None
) -> dict[str, Any]:
    """The report as a SARIF 2.1.0 log (for code-scanning upload); every rule by default."""
    listed = list(registered() if rules is None else rules)
    index = {r.id: i for i, r in enumerate(listed)}
    return {
        "$schema": SARIF_SCHEMA,
        "version": "2.1.0",
        "runs": [
            {
                "tool": {
                    "driver": {
                        "name": "fracctl",
                        "version": version,
                        "rules": [_sarif_rule(r) for r in listed],
                    }
                },
                "columnKind": "utf16CodeUnits",
                "results": [_sarif_result(f, index) for f in report.findings],
            }
        ],
    }


def _artifact(file: str) -> dict[str, Any]:
    # A stream (standard input) has no path: it is described, not addressed.
    if _is_stream(file):
        return {"description": {"text": "standard input"}}
    return {"uri": file}


def _is_stream(file: str) -> bool:
    return file.startswith("<") and file.endswith(">")


def to_github(report: LintReport) -> str:
    """One ``::error``/``::warning`` workflow command per active finding, then a notice."""
    from fracctl.core.drift.report import annotation

    lines = [
        annotation(
            f.rule.severity,
            f"{f.object}: {f.finding.message}",
            title=f"fracctl lint {f.rule.id} {f.rule.name}",
            file="" if _is_stream(f.file) else f.file,
            line=f.line,
        )
        for f in report.active
    ]
    lines.append(annotation("notice", summary(report), title="fracctl lint"))
    return "\n".join(lines) + "\n"


def summary(report: LintReport) -> str:
    """``2 error(s), 1 warning(s), 1 suppressed in 5 object(s) from 3 file(s)``."""
    errors = len(report.errors)
    return (
        f"{errors} error(s), {len(report.active) - errors} warning(s), "
        f"{len(report.findings) - len(report.active)} suppressed in {report.objects} "
        f"object(s) from {report.files} input(s)"
    )
