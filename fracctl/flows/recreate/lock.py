"""The recreate lock: a ``coordination.k8s.io`` Lease with holder identity and renewal."""

from __future__ import annotations

import getpass
import os
import secrets
import socket
import threading
from datetime import datetime, timezone
from types import TracebackType

from fracctl.core.kube.resources import LEASES
from fracctl.core.recreate.guard_policy import DELEGATE, PARAM_LABEL, REQUESTER, UPDATE_ARMED
from fracctl.core.recreate.lock import HELD, STALE, judge_lease, lease_spec, run_of
from fracctl.errors import Conflict, FracctlError, NotFound, Unsafe
from fracctl.flows.context import Context

#: What a run notes on its Lease for the half that takes it on: the live selector before
#: the change (JSON) and where its backup is.
NOTES = {"before": "fracctl.io/before", "backup": "fracctl.io/backup"}


def new_run_id() -> str:
    """A run's id: the one its Lease, its drain's fence and its journal all name."""
    return secrets.token_hex(4)


def identity(run_id: str | None = None) -> str:
    """Who is running: ``user@host pid N run XXXXXXXX`` (unique per run, not per process)."""
    try:
        user = getpass.getuser()
    except (KeyError, OSError):
        user = str(os.getuid())
    return f"{user}@{socket.gethostname()} pid {os.getpid()} run {run_id or new_run_id()}"


