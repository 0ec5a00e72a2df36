"""The sandbox is a faithful install: doctor sees the incident, and nothing else.

One real control plane (with KWOK nodes) started by ``sandbox up``, with its operator simulation:
healthy before the B200 joins, one finding once it has opted in while the live config
still selects the RTX class, and healthy again after ``recreate --yes``.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from fracctl import config as cfg
from fracctl.adapters.kube import Kube
from fracctl.core.doctor import CHECK_IDS, DAEMONSETS
from fracctl.errors import ExitCode
from tests.support.helpers import Result, run_cli

pytestmark = pytest.mark.cluster


def doctor(config: str) -> Result:
    r = run_cli("--config", config, "doctor", "-o", "json")
    assert r.exit_code in (ExitCode.OK, ExitCode.FINDING), r.output
    return r


def findings(r: Result) -> dict[str, list[dict[str, Any]]]:
    out: dict[str, list[dict[str, Any]]] = {}
    for f in r.json["findings"]:
        out.setdefault(f["check"], []).append(f)
    return out


def test_doctor_finds_the_incident_and_is_healthy_after_the_recreate(tmp_path: Path) -> None:
    state = tmp_path / "sbx"
    r = run_cli("sandbox", "up", "--state-dir", str(state))
    assert r.exit_code == ExitCode.OK, r.output
    config = str(state / "fracctl.yaml")
    try:
        # The simulated daemons take a moment to start on the RTX node after `up`.
        deadline = time.monotonic() + 20
        while (first := doctor(config)).exit_code != ExitCode.OK:
            assert time.monotonic() < deadline, first.json["findings"]
            time.sleep(0.3)
        assert {c["status"] for c in first.json["checks"]} == {"ok"}
        assert [c["id"] for c in first.json["checks"]] == list(CHECK_IDS)

        # The incident: the B200 opts in, and the live config still selects the RTX class.
        labelled = run_cli("--config", config, "nodes", "label", "b200-0")
        assert labelled.exit_code == ExitCode.OK, labelled.output
        before = doctor(config)
        assert before.exit_code == ExitCode.FINDING, before.output
        (f,) = findings(before)["opted-in-selected"]
        assert list(findings(before)) == ["opted-in-selected"], before.json["findings"]
        assert f["subjects"] == ["b200-0"]
        assert f["evidence"] == ["live spec.nodeSelector: example.org/gpu-class=rtx-pro-6000"]
        assert f["fix"] == "fracctl drift && fracctl recreate --yes"
        table = run_cli("--config", config, "doctor")
        assert f"doctor: 1 finding(s) from 1 of {len(CHECK_IDS)} checks" in table.stdout, (
            table.output
        )

        # The fix.
        fixed = run_cli("--config", config, "recreate", "--yes")
        assert fixed.exit_code == ExitCode.OK, fixed.output
        after = doctor(config)
        assert after.exit_code == ExitCode.OK, after.json["findings"]
        assert {c["status"] for c in after.json["checks"]} == {"ok"}
        table = run_cli("--config", config, "doctor")
        assert table.exit_code == ExitCode.OK, table.output
        assert f"doctor: healthy ({len(CHECK_IDS)} checks passed)" in table.stdout

        # What the operator simulation keeps: the config's status and the DaemonSets'.
        kube = Kube.connect(kubeconfig=str(state / "controlplane" / "kubeconfig"))
        try:
            live = kube.get(cfg.Config().target.ref, "default")
            (ready,) = [c for c in live["status"]["conditions"] if c["type"] == "Ready"]
            assert (ready["status"], ready["reason"]) == ("True", "AllNodesReady")
            assert ready["message"] == "2 of 2 selected node(s) ready"
            for name in ("gpu-fractioning-mpsd", "gpu-fractioning-fractiond"):
                ds = kube.get(DAEMONSETS, name, "gpu-fractioning")
                assert ds["status"]["desiredNumberScheduled"] == 2
                assert ds["status"]["numberReady"] == 2
                selector = ds["spec"]["template"]["spec"]["nodeSelector"]
                assert selector == {"example.org/gpu-fractions": "enabled"}
        finally:
            kube.close()
    finally:
        down = run_cli("sandbox", "down", "--state-dir", str(state))
    assert down.exit_code == ExitCode.OK, down.output
