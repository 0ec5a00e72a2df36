"""The node opt-in policy: which GPU nodes may carry the fractions label.

The rule from the incident: the capability label (``example.org/gpu-fractions=enabled``
by default) goes on nodes of an allowed GPU class, never on a denied one (H200
inference nodes), and the fractioning config selects nodes by that label, never by
hardware class. Everything here is pure: node labels in, findings out.

A node's class label is set by whoever joins the node; its product label
(``nvidia.com/gpu.product``) is set by GPU feature discovery from the hardware. Neither
is trusted alone: a node is denied when either says so, and a class label that
contradicts the product is a finding of its own.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from enum import Enum
from typing import Protocol

from fracctl.core.nodes import matches, selector_string

GPU_PRESENT = ("nvidia.com/gpu.present", "true")

_WORD_BREAK = re.compile(r"[-_\s]+")


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

    @property
    def product_keys(self) -> Sequence[str]:
        """Labels naming a node's GPU product, as GPU feature discovery sets them."""
        ...

    @property
    def denied_products(self) -> Sequence[str]:
        """Product patterns that must never run fractions (see :func:`product_matches`)."""
        ...


class PolicyRule(str, Enum):
    """The kinds of policy finding."""

    MISSING_OPT_IN = "missing-opt-in"  # an allowed-class node without the label
    DENIED_OPTED_IN = "denied-opted-in"  # a denied node (class or product) with the label
    UNKNOWN_CLASS = "unknown-class"  # an opted-in node of no known class
    CLASS_CONTRADICTS_PRODUCT = "class-contradicts-product"  # one label denies, the other not
    SELECTOR_DENIED = "selector-selects-denied"  # the desired selector picks a denied node
    SELECTOR_MISSES = "selector-misses-opted-in"  # ... and leaves out an opted-in node


class Verdict(str, Enum):
    """One node's standing under the policy."""

    OK = "ok"  # allowed class, opted in
    EXCLUDED = "excluded"  # denied class or product, not opted in (as it should be)
    NOT_GPU = "not-gpu"  # not a GPU node; the policy does not apply
    UNCLASSIFIED = "unclassified"  # a GPU node of no known class, not opted in
    MISSING_OPT_IN = PolicyRule.MISSING_OPT_IN.value
    DENIED_OPTED_IN = PolicyRule.DENIED_OPTED_IN.value
    UNKNOWN_CLASS = PolicyRule.UNKNOWN_CLASS.value
    CLASS_CONTRADICTS_PRODUCT = PolicyRule.CLASS_CONTRADICTS_PRODUCT.value  # and not opted in

    @property
    def problem(self) -> bool:
        """Whether this verdict is a finding."""
        return self in (
            Verdict.MISSING_OPT_IN,
            Verdict.DENIED_OPTED_IN,
            Verdict.UNKNOWN_CLASS,
            Verdict.CLASS_CONTRADICTS_PRODUCT,
        )


@dataclass(frozen=True)
class NodeStanding:
    """A node as the policy sees it."""

    name: str
    gpu_class: str | None
    opted_in: bool
    verdict: Verdict
    product: str | None = None
    denied: bool = False  # by its class or by its product
    contradicts: bool = False  # the class label and the product disagree on denial


@dataclass(frozen=True)
class Finding:
    """One policy violation: what was found and the command or step that fixes it."""

    rule: PolicyRule
    nodes: tuple[str, ...]
    message: str
    fix: str


# --- products ---------------------------------------------------------------------------


def product_words(text: str) -> tuple[str, ...]:
    """``NVIDIA-H200-NVL`` -> ``("nvidia", "h200", "nvl")``: words, case folded."""
    return tuple(w for w in _WORD_BREAK.split(text.strip().casefold()) if w)


def product_matches(product: str, pattern: str) -> bool:
    """Whether a GPU product name matches a denied-product pattern.

    Both are split into words at ``-``, ``_`` and spaces and compared without regard to
    case; the pattern's words must equal a run of the product's words, so vendor
    prefixes and suffixes do not matter: ``H200`` matches ``NVIDIA-H200``,
    ``NVIDIA-H200-NVL`` and ``nvidia-h200-141gb-hbm3e``, but not ``NVIDIA-H20``,
    ``NVIDIA-H100`` or ``NVIDIA-GH200``. ``*`` and ``?`` are wildcards within a word.
    """
    have, want = product_words(product), product_words(pattern)
    if not want:
        return False
    return any(
        all(fnmatch.fnmatchcase(h, w) for h, w in zip(have[i : i + len(want)], want, strict=True))
        for i in range(len(have) - len(want) + 1)
    )


def product_of(labels: Mapping[str, str], policy: LabelPolicy) -> str | None:
    """The node's GPU product: the first product label it carries."""
    for key in policy.product_keys:
        value = labels.get(key)
        if value:
            return value
    return None


def denied_product(labels: Mapping[str, str], policy: LabelPolicy) -> str | None:
    """The first product label value that a denied pattern matches, if any."""
    for key in policy.product_keys:
        value = labels.get(key)
        if value and any(product_matches(value, p) for p in policy.denied_products):
            return value
    return None


