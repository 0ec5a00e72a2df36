"""Reading the API server's rejection of an update: is it an immutable field, and which.

A dry-run update that only a delete + recreate could make is refused with a 422 whose
causes name the fields (a built-in's validation, a CRD's CEL transition rule with its
author's own message, StatefulSet's blanket "Forbidden"). These read that answer; the
verdict is built from it in :mod:`fracctl.flows.drift`.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

from fracctl.core.drift import FieldDiff
from fracctl.core.drift.immutability import FieldRule, get_path, split_path
from fracctl.errors import Cause

_STS_FORBIDDEN = "updates to statefulset spec for fields other than"


def _path_pattern(path: str) -> str:
    parts = []
    for token in split_path(path):
        if token == "[*]":
            parts.append(r"\[\d+\]")
        elif token == "*":
            parts.append(r"\.[^.\[]+")
        else:
            parts.append(r"\." + re.escape(token))
    return "".join(parts)


def _rule_matches_field(rule: FieldRule, field_path: str) -> bool:
    """Whether an API cause's field is the rule's field, inside it, or contains it."""
    if not field_path:
        return False
    concrete = "." + field_path.lstrip(".")
    if re.match(_path_pattern(rule.path) + r"($|[.\[])", concrete):
        return True
    return re.match(_path_pattern(field_path) + r"($|[.\[])", "." + rule.path) is not None


def is_immutable_rejection(
    causes: Iterable[Cause], message: str, rules: Iterable[FieldRule]
) -> bool:
    """Whether a 422 says the update touched a field that only a recreate can change.

    True when a cause says ``immutable``, when StatefulSet forbids the update, or when
    a cause names a field that a transition rule guards (CEL rules carry the author's
    own message, which need not say "immutable").
    """
    rules = list(rules)
    causes = list(causes)
    texts = [c.message for c in causes] or [message]
    for text in texts:
        if "immutable" in text.lower() or _STS_FORBIDDEN in text:
            return True
    for c in causes:
        for rule in rules:
            if _rule_matches_field(rule, c.field):
                return True
    return False


def is_field_path(path: str) -> bool:
    """Whether a cause's ``field`` names a field (``spec.x``, ``items[0].y``).

    Causes about the whole object have none, or Go's ``<nil>`` (CEL: "some validation
    rules were not checked because the object was invalid").
    """
    return bool(path) and not path.startswith("<") and " " not in path


def fields_from_causes(
    causes: Iterable[Cause],
    live: Mapping[str, Any],
    desired: Mapping[str, Any],
    known: Iterable[FieldDiff],
) -> list[FieldDiff]:
    """Fields named by the API server's causes that the comparison did not list yet."""
    have = {f.path for f in known}
    out: list[FieldDiff] = []
    for c in causes:
        path = c.field
        if not is_field_path(path):
            continue
        if path in have or any(path.startswith(h + ".") for h in have):
            continue
        if any(h.startswith(path + ".") for h in have):
            continue
        have.add(path)
        out.append(
            FieldDiff(
                path,
                get_path(live, path),
                get_path(desired, path),
                "immutable",
                short_message(c.message),
                "api-server",
            )
        )
    return out


_GO_VALUE = re.compile(r"(?:\b[a-z]\w*\.[A-Z]\w*|Invalid value: )\{")


def short_message(message: str) -> str:
    """An API message with each object value it dumps cut short (``{…}``).

    Validation prints the whole rejected value (k8s.io/apimachinery
    ``pkg/util/validation/field/errors.go``: ``Invalid value: …``, as JSON in v1.34, as
    ``core.PodTemplateSpec{…}`` in older releases): for a Job's template a couple of
    kilobytes, the controller's labels among them, that say nothing the fields do not.
    """
    out, i = [], 0
    for m in _GO_VALUE.finditer(message):
        if m.start() < i:
            continue
        depth, j = 0, m.end() - 1
        while j < len(message):
            depth += {"{": 1, "}": -1}.get(message[j], 0)
            if depth == 0:
                break
            j += 1
        out.append(message[i : m.end()] + "…}")
        i = j + 1
    return "".join(out) + message[i:]
