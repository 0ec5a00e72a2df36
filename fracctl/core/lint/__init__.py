"""Manifest rules for GPU scheduling: the mistakes a reviewer misses, caught before merge.

Pure functions: parsed manifests and settings in, findings out. Each rule has an id,
a name, a severity and a one-line summary; ``runbooks/lint-rules.md`` explains each
(a test keeps the two in step). A manifest may silence a rule for itself with the
annotation ``fracctl.io/ignore: "FL007 runs a root init step, reviewed in #123"``
(one entry a line; ``FL007,FL008 reason`` silences two rules with one reason); a
suppression without a reason is a finding of its own.

Nothing here trusts the shape of a document: a value of an unexpected type reads as
absent, so an unknown kind or a half-written manifest never crashes a rule. Each
rule is one declaration in the module of its group (:mod:`.pods`, :mod:`.fractions`,
:mod:`.configs`, :mod:`.images`, :mod:`.suppression`), registered in
:mod:`.registry`; importing this package imports every rule module.
"""

from __future__ import annotations

# The rule modules: importing them registers their rules.
from fracctl.core.lint import configs, fractions, images, pods, suppression
from fracctl.core.lint.base import (
    ERROR,
    IGNORE_ANNOTATION,
    MULTI_VENDOR_ANNOTATION,
    WARNING,
    Finding,
    LintRule,
    LintSettings,
    Manifest,
    object_name,
)
from fracctl.core.lint.engine import check
from fracctl.core.lint.registry import BY_ID, BY_NAME, rule, rule_across, rule_named, rules
from fracctl.core.lint.reports import (
    RULES_DOC,
    SARIF_SCHEMA,
    LintReport,
    Located,
    summary,
    to_github,
    to_sarif,
)
from fracctl.core.lint.suppression import suppressions

RULES: tuple[LintRule, ...] = rules()

__all__ = [
    "BY_ID",
    "BY_NAME",
    "ERROR",
    "IGNORE_ANNOTATION",
    "MULTI_VENDOR_ANNOTATION",
    "RULES",
    "RULES_DOC",
    "SARIF_SCHEMA",
    "WARNING",
    "Finding",
    "LintReport",
    "LintRule",
    "LintSettings",
    "Located",
    "Manifest",
    "check",
    "configs",
    "fractions",
    "images",
    "object_name",
    "pods",
    "rule",
    "rule_across",
    "rule_named",
    "rules",
    "summary",
    "suppression",
    "suppressions",
    "to_github",
    "to_sarif",
]
