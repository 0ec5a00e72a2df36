"""Picking a pod's named fields from protobuf and from JSON, on hand-built messages.

Its agreement with the real API server is tests/doctor/test_doctor_reading_cluster.py.
"""

from __future__ import annotations

import pytest

from fracctl.adapters.kube import podpage, podpage_json, wire
from fracctl.adapters.kube.wire import ProtoError
from tests.kube.test_podpage_scan import envelope, field

PATHS = (
    "metadata.name",
    "metadata.namespace",
    "metadata.annotations",
    "metadata.ownerReferences[].kind",
    "spec.nodeName",
    "spec.securityContext.runAsUser",
    "spec.containers[].name",
    "spec.containers[].resources.limits",
    "spec.containers[].securityContext.runAsNonRoot",
    "status.phase",
    "status.containerStatuses[].state.terminated.exitCode",
)


def _quantity_entry(name: str, value: str) -> bytes:
    return field(1, name) + field(2, field(1, value))


def _pod() -> bytes:
    meta = field(1, "w") + field(3, "ml") + field(11, field(1, "app") + field(2, "x"))
    meta += field(12, field(1, "gpu-fraction") + field(2, "0.5"))
    meta += field(12, field(1, "empty") + field(2, ""))
    meta += field(13, field(1, "DaemonSet") + field(3, "ds"))
    resources = field(1, _quantity_entry("nvidia.com/gpu", "1")) + field(
        2, _quantity_entry("cpu", "250m")
    )
    security = field(5, 0)  # runAsNonRoot: false, present
    container = field(1, "main") + field(2, "busybox") + field(8, resources) + field(15, security)
    spec = field(2, container) + field(10, "gpu-0") + field(14, field(2, (1 << 64) - 1))
    terminated = field(1, 0) + field(3, "Completed")
    status = field(1, "Running") + field(8, field(1, "main") + field(2, field(3, terminated)))
    return field(1, meta) + field(2, spec) + field(3, status)


def _page(*pods: bytes, token: str = "") -> bytes:
    raw = field(1, field(2, "7") + (field(3, token) if token else b"") + field(4, 12))
    for p in pods:
        raw += field(2, p)
    return envelope(raw)


def test_the_named_fields_are_read_in_the_shape_of_the_json() -> None:
    page = podpage.pod_page(_page(_pod(), token="next"), podpage.compile_pod(PATHS))
    assert (page.continue_token, page.remaining) == ("next", 12)
    assert page.pods == [
        {
            "metadata": {
                "name": "w",
                "namespace": "ml",
                "annotations": {"gpu-fraction": "0.5", "empty": ""},
                "ownerReferences": [{"kind": "DaemonSet"}],
            },
            "spec": {
                "containers": [
                    {
                        "name": "main",
                        "resources": {"limits": {"nvidia.com/gpu": "1"}},
                        "securityContext": {"runAsNonRoot": False},
                    }
                ],
                "nodeName": "gpu-0",
                "securityContext": {"runAsUser": -1},
            },
            "status": {
                "phase": "Running",
                "containerStatuses": [{"state": {"terminated": {"exitCode": 0}}}],
            },
        }
    ]


def test_json_is_cut_to_the_same_fields() -> None:
    pick = podpage.compile_pod(PATHS)
    whole = {
        "metadata": {"name": "w", "namespace": "ml", "labels": {"app": "x"}, "uid": "u",
                     "annotations": {"gpu-fraction": "0.5", "empty": ""},
                     "ownerReferences": [{"kind": "DaemonSet", "name": "ds"}]},
        "spec": {"nodeName": "gpu-0", "securityContext": {"runAsUser": -1}, "volumes": [],
                 "containers": [{"name": "main", "image": "busybox",
                                 "resources": {"limits": {"nvidia.com/gpu": "1"},
                                               "requests": {"cpu": "250m"}},
                                 "securityContext": {"runAsNonRoot": False}}]},
        "status": {"phase": "Running", "hostIP": "",
                   "containerStatuses": [{"name": "main", "state": {
                       "terminated": {"exitCode": 0, "reason": "Completed"}}}]},
    }  # fmt: skip
    walked = podpage.pod_page(_page(_pod()), pick).pods
    assert podpage_json.pod_page_json({"items": [whole]}, pick).pods == walked


def test_absent_and_empty_fields_are_left_out_and_empty_messages_kept() -> None:
    pick = podpage.compile_pod(("metadata.name", "spec.nodeName", "spec.securityContext.runAsUser"))
    pod = field(1, field(1, "x")) + field(2, field(10, "") + field(14, b""))
    assert podpage.pod_page(_page(pod), pick).pods == [
        {"metadata": {"name": "x"}, "spec": {"securityContext": {}}}
    ]
    assert podpage_json.prune({"metadata": {"name": "x"}, "spec": {"nodeName": "",
                           "securityContext": {}, "containers": []}}, pick) == {
        "metadata": {"name": "x"}, "spec": {"securityContext": {}}}  # fmt: skip


