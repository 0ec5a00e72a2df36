"""The one registry of lint rules: the decorators that declare a rule, and the lookups.

A rule module declares each rule once, on its judging function, with :func:`rule`
(one manifest at a time) or :func:`rule_across` (the whole input); the package
imports every rule module, so the registry is complete once ``fracctl.core.lint``
is imported. Everything that lists rules reads it: the run, ``lint.disable`` and
``fracctl.io/ignore``, ``--list-rules``, SARIF output and the runbook test. This
module imports no rule module.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from fracctl.core.lint.base import Across, Each, LintRule

_BY_ID: dict[str, LintRule] = {}
_BY_NAME: dict[str, LintRule] = {}
BY_ID: Mapping[str, LintRule] = _BY_ID
BY_NAME: Mapping[str, LintRule] = _BY_NAME


def register(r: LintRule) -> LintRule:
    """Add a rule; its id and its name must be new."""
    if r.id in _BY_ID or r.name in _BY_NAME:
        raise ValueError(f"lint rule {r.id} {r.name} is registered twice")
    _BY_ID[r.id] = r
    _BY_NAME[r.name] = r
    return r


def rule(
    id: str, name: str, severity: str, summary: str, *, silenceable: bool = True
) -> Callable[[Each], Each]:
    """Declare a rule that judges one manifest at a time.

    The decorated function takes a :class:`~fracctl.core.lint.base.Manifest` and
    yields ``(message, field path)`` for each finding. ``silenceable=False``: a
    manifest's ``fracctl.io/ignore`` cannot silence it.
    """

    def declare(each: Each) -> Each:
        register(LintRule(id, name, severity, summary, each=each, silenceable=silenceable))
        return each

    return declare


def rule_across(id: str, name: str, severity: str, summary: str) -> Callable[[Across], Across]:
    """Declare a rule over the whole input: it yields ``(index, message, field path)``."""

    def declare(across: Across) -> Across:
        register(LintRule(id, name, severity, summary, across=across, silenceable=False))
        return across

    return declare


def rules() -> tuple[LintRule, ...]:
    """Every rule, by id."""
    return tuple(sorted(_BY_ID.values(), key=lambda r: r.id))


def rule_named(text: str) -> LintRule | None:
    """A rule by its id (any case) or its name."""
    return _BY_ID.get(text.strip().upper()) or _BY_NAME.get(text.strip().lower())
