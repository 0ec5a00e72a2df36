"""Guards that must pass before the fractioning config is deleted and recreated.

* no fractional pod runs anywhere (recreating restarts the MPS daemons; running
  fractional pods lose their CUDA context), found by one paged scan of every
  namespace that reads each pod's annotations and node and nothing more, so a cluster
  of 100k pods is never held in memory. A pod is fractional by KAI's annotations and
  by the agents' keys under the annotation prefix of the live config, of git's, and
  of each generation's default (:class:`~fracctl.core.fractions.fractional.Fractions`);
* no driver upgrade moves the agents now (the operator's own state);
* the node opt-in label follows the policy (allowed classes carry it, denied nodes
  never, a node being denied by its class label or by its GPU product label), and no
  class label contradicts the GPU product;
* the desired selector selects no denied node and every opted-in node that is not denied;
* the blast radius: which nodes' daemons stop, restart or start, and the pods they carry.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from fracctl.config import LabelsConfig
from fracctl.core.drift.immutability import get_path
from fracctl.core.fractions.findings import node_findings, selector_findings
from fracctl.core.fractions.policy import (
    PolicyRule,
    is_denied,
    standings,
)
from fracctl.core.kube.nodes import matches, selector_string
from fracctl.core.kube.resources import NODES
from fracctl.core.recreate.blast import BlastRadius, blast_radius
from fracctl.core.recreate.operator import driver_upgrades
from fracctl.errors import FracctlError
from fracctl.flows.context import Context
from fracctl.flows.guards.scan import READ, FractionalScan, fractions, scan_fractional_pods


@dataclass(frozen=True)
class GuardCheck:
    """One guard's result: what was found and what to do about it."""

    name: str
    ok: bool
    evidence: str
    fix: str = ""

    def to_dict(self) -> dict[str, Any]:
        """Plain data for ``-o json``."""
        return {"name": self.name, "ok": self.ok, "evidence": self.evidence, "fix": self.fix}


@dataclass
class PreflightReport:
    """Every guard's result, and the blast radius of a recreate."""

    checks: list[GuardCheck]
    blast_radius: BlastRadius
    scan: FractionalScan
    desired_selector: dict[str, str] | None = None
    live_selector: dict[str, str] | None = None

    @property
    def ok(self) -> bool:
        """Whether every guard passed."""
        return all(c.ok for c in self.checks)

    @property
    def failed(self) -> list[GuardCheck]:
        """The guards that refused."""
        return [c for c in self.checks if not c.ok]

    def to_dict(self) -> dict[str, Any]:
        """Plain data for ``-o json``."""
        return {
            "ok": self.ok,
            "desired_selector": self.desired_selector,
            "live_selector": self.live_selector,
            "checks": [c.to_dict() for c in self.checks],
            "blast_radius": self.blast_radius.to_dict(),
            "pods": self.scan.to_dict(),
        }


# --- the guards -----------------------------------------------------------------------


def node_labels(ctx: Context) -> dict[str, dict[str, str]]:
    """Every node's labels (a metadata-only list)."""
    return {
        item["metadata"]["name"]: dict(item["metadata"].get("labels") or {})
        for page in ctx.kube.list_pages(NODES, metadata_only=True, limit=500)
        for item in page.get("items") or ()
    }


def fractional_pods_check(ctx: Context, scan: FractionalScan) -> GuardCheck:
    """The ``fractional-pods`` guard's verdict on a scan."""
    reserved = (
        f"; {len(scan.reservations)} reservation pod(s) in "
        f"{ctx.config.pods.reservation_namespace} ignored (infrastructure)"
        if scan.reservations
        else ""
    )
    fr = scan.fractions
    if not scan.pods:
        judged = f"; judged by KAI's annotations and {fr.describe()}" if fr else ""
        return GuardCheck(
            "fractional-pods",
            True,
            f"no fractional pod among {scan.scanned} unfinished pod(s){reserved}{judged}",
        )
    if fr is not None and (configured := fr.describe(configured_only=True)):
        reserved += f"; judged by {configured}"  # the keys listed say the rest
    listed = "; ".join(
        f"{p.namespace}/{p.name} on {p.node or '(not scheduled)'} [{', '.join(p.keys)}]"
        for p in scan.pods[:10]
    )
    more = f" and {len(scan.pods) - 10} more" if len(scan.pods) > 10 else ""
    return GuardCheck(
        "fractional-pods",
        False,
        f"{len(scan.pods)} fractional pod(s) running or pending: {listed}{more}{reserved}",
        "let them finish or scale them down first: their CUDA contexts die when the MPS "
        "daemons restart (full list: fracctl preflight -o json)",
    )


