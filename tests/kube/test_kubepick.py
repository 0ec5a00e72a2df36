"""Picking a pod's named fields from protobuf and from JSON, on hand-built messages.

Its agreement with the real API server is tests/doctor/test_doctor_reading_cluster.py.
"""

from __future__ import annotations

import pytest

from fracctl.adapters import kubepick
from fracctl.adapters.kubeproto import ProtoError
from tests.kube.test_kubeproto import envelope, field

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
    page = kubepick.pod_page(_page(_pod(), token="next"), kubepick.compile_pod(PATHS))
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
    pick = kubepick.compile_pod(PATHS)
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
    walked = kubepick.pod_page(_page(_pod()), pick).pods
    assert kubepick.pod_page_json({"items": [whole]}, pick).pods == walked


def test_absent_and_empty_fields_are_left_out_and_empty_messages_kept() -> None:
    pick = kubepick.compile_pod(
        ("metadata.name", "spec.nodeName", "spec.securityContext.runAsUser")
    )
    pod = field(1, field(1, "x")) + field(2, field(10, "") + field(14, b""))
    assert kubepick.pod_page(_page(pod), pick).pods == [
        {"metadata": {"name": "x"}, "spec": {"securityContext": {}}}
    ]
    assert kubepick.prune({"metadata": {"name": "x"}, "spec": {"nodeName": "",
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
        kubepick.compile_pod((path,))


def test_a_broken_body_is_a_proto_error() -> None:
    pick = kubepick.compile_pod(PATHS)
    body = _page(_pod())
    with pytest.raises(ProtoError):
        kubepick.pod_page(body[:-7], pick)
    with pytest.raises(ProtoError):
        kubepick.pod_page(b"{}", pick)
