"""``fracctl sandbox up --scenario examples/sandbox/operator-chart.yaml``: the operator from
its chart, by the real helm, and ``recreate.backend: helm`` carrying git's selector through
the chart's own upgrade."""

from __future__ import annotations

from pathlib import Path

import pytest

from fracctl import config as cfg
from fracctl.adapters.kube import Kube
from fracctl.errors import ExitCode
from fracctl.sandbox.layout import REPO_ROOT
from tests.support.helpers import run_cli

pytestmark = pytest.mark.cluster
SCENARIO = REPO_ROOT / "examples" / "sandbox" / "operator-chart.yaml"


def test_the_chart_scenario_recreates_through_the_charts_upgrade(tmp_path: Path) -> None:
    state = tmp_path / "sbx"
    r = run_cli("sandbox", "up", "--state-dir", str(state), "--scenario", str(SCENARIO))
    assert r.exit_code == ExitCode.OK, r.output
    config = str(state / "fracctl.yaml")
    try:
        c = cfg.load(config, env={})
        assert (c.recreate.backend, c.git.renderer, c.git.path) == (
            "helm", "helm", "gpu-fractioning")  # fmt: skip
        kube = Kube.connect(kubeconfig=str(state / "controlplane" / "kubeconfig"))
        live = kube.get(c.target.ref, "default")
        assert live["metadata"]["annotations"]["helm.sh/hook"] == "post-install,post-upgrade"
        assert live["spec"]["nodeSelector"] == {"nvidia.com/gpu.present": "true"}

        drift = run_cli("--config", config, "drift")
        assert drift.exit_code == ExitCode.FINDING, drift.output
        labelled = run_cli("--config", config, "nodes", "label", "b200-0")
        assert labelled.exit_code == ExitCode.OK, labelled.output
        fixed = run_cli("--config", config, "recreate", "--yes")
        assert fixed.exit_code == ExitCode.OK, fixed.output
        assert "helm upgrade of release gpu-fractioning/gpu-fractioning: revision 2 deployed" in (
            fixed.output
        )
        after = kube.get(c.target.ref, "default")
        assert after["spec"]["nodeSelector"] == {"example.org/gpu-fractions": "enabled"}
        settled = run_cli("--config", config, "drift")
        assert settled.exit_code == ExitCode.OK, settled.output  # the hook fracctl carries
        assert "carried: fracctl recreate (recreate.backend: helm)" in settled.output
    finally:
        down = run_cli("sandbox", "down", "--state-dir", str(state))
        assert down.exit_code == ExitCode.OK, down.output