_PASSING = {
    PolicyRule.MISSING_OPT_IN: ("opt-in-missing", "every allowed-class node carries {label}"),
    PolicyRule.DENIED_OPTED_IN: (
        "opt-in-denied",
        "no node denied by class or GPU product carries {label}",
    ),
    PolicyRule.UNKNOWN_CLASS: (
        "opt-in-unknown-class",
        "every node with {label} has an allowed class",
    ),
    PolicyRule.CLASS_CONTRADICTS_PRODUCT: (
        "class-product",
        "no node's class label contradicts its GPU product label",
    ),
    PolicyRule.SELECTOR_DENIED: (
        "selector-denied",
        "the desired selector {sel} selects no denied node",
    ),
    PolicyRule.SELECTOR_MISSES: (
        "selector-coverage",
        "the desired selector {sel} selects all {n} opted-in node(s) that are not denied",
    ),
}


def run_guards(
    ctx: Context,
    *,
    desired_selector: dict[str, str] | None,
    live_selector: dict[str, str] | None,
    desired_unknown: str | None = None,
    live: Mapping[str, Any] | None = READ,
    desired: Mapping[str, Any] | None = None,
) -> PreflightReport:
    """Run every guard.

    Args:
        ctx: the I/O context.
        desired_selector: the selector git wants; ``None`` when it could not be learnt
            (the selector checks then refuse, quoting ``desired_unknown``).
        live_selector: the live object's selector; ``None`` when no object exists.
        desired_unknown: why the desired selector is unknown.
        live: the live object (``READ``: read it now), for its annotation prefix and
            its status.
        desired: git's object, for its annotation prefix.

    Returns:
        The report; ``report.ok`` is whether every guard passed.

    Raises:
        ApiError: the cluster could not be read (exit 3).
    """
    if live is READ:
        t = ctx.config.target
        live = ctx.kube.get_or_none(t.ref, t.name)
    scan = scan_fractional_pods(ctx, fractions(ctx, live=live, desired=desired))
    nodes = node_labels(ctx)
    policy = ctx.config.labels
    checks = [
        fractional_pods_check(ctx, scan),
        _upgrade_check(live, nodes, live_selector, desired_selector),
        *_label_checks(nodes, policy, desired_selector),
    ]
    if desired_selector is None:
        checks.append(
            GuardCheck(
                "desired-selector",
                False,
                f"the desired selector is unknown: {desired_unknown or 'not given'}",
                "fix the git settings (fracctl render) or pass --selector KEY=VALUE",
            )
        )

    radius = blast_radius(
        nodes,
        old=live_selector,
        new=desired_selector,
        pods_by_node=scan.by_node(),
        denied={n for n, labels in nodes.items() if is_denied(labels, policy)},
    )
    checks.append(GuardCheck("blast-radius", True, radius.summary()))
    return PreflightReport(checks, radius, scan, desired_selector, live_selector)


