"""A fractional pod in each real annotation format blocks preflight and recreate.

The formats are the node agents' own (kai-scheduler/kai-gpu-fractioning): the
gpu-sharing generation's ``nvidia.com/gpu-memory.container.<c>.limit`` (its test workload
``sharing-manager/metricsd/test/workloads/test-fractional-gpu-pods.yaml``), the current
default ``nvidia.com/container.<c>.gpu-memory.limit``, a prefix the live config sets in
``spec.fractioningAgent.annotationPrefix``, and a prefix that differs between the live
config and git. Each runs on the real API server with the real CRD.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from fracctl.core.kube.resources import PODS
from fracctl.errors import ExitCode
from tests.support.helpers import Cluster, commit_all, ref_for, run_cli
from tests.support.recreate_fixtures import Incident, make_incident

GIT_CONFIG = "gitops/gpu-fractioning/gpufractioningconfig.yaml"


@pytest.fixture
def incident(cluster: Cluster, tmp_path: Path) -> Incident:
    return make_incident(cluster, tmp_path)


def git_prefix(incident: Incident, prefix: str) -> None:
    """Git's config sets the agents' annotation prefix (and keeps its selector)."""
    f = incident.root / GIT_CONFIG
    f.write_text(f.read_text() + f"  fractioningAgent:\n    annotationPrefix: {prefix}\n")
    commit_all(incident.root / "gitops", message="a prefix of our own")


def live_prefix(cluster: Cluster, prefix: str) -> None:
    patch = {"spec": {"fractioningAgent": {"annotationPrefix": prefix}}}
    cluster.kube.patch(ref_for(cluster.config), "default", patch)


def gpu_pod(cluster: Cluster, name: str, annotations: dict[str, str]) -> None:
    """A pod as the agents' own test workloads write it: a GPU in its limits, Running."""
    cluster.namespace("runai-proj-1")
    cluster.kube.create(
        PODS,
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": name, "namespace": "runai-proj-1", "annotations": annotations},
            "spec": {
                "nodeName": "rtx-pro-6000-0",
                "restartPolicy": "Never",
                "containers": [
                    {"name": "trainer", "image": "busybox:1.37",
                     "resources": {"limits": {"nvidia.com/gpu": "1"}}}
                ],
            },
        },
    )  # fmt: skip
    cluster.kube.patch(
        PODS, name, {"status": {"phase": "Running"}}, namespace="runai-proj-1",
        subresource="status", content_type="application/merge-patch+json",
    )  # fmt: skip


def cli(incident: Incident, *args: str) -> Any:
    return run_cli("-c", str(incident.config_file), *args)


def assert_refused_and_unchanged(incident: Incident, pod: str, keys: list[str]) -> None:
    uid = incident.cluster.live_target()["metadata"]["uid"]  # type: ignore[index]
    r = cli(incident, "preflight", "-o", "json")
    assert r.exit_code == ExitCode.FINDING, r.output
    (found,) = r.json["pods"]["fractional"]
    assert (found["name"], found["keys"]) == (pod, keys)
    check = next(c for c in r.json["checks"] if c["name"] == "fractional-pods")
    assert not check["ok"] and pod in check["evidence"], check
    r = cli(incident, "recreate", "--yes")
    assert r.exit_code == ExitCode.FINDING, r.output
    assert pod in r.stderr and "nothing changed" in r.stderr, r.output
    after = incident.cluster.live_target()
    assert after is not None
    assert after["metadata"]["uid"] == uid
    assert not after["metadata"].get("deletionTimestamp")
    assert incident.cluster.kube.calls["DELETE gpufractioningconfigs"] == 0


def test_the_gpu_sharing_generations_keys_block(incident: Incident) -> None:
    keys = {
        "nvidia.com/gpu-memory.container.trainer.limit": "6Gi",
        "nvidia.com/gpu-memory.container.trainer.request": "6Gi",
    }
    gpu_pod(incident.cluster, "gpu-frac-a", keys)
    assert_refused_and_unchanged(incident, "gpu-frac-a", sorted(keys))


def test_the_default_prefix_blocks(incident: Incident) -> None:
    keys = {"nvidia.com/container.trainer.gpu-memory.limit": "6Gi"}
    gpu_pod(incident.cluster, "gpu-frac-b", keys)
    assert_refused_and_unchanged(incident, "gpu-frac-b", sorted(keys))


