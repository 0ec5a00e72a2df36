"""The node opt-in policy: which GPU nodes may carry the fractions label.

The rule from the incident: the capability label (``example.org/gpu-fractions=enabled``
by default) goes on nodes of an allowed GPU class, never on a denied one (H200
inference nodes), and the fractioning config selects nodes by that label, never by
hardware class. Everything here is pure: node labels in, findings out.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from enum import Enum
from typing import Protocol

from fracctl.core.nodes import matches, selector_string

GPU_PRESENT = ("nvidia.com/gpu.present", "true")


class LabelPolicy(Protocol):
    """The label settings the policy needs (``fracctl.config.LabelsConfig`` fits)."""

    @property
    def opt_in_key(self) -> str:
        """The opt-in label's key."""
        ...

    @property
    def opt_in_value(self) -> str:
        """The opt-in label's value."""
        ...

    @property
    def class_key(self) -> str:
        """The label naming a node's GPU class."""
        ...

    @property
    def allowed_classes(self) -> Sequence[str]:
        """Classes that should run fractions."""
        ...

    @property
    def denied_classes(self) -> Sequence[str]:
        """Classes that must never run fractions."""
        ...


class Rule(str, Enum):
    """The kinds of policy finding."""

    MISSING_OPT_IN = "missing-opt-in"  # an allowed-class node without the label
    DENIED_OPTED_IN = "denied-opted-in"  # a denied-class node with the label
    UNKNOWN_CLASS = "unknown-class"  # an opted-in node of no known class
    SELECTOR_DENIED = "selector-selects-denied"  # the desired selector picks a denied node
    SELECTOR_MISSES = "selector-misses-opted-in"  # ... and leaves out an opted-in node


class Verdict(str, Enum):
    """One node's standing under the policy."""

    OK = "ok"  # allowed class, opted in
    EXCLUDED = "excluded"  # denied class, not opted in (as it should be)
    NOT_GPU = "not-gpu"  # not a GPU node; the policy does not apply
    UNCLASSIFIED = "unclassified"  # a GPU node of no known class, not opted in
    MISSING_OPT_IN = Rule.MISSING_OPT_IN.value
    DENIED_OPTED_IN = Rule.DENIED_OPTED_IN.value
    UNKNOWN_CLASS = Rule.UNKNOWN_CLASS.value

    @property
    def problem(self) -> bool:
        """Whether this verdict is a finding."""
        return self in (Verdict.MISSING_OPT_IN, Verdict.DENIED_OPTED_IN, Verdict.UNKNOWN_CLASS)


@dataclass(frozen=True)
class NodeStanding:
    """A node as the policy sees it."""

    name: str
    gpu_class: str | None
    opted_in: bool
    verdict: Verdict


@dataclass(frozen=True)
class Finding:
    """One policy violation: what was found and the command or step that fixes it."""

    rule: Rule
    nodes: tuple[str, ...]
    message: str
    fix: str


def is_gpu_node(labels: Mapping[str, str], policy: LabelPolicy) -> bool:
    """A node with the class label, or one the GPU feature discovery marked present."""
    return policy.class_key in labels or labels.get(GPU_PRESENT[0]) == GPU_PRESENT[1]


def opted_in(labels: Mapping[str, str], policy: LabelPolicy) -> bool:
    """Whether the node carries the opt-in label with its value."""
    return labels.get(policy.opt_in_key) == policy.opt_in_value


def standing(name: str, labels: Mapping[str, str], policy: LabelPolicy) -> NodeStanding:
    """Judge one node."""
    cls = labels.get(policy.class_key)
    on = opted_in(labels, policy)
    if cls is not None and cls in policy.denied_classes:
        verdict = Verdict.DENIED_OPTED_IN if on else Verdict.EXCLUDED
    elif cls is not None and cls in policy.allowed_classes:
        verdict = Verdict.OK if on else Verdict.MISSING_OPT_IN
    elif on:
        verdict = Verdict.UNKNOWN_CLASS
    elif is_gpu_node(labels, policy):
        verdict = Verdict.UNCLASSIFIED
    else:
        verdict = Verdict.NOT_GPU
    return NodeStanding(name, cls, on, verdict)


def standings(nodes: Mapping[str, Mapping[str, str]], policy: LabelPolicy) -> list[NodeStanding]:
    """Judge every node (``name -> labels``), sorted by name."""
    return [standing(n, nodes[n], policy) for n in sorted(nodes)]


def _listing(names: Sequence[str], describe: Callable[[str], str] = str, most: int = 10) -> str:
    """``a (x); b (y) and 3 more``: evidence that stays one readable line."""
    shown = "; ".join(describe(n) for n in names[:most])
    return shown + (f" and {len(names) - most} more" if len(names) > most else "")


