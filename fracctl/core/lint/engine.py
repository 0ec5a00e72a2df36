"""Running the registered rules over parsed manifests, with ``lint.disable`` and suppressions.

Rules the configuration disables are not run. A finding from a manifest-at-a-time
rule is silenced when the manifest's ``fracctl.io/ignore`` names its rule with a
reason; findings come back in input order, then by rule id.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from fracctl.core.fractional import AnnotationMatcher
from fracctl.core.lint.base import Finding, LintRule, LintSettings, Manifest
from fracctl.core.lint.registry import rule_named, rules
from fracctl.core.lint.suppression import suppressions
from fracctl.core.podspec import pod_template


def _check_one(m: Manifest, active: Sequence[LintRule]) -> list[Finding]:
    reasons, _ = suppressions(m.obj, m.template)
    out: list[Finding] = []
    for r in active:
        if r.each is None:
            continue
        for message, path in r.each(m):
            f = Finding(r, message, m.index, path)
            reason = reasons.get(r.id) if r.silenceable else None
            out.append(f.with_reason(reason) if reason else f)
    return out


def check(objects: Sequence[Any], settings: LintSettings) -> list[Finding]:
    """Run every rule on every manifest; suppressed findings come back with their reason.

    Args:
        objects: the parsed manifests, in input order (finding indexes refer to it);
            anything that is not a mapping is skipped.
        settings: the policy.

    Returns:
        The findings, in input order, then by rule.
    """
    disabled = {r.id for r in (rule_named(d) for d in settings.lint.disable) if r is not None}
    matcher = AnnotationMatcher.compile(settings.pods.fraction_annotations)
    active = [r for r in rules() if r.id not in disabled]
    manifests = [
        Manifest(index, obj, pod_template(obj), settings, matcher)
        for index, obj in enumerate(objects)
        if isinstance(obj, Mapping)
    ]
    out: list[Finding] = []
    for m in manifests:
        out.extend(_check_one(m, active))
    for r in active:
        if r.across is not None:
            out.extend(
                Finding(r, message, index, path)
                for index, message, path in r.across(manifests, settings)
            )
    return sorted(out, key=lambda f: (f.index, f.rule.id))
