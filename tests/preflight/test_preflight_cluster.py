"""``fracctl preflight`` against the real API server."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest

from fracctl.adapters.git import init_repo
from fracctl.adapters.kube import Kube
from fracctl.core.kube.resources import PODS
from fracctl.errors import ExitCode
from fracctl.flows.context import Context
from fracctl.flows.guards.preflight import run_guards
from fracctl.flows.guards.scan import scan_fractional_pods
from tests.support.helpers import Cluster, run_cli

OPT_IN = "example.org/gpu-fractions=enabled"


def good_nodes(cluster: Cluster) -> None:
    cluster.node("rtx-pro-6000-0", gpu_class="rtx-pro-6000", opt_in=True)
    cluster.node("b200-0", gpu_class="b200", opt_in=True)
    cluster.node("h200-0", gpu_class="h200")
    cluster.node("cpu-0")


def preflight(cluster: Cluster, *args: str) -> Any:
    return run_cli("--kubeconfig", cluster.kubeconfig, "preflight", *args)


def checks(result: Any) -> dict[str, dict[str, Any]]:
    return {c["name"]: c for c in result.json["checks"]}


def test_metadata_only_lists_really_are_partial_object_metadata(cluster: Cluster) -> None:
    cluster.pod("team-a", "p0", annotations={"gpu-fraction": "0.5"})
    (page,) = list(cluster.kube.list_pages(PODS, namespace="team-a", metadata_only=True, limit=10))
    assert page["kind"] == "PartialObjectMetadataList"
    (item,) = page["items"]
    assert item["kind"] == "PartialObjectMetadata"
    assert set(item) == {"kind", "apiVersion", "metadata"}  # no spec, no status


def test_fractional_pods_in_three_namespaces_refuse(cluster: Cluster) -> None:
    good_nodes(cluster)
    cluster.pod("team-a", "frac-a", node="rtx-pro-6000-0", annotations={"gpu-fraction": "0.5"})
    cluster.pod(
        "team-b", "frac-b", node="rtx-pro-6000-0",
        annotations={"nvidia.com/container.trainer.gpu-memory.request": "4096"},
        containers=["trainer"],
    )  # fmt: skip
    cluster.pod(
        "team-c", "frac-c", node="b200-0",
        annotations={
            "received-resource-type": "Fraction",
            "nvidia.com/container.main.gpus.devices": "GPU-1234",
        },
    )  # fmt: skip
    # Neither of these blocks: a finished fractional pod, and KAI's reservation pod.
    cluster.pod("team-a", "done", annotations={"gpu-fraction": "0.5"}, phase="Succeeded")
    cluster.pod(
        "kai-resource-reservation", "gpu-reservation-rtx-0", node="rtx-pro-6000-0",
        annotations={"gpu-fraction": "1"},
    )  # fmt: skip
    cluster.pod("team-a", "plain", node="rtx-pro-6000-0")
    cluster.pod("team-b", "whole-gpu", annotations={"received-resource-type": "Regular"})

    r = preflight(cluster, "--selector", OPT_IN, "-o", "json")
    assert r.exit_code == ExitCode.FINDING, r.output
    pods = r.json["pods"]
    found = {(p["namespace"], p["name"]): p for p in pods["fractional"]}
    assert set(found) == {("team-a", "frac-a"), ("team-b", "frac-b"), ("team-c", "frac-c")}
    assert found[("team-b", "frac-b")]["keys"] == [
        "nvidia.com/container.trainer.gpu-memory.request"
    ]
    assert found[("team-c", "frac-c")]["node"] == "b200-0"
    assert found[("team-c", "frac-c")]["keys"] == [
        "nvidia.com/container.main.gpus.devices",
        "received-resource-type",
    ]
    assert [p["name"] for p in pods["reservations"]] == ["gpu-reservation-rtx-0"]
    c = checks(r)
    assert c["fractional-pods"]["ok"] is False
    for name in ("team-a/frac-a", "team-b/frac-b", "team-c/frac-c"):
        assert name in c["fractional-pods"]["evidence"]
    assert "team-a/done" not in c["fractional-pods"]["evidence"]
    assert (
        "1 reservation pod(s) in kai-resource-reservation ignored"
        in (c["fractional-pods"]["evidence"])
    )
    # Everything else passes: only the pods refuse.
    assert [n for n, v in c.items() if not v["ok"]] == ["fractional-pods"]

    table = preflight(cluster, "--selector", OPT_IN)
    assert table.exit_code == ExitCode.FINDING, table.output
    assert "REFUSED" in table.stdout
    assert "preflight refused: 1 check(s) failed" in table.stdout


def test_a_succeeded_pod_and_a_reservation_pod_do_not_block(cluster: Cluster) -> None:
    good_nodes(cluster)
    cluster.pod("team-a", "done", annotations={"gpu-fraction": "0.5"}, phase="Succeeded")
    cluster.pod("team-a", "failed", annotations={"gpu-memory": "1024"}, phase="Failed")
    cluster.pod("kai-resource-reservation", "gpu-reservation-0", annotations={"gpu-fraction": "1"})
    r = preflight(cluster, "--selector", OPT_IN, "-o", "json")
    assert r.exit_code == ExitCode.OK, r.output
    assert r.json["ok"] is True
    assert r.json["pods"]["fractional"] == []
    assert len(r.json["pods"]["reservations"]) == 1


def test_h200_with_the_opt_in_label_is_refused_by_name(cluster: Cluster) -> None:
    cluster.node("rtx-pro-6000-0", gpu_class="rtx-pro-6000", opt_in=True)
    cluster.node("b200-0", gpu_class="b200", opt_in=True)
    cluster.node("h200-0", gpu_class="h200", opt_in=True)
    r = preflight(cluster, "--selector", OPT_IN, "-o", "json")
    assert r.exit_code == ExitCode.FINDING, r.output
    c = checks(r)
    assert c["opt-in-denied"]["ok"] is False
    assert "h200-0 (h200)" in c["opt-in-denied"]["evidence"]
    assert c["opt-in-denied"]["fix"] == "fracctl nodes unlabel h200-0"
    # The desired selector (the opt-in label) now picks the H200 too.
    assert c["selector-denied"]["ok"] is False
    assert "h200-0" in c["selector-denied"]["evidence"]


def test_b200_without_the_label_is_refused_with_the_exact_fix(cluster: Cluster) -> None:
    cluster.node("rtx-pro-6000-0", gpu_class="rtx-pro-6000", opt_in=True)
    cluster.node("b200-0", gpu_class="b200")
    cluster.node("h200-0", gpu_class="h200")
    r = preflight(cluster, "--selector", OPT_IN, "-o", "json")
    assert r.exit_code == ExitCode.FINDING, r.output
    c = checks(r)
    assert c["opt-in-missing"]["ok"] is False
    assert c["opt-in-missing"]["fix"] == "fracctl nodes label b200-0"
    table = preflight(cluster, "--selector", OPT_IN)
    assert table.exit_code == ExitCode.FINDING, table.output
    assert "  opt-in-missing: fracctl nodes label b200-0\n" in table.stdout


def test_all_good_exits_0_and_shows_the_blast_radius(cluster: Cluster) -> None:
    good_nodes(cluster)
    cluster.target({"example.org/gpu-class": "rtx-pro-6000"})
    r = preflight(cluster, "--selector", OPT_IN, "-o", "json")
    assert r.exit_code == ExitCode.OK, r.output
    assert all(c["ok"] for c in r.json["checks"]), r.json["checks"]
    assert r.json["live_selector"] == {"example.org/gpu-class": "rtx-pro-6000"}
    assert r.json["blast_radius"]["nodes"] == [
        {"name": "b200-0", "effect": "start", "pods": [], "denied": False},
        {"name": "rtx-pro-6000-0", "effect": "restart", "pods": [], "denied": False},
    ]
    table = preflight(cluster, "--selector", OPT_IN)
    assert table.exit_code == ExitCode.OK, table.output
    assert "preflight passed" in table.stdout
    assert "REFUSED" not in table.stdout


def test_selector_checks(cluster: Cluster) -> None:
    good_nodes(cluster)
    # Selecting by a label every GPU node has picks the H200 and ...
    cluster.label("h200-0", {"nvidia.com/gpu.present": "true"})
    r = preflight(cluster, "--selector", "nvidia.com/gpu.present=true", "-o", "json")
    assert r.exit_code == ExitCode.FINDING, r.output
    c = checks(r)
    assert c["selector-denied"]["ok"] is False
    # ... a hardware-class selector misses the opted-in B200.
    r = preflight(cluster, "-l", "example.org/gpu-class=rtx-pro-6000", "-o", "json")
    assert r.exit_code == ExitCode.FINDING, r.output
    c = checks(r)
    assert c["selector-coverage"]["ok"] is False
    assert "b200-0" in c["selector-coverage"]["evidence"]
    assert c["selector-denied"]["ok"] is True


def test_blast_radius_lists_the_pods_that_lose_their_daemon(cluster: Cluster) -> None:
    good_nodes(cluster)
    cluster.target({"example.org/gpu-class": "rtx-pro-6000"})
    cluster.pod("team-a", "frac-a", node="rtx-pro-6000-0", annotations={"gpu-fraction": "0.5"})
    ctx = Context(config=cluster.config, kube_factory=lambda: cluster.kube)
    report = run_guards(
        ctx,
        desired_selector={"example.org/gpu-fractions": "enabled"},
        live_selector={"example.org/gpu-class": "rtx-pro-6000"},
    )
    assert not report.ok
    assert [str(p) for p in report.blast_radius.pods] == ["team-a/frac-a"]
    blast = next(c for c in report.checks if c.name == "blast-radius")
    assert blast.ok and "team-a/frac-a" in blast.evidence


def test_scan_pages_through_every_namespace(cluster: Cluster) -> None:
    for i in range(5):
        cluster.pod(f"team-{i}", f"frac-{i}", annotations={"gpu-memory": "1024"})
        cluster.pod(f"team-{i}", f"plain-{i}")
    config = dataclasses.replace(
        cluster.config, pods=dataclasses.replace(cluster.config.pods, page_size=3)
    )
    kube = Kube.connect(kubeconfig=cluster.kubeconfig)
    scan = scan_fractional_pods(Context(config=config, kube_factory=lambda: kube))
    assert sorted(p.name for p in scan.pods) == [f"frac-{i}" for i in range(5)]
    assert scan.scanned >= 10
    assert scan.pages >= 4
    # One list call per page and the live config's read for its annotation prefix, and
    # nothing else: the list itself carries each pod's node.
    assert kube.calls["GET pods"] == scan.pages
    assert sum(kube.calls.values()) == scan.pages + 1


def test_without_a_selector_render_from_git(cluster: Cluster, tmp_path: Path) -> None:
    good_nodes(cluster)
    repo = tmp_path / "gitops"
    (repo / "gpu").mkdir(parents=True)
    (repo / "gpu" / "config.yaml").write_text(
        "apiVersion: gpu-fractioning.kai.scheduler/v1alpha1\n"
        "kind: GpuFractioningConfig\n"
        "metadata:\n  name: default\n"
        "spec:\n  nodeSelector:\n    example.org/gpu-class: rtx-pro-6000\n"
    )
    init_repo(repo, message="desired")
    conf = tmp_path / "fracctl.yaml"
    conf.write_text(f"git:\n  repo: {repo}\n  path: gpu\n  renderer: plain\n")
    r = run_cli(
        "--config", str(conf), "--kubeconfig", cluster.kubeconfig, "preflight", "-o", "json"
    )
    assert r.exit_code == ExitCode.FINDING, r.output
    assert r.json["desired_selector"] == {"example.org/gpu-class": "rtx-pro-6000"}
    assert checks(r)["selector-coverage"]["ok"] is False  # the B200 is opted in but missed


def test_without_a_selector_and_no_git_the_check_refuses(cluster: Cluster) -> None:
    good_nodes(cluster)
    r = preflight(cluster, "-o", "json")  # cwd is an empty temp dir: not a git repository
    assert r.exit_code == ExitCode.FINDING, r.output
    c = checks(r)
    assert c["desired-selector"]["ok"] is False
    assert "rendering git failed" in c["desired-selector"]["evidence"]
    assert "--selector" in c["desired-selector"]["fix"]


def test_access_errors_exit_3(cluster: Cluster) -> None:
    viewer = str(Path(cluster.kubeconfig).with_name("viewer.kubeconfig"))
    r = run_cli("--kubeconfig", viewer, "preflight", "--selector", OPT_IN)
    assert r.exit_code == ExitCode.EXTERNAL, r.output
    assert "403" in r.stderr
    assert r.stderr.count("\n") == 1


def test_unreachable_cluster_exits_3(tmp_path: Path) -> None:
    kc = tmp_path / "kc"
    kc.write_text(
        "apiVersion: v1\nkind: Config\ncurrent-context: x\n"
        "clusters: [{name: x, cluster: {server: 'https://127.0.0.1:1'}}]\n"
        "users: [{name: x, user: {token: t}}]\n"
        "contexts: [{name: x, context: {cluster: x, user: x}}]\n"
    )
    r = run_cli("--kubeconfig", str(kc), "preflight", "--selector", OPT_IN)
    assert r.exit_code == ExitCode.EXTERNAL, r.output
    assert "cannot reach the API server" in r.stderr


@pytest.mark.parametrize("bad", ["novalue", "=x"])
def test_bad_selector_flag_is_usage(bad: str) -> None:
    r = run_cli("preflight", "--selector", bad)
    assert r.exit_code == ExitCode.USAGE, r.output
    assert "KEY=VALUE" in r.stderr


def test_bad_annotation_pattern_is_a_config_error(
    cluster: Cluster, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FRACCTL_PODS_FRACTION_ANNOTATIONS", "gpu-fraction,=x")
    r = run_cli("--kubeconfig", cluster.kubeconfig, "preflight", "--selector", OPT_IN)
    assert r.exit_code == ExitCode.USAGE, r.output
    assert "pods.fraction_annotations" in r.stderr


# --- the hardware label ------------------------------------------------------------------

PRODUCT = "nvidia.com/gpu.product"


def test_an_h200_with_a_b200_class_label_and_the_opt_in_label_is_refused(
    cluster: Cluster,
) -> None:
    cluster.node("rtx-pro-6000-0", gpu_class="rtx-pro-6000", opt_in=True)
    cluster.node("b200-0", gpu_class="b200", opt_in=True, labels={PRODUCT: "NVIDIA-B200"})
    cluster.node("gpu-7", gpu_class="b200", opt_in=True, labels={PRODUCT: "NVIDIA-H200-NVL"})
    r = preflight(cluster, "--selector", OPT_IN, "-o", "json")
    assert r.exit_code == ExitCode.FINDING, r.output
    c = checks(r)
    assert c["opt-in-denied"]["ok"] is False
    assert "gpu-7 (class b200, product NVIDIA-H200-NVL)" in c["opt-in-denied"]["evidence"]
    assert c["opt-in-denied"]["fix"] == "fracctl nodes unlabel gpu-7"
    assert c["class-product"]["ok"] is False
    assert "example.org/gpu-class=h200 --overwrite" in c["class-product"]["fix"]
    assert c["selector-denied"]["ok"] is False
    assert c["selector-denied"]["fix"] == "fracctl nodes unlabel gpu-7"
    # The blast radius marks where daemons would start on denied hardware.
    assert "gpu-7 (denied)" in c["blast-radius"]["evidence"]
    blast = {n["name"]: n for n in r.json["blast_radius"]["nodes"]}
    assert blast["gpu-7"]["denied"] is True and blast["b200-0"]["denied"] is False
    assert c["opt-in-missing"]["ok"] is True and c["opt-in-unknown-class"]["ok"] is True
    # Coverage counts the nodes that should run fractions: not the H200.
    assert c["selector-coverage"]["ok"] is True
    assert "all 2 opted-in node(s) that are not denied" in c["selector-coverage"]["evidence"]


def test_a_contradiction_alone_refuses(cluster: Cluster) -> None:
    good_nodes(cluster)
    cluster.node("gpu-8", gpu_class="b200", labels={PRODUCT: "NVIDIA-H200"})
    r = preflight(cluster, "--selector", OPT_IN, "-o", "json")
    assert r.exit_code == ExitCode.FINDING, r.output
    c = checks(r)
    assert [n for n, v in c.items() if not v["ok"]] == ["class-product"]
    assert "gpu-8 (class b200, product NVIDIA-H200)" in c["class-product"]["evidence"]
    # Before: "fracctl nodes label gpu-8" (opt-in-missing), an H200 into the pool.
    assert "fracctl nodes label" not in r.stdout


def test_selector_denied_fix_says_unlabel_or_git_as_the_case_is(cluster: Cluster) -> None:
    good_nodes(cluster)
    cluster.label("h200-0", {"example.org/gpu-fractions": "enabled"})
    r = preflight(cluster, "--selector", OPT_IN, "-o", "json")
    assert checks(r)["selector-denied"]["fix"] == "fracctl nodes unlabel h200-0"
    table = preflight(cluster, "--selector", OPT_IN)
    assert "  selector-denied: fracctl nodes unlabel h200-0\n" in table.stdout
    # Selected by a label every GPU node has: unlabelling would not help, git would.
    cluster.label("h200-0", {"example.org/gpu-fractions": None, "nvidia.com/gpu.present": "true"})
    r = preflight(cluster, "--selector", "nvidia.com/gpu.present=true", "-o", "json")
    fix = checks(r)["selector-denied"]["fix"]
    assert fix.startswith("select by the opt-in label in git"), fix
    assert "unlabel" not in fix


def test_coverage_never_asks_to_select_an_opted_in_h200(cluster: Cluster) -> None:
    good_nodes(cluster)
    cluster.label("h200-0", {"example.org/gpu-fractions": "enabled"})
    r = preflight(cluster, "--selector", "example.org/gpu-class=rtx-pro-6000", "-o", "json")
    c = checks(r)
    assert c["selector-coverage"]["ok"] is False
    assert c["selector-coverage"]["evidence"].endswith("misses opted-in node(s): b200-0")
    assert c["opt-in-denied"]["fix"] == "fracctl nodes unlabel h200-0"
