"""Classifying pods as fractional from their metadata alone."""

from __future__ import annotations

import pytest

from fracctl.core.fractions.fractional import (
    AnnotationMatcher,
    Fractions,
    PodKind,
    classify,
    unfinished_selector,
)

M = Fractions.of([], "gpu-fractioning").matcher  # no config read: the defaults
RES = "kai-resource-reservation"


def meta(namespace: str = "ml", **annotations: str) -> dict[str, object]:
    return {"namespace": namespace, "name": "p", "annotations": annotations}


@pytest.mark.parametrize(
    "annotations",
    [
        {"gpu-fraction": "0.5"},
        {"gpu-memory": "4096"},
        {"gpu-fraction-num-devices": "2"},
        {"gpu-fraction-container-name": "trainer"},
        {"nvidia.com/container.trainer.gpu-memory.request": "4096"},
        {"nvidia.com/container.trainer.gpu-memory.limit": "8192"},
        {"nvidia.com/container.main.gpu-compute.mode": "shared"},
        {"nvidia.com/container.main.gpus.devices": "GPU-8f0e-..."},
        {"nvidia.com/gpu-memory.container.trainer.limit": "6Gi"},  # the gpu-sharing agents
        {"nvidia.com/gpu-memory.container.sidecar-2.request": "6Gi"},
        {"nvidia.com/gpus.devices": "GPU-8f0e-..."},
        {"received-resource-type": "Fraction"},
    ],
)
def test_every_default_annotation_style_is_fractional(annotations: dict[str, str]) -> None:
    verdict = classify(meta(**annotations), M, reservation_namespace=RES)
    assert verdict.kind is PodKind.FRACTIONAL
    assert verdict.keys == tuple(annotations)


@pytest.mark.parametrize(
    "annotations",
    [
        {},
        {"received-resource-type": "Regular"},  # a whole GPU: the value matters
        {"nvidia.com/gpu.present": "true"},
        {"nvidia.com/container.a.b.gpu-memory.request": "1"},  # * is one container name
        {"nvidia.com/container.a/b.gpu-memory.request": "1"},
        {"nvidia.com/container..gpu-memory.request": "1"},  # and never empty
        {"nvidia.com/container.main.gpu-memory.request.extra": "1"},
        {"xgpu-fraction": "0.5"},
        {"kubectl.kubernetes.io/last-applied-configuration": '{"gpu-fraction": "0.5"}'},
    ],
)
def test_other_pods_are_not_fractional(annotations: dict[str, str]) -> None:
    assert classify(meta(**annotations), M, reservation_namespace=RES).kind is PodKind.OTHER


def test_no_annotations_at_all() -> None:
    assert classify({"namespace": "a", "name": "b"}, M, reservation_namespace=RES).kind is (
        PodKind.OTHER
    )


def test_matched_keys_are_sorted_and_complete() -> None:
    verdict = classify(
        meta(**{"received-resource-type": "Fraction", "gpu-fraction": "0.5", "team": "a"}),
        M,
        reservation_namespace=RES,
    )
    assert verdict.keys == ("gpu-fraction", "received-resource-type")


def test_reservation_pods_are_their_own_kind() -> None:
    assert classify(meta(RES), M, reservation_namespace=RES).kind is PodKind.RESERVATION
    fractional_looking = meta(RES, **{"gpu-fraction": "1"})
    assert classify(fractional_looking, M, reservation_namespace=RES).kind is PodKind.RESERVATION


def test_custom_patterns() -> None:
    m = AnnotationMatcher.compile(["example.com/share", "team.*.mode=mps", "team.*.mode=mig"])
    assert m.match({"example.com/share": ""}) == ["example.com/share"]
    assert m.match({"team.a.mode": "mps"}) == ["team.a.mode"]
    assert m.match({"team.a.mode": "mig"}) == ["team.a.mode"]  # overlapping patterns
    assert m.match({"team.a.mode": "none"}) == []
    assert m.match({"gpu-fraction": "0.5"}) == []


def test_exact_key_with_two_values() -> None:
    m = AnnotationMatcher.compile(["kind=a", "kind=b"])
    assert m.match({"kind": "b"}) == ["kind"]
    assert m.match({"kind": "c"}) == []


@pytest.mark.parametrize("bad", ["", "=Fraction", "  "])
def test_a_pattern_without_key_is_rejected(bad: str) -> None:
    with pytest.raises(ValueError, match="has no key"):
        AnnotationMatcher.compile([bad])


def test_unfinished_selector() -> None:
    assert unfinished_selector() == "status.phase!=Succeeded,status.phase!=Failed"