@pytest.mark.parametrize(
    ("path", "message"),
    [
        ("spec.hostname", "no pod field spec.hostname"),
        ("spec.securityContext", "name the fields of spec.securityContext"),
        ("metadata.name.first", "metadata.name has no fields"),
    ],
)
def test_a_path_it_cannot_read_is_refused(path: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        podpage.compile_pod((path,))


def test_a_broken_body_is_a_proto_error() -> None:
    pick = podpage.compile_pod(PATHS)
    body = _page(_pod())
    with pytest.raises(ProtoError):
        podpage.pod_page(body[:-7], pick)
    with pytest.raises(ProtoError):
        podpage.pod_page(b"{}", pick)


def test_a_refine_judges_each_pod_once_and_reads_again_only_those_it_asks_for() -> None:
    narrow = podpage.compile_pod(("metadata.name", "spec.nodeName"))
    wide = podpage.compile_pod(PATHS)
    seen: list[tuple[str, bool]] = []

    def judge(pod: dict[str, object], body: bytes | None, start: int, end: int) -> podpage.Verdict:
        assert body is not None and start < end
        has_gpu = body.find(b"nvidia.com/gpu", start, end) >= 0
        seen.append((str(pod), has_gpu))
        if pod["metadata"] == {"name": "dropped"}:
            return None
        return podpage.REREAD if has_gpu else {"kept": pod["metadata"]}

    other = field(1, field(1, "cpu-only")) + field(2, field(10, "gpu-0"))
    dropped = field(1, field(1, "dropped"))
    page = podpage.pod_page(_page(_pod(), dropped, other), narrow, podpage.Refine(wide, judge))
    assert page.pods[0]["metadata"]["name"] == "w"
    assert page.pods[0]["status"] == {"phase": "Running", "containerStatuses": [
        {"state": {"terminated": {"exitCode": 0}}}]}  # fmt: skip
    assert page.pods[1:] == [{"kept": {"name": "cpu-only"}}]  # the judge's record, no "dropped"
    assert [has for _, has in seen] == [True, False, False]  # each pod asked about once, narrow


def test_a_json_page_is_refined_without_its_bytes() -> None:
    narrow = podpage.compile_pod(("metadata.name",))
    wide = podpage.compile_pod(("metadata.name", "spec.nodeName"))
    asked: list[object] = []

    def judge(pod: dict[str, object], body: bytes | None, start: int, end: int) -> podpage.Verdict:
        asked.append(body)
        name = pod["metadata"]
        return podpage.REREAD if name == {"name": "a"} else None if name == {"name": "c"} else pod

    items = [{"metadata": {"name": n}, "spec": {"nodeName": "gpu-0"}} for n in ("a", "b", "c")]
    page = podpage_json.pod_page_json({"items": items}, narrow, podpage.Refine(wide, judge))
    assert page.pods == [
        {"metadata": {"name": "a"}, "spec": {"nodeName": "gpu-0"}},
        {"metadata": {"name": "b"}},
    ]
    assert asked == [None, None, None]
    assert repr(podpage.REREAD) == "REREAD"


def test_where_the_containers_lie_holds_them_and_nothing_else_of_the_pod() -> None:
    pick = podpage.compile_pod(("spec.nodeName", "spec.containers@", "spec.initContainers@"))
    init = field(1, "warm") + field(8, field(1, _quantity_entry("cpu", "1")))
    toleration = field(22, field(1, "nvidia.com/gpu"))  # spec.tolerations: outside
    spec = field(2, field(1, "main")) + field(10, "gpu-0") + field(20, init) + toleration
    body = _page(field(1, field(1, "p")) + field(2, spec))
    (pod,) = podpage.pod_page(body, pick).pods
    buf = wire.unwrap(body)[0]
    found = [buf[s:e] for at in ("containers@", "initContainers@") for s, e in pod["spec"][at]]
    assert found == [field(1, "main"), init]
    assert pod["spec"]["nodeName"] == "gpu-0"
    assert not any(b"nvidia.com/gpu" in c for c in found)
    assert b"nvidia.com/gpu" in buf  # the toleration alone names it
    (whole,) = podpage.pod_page(_page(_pod()), pick).pods
    assert "containers@" in whole["spec"]
    # A JSON answer has no bytes to point into.
    json_pod = {"spec": {"nodeName": "n", "containers": [{"name": "main"}]}}
    assert podpage_json.prune(json_pod, pick) == {"spec": {"nodeName": "n"}}


def test_a_walk_stops_past_the_last_field_it_wants() -> None:
    # The API server writes fields in the order of their numbers; a field numbered past
    # the last one picked is never read, so a pod's status costs nothing to a spec pick.
    pick = podpage.compile_pod(("metadata.name", "spec.nodeName"))
    broken_status = field(3, b"\xff\xff")  # not a valid message: never walked
    (pod,) = podpage.pod_page(_page(field(1, field(1, "p")) + field(2, field(10, "n"))
                                     + broken_status), pick).pods  # fmt: skip
    assert pod == {"metadata": {"name": "p"}, "spec": {"nodeName": "n"}}
    assert pick.last == 2 and pick.proto[2][2] is not None and pick.proto[2][2].last == 10


@pytest.mark.parametrize(
    ("paths", "message"),
    [
        (("spec.nodeName@",), "only where a message or list lies"),
        (("spec.containers@.name",), "only where a message or list lies"),
        (("spec.containers@", "spec.containers[].name"), "or where it lies, not both"),
    ],
)
def test_where_a_field_lies_is_picked_for_messages_alone(
    paths: tuple[str, ...], message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        podpage.compile_pod(paths)
