"""``fracctl probe``: send one fractional pod at a pool and see what KAI does with it.

Two answers are good news. The probe runs: fractional scheduling works on that node.
Or it stays Pending because KAI reports the node "not ready for fractional GPU
scheduling": the readiness gate holds on a pool whose daemons do not run yet, so no
fractional pod can land there without a memory limit. Anything else (another
scheduling failure, no decision in time) is a finding.

A pool that holds a denied node (by its class label or its GPU product label) is
refused before anything is created: a fractional probe that ran there would be the
very thing the policy forbids, and a class label alone does not prove the hardware.

The probe pod is deleted on every path: success, timeout, errors, Ctrl-C and SIGTERM.
It is deleted with a grace period of 0, because a pod bound to a node otherwise waits
for a kubelet to confirm it stopped.
"""

from __future__ import annotations

import secrets
import signal
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from fracctl.core.fractions.findings import denied_selected, describe
from fracctl.core.fractions.kai_words import not_ready_in
from fracctl.core.kube.nodes import selector_string
from fracctl.core.kube.resources import PODS
from fracctl.errors import (
    ApiError,
    ExitCode,
    ExternalError,
    FracctlError,
    NotFound,
    Refused,
    UsageError,
)
from fracctl.flows.context import Context
from fracctl.flows.guards.preflight import node_labels
from fracctl.flows.guards.probe_pod import (
    PodFate,
    decide,
    fraction_request,
    probe_pod,
)
from fracctl.flows.signals import interrupt_on_sigterm as _interrupt_on_sigterm
from fracctl.flows.signals import main_thread as _main_thread

EXPECT = ("any", "running", "not-ready")


@dataclass
class PodProbeResult:
    """The probe's fate and the evidence for it."""

    name: str
    namespace: str
    request: dict[str, str]  # the fraction annotation the probe carried
    pool: dict[str, str]
    outcome: PodFate
    node: str | None = None
    reason: str = ""
    message: str = ""
    elapsed: float = 0.0
    deleted: bool = False
    notes: list[str] = field(default_factory=list)

    def summary(self) -> str:
        """One line for people."""
        where = ", ".join(f"{k}={v}" for k, v in sorted(self.pool.items())) or "any node"
        if self.outcome is PodFate.RUNNING:
            return f"the probe ran on {self.node}: fractional scheduling works there"
        if self.outcome is PodFate.NOT_READY:
            return (
                f"the probe stayed Pending: KAI says the pool ({where}) is not ready for "
                "fractional GPU scheduling. Good news where the daemons do not run yet: "
                "the readiness gate holds, so no fractional pod runs there without a limit"
                + self._judged()
            )
        if self.outcome is PodFate.UNSCHEDULABLE:
            return f"the probe could not be scheduled on the pool ({where}): {self.message}"
        if self.outcome is PodFate.FAILED:
            return f"the probe failed on {self.node or 'no node'}: {self.reason} {self.message}"
        if self.outcome is PodFate.SCHEDULED:
            return f"the probe was bound to {self.node} but did not run in {self.elapsed:.0f}s"
        return (
            f"no scheduling decision in {self.elapsed:.0f}s: is the KAI scheduler running, "
            "and does the pod's queue exist?"
        )

    def _judged(self) -> str:
        """What KAI read on the refused nodes: each condition's state, once."""
        seen = dict.fromkeys(
            f"{r.condition} is {'missing' if r.missing else r.status}"
            + ("" if r.missing else f" ({r.reason})")
            for r in not_ready_in(self.message)
        )
        return f" ({'; '.join(seen)})" if seen else ""

    def exit_code(self, expect: str = "any") -> ExitCode:
        """0 for a good answer (or the expected one), 1 for a finding, 4 for no answer."""
        if self.outcome in (PodFate.TIMEOUT, PodFate.SCHEDULED):
            return ExitCode.TIMEOUT
        if self.outcome not in (PodFate.RUNNING, PodFate.NOT_READY):
            return ExitCode.FINDING
        if expect != "any" and self.outcome.value != expect:
            return ExitCode.FINDING
        return ExitCode.OK

    def to_dict(self) -> dict[str, Any]:
        """Plain data for ``-o json``."""
        return {
            "pod": f"{self.namespace}/{self.name}",
            "request": self.request,
            "pool": self.pool,
            "outcome": self.outcome.value,
            "node": self.node,
            "reason": self.reason,
            "message": self.message,
            "elapsed_seconds": round(self.elapsed, 1),
            "deleted": self.deleted,
            "summary": self.summary(),
            "notes": self.notes,
        }


# --- the run --------------------------------------------------------------------------


