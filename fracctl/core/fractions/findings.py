"""What the node opt-in policy finds wrong: per node, and in the config's selector.

Each finding names its rule, the nodes (the first ten, and how many), the evidence and
the fix; a rule that holds yields none.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from fracctl.core.fractions.policy import (
    Finding,
    LabelPolicy,
    NodeStanding,
    PolicyRule,
    Verdict,
    is_denied,
    opted_in,
    product_of,
    standings,
)
from fracctl.core.kube.nodes import matches, selector_string


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
