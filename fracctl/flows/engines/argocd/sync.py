"""Following an Argo CD sync: waiting for its operation and judging how it ended.

The polling policy on top of the plain client calls: poll an application until its
operation reaches a terminal phase, retry a sync refused because another operation is
already in progress (with backoff, for a bounded time, describing the running operation
when giving up), and raise :class:`SyncFailed` when the operation or the one resource
failed. ``Succeeded`` means Argo CD's apply calls returned OK, not that the live object
matches git: callers read it back.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from fracctl.adapters.argocd import TERMINAL_PHASES, OperationInProgress, SyncFailed, clip
from fracctl.core.clock import Backoff, Clock, SystemClock
from fracctl.errors import ExternalError, TimedOut
from fracctl.redact import redact

if TYPE_CHECKING:
    from fracctl.adapters.argocd import ArgoCD

Obj = dict[str, Any]


def wait_operation(
    client: ArgoCD,
    name: str,
    *,
    timeout: float,
    clock: Clock | None = None,
    backoff: Backoff | None = None,
) -> Obj:
    """Poll the application until its operation reaches a terminal phase.

    Terminal means ``status.operationState.phase`` is Succeeded, Failed or Error and
    no ``operation`` is pending any more (Argo CD clears both together when it
    finishes, so a previous operation's result is never mistaken for this one's).

    Args:
        client: the Argo CD client.
        name: the application.
        timeout: seconds to wait.
        clock: ``monotonic``/``sleep`` provider (tests pass a fake).
        backoff: delays between polls (default 0.25 s growing to 5 s).

    Returns:
        The final ``operationState`` (with ``syncResult.resources[]``).

    Raises:
        TimedOut: still running after ``timeout``; the message has the last phase.
    """
    clock = clock or SystemClock()
    backoff = backoff or Backoff()
    deadline = clock.monotonic() + timeout
    state: Obj = {}
    while True:
        app = client.get_application(name)
        state = (app.get("status") or {}).get("operationState") or {}
        if state.get("phase") in TERMINAL_PHASES and not app.get("operation"):
            return state
        left = deadline - clock.monotonic()
        if left <= 0:
            phase = state.get("phase") or "Pending"
            message = state.get("message") or "not started by the controller yet"
            raise TimedOut(
                f"Argo CD operation on {name} still {phase} after {timeout:.0f}s: "
                f"{clip(redact(str(message)))}",
                hint=f"it keeps running in Argo CD; watch it with `argocd app get {name}` "
                f"or stop it with `argocd app terminate-op {name}`",
            )
        clock.sleep(min(backoff.next(), left))


def sync_resource_and_wait(
    client: ArgoCD,
    name: str,
    *,
    resource: Mapping[str, str],
    revision: str | None = None,
    timeout: float,
    busy_timeout: float | None = None,
    clock: Clock | None = None,
    check: bool = True,
    sync_options: list[str] | None = None,
    notify: Callable[[str], None] | None = None,
    backoff: Backoff | None = None,
) -> Obj:
    """Sync one resource and wait for the operation to end.

    A sync refused because another operation runs is retried with backoff for up to
    ``busy_timeout`` seconds (default: ``timeout``), then reported.

    Args:
        client: the Argo CD client.
        name: the application.
        resource: ``{group, kind, name, namespace}`` (namespace empty when
            cluster-scoped).
        revision: a git revision (default: the application's target revision).
        timeout: seconds to wait for this sync's operation.
        busy_timeout: seconds to wait for another operation to finish first.
        clock: ``monotonic``/``sleep`` provider.
        check: raise :class:`SyncFailed` when the operation or the resource failed.
        sync_options: per-sync options (replace the application's own).
        notify: called with a one-line progress note (never holds the token).
        backoff: delays between reads of the operation (default: :func:`wait_operation`'s).

    Returns:
        The final ``operationState``. ``Succeeded`` means Argo CD's apply calls
        returned OK, not that the live object matches git: read it back.

    Raises:
        OperationInProgress: another operation was still running after
            ``busy_timeout``.
        SyncFailed: with ``check``, the operation or the resource failed.
        TimedOut: this sync's operation did not end within ``timeout``.
    """
    clock = clock or SystemClock()
    busy_bound = timeout if busy_timeout is None else busy_timeout
    _start_sync(
        client,
        name,
        resource=resource,
        revision=revision,
        sync_options=sync_options,
        busy_bound=busy_bound,
        clock=clock,
        notify=notify,
    )
    state = wait_operation(client, name, timeout=timeout, clock=clock, backoff=backoff)
    if check:
        check_operation(name, state, resource)
    return state


def _start_sync(
    client: ArgoCD,
    name: str,
    *,
    resource: Mapping[str, str],
    revision: str | None,
    sync_options: list[str] | None,
    busy_bound: float,
    clock: Clock,
    notify: Callable[[str], None] | None,
) -> None:
    """Start the sync, retrying for ``busy_bound`` seconds while another operation runs.

    ``notify`` hears of the wait for another operation, and of the sync once started.
    """
    busy_deadline = clock.monotonic() + busy_bound
    backoff = Backoff()
    told = False
    while True:
        try:
            client.sync(
                name,
                resources=[resource],
                revision=revision,
                sync_options=sync_options,
            )
        except OperationInProgress as e:
            left = busy_deadline - clock.monotonic()
            if left <= 0:
                running = _describe_operation(client, name)
                raise OperationInProgress(
                    e.status,
                    message=f"Argo CD application {name}: another operation is still in "
                    f"progress after waiting {busy_bound:.0f}s{running}",
                    hint=f"wait for it (`argocd app wait {name} --operation`) or stop it "
                    f"(`argocd app terminate-op {name}`), then run again",
                ) from e
            if notify and not told:
                notify(f"Argo CD: another operation runs on {name}; waiting for it to end")
                told = True
            clock.sleep(min(backoff.next(), left))
            continue
        if notify:
            notify(f"Argo CD: syncing {_resource_id(resource)} in {name}")
        return


def _describe_operation(client: ArgoCD, name: str) -> str:
    """`` (phase, started …, by …)`` for the running operation; best effort."""
    try:
        app = client.get_application(name)
    except ExternalError:
        return ""
    op = app.get("operation") or {}
    state = (app.get("status") or {}).get("operationState") or {}
    who = (op.get("initiatedBy") or {}) or ((state.get("operation") or {}).get("initiatedBy") or {})
    by = "automated sync" if who.get("automated") else (who.get("username") or "")
    parts = [
        p
        for p in (
            state.get("phase"),
            f"started {state['startedAt']}" if state.get("startedAt") else "",
            f"by {by}" if by else "",
        )
        if p
    ]
    return f" ({', '.join(parts)})" if parts else ""


def resource_result(state: Mapping[str, Any], resource: Mapping[str, str]) -> Obj | None:
    """The ``syncResult.resources[]`` entry for ``resource``, if Argo CD reported one.

    For a cluster-scoped resource (no namespace) Argo CD v3.2 reports the application's
    destination namespace, so the namespace is then not compared.
    """
    want = _resource_key(resource)
    for r in ((state.get("syncResult") or {}).get("resources")) or []:
        got = _resource_key(r)
        if got == want or (not want[2] and got[:2] + got[3:] == want[:2] + want[3:]):
            return dict(r)
    return None


def check_operation(name: str, state: Mapping[str, Any], resource: Mapping[str, str]) -> None:
    """Raise :class:`SyncFailed` when the operation or ``resource``'s sync failed.

    A missing entry for the resource is not an error here: Argo CD omits resources it
    skipped, and the caller verifies the live object anyway.
    """
    phase = state.get("phase")
    result = resource_result(state, resource)
    failed = result is not None and result.get("status") == "SyncFailed"
    if phase == "Succeeded" and not failed:
        return
    detail = (result or {}).get("message") or state.get("message") or "no message"
    raise SyncFailed(
        f"Argo CD sync of {_resource_id(resource)} in {name} ended {phase}: {clip(str(detail))}",
        operation_state=dict(state),
        hint=f"see `argocd app get {name}`; the live object was not changed by this sync",
    )


def _resource_key(r: Mapping[str, Any]) -> tuple[str, str, str, str]:
    return (
        str(r.get("group") or ""),
        str(r.get("kind") or ""),
        str(r.get("namespace") or ""),
        str(r.get("name") or ""),
    )


def _resource_id(r: Mapping[str, Any]) -> str:
    group, kind, namespace, name = _resource_key(r)
    kind_group = f"{kind}.{group}" if group else kind
    return f"{kind_group} {namespace}/{name}" if namespace else f"{kind_group} {name}"
