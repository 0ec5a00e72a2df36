"""The Flux adapter: ask a Kustomization to reconcile now, and wait for the outcome.

This does what ``flux reconcile kustomization NAME`` does: set the annotation
``reconcile.fluxcd.io/requestedAt`` to a fresh timestamp, then wait until the
kustomize-controller reports it handled that request
(``status.lastHandledReconcileAt``) and its ``Ready`` condition settled. Everything goes
through :class:`fracctl.adapters.kube.Kube`, so errors are fracctl errors already.
"""

from __future__ import annotations

from typing import Any

from fracctl.adapters.kube import Kube
from fracctl.core.clock import Backoff, Clock, SystemClock
from fracctl.core.flux_rollout import commit_of as commit_of  # one reading of a revision
from fracctl.core.flux_rollout import matches as revision_matches
from fracctl.core.kube.nodes import condition
from fracctl.core.kube.resources import ResourceRef
from fracctl.errors import ExternalError, NotFound, Refused, TimedOut

API_VERSION = "kustomize.toolkit.fluxcd.io/v1"
KIND = "Kustomization"
REQUESTED_AT = "reconcile.fluxcd.io/requestedAt"
# With requestedAt, the same token: reset a HelmRelease's failure counters, force an upgrade
# (fluxcd/pkg apis/meta; what `flux reconcile helmrelease --reset --force` writes).
RESET_AT = "reconcile.fluxcd.io/resetAt"
FORCE_AT = "reconcile.fluxcd.io/forceAt"

Obj = dict[str, Any]

#: Ready=False reasons after which kustomize-controller tries again by itself (fluxcd/pkg
#: apis/meta: ProgressingReason, ProgressingWithRetryReason, DependencyNotReadyReason,
#: ArtifactFailedReason; kustomize-controller requeues on each): not a final verdict
#: unless the Kustomization is also Stalled.
TRANSIENT = frozenset(
    {"Progressing", "ProgressingWithRetry", "DependencyNotReady", "ArtifactFailed"}
)


class FluxReconcileFailed(ExternalError):
    """The Kustomization handled the request and reported ``Ready=False``."""

    def __init__(self, message: str, *, status: Obj, hint: str | None = None) -> None:
        super().__init__(message, hint=hint)
        self.status = status


