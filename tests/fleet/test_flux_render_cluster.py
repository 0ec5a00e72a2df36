"""``fracctl fleet render --flux``'s objects as the real kube-apiserver with Flux's own CRDs
(source-controller v1.9.0, kustomize-controller v1.9.6) takes them: a server-side dry run,
strict field validation (a field the CRD does not know is refused, not dropped)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from fracctl.adapters.kube import Kube
from fracctl.core import flux_fleet as ff
from fracctl.core.flux_rollout import GITREPOSITORIES, KUSTOMIZATIONS
from fracctl.errors import ApiError, Invalid
from tests.fleet.test_flux_render import MEMBERS, URL
from tests.support.flux_hub import flux_hub
from tests.support.helpers import Cluster

Obj = dict[str, Any]


@pytest.fixture
def hub(cluster: Cluster) -> Iterator[tuple[Kube, str]]:
    with flux_hub(cluster) as found:
        yield found


def dry_run(kube: Kube, obj: Obj) -> Obj:
    ref = GITREPOSITORIES if obj["kind"] == "GitRepository" else KUSTOMIZATIONS
    query = {"dryRun": "All", "fieldValidation": "Strict", "fieldManager": "fracctl"}
    namespace = obj["metadata"]["namespace"]
    return kube.request("POST", ref.path(namespace=namespace), body=obj, query=query)


def test_every_rendered_object_passes_a_strict_server_side_dry_run(
    hub: tuple[Kube, str],
) -> None:
    kube, namespace = hub
    objs = ff.render(MEMBERS, ff.RenderOptions(url=URL, namespace=namespace))
    assert [o["kind"] for o in objs].count("Kustomization") == 3 * len(MEMBERS)
    for obj in objs:
        stored = dry_run(kube, obj)
        # Every field kept as written (defaults may be added beside them).
        assert {k: stored["spec"][k] for k in obj["spec"]} == obj["spec"], obj["metadata"]
        assert stored["metadata"]["labels"] == obj["metadata"]["labels"]


def test_the_crds_are_fluxs_own_not_an_open_stand_in(hub: tuple[Kube, str]) -> None:
    kube, namespace = hub
    (_, ks, *_) = ff.render(MEMBERS, ff.RenderOptions(url=URL, namespace=namespace))
    bad = {**ks, "spec": {**ks["spec"], "timeout": "twenty minutes"}}
    with pytest.raises(Invalid, match="timeout"):
        dry_run(kube, bad)
    unknown = {**ks, "spec": {**ks["spec"], "forced": True}}
    with pytest.raises(ApiError, match="unknown field.*forced"):
        dry_run(kube, unknown)