def _label_checks(
    nodes: dict[str, dict[str, str]], policy: LabelsConfig, desired: dict[str, str] | None
) -> list[GuardCheck]:
    """The opt-in policy's checks of the nodes, and of git's selector where it is known."""
    findings = dict(node_findings(nodes, policy))
    if desired is not None:
        findings.update(selector_findings(desired, nodes, policy))
    opted = sum(1 for s in standings(nodes, policy) if s.opted_in and not s.denied)
    sel = (selector_string(desired) or "{}") if desired is not None else ""
    checks = []
    for rule, finding in findings.items():
        name, passing = _PASSING[rule]
        if finding is None:
            said = passing.format(label=policy.opt_in, sel=sel, n=opted)
            checks.append(GuardCheck(name, True, said))
        else:
            checks.append(GuardCheck(name, False, finding.message, finding.fix))
    return checks


def _upgrade_check(
    live: Mapping[str, Any] | None,
    nodes: dict[str, dict[str, str]],
    live_sel: dict[str, str] | None,
    desired_sel: dict[str, str] | None,
) -> GuardCheck:
    """Refuse while a driver upgrade moves the agents on a node either selector selects."""
    selected = {
        n
        for n, labels in nodes.items()
        for sel in (live_sel, desired_sel)
        if sel is not None and matches(sel, labels)
    }
    found = driver_upgrades(dict(live) if live is not None else None, nodes, selected)
    if not found:
        return GuardCheck(
            "driver-upgrade",
            True,
            f"no driver upgrade under way on the {len(selected)} node(s) either selector selects",
        )
    return GuardCheck(
        "driver-upgrade",
        False,
        "a driver upgrade moves the agents now: " + "; ".join(found),
        "wait until the GPU Operator's upgrade is done (kubectl get nodes -L "
        "nvidia.com/gpu-driver-upgrade-state) and the config's DriverUpgradeInProgress "
        "condition is False, then rerun",
    )


# --- the command ----------------------------------------------------------------------


def live_selector(ctx: Context, obj: Mapping[str, Any] | None = READ) -> dict[str, str] | None:
    """The live target's selector, or ``None`` when the object (or its CRD) is absent."""
    t = ctx.config.target
    if obj is READ:
        obj = ctx.kube.get_or_none(t.ref, t.name)
    if obj is None:
        return None
    value = get_path(obj, t.selector_field)
    return {str(k): str(v) for k, v in value.items()} if isinstance(value, Mapping) else {}


def desired_object(ctx: Context) -> tuple[dict[str, Any] | None, str | None]:
    """Git's target object (``fracctl render``); ``(None, why)`` when it cannot be had."""
    from fracctl.flows.render import render_desired

    t = ctx.config.target
    try:
        objects = render_desired(ctx)
    except FracctlError as e:
        return None, f"rendering git failed: {e}"
    for obj in objects:
        if t.matches(obj):
            return obj, None
    return None, f"git renders no {t.kind}/{t.name}"


def desired_selector(
    ctx: Context, obj: Mapping[str, Any] | None = READ
) -> tuple[dict[str, str] | None, str | None]:
    """The selector git wants (``fracctl render``); ``(None, why)`` when it cannot be had."""
    t = ctx.config.target
    why = None
    if obj is READ:
        obj, why = desired_object(ctx)
    if obj is None:
        return None, why or f"git renders no {t.kind}/{t.name}"
    value = get_path(obj, t.selector_field)
    if not isinstance(value, Mapping):
        return None, f"{t.kind}/{t.name} in git has no {t.selector_field}"
    return {str(k): str(v) for k, v in value.items()}, None


def preflight(ctx: Context, *, selector: dict[str, str] | None = None) -> PreflightReport:
    """``fracctl preflight``: learn both selectors, then run every guard.

    Args:
        ctx: the I/O context.
        selector: the desired selector from ``--selector``; rendered from git when
            ``None``.
    """
    why: str | None = None
    desired: dict[str, Any] | None = None
    if selector is None:
        desired, why = desired_object(ctx)
        selector, why = desired_selector(ctx, desired) if desired is not None else (None, why)
    t = ctx.config.target
    live = ctx.kube.get_or_none(t.ref, t.name)
    return run_guards(
        ctx,
        desired_selector=selector,
        live_selector=live_selector(ctx, live),
        desired_unknown=why,
        live=live,
        desired=desired,
    )