class Flux:
    """One Flux ``Kustomization``, read and annotated through the Kubernetes API.

    Args:
        kube: the cluster client.
        namespace: the Kustomization's namespace (usually ``flux-system``).
        name: the Kustomization's name.
    """

    def __init__(self, kube: Kube, namespace: str, name: str) -> None:
        self.kube = kube
        self.namespace = namespace
        self.name = name
        self._ref: ResourceRef | None = None

    def __repr__(self) -> str:
        return f"Flux(kustomization={self.namespace}/{self.name})"

    @property
    def ref(self) -> ResourceRef:
        """The Kustomization resource, found through discovery."""
        if self._ref is None:
            try:
                self._ref = self.kube.resolve(API_VERSION, KIND)
            except NotFound as e:
                raise NotFound(
                    e.status, hint=f"is Flux installed? the cluster serves no {API_VERSION}"
                ) from e
        return self._ref

    def get(self) -> Obj:
        """The Kustomization object.

        Raises:
            NotFound: no such Kustomization (the hint names flux.namespace/kustomization).
        """
        ref = self.ref
        try:
            return self.kube.get(ref, self.name, self.namespace)
        except NotFound as e:
            raise NotFound(
                e.status,
                hint=f"no Kustomization {self.namespace}/{self.name}: check "
                "flux.namespace and flux.kustomization",
            ) from e

    def request_reconcile(self, now_iso: str | None = None) -> str:
        """Annotate the Kustomization so the controller reconciles it now.

        The token must differ from every earlier request's: the controller acts on a
        changed annotation, and records the value it handled in
        ``status.lastHandledReconcileAt``; a token repeated within the same second would
        be "handled" already, with the earlier request's verdict.

        Args:
            now_iso: the request's token; by default the current time in RFC 3339 to the
                microsecond (as ``flux reconcile`` writes it, to the nanosecond). A token
                equal to the Kustomization's last request is made unique.

        Returns:
            ``now_iso``, to pass to :meth:`wait_ready`.

        Raises:
            Refused: the Kustomization is suspended (it would never reconcile).
        """
        obj = self.get()
        if (obj.get("spec") or {}).get("suspend"):
            raise Refused(
                f"Flux Kustomization {self.namespace}/{self.name} is suspended: "
                "it would not reconcile",
                hint=f"resume it first: flux resume kustomization {self.name} -n {self.namespace}",
            )
        last = ((obj.get("metadata") or {}).get("annotations") or {}).get(REQUESTED_AT)
        now_iso = now_iso or request_token()
        while now_iso == last:
            now_iso = request_token()
        self.kube.patch(
            self.ref,
            self.name,
            {"metadata": {"annotations": {REQUESTED_AT: now_iso}}},
            namespace=self.namespace,
        )
        return now_iso

    def wait_ready(
        self,
        requested_at: str,
        *,
        timeout: float,
        clock: Clock | None = None,
        revision: str | None = None,
        backoff: Backoff | None = None,
    ) -> Obj:
        """Wait until the controller handled ``requested_at`` and ``Ready`` settled.

        Args:
            requested_at: the value given to :meth:`request_reconcile`.
            timeout: seconds to wait.
            clock: ``monotonic``/``sleep`` provider (tests pass a fake).
            revision: when set, the applied revision must match it (a full Flux
                revision such as ``main@sha1:…``, or a commit id or its prefix).
            backoff: delays between reads (default 0.2 s growing to 2 s).

        Returns:
            The Kustomization's ``status``.

        Raises:
            FluxReconcileFailed: ``Ready=False`` after handling the request for a reason
                Flux does not retry by itself (:data:`TRANSIENT`), or a different revision
                was applied.
            TimedOut: not handled, or not settled, within ``timeout``.
        """
        clock = clock or SystemClock()
        backoff = backoff or Backoff(first=0.2, cap=2.0)
        deadline = clock.monotonic() + timeout
        who = f"Flux Kustomization {self.namespace}/{self.name}"
        while True:
            obj = self.get()
            status = obj.get("status") or {}
            ready = _settled(obj, requested_at)
            if ready is not None and self._verdict(status, ready, revision):
                return status
            left = deadline - clock.monotonic()
            if left <= 0:
                raise TimedOut(
                    f"{who} {_unsettled(status, requested_at)} after {timeout:.0f}s",
                    hint="is the kustomize-controller running? "
                    f"see `flux get kustomizations -n {self.namespace}`",
                )
            clock.sleep(min(backoff.next(), left))

    def _verdict(self, status: Obj, ready: Obj, revision: str | None) -> bool:
        """Whether a settled ``Ready`` is a success; False while it is neither True nor False.

        Raises:
            FluxReconcileFailed: ``Ready=False``, or ``Ready=True`` at another revision.
        """
        who = f"Flux Kustomization {self.namespace}/{self.name}"
        if ready.get("status") == "False":
            raise FluxReconcileFailed(
                f"{who} is not Ready: {ready.get('reason') or 'no reason'}: "
                f"{_clip(str(ready.get('message') or 'no message'))}",
                status=status,
                hint=f"see `flux get kustomizations -n {self.namespace}` and the "
                "kustomize-controller logs",
            )
        if ready.get("status") != "True":
            return False
        applied = str(status.get("lastAppliedRevision") or "")
        if revision and not revision_matches(applied, revision):
            raise FluxReconcileFailed(
                f"{who} applied revision {applied or '(none)'}, not {revision}",
                status=status,
                hint="its source has not fetched the new commit yet: reconcile "
                "the source (flux reconcile kustomization "
                f"{self.name} -n {self.namespace} --with-source) and run again",
            )
        return True


def _settled(obj: Obj, requested_at: str) -> Obj | None:
    """The Kustomization's ``Ready`` condition once it settled on ``requested_at``, else None.

    Settled: the controller handled that request, at the object's current generation,
    and ``Ready`` is not a reason Flux retries by itself (:data:`TRANSIENT`) unless the
    Kustomization is also Stalled.
    """
    status = obj.get("status") or {}
    ready = _ready(status)
    handled = status.get("lastHandledReconcileAt") == requested_at
    generation = (obj.get("metadata") or {}).get("generation")
    # kustomize-controller moves status.observedGeneration only on success (it
    # stays -1 while every try failed); each condition carries its own.
    observed = (ready or {}).get("observedGeneration", status.get("observedGeneration"))
    current = generation is None or observed is None or observed >= generation
    stalled = (condition({"status": status}, "Stalled") or {}).get("status") == "True"
    transient = ready is not None and ready.get("reason") in TRANSIENT and not stalled
    if handled and current and ready is not None and not transient:
        return ready
    return None


def _unsettled(status: Obj, requested_at: str) -> str:
    """Where a Kustomization stands when the wait for ``requested_at`` gives up."""
    ready = _ready(status)
    if status.get("lastHandledReconcileAt") != requested_at:
        seen = status.get("lastHandledReconcileAt") or "none"
        return f"has not handled the request {requested_at} (last handled: {seen})"
    if ready is None:
        return "reports no Ready condition"
    return (
        f"is Ready={ready.get('status')} ({ready.get('reason') or 'no reason'}: "
        f"{_clip(str(ready.get('message') or 'no message'))})"
    )


def request_token() -> str:
    """A reconcile request's token: now, RFC 3339 UTC to the microsecond."""
    from datetime import datetime, timezone

    return datetime.now(timezone.utc).isoformat(timespec="microseconds").replace("+00:00", "Z")


def _ready(status: Obj) -> Obj | None:
    return condition({"status": status}, "Ready")


def _clip(text: str, limit: int = 300) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"
