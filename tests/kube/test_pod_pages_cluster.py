"""``Kube.pod_pages`` against the real API server: the protobuf walk agrees with the JSON
the same server sends, pages are followed, and errors stay readable."""

from __future__ import annotations

import threading

import pytest

from fracctl.adapters.kube import Kube, podscan, wire
from fracctl.core.kube.resources import PODS
from fracctl.errors import ApiError, ExternalError
from tests.support.canned import CannedServer, kube_at
from tests.support.helpers import Cluster


def _seed(cluster: Cluster) -> None:
    cluster.pod("pp-a", "frac", annotations={"gpu-fraction": "0.5", "note": "ü ✓"}, node="n-1")
    cluster.pod("pp-a", "plain", node="n-2", phase="Pending")
    cluster.pod("pp-b", "done", annotations={"gpu-memory": "1024"}, phase="Succeeded")
    cluster.pod("pp-b", "unscheduled", containers=["main", "sidecar"])


# The cluster is shared: other tests' controllers change their pods between two reads.
# The walk reads every namespace; the comparisons hold on the seeded ones, which stand still.
SEEDED = ("pp-a", "pp-b")


def _ours(pods: dict[str, podscan.PodFields]) -> dict[str, podscan.PodFields]:
    return {k: v for k, v in pods.items() if k.split("/", 1)[0] in SEEDED}


def _by_json(cluster: Cluster, namespace: str | None = None) -> dict[str, podscan.PodFields]:
    out = {}
    for item in cluster.kube.list(PODS, namespace=namespace):
        pod = podscan.scan_page_json({"items": [item]}).pods[0]
        out[f"{pod.namespace}/{pod.name}"] = pod
    return out


def test_the_protobuf_walk_reads_what_the_json_says(cluster: Cluster) -> None:
    _seed(cluster)
    pages = list(cluster.kube.pod_pages(limit=500))
    walked = {f"{p.namespace}/{p.name}": p for page in pages for p in page.pods}
    assert _ours(walked) == _ours(_by_json(cluster)) and len(_ours(walked)) == 4
    frac = walked["pp-a/frac"]
    assert (frac.node, frac.phase, frac.annotations["note"]) == ("n-1", "Running", "ü ✓")
    assert walked["pp-b/unscheduled"].node == ""


def test_pages_are_followed_and_counted_one_call_each(cluster: Cluster) -> None:
    _seed(cluster)
    kube = Kube.connect(kubeconfig=cluster.kubeconfig)
    pages = list(kube.pod_pages(field_selector="status.phase!=Succeeded", limit=1))
    names = sorted(_ours({f"{p.namespace}/{p.name}": p for page in pages for p in page.pods}))
    want = sorted(k for k, v in _ours(_by_json(cluster)).items() if v.phase != "Succeeded")
    assert names == want and "pp-b/done" not in names
    assert kube.calls["GET pods"] == len(pages)
    assert all(page.continue_token for page in pages[:-1]) and not pages[-1].continue_token


def test_stopping_early_leaves_nothing_behind(cluster: Cluster) -> None:
    _seed(cluster)
    before = threading.active_count()
    pages = cluster.kube.pod_pages(limit=1)
    first = next(pages)
    assert len(first.pods) == 1
    pages.close()  # the fetcher is told to stop; it must not block on the full queue
    for t in threading.enumerate():
        if t.name == "fracctl-pod-pages":
            t.join(timeout=10)
    assert threading.active_count() <= before


def test_a_refused_list_keeps_the_servers_words(cluster: Cluster) -> None:
    """The server sends its error as a protobuf Status when asked for protobuf."""
    with pytest.raises(ApiError) as e:
        list(cluster.kube.pod_pages(field_selector="spec.noSuchField=x"))
    assert e.value.status.code == 400
    assert "noSuchField" in str(e.value)


@pytest.mark.parametrize(
    ("content_type", "body", "why"),
    [
        ("text/html", b"<html>login</html>", "text/html body"),
        ("application/vnd.kubernetes.protobuf", wire.MAGIC + b"\x12\x05ab", "runs past"),
        ("application/vnd.kubernetes.protobuf", b"<html>", "not a Kubernetes protobuf"),
        ("application/json", b"[1, 2]", "not a list"),
    ],
)
def test_an_unreadable_answer_is_one_clear_error(
    canned_server: CannedServer, content_type: str, body: bytes, why: str
) -> None:
    canned_server.content_type, canned_server.body = content_type, body
    kube = kube_at(canned_server.url)
    with pytest.raises(ExternalError, match=why) as e:
        list(kube.pod_pages())
    assert "cannot read (GET pods" in str(e.value)
    kube.close()


def test_a_json_answer_is_read_as_json(canned_server: CannedServer) -> None:
    canned_server.content_type = "application/json"
    canned_server.body = (
        b'{"kind":"PodList","metadata":{},"items":[{"metadata":{"name":"a","namespace":"n",'
        b'"annotations":{"gpu-fraction":"1"}},"spec":{"nodeName":"x"},'
        b'"status":{"phase":"Running"}}]}'
    )
    kube = kube_at(canned_server.url)
    (page,) = list(kube.pod_pages())
    assert page.pods == [podscan.PodFields("a", "n", {"gpu-fraction": "1"}, "x", "Running")]
    kube.close()
