"""``fracctl nodes check|label|unlabel`` against the real API server."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from fracctl.adapters.kube import Kube
from fracctl.core.kube.resources import NODES
from fracctl.errors import ExitCode, Refused, UsageError
from fracctl.flows.context import Context
from fracctl.flows.guards.nodes import label as label_nodes
from fracctl.flows.guards.nodes import unlabel as unlabel_nodes
from tests.support.helpers import Cluster, run_cli

KEY = "example.org/gpu-fractions"


def nodes(cluster: Cluster, *args: str) -> Any:
    return run_cli("--kubeconfig", cluster.kubeconfig, "nodes", *args)


def labels(cluster: Cluster, name: str) -> dict[str, str]:
    return dict(cluster.kube.get(NODES, name)["metadata"].get("labels") or {})


def written(cluster: Cluster, name: str) -> dict[str, Any]:
    """What a writer of the node decides: labels, annotations, spec and which managers
    wrote them. KWOK's status updates (and the resourceVersion they bump) land whenever
    KWOK catches up with a new node, so they are left out.
    """
    node = cluster.kube.get(NODES, name)
    meta = node["metadata"]
    return {
        "labels": meta.get("labels"),
        "annotations": meta.get("annotations"),
        "spec": node.get("spec"),
        "writers": sorted(
            (m["manager"], m["operation"])
            for m in meta.get("managedFields") or []
            if m.get("subresource") != "status"
        ),
    }


def incident(cluster: Cluster) -> None:
    cluster.node("rtx-pro-6000-0", gpu_class="rtx-pro-6000", opt_in=True, ready=True)
    cluster.node("b200-0", gpu_class="b200")
    cluster.node("h200-0", gpu_class="h200")
    cluster.node("cpu-0")


def test_check_table_and_json(cluster: Cluster) -> None:
    incident(cluster)
    cluster.target({"example.org/gpu-class": "rtx-pro-6000"})
    r = nodes(cluster, "check", "-o", "json")
    assert r.exit_code == ExitCode.FINDING, r.output
    rows = {n["name"]: n for n in r.json["nodes"]}
    assert set(rows) == {"rtx-pro-6000-0", "b200-0", "h200-0"}  # GPU nodes only
    assert rows["rtx-pro-6000-0"] | {"readiness": ""} == {
        "name": "rtx-pro-6000-0",
        "class": "rtx-pro-6000",
        "product": None,
        "denied": False,
        "opted_in": True,
        "verdict": "ok",
        "selected": True,
        "readiness": "",
    }
    assert rows["rtx-pro-6000-0"]["readiness"].startswith("True (AllDaemonsReady")
    assert rows["b200-0"]["verdict"] == "missing-opt-in"
    assert rows["b200-0"]["readiness"] == "missing (ConditionNotFound)"
    assert rows["h200-0"]["verdict"] == "excluded"
    (finding,) = r.json["findings"]
    assert finding["fix"] == "fracctl nodes label b200-0"

    table = nodes(cluster, "check")
    assert table.exit_code == ExitCode.FINDING, table.output
    assert "missing-opt-in" in table.stdout
    assert "  fix: fracctl nodes label b200-0" in table.stdout


def test_check_passes_after_labelling(cluster: Cluster) -> None:
    incident(cluster)
    r = nodes(cluster, "label", "b200-0")
    assert r.exit_code == ExitCode.OK, r.output
    assert "b200-0: labelled (example.org/gpu-fractions=enabled)" in r.stdout
    assert labels(cluster, "b200-0")[KEY] == "enabled"
    r = nodes(cluster, "check")
    assert r.exit_code == ExitCode.OK, r.output
    assert "3 GPU node(s) follow the policy" in r.stdout
    assert "no live fractioning config" in r.stdout


def test_label_is_idempotent(cluster: Cluster) -> None:
    incident(cluster)
    assert nodes(cluster, "label", "b200-0").exit_code == ExitCode.OK
    before = written(cluster, "b200-0")
    r = nodes(cluster, "label", "b200-0", "rtx-pro-6000-0", "-o", "json")
    assert r.exit_code == ExitCode.OK, r.output
    assert {c["node"]: c["action"] for c in r.json["changes"]} == {
        "b200-0": "unchanged",
        "rtx-pro-6000-0": "unchanged",
    }
    assert written(cluster, "b200-0") == before


def test_label_dry_run_changes_nothing(cluster: Cluster) -> None:
    incident(cluster)
    r = nodes(cluster, "label", "b200-0", "--dry-run")
    assert r.exit_code == ExitCode.OK, r.output
    assert "(dry run) b200-0: would label" in r.stdout
    assert KEY not in labels(cluster, "b200-0")


def test_label_h200_is_refused_and_nothing_changes(cluster: Cluster) -> None:
    incident(cluster)
    before = {n: written(cluster, n) for n in ("h200-0", "b200-0")}
    r = nodes(cluster, "label", "b200-0", "h200-0")
    assert r.exit_code == ExitCode.FINDING, r.output
    assert "h200-0 is of denied class h200" in r.stderr
    assert "nothing was changed" in r.stderr
    for name, was in before.items():
        assert written(cluster, name) == was


def test_label_refuses_unknown_and_missing_classes(cluster: Cluster) -> None:
    cluster.node("a100-0", gpu_class="a100")
    cluster.node("gpu-0", labels={"nvidia.com/gpu.present": "true"})
    r = nodes(cluster, "label", "a100-0")
    assert r.exit_code == ExitCode.FINDING, r.output
    assert "a100, which is not allowed" in r.stderr
    r = nodes(cluster, "label", "gpu-0")
    assert r.exit_code == ExitCode.FINDING, r.output
    assert "no example.org/gpu-class label" in r.stderr
    assert KEY not in labels(cluster, "a100-0") and KEY not in labels(cluster, "gpu-0")


def test_label_a_missing_node_is_usage(cluster: Cluster) -> None:
    incident(cluster)
    r = nodes(cluster, "label", "b200-0", "b200-9")
    assert r.exit_code == ExitCode.USAGE, r.output
    assert "no such node: b200-9" in r.stderr
    assert KEY not in labels(cluster, "b200-0")


def test_label_without_nodes_is_usage() -> None:
    r = run_cli("nodes", "label")
    assert r.exit_code == ExitCode.USAGE, r.output


def test_label_notes_daemons_starting_when_the_live_config_selects_by_label(
    cluster: Cluster,
) -> None:
    incident(cluster)
    cluster.target({KEY: "enabled"})
    r = nodes(cluster, "label", "b200-0")
    assert r.exit_code == ExitCode.OK, r.output
    assert "daemons start on b200-0" in r.stdout


def test_unlabel_the_h200(cluster: Cluster) -> None:
    incident(cluster)
    cluster.label("h200-0", {KEY: "enabled"})
    assert nodes(cluster, "check").exit_code == ExitCode.FINDING
    r = nodes(cluster, "unlabel", "h200-0", "--dry-run")
    assert r.exit_code == ExitCode.OK, r.output
    assert labels(cluster, "h200-0")[KEY] == "enabled"
    r = nodes(cluster, "unlabel", "h200-0")
    assert r.exit_code == ExitCode.OK, r.output
    assert "h200-0: unlabelled" in r.stdout
    assert KEY not in labels(cluster, "h200-0")
    r = nodes(cluster, "unlabel", "h200-0", "-o", "json")
    assert r.exit_code == ExitCode.OK, r.output
    assert r.json["changes"] == [
        {"node": "h200-0", "action": "unchanged", "detail": "not labelled"}
    ]


def test_unlabel_refuses_to_strand_running_fractional_pods(cluster: Cluster) -> None:
    incident(cluster)
    cluster.target({KEY: "enabled"})
    cluster.pod("team-a", "frac", node="rtx-pro-6000-0", annotations={"gpu-fraction": "0.5"})
    r = nodes(cluster, "unlabel", "rtx-pro-6000-0")
    assert r.exit_code == ExitCode.FINDING, r.output
    assert "rtx-pro-6000-0: team-a/frac" in r.stderr
    assert labels(cluster, "rtx-pro-6000-0")[KEY] == "enabled"
    r = nodes(cluster, "unlabel", "rtx-pro-6000-0", "--force")
    assert r.exit_code == ExitCode.OK, r.output
    assert "daemons stop on rtx-pro-6000-0" in r.stdout
    assert KEY not in labels(cluster, "rtx-pro-6000-0")


def test_unlabel_is_free_when_the_live_config_selects_by_class(cluster: Cluster) -> None:
    incident(cluster)
    cluster.target({"example.org/gpu-class": "rtx-pro-6000"})
    cluster.pod("team-a", "frac", node="rtx-pro-6000-0", annotations={"gpu-fraction": "0.5"})
    r = nodes(cluster, "unlabel", "rtx-pro-6000-0")
    assert r.exit_code == ExitCode.OK, r.output
    assert "note:" not in r.stdout


def test_forbidden_label_exits_3(cluster: Cluster) -> None:
    incident(cluster)
    viewer = str(Path(cluster.kubeconfig).with_name("viewer.kubeconfig"))
    r = run_cli("--kubeconfig", viewer, "nodes", "label", "b200-0")
    assert r.exit_code == ExitCode.EXTERNAL, r.output
    assert "403" in r.stderr


class RacingKube(Kube):
    """The real client; before its first node patch another writer changes the node."""

    change: dict[str, str] = {}
    raced = False

    def patch(self, ref: Any, name: str, patch: Any, **kwargs: Any) -> Any:
        if ref is NODES and not self.raced:
            self.raced = True
            super().patch(NODES, name, {"metadata": {"labels": self.change}})
        return super().patch(ref, name, patch, **kwargs)


def racing(cluster: Cluster, change: dict[str, str]) -> Context:
    kube = RacingKube.connect(kubeconfig=cluster.kubeconfig)
    kube.change = change  # type: ignore[attr-defined]
    return Context(config=cluster.config, kube_factory=lambda: kube)


def test_a_node_that_turns_denied_while_labelling_is_refused(cluster: Cluster) -> None:
    incident(cluster)
    ctx = racing(cluster, {"example.org/gpu-class": "h200"})
    with pytest.raises(Refused, match="b200-0, which changed meanwhile: b200-0 is of denied"):
        label_nodes(ctx, nodes=["b200-0"])
    assert KEY not in labels(cluster, "b200-0")


def test_a_harmless_concurrent_change_is_judged_again_and_labelled(cluster: Cluster) -> None:
    incident(cluster)
    report = label_nodes(racing(cluster, {"team": "ml"}), nodes=["b200-0"])
    assert [c.action for c in report.changes] == ["labelled"]
    assert labels(cluster, "b200-0")[KEY] == "enabled"
    assert labels(cluster, "b200-0")["team"] == "ml"


def test_unlabel_survives_a_concurrent_change(cluster: Cluster) -> None:
    incident(cluster)
    report = unlabel_nodes(racing(cluster, {"team": "ml"}), nodes=["rtx-pro-6000-0"])
    assert [c.action for c in report.changes] == ["unlabelled"]
    assert KEY not in labels(cluster, "rtx-pro-6000-0")


# --- the hardware label: a class label alone does not make a node safe ---------------

PRODUCT = "nvidia.com/gpu.product"


def mislabelled(cluster: Cluster) -> None:
    """GPU feature discovery says H200; whoever joined the nodes wrote b200."""
    cluster.node("rtx-pro-6000-0", gpu_class="rtx-pro-6000", opt_in=True)
    cluster.node("b200-0", gpu_class="b200", opt_in=True, labels={PRODUCT: "NVIDIA-B200"})
    cluster.node("gpu-7", gpu_class="b200", opt_in=True, labels={PRODUCT: "NVIDIA-H200-NVL"})
    cluster.node("gpu-8", gpu_class="b200", labels={PRODUCT: "NVIDIA-H200"})
    cluster.node("gpu-9", labels={PRODUCT: "nvidia-h200-141gb-hbm3e"})


def test_check_sees_an_h200_whose_class_label_says_b200(cluster: Cluster) -> None:
    mislabelled(cluster)
    r = nodes(cluster, "check", "-o", "json")
    assert r.exit_code == ExitCode.FINDING, r.output
    rows = {n["name"]: n for n in r.json["nodes"]}
    assert rows["gpu-7"]["verdict"] == "denied-opted-in"
    assert rows["gpu-7"]["product"] == "NVIDIA-H200-NVL"
    assert rows["gpu-7"]["denied"] is True
    assert rows["gpu-8"]["verdict"] == "class-contradicts-product"
    assert rows["gpu-9"]["verdict"] == "excluded"  # a product label alone marks a GPU node
    assert rows["b200-0"]["verdict"] == "ok"
    findings = {f["rule"]: f for f in r.json["findings"]}
    assert set(findings) == {"denied-opted-in", "class-contradicts-product"}
    assert findings["denied-opted-in"]["fix"] == "fracctl nodes unlabel gpu-7"
    assert findings["class-contradicts-product"]["nodes"] == ["gpu-7", "gpu-8"]
    assert (
        "kubectl label node gpu-7 gpu-8 example.org/gpu-class=h200"
        in (findings["class-contradicts-product"]["fix"])
    )
    table = nodes(cluster, "check")
    assert table.exit_code == ExitCode.FINDING, table.output
    assert "NVIDIA-H200-NVL" in table.stdout
    assert "fracctl nodes label" not in table.stdout  # never advised for an H200


@pytest.mark.parametrize("flags", [[], ["--dry-run"]])
def test_label_refuses_an_h200_whatever_its_class_label_says(
    cluster: Cluster, flags: list[str]
) -> None:
    mislabelled(cluster)
    before = {n: written(cluster, n) for n in ("gpu-8", "gpu-9")}
    for name in ("gpu-8", "gpu-9"):
        r = nodes(cluster, "label", name, *flags)
        assert r.exit_code == ExitCode.FINDING, r.output
        assert "has a denied GPU product" in r.stderr
        assert "nothing was changed" in r.stderr
    r = nodes(cluster, "label", "gpu-8")
    assert "although its example.org/gpu-class says b200" in r.stderr
    for name, was in before.items():
        assert written(cluster, name) == was
        assert KEY not in labels(cluster, name)


def test_a_node_whose_product_turns_denied_while_labelling_is_refused(cluster: Cluster) -> None:
    incident(cluster)
    ctx = racing(cluster, {PRODUCT: "NVIDIA-H200"})
    with pytest.raises(Refused, match="b200-0, which changed meanwhile: .*denied GPU product"):
        label_nodes(ctx, nodes=["b200-0"])
    assert KEY not in labels(cluster, "b200-0")


# --- node names -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["unlabel", ""], "a node name cannot be empty"),
        (["unlabel", "   "], "a node name cannot be empty"),
        (["unlabel", "rtx-pro-6000-0", ""], "a node name cannot be empty"),
        (["label", ""], "a node name cannot be empty"),
        (["label", "b200-0", " "], "a node name cannot be empty"),
        (["label", "b200-0/status"], "'b200-0/status' is not a node name"),
        (["unlabel", "RTX-PRO-6000-0"], "'RTX-PRO-6000-0' is not a node name"),
    ],
)
def test_an_empty_or_invalid_node_name_is_usage_and_changes_nothing(
    cluster: Cluster, args: list[str], needle: str
) -> None:
    incident(cluster)
    names = [n["metadata"]["name"] for n in cluster.kube.list(NODES)]
    before = {n: written(cluster, n) for n in names}
    r = nodes(cluster, *args)
    assert r.exit_code == ExitCode.USAGE, r.output
    assert needle in r.stderr
    assert r.stderr.count("\n") == 1, r.stderr
    assert r.stdout == ""
    assert {n: written(cluster, n) for n in names} == before


def test_an_empty_node_name_never_reaches_the_api_server(cluster: Cluster) -> None:
    incident(cluster)
    kube = Kube.connect(kubeconfig=cluster.kubeconfig)
    ctx = Context(config=cluster.config, kube_factory=lambda: kube)
    for call in (unlabel_nodes, label_nodes):
        with pytest.raises(UsageError, match="cannot be empty"):
            call(ctx, nodes=[""])
    assert sum(kube.calls.values()) == 0
    # Below the flows, the path itself refuses: GET nodes/ would be a LIST of every node.
    with pytest.raises(UsageError, match="cannot name a Node"):
        kube.get_or_none(NODES, "")
