"""``SyncTarget``: the fields a backend's rendering is held to, read where git sets them."""

from __future__ import annotations

from fracctl.core.kube.resources import ResourceRef
from fracctl.core.recreate.sync_target import SyncTarget

STS = ResourceRef("apps", "v1", "statefulsets", "StatefulSet", namespaced=True)


def _sts(service: str, size: str) -> dict[str, object]:
    claim = {"metadata": {"name": "data"}, "spec": {"resources": {"requests": {"storage": size}}}}
    return {
        "apiVersion": "apps/v1",
        "kind": "StatefulSet",
        "metadata": {"name": "db", "namespace": "shop"},
        "spec": {"serviceName": service, "volumeClaimTemplates": [claim]},
    }


def test_a_held_field_inside_a_list_item_is_read_not_taken_for_absent() -> None:
    storage = "spec.volumeClaimTemplates[0].spec.resources.requests.storage"
    t = SyncTarget.of_object(_sts("db-v2", "2Gi"), STS, ("spec.serviceName", storage))
    assert t.label == "StatefulSet/shop/db"
    assert t.values(_sts("db-v2", "2Gi")) == {"spec.serviceName": "db-v2", storage: "2Gi"}
    # A rendering with the old size differs from git's on that field, as a proof must see.
    assert t.values(_sts("db-v2", "1Gi"))[storage] == "1Gi"
    assert t.values(None) == {"spec.serviceName": None, storage: None}