class LeaseLock:
    """Hold the Lease for the duration of a ``with`` block, renewing it in the background."""

    def __init__(self, ctx: Context, *, me: str | None = None) -> None:
        self.ctx = ctx
        self.kube = ctx.kube
        self.me = me or identity()
        self.run_id = run_of(self.me) or new_run_id()
        self.namespace = ctx.config.recreate.lock_namespace
        self.name = ctx.config.recreate.lock_name
        self.duration = int(ctx.config.timeouts.lock_lease)
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.acquired: datetime | None = None
        self.lost = ""  # why the lease is no longer ours, once it is not
        # One write of the Lease at a time from this run: the renewal thread, and the
        # main thread's check, arm and note (each a read and a replace).
        self._writing = threading.Lock()

    def _now(self) -> datetime:
        return datetime.fromtimestamp(self.ctx.clock.now(), tz=timezone.utc)

    def acquire(self) -> None:
        """Take the lease, or raise Unsafe naming the holder."""
        now = self._now()
        lease = self.kube.get_or_none(LEASES, self.name, self.namespace)
        judged = judge_lease(lease, me=self.me, now=now)
        if judged.state == HELD:
            since = judged.since.strftime("%Y-%m-%d %H:%M:%S UTC") if judged.since else "unknown"
            raise Unsafe(
                f"another recreate holds the lock Lease {self.namespace}/{self.name}: "
                f"{judged.holder}, since {since}",
                hint="wait for it to finish; a holder that died is taken over once its "
                f"lease expires ({self.duration}s after its last renewal)",
            )
        if judged.state == STALE:
            self.ctx.warn(
                f"taking over the expired lock Lease {self.namespace}/{self.name} "
                f"from {judged.holder}"
            )
        spec = lease_spec(me=self.me, now=now, duration=self.duration)
        try:
            if lease is None:
                self.kube.ensure_namespace(self.namespace)
                self.kube.create(
                    LEASES,
                    {
                        "apiVersion": "coordination.k8s.io/v1",
                        "kind": "Lease",
                        "metadata": {"name": self.name, "namespace": self.namespace},
                        "spec": spec,
                    },
                )
            else:
                lease["spec"] = spec
                self.kube.replace(LEASES, lease)
        except Conflict:
            raise Unsafe(
                f"another recreate took the lock Lease {self.namespace}/{self.name} just now",
                hint="rerun to see who holds it",
            ) from None
        self.acquired = now
        self._thread = threading.Thread(target=self._renew_loop, daemon=True)
        self._thread.start()

    def _renew_loop(self) -> None:
        interval = max(0.5, self.duration / 3)
        last_ok = self.ctx.clock.monotonic()
        while not self._stop.wait(interval):
            try:
                self.renew()
                last_ok = self.ctx.clock.monotonic()
            except Exception as e:  # noqa: BLE001 - a dead renewal thread must not go unnoticed
                self.ctx.warn(f"could not renew the lock Lease: {e}")
                if self.ctx.clock.monotonic() - last_ok >= self.duration:
                    self.lost = f"renewals failed for {self.duration}s ({e})"

    def renew(self) -> None:
        """Push ``renewTime`` forward; notes a lease that is no longer ours.

        A write that conflicts while the Lease is still ours (another writer of its
        annotations came between the read and the replace) is read and tried again.
        """
        with self._writing:
            for attempt in range(3):
                lease = self.kube.get_or_none(LEASES, self.name, self.namespace)
                holder = (lease or {}).get("spec", {}).get("holderIdentity")
                if lease is None or holder != self.me:
                    self.lost = f"the Lease is now held by {holder or 'nobody'}"
                    return
                lease["spec"] = lease_spec(
                    me=self.me, now=self._now(), duration=self.duration, acquired=self.acquired
                )
                try:
                    self.kube.replace(LEASES, lease)
                    return
                except Conflict:
                    if attempt == 2:
                        raise

    def check(self) -> None:
        """Renew now, and raise Unsafe when the lock was lost (before each destructive step)."""
        try:
            self.renew()
        except FracctlError as e:
            self.lost = self.lost or f"could not renew it: {e}"
        if self.lost:
            raise Unsafe(
                f"lost the lock Lease {self.namespace}/{self.name}: {self.lost}; stopped "
                "before changing anything more",
                hint="rerun: fracctl resumes from what the cluster shows",
            )

    def arm(self, delegate: str = "", update_uid: str = "") -> str:
        """Name this run's identity on the Lease as the one that may delete the target now.

        The guard policy (:mod:`fracctl.core.recreate.guard_policy`) lets a DELETE of the target
        through only for the username armed here, and for ``delegate``: the identity of
        a controller whose own run deletes it for this recreate (helm-controller running
        a chart's hook). ``update_uid``, in the same write: the uid of the target object
        whose daemon-restarting update the policy lets through now, from any requester
        (none: such updates stay refused). Called after the proofs and guards, right
        before the delete (or update). Returns the username.
        """
        requester = self.kube.whoami()
        self._annotate(
            {REQUESTER: requester, DELEGATE: delegate or None, UPDATE_ARMED: update_uid or None}
        )
        return requester

    def _annotate(self, changes: dict[str, str | None]) -> None:
        """Set (or, for None, remove) annotations of the Lease this run holds."""
        with self._writing:
            lease = self.kube.get(LEASES, self.name, self.namespace)
            if (lease.get("spec") or {}).get("holderIdentity") != self.me:
                self.lost = "the Lease is no longer ours"
            else:
                annotations = lease.setdefault("metadata", {}).setdefault("annotations", {})
                for key, value in changes.items():
                    if value is None:
                        annotations.pop(key, None)
                    else:
                        annotations[key] = value
                self.kube.replace(LEASES, lease)
        if self.lost:
            self.check()

    def note(self, **notes: str) -> None:
        """Write ``notes`` (``before``, ``backup``) on the Lease this run holds.

        For the half that takes the Lease on (the gate's PostSync records them); cleared
        on release.
        """
        self._annotate({NOTES[key]: value for key, value in notes.items()})

    def stop(self) -> None:
        """Stop renewing but keep the Lease, for a later holder of the same identity.

        The gate's PostSync half takes it on after its PreSync half; others wait for it to
        expire.
        """
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def release(self) -> None:
        """Stop renewing and give the lease up, if it is still ours.

        The guard policy's own Lease (labelled :data:`PARAM_LABEL`) stays, unheld and
        disarmed, so that the policy keeps answering with its message; any other is
        deleted.
        """
        self.stop()
        try:
            lease = self.kube.get_or_none(LEASES, self.name, self.namespace)
            if lease is None or (lease.get("spec") or {}).get("holderIdentity") != self.me:
                return
            meta = lease["metadata"]
            if (meta.get("labels") or {}).get(PARAM_LABEL) == "true":
                for key in (REQUESTER, DELEGATE, UPDATE_ARMED, *NOTES.values()):
                    (meta.get("annotations") or {}).pop(key, None)
                lease["spec"] = {}
                self.kube.replace(LEASES, lease)  # resourceVersion: only the Lease we read
                return
            # resourceVersion, not uid: a takeover replaces the Lease and keeps its uid.
            self.kube.delete(
                LEASES, self.name, self.namespace, resource_version=meta["resourceVersion"]
            )
        except (NotFound, Conflict):
            pass
        except FracctlError as e:
            self.ctx.warn(f"could not release the lock Lease: {e}")

    def __enter__(self) -> LeaseLock:
        self.acquire()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.release()


class NoLock:
    """Stands in for :class:`LeaseLock` where nothing will change (``--dry-run``)."""

    def __init__(self) -> None:
        self.run_id = new_run_id()
        self.me = identity(self.run_id)

    def check(self) -> None:
        """Nothing to renew."""

    def arm(self, delegate: str = "", update_uid: str = "") -> str:
        """Nothing to arm: a run without the lock deletes nothing."""
        return ""

    def __enter__(self) -> NoLock:
        return self

    def __exit__(self, *exc: object) -> None:
        return None
