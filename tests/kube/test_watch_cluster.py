"""`Kube.watch_until`, the one list-then-watch loop, against the real API server.

Each failure mode a long wait meets: a watch the server closes (bounded per request), a
connection that drops mid-stream (resumed from the last resourceVersion), and a
resourceVersion the server no longer serves (410 Gone, answered by listing afresh). The
410 is the real server's: a watch from a version older than its watch cache holds.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from typing import Any

from fracctl.adapters.kube import Kube
from fracctl.core.clock import SystemClock
from fracctl.core.kube.nodes import is_ready
from fracctl.core.kube.resources import NODES, ResourceRef
from fracctl.errors import Unreachable
from fracctl.sandbox import controlplane
from tests.support.helpers import Cluster

LABEL = "example.org/watch-test"


def ready_soon(cluster: Cluster, name: str, after: float) -> threading.Thread:
    def later() -> None:
        time.sleep(after)
        cluster.set_ready(name, True)

    thread = threading.Thread(target=later, daemon=True)
    thread.start()
    return thread


def all_ready(cluster: Cluster):  # type: ignore[no-untyped-def]
    cond = cluster.config.condition
    return lambda view: bool(view) and all(is_ready(o, cond) for o in view.values())


class DroppingWatch(Kube):
    """The real client, whose watch streams are cut after their first event."""

    drops = 0

    def watch(self, *args: Any, **kwargs: Any) -> Iterator[tuple[str, dict[str, Any]]]:
        for event in super().watch(*args, **kwargs):
            yield event
            if event[0] != "BOOKMARK":
                self.drops += 1
                raise Unreachable("watch on nodes broke: connection reset by peer")


CONFIGMAPS = ResourceRef("", "v1", "configmaps", "ConfigMap", namespaced=True)


def compact_etcd(cp: controlplane.ControlPlane) -> int:
    """Compact etcd at its current revision (through its JSON gateway); returns it."""
    import httpx

    with httpx.Client(base_url=cp.etcd_url, timeout=10) as etcd:
        revision = int(etcd.post("/v3/kv/range", json={"key": "AA=="}).json()["header"]["revision"])
        etcd.post("/v3/kv/compaction", json={"revision": revision, "physical": True})
    return revision


class CompactedBeforeWatch(Kube):
    """The real client; before its first watch, etcd moves on and is compacted."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.before_first_watch: Any = None
        self.watched_from: list[str] = []

    def watch(self, *args: Any, **kwargs: Any) -> Iterator[tuple[str, dict[str, Any]]]:
        if self.before_first_watch is not None:
            hook, self.before_first_watch = self.before_first_watch, None
            hook()
        self.watched_from.append(str(kwargs.get("resource_version")))
        return super().watch(*args, **kwargs)


def test_a_dropped_connection_is_resumed_from_the_last_version(cluster: Cluster) -> None:
    cluster.node("w-0", labels={LABEL: "x"}, ready=False)
    cluster.node("w-1", labels={LABEL: "x"}, ready=False)
    kube = DroppingWatch.connect(kubeconfig=cluster.kubeconfig)
    clock = SystemClock()
    ready_soon(cluster, "w-0", 0.3)
    ready_soon(cluster, "w-1", 0.6)
    view, finished = kube.watch_until(
        NODES,
        all_ready(cluster),
        deadline=clock.monotonic() + 20,
        clock=clock,
        label_selector=f"{LABEL}=x",
    )
    assert finished
    assert set(view) == {"w-0", "w-1"}
    assert kube.drops >= 1, "the stream was cut"
    assert kube.calls["WATCH nodes"] == kube.drops + 1 or kube.calls["WATCH nodes"] > kube.drops
    assert kube.calls["GET nodes"] == 1, "resumed by watching again, not by listing again"


def test_410_gone_lists_afresh_and_goes_on(
    cluster: Cluster, control_plane: controlplane.ControlPlane
) -> None:
    ns = cluster.namespace("fracctl-watch")
    cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "probe", "namespace": ns}}
    cluster.kube.create(CONFIGMAPS, {**cm, "data": {"step": "0"}})
    kube = CompactedBeforeWatch.connect(kubeconfig=cluster.kubeconfig)

    def move_on_and_compact() -> None:  # the listed version is compacted away in etcd
        for step in ("1", "2"):
            cluster.kube.apply(CONFIGMAPS, {**cm, "data": {"step": step}})
        compact_etcd(control_plane)

    kube.before_first_watch = move_on_and_compact

    def at_step_3(view: dict[str, Any]) -> bool:
        return any((o.get("data") or {}).get("step") == "3" for o in view.values())

    def step_3_later() -> None:
        time.sleep(1.0)
        cluster.kube.apply(CONFIGMAPS, {**cm, "data": {"step": "3"}})

    thread = threading.Thread(target=step_3_later, daemon=True)
    thread.start()
    clock = SystemClock()
    view, finished = kube.watch_until(
        CONFIGMAPS, at_step_3, deadline=clock.monotonic() + 20, clock=clock, namespace=ns
    )
    thread.join()
    cluster.kube.delete(CONFIGMAPS, "probe", ns)
    assert finished and at_step_3(view)
    assert kube.calls["GET configmaps"] == 2, "the 410 was answered by one fresh list"
    first, second = kube.watched_from[:2]
    assert int(second) > int(first), "the second watch starts from the fresh list's version"


def test_each_watch_is_bounded_and_the_deadline_ends_the_wait(cluster: Cluster) -> None:
    cluster.node("w-0", labels={LABEL: "x"}, ready=False)
    kube = Kube.connect(kubeconfig=cluster.kubeconfig)
    clock = SystemClock()
    started = clock.monotonic()
    view, finished = kube.watch_until(
        NODES,
        all_ready(cluster),
        deadline=started + 3.5,
        clock=clock,
        label_selector=f"{LABEL}=x",
        max_watch_seconds=1,
    )
    assert not finished
    assert set(view) == {"w-0"}
    assert kube.calls["WATCH nodes"] >= 3, "watches of at most 1 s each, one after another"
    assert clock.monotonic() - started < 8


def test_objects_that_start_and_stop_matching_are_followed(cluster: Cluster) -> None:
    cluster.node("w-0", labels={LABEL: "x"}, ready=True)
    cluster.node("w-1", labels={LABEL: "x"}, ready=False)
    kube = Kube.connect(kubeconfig=cluster.kubeconfig)
    clock = SystemClock()

    def unlabel_later() -> None:
        time.sleep(0.5)
        cluster.label("w-1", {LABEL: None})

    threading.Thread(target=unlabel_later, daemon=True).start()
    view, finished = kube.watch_until(
        NODES,
        all_ready(cluster),
        deadline=clock.monotonic() + 20,
        clock=clock,
        label_selector=f"{LABEL}=x",
    )
    assert finished
    assert set(view) == {"w-0"}, "the node that stopped matching left the view"
