"""Rules on the fractioning config itself: its name, its node selector, and that there is one.

The CRD admits one object, named ``default`` (or the configured name); its
``spec.nodeSelector`` picks the nodes that get fraction daemons and must never be
able to pick a denied GPU class, so the safe selector is the opt-in label.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from fracctl.core.fractions.policy import product_matches
from fracctl.core.gitops.helm_release import hook_use
from fracctl.core.kube.podspec import dig, mapping
from fracctl.core.lint.base import ERROR, Hit, LintSettings, Manifest, PlacedHit, object_name
from fracctl.core.lint.registry import rule, rule_across


@rule("FL009", "fractioning-config-name", ERROR, "the fractioning config is not named default")
def fractioning_config_name(m: Manifest) -> Iterator[Hit]:
    """A fractioning config not named as the CRD admits."""
    if not m.is_config:
        return
    s = m.settings
    name = mapping(m.obj.get("metadata")).get("name")
    if name != s.target.name:
        yield (
            f"{s.target.kind} is named {name!r}; the CRD admits only {s.target.name!r}, so the "
            "API server rejects this object",
            "metadata.name",
        )


def _selector_problem(selector: Mapping[str, Any], s: LintSettings) -> str | None:
    p = s.labels
    sel = {str(k): str(v) for k, v in selector.items()}
    cls = sel.get(p.class_key)
    if cls is not None and cls in p.denied_classes:
        return f"it selects {p.class_key}={cls}, a denied class"
    for key in p.product_keys:
        value = sel.get(key)
        if value is not None and any(product_matches(value, d) for d in p.denied_products):
            return f"it selects {key}={value}, a denied GPU product"
    if sel.get(p.opt_in_key) == p.opt_in_value:
        return None
    if cls is not None and cls in p.allowed_classes:
        return None
    if not sel:
        return "it is empty and selects every node, denied classes included"
    shown = ", ".join(f"{k}={v}" for k, v in sorted(sel.items()))
    return (
        f"it selects {shown}, which a denied-class node ({', '.join(p.denied_classes)}) can "
        "carry too"
    )


@rule(
    "FL010",
    "fractioning-config-denied-class",
    ERROR,
    "the fractioning config's nodeSelector can select a denied GPU class",
)
def fractioning_config_denied_class(m: Manifest) -> Iterator[Hit]:
    """A config whose nodeSelector a denied-class node could match."""
    if not m.is_config:
        return
    selector = dig(m.obj, ("spec", "nodeSelector"))
    if not isinstance(selector, Mapping):
        return
    problem = _selector_problem(selector, m.settings)
    if problem:
        p = m.settings.labels
        yield (
            f"spec.nodeSelector can select a denied GPU class: {problem}. Select by the "
            f"opt-in label ({p.opt_in_key}: {p.opt_in_value}), which denied nodes never carry",
            "spec.nodeSelector",
        )


@rule_across("FL011", "fractioning-config-count", ERROR, "more than one fractioning config")
def fractioning_config_count(manifests: Sequence[Manifest], s: LintSettings) -> Iterator[PlacedHit]:
    """Every fractioning config after the first."""
    configs = [m for m in manifests if m.is_config]
    for m in configs[1:]:
        first = object_name(configs[0].obj)
        yield (
            m.index,
            f"another {s.target.kind} besides {first}: the cluster holds exactly "
            f"one, named {s.target.name!r}; keep one document",
            "metadata.name",
        )


@rule_across(
    "FL015",
    "fractioning-config-hook",
    ERROR,
    "the fractioning config is a chart's hook: every upgrade or sync deletes and recreates it",
)
def fractioning_config_hook(manifests: Sequence[Manifest], s: LintSettings) -> Iterator[PlacedHit]:
    """A config rendered as a Helm or Argo CD hook (``helm template`` of the operator's chart).

    The operator's chart (kai-scheduler/kai-gpu-fractioning and kai-scheduler/
    gpu-fractioning, ``operator/charts/templates/default-cr.yaml``) writes the config as
    a ``post-install,post-upgrade`` hook with no delete policy and ``spec.nodeSelector``
    hard-coded to ``nvidia.com/gpu.present: "true"``. With no policy, Helm
    (``pkg/action/hooks.go``) and Argo CD (gitops-engine ``pkg/sync/hook/
    delete_policy.go``) use before-hook-creation: every upgrade or sync deletes the
    config and creates it again, restarting the MPS daemons under every fractional pod.
    The selector is set against git's own config in the same input when there is one,
    else against the label policy's opt-in selector.
    """
    configs = [m for m in manifests if m.is_config]
    plain = [m for m in configs if hook_use(m.obj) is None]
    p = s.labels
    for m in configs:
        use = hook_use(m.obj)
        if use is None:
            continue
        selector = dig(m.obj, ("spec", "nodeSelector"))
        sel = _shown(selector) if isinstance(selector, Mapping) else "(none)"
        if plain:
            other = dig(plain[0].obj, ("spec", "nodeSelector"))
            wanted = _shown(other) if isinstance(other, Mapping) else "(none)"
            against = f"git's own {object_name(plain[0].obj)} selects {wanted}"
        else:
            against = f"the label policy's opt-in selector is {p.opt_in_key}={p.opt_in_value}"
        when = ", ".join(use.recreated_on) or use.argocd_phase or ", ".join(use.events)
        yield (
            m.index,
            f"{object_name(m.obj)} is a hook ({use.annotations}): it is deleted and created "
            f"again on every {when} (Helm: each helm upgrade; Argo CD: each sync, as PostSync), "
            f"restarting the MPS daemons under every fractional pod. Its spec.nodeSelector "
            f"{sel} is written in the chart, not a value; {against}. Keep the config in git "
            "as a plain object and stop the chart's hook (runbooks/operator-upgrades.md)",
            "metadata.annotations",
        )


def _shown(selector: Mapping[str, Any]) -> str:
    return ",".join(f"{k}={v}" for k, v in sorted(selector.items())) or "(empty)"