def test_a_custom_prefix_on_the_live_config_blocks(incident: Incident) -> None:
    live_prefix(incident.cluster, "example.org/frac.")
    live = incident.cluster.live_target()
    assert live is not None  # the real schema keeps the field (it used to be pruned)
    assert live["spec"]["fractioningAgent"]["annotationPrefix"] == "example.org/frac."
    keys = {"example.org/frac.trainer.gpu-memory.limit": "6Gi"}
    gpu_pod(incident.cluster, "gpu-frac-c", keys)
    assert_refused_and_unchanged(incident, "gpu-frac-c", sorted(keys))
    r = cli(incident, "preflight", "-o", "json")
    (first, *_) = r.json["pods"]["prefixes"]
    assert first == {
        "prefix": "example.org/frac.",
        "naming": "gpu-fractioning",
        "from": ["the live GpuFractioningConfig/default, spec.fractioningAgent.annotationPrefix"],
    }
    text = cli(incident, "preflight")
    assert "example.org/frac. (the live GpuFractioningConfig/default" in text.stdout, text.output


@pytest.mark.parametrize("where", ["live", "git"])
def test_a_prefix_that_differs_between_live_and_git_blocks_under_either(
    incident: Incident, where: str
) -> None:
    live_prefix(incident.cluster, "old.example/frac.")
    git_prefix(incident, "new.example/frac.")
    host = {"live": "old", "git": "new"}[where]
    key = f"{host}.example/frac.trainer.gpu-memory.limit"
    gpu_pod(incident.cluster, "gpu-frac-d", {key: "6Gi"})
    assert_refused_and_unchanged(incident, "gpu-frac-d", [key])
    r = cli(incident, "preflight", "-o", "json")
    origins = {p["prefix"]: p["from"] for p in r.json["pods"]["prefixes"]}
    assert origins["old.example/frac."] == [
        "the live GpuFractioningConfig/default, spec.fractioningAgent.annotationPrefix"
    ]
    assert origins["new.example/frac."] == [
        "git's GpuFractioningConfig/default, spec.fractioningAgent.annotationPrefix"
    ]


def test_a_whole_gpu_pod_does_not_block(incident: Incident) -> None:
    gpu_pod(incident.cluster, "whole-gpu", {})
    r = cli(incident, "preflight", "-o", "json")
    check = next(c for c in r.json["checks"] if c["name"] == "fractional-pods")
    assert check["ok"], check
    assert r.json["pods"]["fractional"] == []


def test_a_driver_upgrade_on_a_selected_node_refuses(incident: Incident) -> None:
    uid = incident.cluster.live_target()["metadata"]["uid"]  # type: ignore[index]
    incident.cluster.kube.patch(
        __import__("fracctl.core.kube.resources", fromlist=["NODES"]).NODES,
        "b200-0",
        {"metadata": {"labels": {"nvidia.com/gpu-driver-upgrade-state": "upgrade-required"}}},
    )
    r = cli(incident, "preflight", "-o", "json")
    assert r.exit_code == ExitCode.FINDING, r.output
    check = next(c for c in r.json["checks"] if c["name"] == "driver-upgrade")
    assert not check["ok"]
    assert "node b200-0: nvidia.com/gpu-driver-upgrade-state=upgrade-required" in check["evidence"]
    r = cli(incident, "recreate", "--yes")
    assert r.exit_code == ExitCode.FINDING, r.output
    assert "driver-upgrade" in r.stderr
    assert incident.cluster.live_target()["metadata"]["uid"] == uid  # type: ignore[index]


def test_the_configs_upgrade_condition_refuses(incident: Incident) -> None:
    cond = {"type": "DriverUpgradeInProgress", "status": "True", "reason": "DriverUpgrading",
            "message": "2 nodes", "lastTransitionTime": "2026-01-01T00:00:00Z"}  # fmt: skip
    incident.cluster.kube.patch(
        ref_for(incident.cluster.config), "default", {"status": {"conditions": [cond]}},
        subresource="status",
    )  # fmt: skip
    r = cli(incident, "preflight", "-o", "json")
    check = next(c for c in r.json["checks"] if c["name"] == "driver-upgrade")
    assert not check["ok"]
    assert "DriverUpgradeInProgress=True (DriverUpgrading: 2 nodes)" in check["evidence"]
    done = {**cond, "status": "False", "reason": "Done"}
    incident.cluster.kube.patch(
        ref_for(incident.cluster.config), "default", {"status": {"conditions": [done]}},
        subresource="status",
    )  # fmt: skip
    r = cli(incident, "preflight", "-o", "json")
    assert next(c for c in r.json["checks"] if c["name"] == "driver-upgrade")["ok"]


def test_a_prefix_no_key_can_start_with_is_a_clear_error(incident: Incident) -> None:
    live_prefix(incident.cluster, "bad prefix.")
    r = cli(incident, "preflight")
    assert r.exit_code == ExitCode.USAGE, r.output
    assert "spec.fractioningAgent.annotationPrefix 'bad prefix.'" in r.stderr
    assert "Traceback" not in r.output
