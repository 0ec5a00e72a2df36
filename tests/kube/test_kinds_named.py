"""A kind named as kubectl takes it, resolved against what discovery serves."""

from __future__ import annotations

from fracctl.core.kube.resources import ServedResource, kinds_named

SERVED = [
    ServedResource("apps", "StatefulSet", "statefulsets", "statefulset", ("sts",)),
    ServedResource("apps", "Deployment", "deployments", "deployment", ("deploy",)),
    ServedResource("", "ConfigMap", "configmaps", "configmap", ("cm",)),
    ServedResource("example.org", "Widget", "widgets", "widget", ("sts",)),
]


def test_short_names_plurals_singulars_and_kinds() -> None:
    for word in ("sts", "STS", "statefulsets", "statefulset", "StatefulSet", "statefulsets.apps",
                 "sts.apps", "statefulsets.v1.apps"):  # fmt: skip
        found = kinds_named(word, SERVED)
        assert ("apps", "StatefulSet") in found, word
    assert kinds_named("cm", SERVED) == [("", "ConfigMap")]
    assert kinds_named("deploy.apps", SERVED) == [("apps", "Deployment")]


def test_a_short_name_two_groups_serve_names_both_and_a_group_picks_one() -> None:
    assert kinds_named("sts", SERVED) == [("apps", "StatefulSet"), ("example.org", "Widget")]
    assert kinds_named("sts.example.org", SERVED) == [("example.org", "Widget")]


def test_an_unknown_word_names_nothing() -> None:
    assert kinds_named("StatfulSet", SERVED) == []
    assert kinds_named("statefulsets.batch", SERVED) == []
