"""The lock's own writes of its Lease: a renewal that meets another write reads again.

The renewal thread and the run's main thread (its check before each destructive step,
the arming, the notes) each read the Lease and replace it; before, a write between one's
read and its replace made the run believe it had lost the lock (409 Conflict) and stop
halfway through a procedure.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from fracctl.core.kube.resources import LEASES
from fracctl.flows.recreate.lock import LeaseLock
from tests.support.helpers import Cluster
from tests.support.recreate_fixtures import make_incident


def test_a_renewal_that_meets_another_write_reads_again_and_keeps_the_lock(
    cluster: Cluster, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ctx = make_incident(cluster, tmp_path).context()
    with LeaseLock(ctx) as lock:
        real = lock.kube.replace
        writes: list[str] = []

        def racing(ref: Any, body: Any, **kw: Any) -> Any:
            if ref == LEASES and not writes:  # another write lands between read and replace
                other = real.__self__.get(LEASES, lock.name, lock.namespace)  # type: ignore[attr-defined]
                other["metadata"].setdefault("annotations", {})["example.org/other"] = "x"
                real(LEASES, other)
                writes.append("other")
            writes.append(ref.plural)
            return real(ref, body, **kw)

        monkeypatch.setattr(lock.kube, "replace", racing)
        lock.check()  # raised Unsafe ("lost the lock Lease … 409 Conflict") before
        assert not lock.lost
        assert writes[:3] == ["other", "leases", "leases"], writes  # the conflict, the retry
        lease = cluster.kube.get(LEASES, lock.name, lock.namespace)
        assert lease["spec"]["holderIdentity"] == lock.me
        assert lease["metadata"]["annotations"]["example.org/other"] == "x"
        lock.note(before="{}", backup="ConfigMap x/y")  # the main thread's writes go on too
