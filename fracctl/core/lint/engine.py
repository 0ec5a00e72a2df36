"""Running the registered rules over parsed manifests, with ``lint.disable`` and suppressions.

Rules the configuration disables are not run. An object with several pod templates
(a PyTorchJob's replica types, a RayCluster's head and worker groups, a JobSet's
replicated jobs) is judged once per template, each finding pointing into its own
template; a finding on the object itself, the same from each template, is kept
once. A finding from a manifest-at-a-time rule is silenced when the manifest's
``fracctl.io/ignore`` names its rule with a reason; findings come back in input
order, then by rule id.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from fracctl.core.fractions.fractional import Fractions, PrefixError
from fracctl.core.kube.podspec import PodTemplate, pod_templates
from fracctl.core.lint.base import Finding, LintRule, LintSettings, Manifest
from fracctl.core.lint.registry import rule_named, rules
from fracctl.core.lint.suppression import suppressions


def target_in(objects: Sequence[Any], settings: LintSettings) -> Mapping[str, Any] | None:
    """The fractioning config among the manifests, if they hold it."""
    t = settings.target
    for obj in objects:
        if (
            isinstance(obj, Mapping)
            and obj.get("kind") == t.kind
            and str(obj.get("apiVersion", "")).split("/")[0] == t.group
        ):
            return obj
    return None


def fractions_in(objects: Sequence[Any], settings: LintSettings) -> Fractions:
    """How fractional pods are recognised in these manifests.

    KAI's annotations, the agents' keys under the prefix of the fractioning config among
    the manifests and under each default, and the additions. A config whose prefix no
    key can start with counts with the agents' default.
    """
    t = settings.target
    target = target_in(objects, settings)
    try:
        return Fractions.of(
            settings.pods.fraction_annotations, t.naming, desired=target, kind=f"{t.kind}/{t.name}"
        )
    except PrefixError:
        return Fractions.of(settings.pods.fraction_annotations, t.naming, kind=f"{t.kind}/{t.name}")


def _templates_or_none(obj: Mapping[str, Any]) -> Sequence[PodTemplate | None]:
    """Each pod template of an object; ``[None]`` for an object without one."""
    return pod_templates(obj) or [None]


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
    fr = fractions_in(objects, settings)
    active = [r for r in rules() if r.id not in disabled]
    manifests = [
        Manifest(index, obj, template, settings, fr.matcher, fr.prefixes[0])
        for index, obj in enumerate(objects)
        if isinstance(obj, Mapping)
        for template in _templates_or_none(obj)
    ]
    out: list[Finding] = []
    for m in manifests:
        out.extend(_check_one(m, active))
    out = list(dict.fromkeys(out))  # an object's own finding, once whatever its templates
    for r in active:
        if r.across is not None:
            out.extend(
                Finding(r, message, index, path)
                for index, message, path in r.across(manifests, settings)
            )
    return sorted(out, key=lambda f: (f.index, f.rule.id))
