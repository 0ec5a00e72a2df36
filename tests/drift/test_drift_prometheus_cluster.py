"""``fracctl drift -o prometheus`` and ``--metrics-file`` against the real API server."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from prometheus_client.parser import text_string_to_metric_families

from fracctl.errors import ExitCode
from fracctl.redact import redact
from tests.support.helpers import Cluster, run_cli
from tests.support.metrics import OPT_IN, RTX, plain_config

GROUP = "gpu-fractioning.kai.scheduler"
TARGET = (("api_group", GROUP), ("kind", "GpuFractioningConfig"))
TARGET += (("name", "default"), ("object_namespace", ""))


def samples(text: str) -> dict[str, dict[tuple[tuple[str, str], ...], float]]:
    out: dict[str, dict[tuple[tuple[str, str], ...], float]] = {}
    for fam in text_string_to_metric_families(text):
        for s in fam.samples:
            out.setdefault(s.name, {})[tuple(sorted(s.labels.items()))] = s.value
    return out


def drifted(s: dict[str, Any]) -> dict[str, float]:
    return {dict(k)["verdict"]: v for k, v in s["fracctl_drift_objects"].items() if v}


def test_the_incident_as_metrics_exits_1(tmp_path: Path, cluster: Cluster) -> None:
    cluster.target(RTX)
    config = plain_config(tmp_path, cluster.kubeconfig)
    before = time.time()
    r = run_cli("-c", config, "drift", "-o", "prometheus")
    assert r.exit_code == ExitCode.FINDING, r.output  # drift still fails the run
    assert r.stderr == ""
    s = samples(r.stdout)
    assert drifted(s) == {"needs-recreate": 1}
    assert s["fracctl_drift_object_verdict"] == {(*TARGET, ("verdict", "needs-recreate")): 1}
    assert s["fracctl_drift_immutable_fields_differing"] == {TARGET: 1}
    ((_, stamp),) = s["fracctl_drift_run_timestamp_seconds"].items()
    assert before <= stamp <= time.time()
    ((_, took),) = s["fracctl_drift_run_duration_seconds"].items()
    assert 0 < took < 60
    assert redact(r.stdout) == r.stdout


def test_in_sync_as_metrics_exits_0(tmp_path: Path, cluster: Cluster) -> None:
    cluster.target(OPT_IN)
    config = plain_config(tmp_path, cluster.kubeconfig)
    r = run_cli("-c", config, "drift", "-o", "prometheus")
    assert r.exit_code == ExitCode.OK, r.output
    s = samples(r.stdout)
    assert drifted(s) == {"in-sync": 1}
    assert s["fracctl_drift_immutable_fields_differing"] == {TARGET: 0}
    assert s["fracctl_drift_warnings"] == {(): 0}


def test_the_metrics_file_is_written_beside_the_table(tmp_path: Path, cluster: Cluster) -> None:
    cluster.target(RTX)
    config = plain_config(tmp_path, cluster.kubeconfig)
    prom = tmp_path / "textfile" / "fracctl_drift.prom"
    prom.parent.mkdir()
    r = run_cli("-c", config, "drift", "--metrics-file", str(prom))
    assert r.exit_code == ExitCode.FINDING, r.output
    assert "needs-recreate" in r.stdout and "spec.nodeSelector" in r.stdout  # the table
    assert drifted(samples(prom.read_text())) == {"needs-recreate": 1}
    assert [p.name for p in prom.parent.iterdir()] == [prom.name]  # no temporary file left
    cluster.wipe_target()
    cluster.target(OPT_IN)
    r = run_cli("-c", config, "drift", "-o", "json", "--metrics-file", str(prom))
    assert r.exit_code == ExitCode.OK, r.output
    assert r.json["drifted"] is False
    assert drifted(samples(prom.read_text())) == {"in-sync": 1}  # replaced whole


def test_a_metrics_file_that_cannot_be_written_is_a_usage_error(
    tmp_path: Path, cluster: Cluster
) -> None:
    cluster.target(OPT_IN)
    config = plain_config(tmp_path, cluster.kubeconfig)
    r = run_cli("-c", config, "drift", "--metrics-file", str(tmp_path / "no" / "x.prom"))
    assert r.exit_code == ExitCode.USAGE, r.output
    assert "--metrics-file" in r.stderr and "cannot write" in r.stderr