def node_findings(
    nodes: Mapping[str, Mapping[str, str]], policy: LabelPolicy
) -> dict[Rule, Finding | None]:
    """The label findings, one per rule (``None`` when the rule passes)."""
    by: dict[Verdict, list[str]] = {}
    for s in standings(nodes, policy):
        by.setdefault(s.verdict, []).append(s.name)
    label = f"{policy.opt_in_key}={policy.opt_in_value}"

    def with_class(n: str) -> str:
        return f"{n} ({nodes[n].get(policy.class_key)})"

    out: dict[Rule, Finding | None] = {}

    missing = by.get(Verdict.MISSING_OPT_IN, [])
    out[Rule.MISSING_OPT_IN] = (
        Finding(
            Rule.MISSING_OPT_IN,
            tuple(missing),
            f"allowed-class node(s) without {label}: {_listing(missing, with_class)}",
            "fracctl nodes label " + " ".join(missing),
        )
        if missing
        else None
    )

    denied = by.get(Verdict.DENIED_OPTED_IN, [])
    out[Rule.DENIED_OPTED_IN] = (
        Finding(
            Rule.DENIED_OPTED_IN,
            tuple(denied),
            f"denied-class node(s) carry {label}: {_listing(denied, with_class)}",
            "fracctl nodes unlabel " + " ".join(denied),
        )
        if denied
        else None
    )

    unknown = by.get(Verdict.UNKNOWN_CLASS, [])
    out[Rule.UNKNOWN_CLASS] = (
        Finding(
            Rule.UNKNOWN_CLASS,
            tuple(unknown),
            "opted-in node(s) of no allowed or denied class: "
            + _listing(
                unknown, lambda n: f"{n} ({policy.class_key}={nodes[n].get(policy.class_key, '')})"
            ),
            f"set {policy.class_key} to an allowed class ("
            + ", ".join(policy.allowed_classes)
            + "), add the class to labels.allowed_classes, or run: fracctl nodes unlabel "
            + " ".join(unknown),
        )
        if unknown
        else None
    )
    return out


def selector_findings(
    selector: Mapping[str, str],
    nodes: Mapping[str, Mapping[str, str]],
    policy: LabelPolicy,
) -> dict[Rule, Finding | None]:
    """Check a desired ``nodeSelector`` against the nodes and the policy."""
    sel = selector_string(selector) or "{} (every node)"
    denied = sorted(
        n
        for n, labels in nodes.items()
        if labels.get(policy.class_key) in policy.denied_classes and matches(selector, labels)
    )
    missed = sorted(
        n
        for n, labels in nodes.items()
        if opted_in(labels, policy) and not matches(selector, labels)
    )
    opt_in = f"{policy.opt_in_key}: {policy.opt_in_value}"
    out: dict[Rule, Finding | None] = {
        Rule.SELECTOR_DENIED: (
            Finding(
                Rule.SELECTOR_DENIED,
                tuple(denied),
                f"the desired selector {sel} selects denied-class node(s): "
                + _listing(denied, lambda n: f"{n} ({nodes[n].get(policy.class_key)})"),
                f"select by the opt-in label in git (nodeSelector {{{opt_in}}}) and keep it "
                "off denied nodes",
            )
            if denied
            else None
        ),
        Rule.SELECTOR_MISSES: (
            Finding(
                Rule.SELECTOR_MISSES,
                tuple(missed),
                f"the desired selector {sel} misses opted-in node(s): {_listing(missed)}",
                f"select by the opt-in label in git (nodeSelector {{{opt_in}}}), or unlabel "
                "nodes that should not run fractions",
            )
            if missed
            else None
        ),
    }
    return out


@dataclass(frozen=True)
class LabelDecision:
    """What ``fracctl nodes label`` may do to one node."""

    node: str
    allowed: bool
    already: bool
    reason: str


def label_decision(name: str, labels: Mapping[str, str], policy: LabelPolicy) -> LabelDecision:
    """Whether the opt-in label may go on a node: only on an allowed class."""
    cls = labels.get(policy.class_key)
    on = opted_in(labels, policy)
    if cls is None:
        return LabelDecision(
            name, False, on, f"{name} has no {policy.class_key} label; set its class first"
        )
    if cls in policy.denied_classes:
        return LabelDecision(
            name, False, on, f"{name} is of denied class {cls} and must never run fractions"
        )
    if cls not in policy.allowed_classes:
        return LabelDecision(
            name,
            False,
            on,
            f"{name} is of class {cls}, which is not allowed "
            f"(allowed: {', '.join(policy.allowed_classes)})",
        )
    return LabelDecision(name, True, on, "already labelled" if on else f"allowed class {cls}")


def parse_selector(pairs: Sequence[str]) -> dict[str, str]:
    """``["a=b", "c=d"]`` -> ``{"a": "b", "c": "d"}`` (a plain ``nodeSelector``).

    Raises:
        ValueError: an entry is not ``KEY=VALUE`` or repeats a key.
    """
    out: dict[str, str] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        key = key.strip()
        if not sep or not key:
            raise ValueError(f"expected KEY=VALUE, got {pair!r}")
        if key in out and out[key] != value.strip():
            raise ValueError(f"{key} given twice with different values")
        out[key] = value.strip()
    return out
