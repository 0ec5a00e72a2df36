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
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import Enum
from typing import Protocol

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


def contradicts(labels: Mapping[str, str], policy: LabelPolicy) -> bool:
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
    contradicted = contradicts(labels, policy)
    if denied and on:
        verdict = Verdict.DENIED_OPTED_IN
    elif contradicted:
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
    return NodeStanding(name, cls, on, verdict, product_of(labels, policy), denied, contradicted)


def standings(nodes: Mapping[str, Mapping[str, str]], policy: LabelPolicy) -> list[NodeStanding]:
    """Judge every node (``name -> labels``), sorted by name."""
    return [standing(n, nodes[n], policy) for n in sorted(nodes)]


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
