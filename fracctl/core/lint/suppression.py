"""Silencing a rule for one manifest with ``fracctl.io/ignore``, and the rule that checks it.

An entry is ``FL007 runs a root init step, reviewed in #123`` (one a line;
``FL007,FL008 reason`` silences two rules with one reason), on the object or on its
pod template. An entry without a reason, or naming no known rule, is a finding of
its own (FL000), which no entry can silence.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from fracctl.core.kube.podspec import PodTemplate, mapping
from fracctl.core.lint.base import ERROR, IGNORE_ANNOTATION, Hit, Manifest
from fracctl.core.lint.registry import rule, rule_named


def suppressions(
    obj: Mapping[str, Any], template: PodTemplate | None = None
) -> tuple[dict[str, str], list[str]]:
    """The rules a manifest silences (``rule id -> reason``), and malformed entries.

    Read from ``fracctl.io/ignore`` on the object and on its pod template.
    """
    texts = [mapping(mapping(obj.get("metadata")).get("annotations")).get(IGNORE_ANNOTATION)]
    if template is not None and template.path:
        texts.append(template.annotations.get(IGNORE_ANNOTATION))
    reasons: dict[str, str] = {}
    bad: list[str] = []
    for text in texts:
        if text is None:
            continue
        for entry in str(text).splitlines():
            head, _, reason = entry.strip().partition(" ")
            for name in filter(None, head.split(",")):
                found = rule_named(name)
                if found is None:
                    bad.append(
                        f"{IGNORE_ANNOTATION}: {name!r} is not a rule id or name "
                        "(see fracctl lint --list-rules)"
                    )
                elif not reason.strip():
                    bad.append(
                        f"{IGNORE_ANNOTATION}: {found.id} is silenced without a reason; write "
                        f"'{found.id} <why this is fine>'"
                    )
                else:
                    reasons[found.id] = reason.strip()
    return reasons, bad


@rule(
    "FL000",
    "suppression-without-reason",
    ERROR,
    "an fracctl.io/ignore entry names no reason, or no known rule",
    silenceable=False,
)
def suppression_without_reason(m: Manifest) -> Iterator[Hit]:
    """Each malformed ``fracctl.io/ignore`` entry."""
    _, bad = suppressions(m.obj, m.template)
    for message in bad:
        yield message, "metadata.annotations"