def probe(
    ctx: Context,
    *,
    memory: str | None = None,
    fraction: float | None = None,
    pool: dict[str, str] | None = None,
    timeout: float | None = None,
) -> PodProbeResult:
    """Create the probe, watch it for at most ``timeout`` seconds, always delete it.

    Args:
        ctx: the I/O context.
        memory: GPU memory to ask for, e.g. ``4Gi``.
        fraction: share of a GPU to ask for, e.g. ``0.25``.
        pool: the nodeSelector; default the opt-in label.
        timeout: seconds to wait for a decision; default ``timeouts.probe``.

    Raises:
        UsageError: bad request values.
        Refused: the pool holds a denied node (exit 1; nothing was created).
        ExternalError: the probe could not be created, watched or deleted.
    """
    request = fraction_request(memory=memory, fraction=fraction)
    if pool is None:
        pool = {ctx.config.labels.opt_in_key: ctx.config.labels.opt_in_value}
    wait = float(ctx.config.timeouts.probe if timeout is None else timeout)
    if wait <= 0:
        raise UsageError("--timeout must be positive")
    refuse_denied_pool(ctx, pool)
    namespace = ctx.config.probe.namespace
    name = f"fracctl-probe-{secrets.token_hex(4)}"
    body = probe_pod(
        ctx.config, name=name, request=request, pool=pool, deadline_seconds=int(wait) + 300
    )
    result = PodProbeResult(name, namespace, request, dict(pool), PodFate.TIMEOUT)
    started = ctx.clock.monotonic()
    may_exist = True  # until the server says it refused the create
    try:
        with _interrupt_on_sigterm():
            try:
                created = ctx.kube.create(PODS, body)
            except ApiError:
                may_exist = False  # refused (or the name was taken: not ours to delete)
                raise
            ctx.info(f"probe {namespace}/{name} created; watching for up to {wait:.0f}s")
            _watch(ctx, created, result, deadline=started + wait)
    except BaseException:
        if may_exist:
            result.deleted = _delete(ctx, namespace, name, strict=False)
        raise
    finally:
        result.elapsed = ctx.clock.monotonic() - started
    result.deleted = _delete(ctx, namespace, name, strict=True)
    return result


def refuse_denied_pool(ctx: Context, pool: Mapping[str, str]) -> None:
    """Refuse a pool that selects a node denied by its class or its GPU product."""
    policy = ctx.config.labels
    nodes = node_labels(ctx)
    by_opt_in, by_other = denied_selected(pool, nodes, policy)
    if not (by_opt_in or by_other):
        return
    fixes = []
    if by_opt_in:
        fixes.append("fracctl nodes unlabel " + " ".join(by_opt_in))
    if by_other:
        fixes.append(
            f"narrow --pool to leave out {', '.join(by_other)} (the default pool is the "
            "opt-in label), or correct their labels (fracctl nodes check)"
        )
    denied = sorted(by_opt_in + by_other)
    raise Refused(
        f"refusing to probe, nothing was created: the pool {selector_string(pool) or '{}'} "
        "selects denied node(s), where no fractional pod may run: "
        + "; ".join(describe(n, nodes[n], policy) for n in denied[:10])
        + (f" and {len(denied) - 10} more" if len(denied) > 10 else ""),
        hint="; ".join(fixes),
    )


def _watch(ctx: Context, pod: dict[str, Any], result: PodProbeResult, *, deadline: float) -> None:
    namespace, name = result.namespace, result.name
    key = f"{namespace}/{name}"

    def settled(view: dict[str, Any]) -> bool:
        return key not in view or decide(view[key]) is not None

    view, _finished = ctx.kube.watch_until(
        PODS,
        settled,
        deadline=deadline,
        clock=ctx.clock,
        namespace=namespace,
        field_selector=f"metadata.name={name}",
    )
    if key not in view:
        raise ExternalError(f"probe {namespace}/{name} was deleted by someone else")
    pod = view[key]
    result.node = (pod.get("spec") or {}).get("nodeName") or None
    verdict = decide(pod)
    if verdict is not None:
        result.outcome, result.reason, result.message = verdict
    else:
        result.outcome = PodFate.SCHEDULED if result.node else PodFate.TIMEOUT


def _delete(ctx: Context, namespace: str, name: str, *, strict: bool) -> bool:
    """Delete the probe at once (grace period 0); ``True`` when it is gone.

    With ``strict`` a failure raises; otherwise (another error is already on its way
    out) it is reported as a warning.
    """
    try:
        with _shielded():
            try:
                ctx.kube.delete(PODS, name, namespace, grace_period=0)
            except NotFound:
                pass
            gone = ctx.kube.get_or_none(PODS, name, namespace) is None
    except FracctlError as e:
        hint = f"delete it with: kubectl delete pod -n {namespace} {name} --grace-period=0"
        if strict:
            raise ExternalError(f"the probe could not be deleted: {e}", hint=hint) from None
        ctx.warn(f"the probe could not be deleted: {e}; {hint}")
        return False
    if not gone:
        ctx.warn(f"probe {namespace}/{name} is still terminating (a finalizer holds it)")
    return gone


@contextmanager
def _shielded() -> Iterator[None]:
    """Ignore Ctrl-C while the probe is being deleted, so a second one cannot skip it."""
    if not _main_thread():
        yield
        return
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous if previous is not None else signal.SIG_DFL)
