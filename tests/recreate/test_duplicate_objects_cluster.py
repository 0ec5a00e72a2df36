"""Two documents in git for one object: every command that reads git refuses, naming both.

The API server keeps one object per identity; which document "wins" would depend on the
order of applies. So render, drift (target and --all), recreate and preflight all stop
at the render layer with a usage error (exit 2) that names both files and lines, and
recreate deletes nothing.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from fracctl.errors import ExitCode
from tests.support.helpers import Cluster, commit_all, run_cli
from tests.support.recreate_fixtures import NEW, Incident, make_incident

H200_DOC = """\
apiVersion: v1
kind: ConfigMap
metadata:
  name: notes
  namespace: gpu-fractioning
data:
  why: a second document for the same object, selecting H200
---
apiVersion: gpu-fractioning.kai.scheduler/v1alpha1
kind: GpuFractioningConfig
metadata:
  name: default
spec:
  nodeSelector:
    example.org/gpu-class: h200
"""
BOTH_PLACES = "gpu-fractioning/gpufractioningconfig.yaml:1 and gpu-fractioning/h200.yaml:9"


@pytest.fixture
def incident(cluster: Cluster, tmp_path: Path) -> Incident:
    """The incident, with a plain-YAML path holding two GpuFractioningConfig/default."""
    inc = make_incident(cluster, tmp_path)
    gitops = tmp_path / "gitops"
    (gitops / "gpu-fractioning" / "kustomization.yaml").unlink()
    (gitops / "gpu-fractioning" / "h200.yaml").write_text(H200_DOC)
    commit_all(gitops, message="a second GpuFractioningConfig/default")
    return inc


def assert_names_both(r_stderr: str) -> None:
    assert "GpuFractioningConfig/default (gpu-fractioning.kai.scheduler group)" in r_stderr
    assert BOTH_PLACES in r_stderr, r_stderr


def test_drift_refuses_instead_of_judging_the_first_document(incident: Incident) -> None:
    # live equals the first document: before, drift said in-sync and exited 0
    incident.cluster.wipe_target()
    incident.cluster.target(NEW)
    for args in (("drift",), ("drift", "-o", "json"), ("drift", "--all")):
        r = run_cli("-c", str(incident.config_file), *args)
        assert r.exit_code == ExitCode.USAGE, (args, r.output)
        assert_names_both(r.stderr)
        assert "in-sync" not in r.stdout


def test_recreate_refuses_and_deletes_nothing(incident: Incident) -> None:
    before = incident.cluster.live_target()
    assert before is not None
    r = run_cli("-c", str(incident.config_file), "recreate", "--yes")
    assert r.exit_code == ExitCode.USAGE, r.output
    assert_names_both(r.stderr)
    after = incident.cluster.live_target()
    assert after is not None
    assert after["metadata"]["uid"] == before["metadata"]["uid"]
    assert not after["metadata"].get("deletionTimestamp")
    assert incident.cluster.kube.calls["DELETE gpufractioningconfigs"] == 0


def test_render_and_preflight_refuse(incident: Incident) -> None:
    r = run_cli("-c", str(incident.config_file), "render")
    assert r.exit_code == ExitCode.USAGE, r.output
    assert r.stdout == ""
    assert_names_both(r.stderr)
    # preflight reports the render failure as the refused desired-selector guard
    r = run_cli("-c", str(incident.config_file), "preflight", "-o", "json")
    assert r.exit_code == ExitCode.FINDING, r.output
    assert_names_both(json.dumps(r.json))