def is_denied(labels: Mapping[str, str], policy: LabelPolicy) -> bool:
    """Whether the node's class label or its product label denies it fractions."""
    return (
        labels.get(policy.class_key) in policy.denied_classes
        or denied_product(labels, policy) is not None
    )


def _contradicts(labels: Mapping[str, str], policy: LabelPolicy) -> bool:
    """The class label and the product label disagree on whether the node is denied."""
    cls = labels.get(policy.class_key)
    if cls is None or product_of(labels, policy) is None:
        return False
    return (cls in policy.denied_classes) != (denied_product(labels, policy) is not None)


# --- standing -------------------------------------------------------------------------


def is_gpu_node(labels: Mapping[str, str], policy: LabelPolicy) -> bool:
    """A node with the class label, a product label, or GPU feature discovery's marker."""
    return (
        policy.class_key in labels
        or product_of(labels, policy) is not None
        or labels.get(GPU_PRESENT[0]) == GPU_PRESENT[1]
    )


def opted_in(labels: Mapping[str, str], policy: LabelPolicy) -> bool:
    """Whether the node carries the opt-in label with its value."""
    return labels.get(policy.opt_in_key) == policy.opt_in_value


def standing(name: str, labels: Mapping[str, str], policy: LabelPolicy) -> NodeStanding:
    """Judge one node; a denied product outranks whatever the class label says."""
    cls = labels.get(policy.class_key)
    on = opted_in(labels, policy)
    denied = is_denied(labels, policy)
    contradicts = _contradicts(labels, policy)
    if denied and on:
        verdict = Verdict.DENIED_OPTED_IN
    elif contradicts:
        verdict = Verdict.CLASS_CONTRADICTS_PRODUCT
    elif denied:
        verdict = Verdict.EXCLUDED
    elif cls is not None and cls in policy.allowed_classes:
        verdict = Verdict.OK if on else Verdict.MISSING_OPT_IN
    elif on:
        verdict = Verdict.UNKNOWN_CLASS
    elif is_gpu_node(labels, policy):
        verdict = Verdict.UNCLASSIFIED
    else:
        verdict = Verdict.NOT_GPU
    return NodeStanding(name, cls, on, verdict, product_of(labels, policy), denied, contradicts)


def standings(nodes: Mapping[str, Mapping[str, str]], policy: LabelPolicy) -> list[NodeStanding]:
    """Judge every node (``name -> labels``), sorted by name."""
    return [standing(n, nodes[n], policy) for n in sorted(nodes)]


def _listing(names: Sequence[str], show: Callable[[str], str] = str, most: int = 10) -> str:
    """``a (x); b (y) and 3 more``: evidence that stays one readable line."""
    shown = "; ".join(show(n) for n in names[:most])
    return shown + (f" and {len(names) - most} more" if len(names) > most else "")


def describe(name: str, labels: Mapping[str, str], policy: LabelPolicy) -> str:
    """``b200-0 (b200)``, or with a product label ``x (class b200, product NVIDIA-H200)``."""
    cls = labels.get(policy.class_key)
    product = product_of(labels, policy)
    if product is None:
        return f"{name} ({cls})"
    return f"{name} (class {cls or 'unset'}, product {product})"


def _class_fix(names: Sequence[str], policy: LabelPolicy) -> str:
    denied = list(policy.denied_classes)
    value = denied[0] if len(denied) == 1 else "CLASS"
    return f"kubectl label node {' '.join(names)} {policy.class_key}={value} --overwrite"


def node_findings(
    nodes: Mapping[str, Mapping[str, str]], policy: LabelPolicy
) -> dict[PolicyRule, Finding | None]:
    """The label findings, one per rule (``None`` when the rule passes)."""
    judged = standings(nodes, policy)
    by: dict[Verdict, list[str]] = {}
    for s in judged:
        by.setdefault(s.verdict, []).append(s.name)
    label = f"{policy.opt_in_key}={policy.opt_in_value}"

    def with_class(n: str) -> str:
        return describe(n, nodes[n], policy)

    missing = by.get(Verdict.MISSING_OPT_IN, [])
    denied = by.get(Verdict.DENIED_OPTED_IN, [])
    unknown = by.get(Verdict.UNKNOWN_CLASS, [])
    return {
        PolicyRule.MISSING_OPT_IN: _finding(
            PolicyRule.MISSING_OPT_IN,
            missing,
            f"allowed-class node(s) without {label}: {_listing(missing, with_class)}",
            "fracctl nodes label " + " ".join(missing),
        ),
        PolicyRule.DENIED_OPTED_IN: _finding(
            PolicyRule.DENIED_OPTED_IN,
            denied,
            f"denied node(s) (by class or GPU product) carry {label}: "
            + _listing(denied, with_class),
            "fracctl nodes unlabel " + " ".join(denied),
        ),
        PolicyRule.UNKNOWN_CLASS: _finding(
            PolicyRule.UNKNOWN_CLASS,
            unknown,
            "opted-in node(s) of no allowed or denied class: "
            + _listing(
                unknown, lambda n: f"{n} ({policy.class_key}={nodes[n].get(policy.class_key, '')})"
            ),
            f"set {policy.class_key} to an allowed class ("
            + ", ".join(policy.allowed_classes)
            + "), add the class to labels.allowed_classes, or run: fracctl nodes unlabel "
            + " ".join(unknown),
        ),
        PolicyRule.CLASS_CONTRADICTS_PRODUCT: _contradictions(judged, policy, with_class),
    }


def _finding(rule: PolicyRule, names: list[str], evidence: str, fix: str) -> Finding | None:
    """The rule's finding for ``names``; ``None`` when there are none (the rule passes)."""
    return Finding(rule, tuple(names), evidence, fix) if names else None


def _contradictions(
    judged: list[NodeStanding], policy: LabelPolicy, with_class: Callable[[str], str]
) -> Finding | None:
    """A class label that contradicts the GPU product (how an H200 gets opted in)."""
    mislabelled = [
        s.name for s in judged if s.contradicts and s.gpu_class not in policy.denied_classes
    ]
    overcautious = [
        s.name for s in judged if s.contradicts and s.gpu_class in policy.denied_classes
    ]
    contradicting = sorted(mislabelled + overcautious)
    fixes = []
    if mislabelled:
        fixes.append(f"correct the class to match the hardware: {_class_fix(mislabelled, policy)}")
    if overcautious:
        fixes.append(
            f"check the hardware of {' '.join(overcautious)} and correct {policy.class_key}"
        )
    return _finding(
        PolicyRule.CLASS_CONTRADICTS_PRODUCT,
        contradicting,
        f"{policy.class_key} contradicts the GPU product ("
        + ", ".join(policy.product_keys)
        + f"); fracctl treats these as denied: {_listing(contradicting, with_class)}",
        "; ".join(fixes),
    )


def denied_selected(
    selector: Mapping[str, str], nodes: Mapping[str, Mapping[str, str]], policy: LabelPolicy
) -> tuple[list[str], list[str]]:
    """The denied nodes a selector picks: ``(by_opt_in, by_other_labels)``.

    ``by_opt_in`` would drop out of the selection if the opt-in label came off (the fix
    is ``fracctl nodes unlabel``); ``by_other_labels`` stay selected without it (the
    fix is the selector).
    """
    by_opt_in: list[str] = []
    by_other: list[str] = []
    for name in sorted(nodes):
        labels = nodes[name]
        if not (is_denied(labels, policy) and matches(selector, labels)):
            continue
        without = {k: v for k, v in labels.items() if k != policy.opt_in_key}
        unlabelling_helps = opted_in(labels, policy) and not matches(selector, without)
        (by_opt_in if unlabelling_helps else by_other).append(name)
    return by_opt_in, by_other


def selector_findings(
    selector: Mapping[str, str],
    nodes: Mapping[str, Mapping[str, str]],
    policy: LabelPolicy,
) -> dict[PolicyRule, Finding | None]:
    """Check a desired ``nodeSelector`` against the nodes and the policy."""
    sel = selector_string(selector) or "{} (every node)"
    by_opt_in, by_other = denied_selected(selector, nodes, policy)
    denied = sorted(by_opt_in + by_other)
    # A denied node is meant to be missed; opt-in-denied already names it.
    missed = sorted(
        n
        for n, labels in nodes.items()
        if opted_in(labels, policy)
        and not is_denied(labels, policy)
        and not matches(selector, labels)
    )
    opt_in = f"{policy.opt_in_key}: {policy.opt_in_value}"
    in_git = f"select by the opt-in label in git (nodeSelector {{{opt_in}}})"
    denied_fix = []
    if by_opt_in:
        denied_fix.append("fracctl nodes unlabel " + " ".join(by_opt_in))
    if by_other:
        denied_fix.append(f"{in_git}: the selector picks {', '.join(by_other)} by other labels")
    out: dict[PolicyRule, Finding | None] = {
        PolicyRule.SELECTOR_DENIED: (
            Finding(
                PolicyRule.SELECTOR_DENIED,
                tuple(denied),
                f"the desired selector {sel} selects denied node(s): "
                + _listing(denied, lambda n: describe(n, nodes[n], policy)),
                "; and ".join(denied_fix),
            )
            if denied
            else None
        ),
        PolicyRule.SELECTOR_MISSES: (
            Finding(
                PolicyRule.SELECTOR_MISSES,
                tuple(missed),
                f"the desired selector {sel} misses opted-in node(s): {_listing(missed)}",
                f"{in_git}; or, for nodes that should not run fractions: fracctl nodes "
                "unlabel " + " ".join(missed),
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
    """Whether the opt-in label may go on a node: only on an allowed class.

    A denied product refuses whatever the class label says.
    """
    cls = labels.get(policy.class_key)
    on = opted_in(labels, policy)
    product = denied_product(labels, policy)
    if product is not None and cls not in policy.denied_classes:
        said = f", although its {policy.class_key} says {cls}" if cls is not None else ""
        return LabelDecision(
            name,
            False,
            on,
            f"{name} has a denied GPU product, {product}, and must never run fractions{said}",
        )
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
