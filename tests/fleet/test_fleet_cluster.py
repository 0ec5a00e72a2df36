"""Fleets against three real API servers at once: drift, preflight, recreate in waves."""

from __future__ import annotations

import json
import shlex
import xml.etree.ElementTree as ET
from contextlib import ExitStack

from fracctl.core.kube.resources import NODES
from fracctl.errors import ExitCode
from fracctl.flows import fleet as fleet_flow
from fracctl.sandbox.operator_sim import NEVER_READY
from tests.support.fleet_fixtures import Fleet, seed_clean, seed_fractional, seed_incident
from tests.support.helpers import commit_all, run_cli
from tests.support.recreate_fixtures import NEW, OLD

THREE = ("--context", "eu", "--context", "us", "--context", "ap")


def seed_three(fleet: Fleet) -> None:
    seed_clean(fleet.clusters["eu"])  # in sync
    seed_incident(fleet.clusters["us"])  # needs a recreate
    seed_fractional(fleet.clusters["ap"])  # needs a recreate; a fractional pod runs


def verdicts(cluster: dict) -> list[str]:  # type: ignore[type-arg]
    return [o["verdict"] for o in cluster["result"]["objects"]]


def test_drift_over_a_fleet_keeps_each_clusters_result(fleet: Fleet) -> None:
    seed_three(fleet)
    fleet.clusters["ap"].wipe_target()  # ap has no live object: a third, distinct verdict
    r = run_cli(
        "--config", str(fleet.config_file), *THREE, "drift", "-o", "json", "--parallel", "3"
    )
    assert r.exit_code == ExitCode.FINDING, r.output
    clusters = r.json["clusters"]
    assert list(clusters) == ["eu", "us", "ap"]
    assert (clusters["eu"]["state"], clusters["eu"]["exit_code"]) == ("in-sync", 0)
    assert verdicts(clusters["eu"]) == ["in-sync"]
    assert (clusters["us"]["state"], clusters["us"]["exit_code"]) == ("drifted", 1)
    assert verdicts(clusters["us"]) == ["needs-recreate"]
    (us,) = clusters["us"]["result"]["objects"]
    assert us["fields"][0]["live"] == OLD and us["fields"][0]["desired"] == NEW
    assert verdicts(clusters["ap"]) == ["missing-live"]
    assert clusters["ap"]["context"] == "ap"
    # every cluster was read with its own client, once
    assert "[us]" in r.stderr or r.stderr == ""


def test_drift_table_junit_and_github_name_each_cluster(fleet: Fleet) -> None:
    seed_three(fleet)
    base = ("--config", str(fleet.config_file), *THREE, "drift")
    r = run_cli(*base)
    assert r.exit_code == ExitCode.FINDING, r.output
    rows = {line.split()[1]: line for line in r.stdout.splitlines() if line.startswith("│ ")}
    assert "in-sync" in rows["eu"] and "drifted" in rows["us"] and "drifted" in rows["ap"]
    assert "3 clusters: 1 in-sync, 2 drifted; exit 1" in r.stdout
    assert "[us] GpuFractioningConfig/default: needs-recreate" in r.stdout

    junit = fleet.root / "drift.xml"
    r = run_cli(*base, "-o", "junit", "--junit-file", str(junit))
    assert r.exit_code == ExitCode.FINDING, r.output
    suites = ET.fromstring(junit.read_text()).findall("testsuite")
    assert [s.get("name") for s in suites] == [
        "fracctl drift: eu",
        "fracctl drift: us",
        "fracctl drift: ap",
    ]
    assert [s.get("failures") for s in suites] == ["0", "1", "1"]

    r = run_cli(*base, "-o", "github")
    assert r.exit_code == ExitCode.FINDING, r.output
    errors = [line for line in r.stdout.splitlines() if line.startswith("::error")]
    assert len(errors) == 2
    assert any("title=fracctl drift [us]%3A needs-recreate" in e for e in errors), errors
    assert any("title=fracctl drift [ap]%3A needs-recreate" in e for e in errors), errors


def test_an_unreachable_cluster_is_exit_3_and_hides_nothing(fleet: Fleet) -> None:
    seed_three(fleet)
    r = run_cli(
        "--config", str(fleet.config_file), *THREE, "--context", "gone", "drift", "-o", "json"
    )
    assert r.exit_code == ExitCode.EXTERNAL, r.output
    clusters = r.json["clusters"]
    assert clusters["gone"]["state"] == "unreachable"
    assert clusters["gone"]["exit_code"] == 3
    assert "cannot reach the API server" in clusters["gone"]["error"]
    assert verdicts(clusters["eu"]) == ["in-sync"]
    assert verdicts(clusters["us"]) == ["needs-recreate"]

    r = run_cli("--config", str(fleet.config_file), "--all-contexts", "drift")
    assert r.exit_code == ExitCode.EXTERNAL, r.output
    assert "unreachable" in r.stdout and "in-sync" in r.stdout
    assert "4 clusters: 1 in-sync, 2 drifted, 1 unreachable; exit 3" in r.stdout

    junit = ET.fromstring(
        run_cli("--config", str(fleet.config_file), "--all-contexts", "drift", "-o", "junit").stdout
    )
    gone = [s for s in junit.findall("testsuite") if s.get("name") == "fracctl drift: gone"]
    assert gone[0].find("testcase/error") is not None


def test_preflight_over_a_fleet_runs_each_clusters_guards(fleet: Fleet) -> None:
    seed_three(fleet)
    r = run_cli("--config", str(fleet.config_file), *THREE, "preflight", "-o", "json")
    assert r.exit_code == ExitCode.FINDING, r.output
    clusters = r.json["clusters"]
    assert {n: c["state"] for n, c in clusters.items()} == {
        "eu": "passed",
        "us": "passed",
        "ap": "refused",
    }
    failed = [c["name"] for c in clusters["ap"]["result"]["checks"] if not c["ok"]]
    assert failed and all("team-a/trainer-0" not in c["evidence"] for c in
                          clusters["us"]["result"]["checks"])  # fmt: skip
    r = run_cli("--config", str(fleet.config_file), *THREE, "preflight")
    assert r.exit_code == ExitCode.FINDING, r.output
    assert "team-a/trainer-0" in r.stdout


def test_a_single_context_is_the_single_cluster_command(fleet: Fleet) -> None:
    seed_three(fleet)
    r = run_cli("--config", str(fleet.config_file), "--context", "us", "drift", "-o", "json")
    assert r.exit_code == ExitCode.FINDING, r.output
    assert "clusters" not in r.json and r.json["objects"][0]["verdict"] == "needs-recreate"
    r = run_cli("--config", str(fleet.config_file), *THREE, "wait")
    assert r.exit_code == ExitCode.USAGE, r.output
    assert "works on one cluster" in r.stderr


def test_a_wave_stops_when_its_canary_fails(fleet: Fleet) -> None:
    seed_three(fleet)
    config = fleet.write_config(
        [{"context": "ap", "wave": 0}, {"context": "us", "wave": 1}, {"context": "eu", "wave": 1}]
    )
    before = fleet.uid("us")
    r = run_cli("--config", config, "recreate", "--yes", "-o", "json")
    assert r.exit_code == ExitCode.FINDING, r.output
    clusters = r.json["clusters"]
    assert clusters["ap"]["state"] == "refused" and clusters["ap"]["exit_code"] == 1
    assert clusters["us"]["state"] == clusters["eu"]["state"] == "not-started"
    assert r.json["stopped"] == "ap (wave 0) refused"
    assert r.json["resume"] == f"fracctl --config {config} recreate --yes"
    assert fleet.uid("us") == before and fleet.selector("us") == OLD  # never touched
    assert fleet.selector("ap") == OLD

    r = run_cli("--config", config, "recreate", "--yes")
    assert r.exit_code == ExitCode.FINDING, r.output
    assert "not started: us, eu" in r.stdout
    assert f"resume: fracctl --config {config} recreate --yes" in r.stdout
    audit = (fleet.root / "state" / "audit.log").read_text().splitlines()
    assert json.loads(audit[-1])["action"] == "recreate-fleet"
    assert json.loads(audit[-1])["clusters"]["us"]["state"] == "not-started"


def test_a_later_wave_that_cannot_pass_stops_the_rollout_before_the_canary(
    fleet: Fleet,
) -> None:
    """Every cluster is planned read-only first, even with --yes: the canary is untouched."""
    seed_three(fleet)
    config = fleet.write_config(
        [{"context": "us", "wave": 0}, {"context": "ap", "wave": 1}, {"context": "eu", "wave": 1}]
    )
    canary = fleet.uid("us")
    r = run_cli("--config", config, "recreate", "--yes", "-o", "json")
    assert r.exit_code == ExitCode.FINDING, r.output
    clusters = r.json["clusters"]
    assert clusters["ap"]["state"] == "refused"
    assert clusters["us"]["state"] == clusters["eu"]["state"] == "not-started"
    assert r.json["stopped"] == "ap (wave 1) refused"
    assert fleet.uid("us") == canary and fleet.selector("us") == OLD, "the canary was touched"


def test_dry_run_plans_every_cluster(fleet: Fleet) -> None:
    seed_three(fleet)
    config = fleet.write_config(
        [{"context": "ap", "wave": 0}, {"context": "us", "wave": 1}, {"context": "eu", "wave": 1}]
    )
    r = run_cli("--config", config, "recreate", "--dry-run")
    assert r.exit_code == ExitCode.FINDING, r.output  # ap's guards would refuse
    for name in ("ap", "us", "eu"):
        assert f"== {name} (wave" in r.stdout
    r = run_cli("--config", config, "recreate", "--dry-run", "-o", "json")
    states = {n: c["state"] for n, c in r.json["clusters"].items()}
    assert states == {"ap": "refused", "us": "dry-run", "eu": "nothing-to-do"}
    assert fleet.selector("us") == OLD


def test_rerun_after_an_interrupt_in_wave_1_converges_without_touching_done_clusters(
    fleet: Fleet,
) -> None:
    seed_incident(fleet.clusters["us"])  # wave 0, the canary
    seed_incident(fleet.clusters["ap"])  # wave 1, interrupted after its delete
    seed_clean(fleet.clusters["eu"])  # wave 1, after ap
    config = fleet.write_config(
        [{"context": "us", "wave": 0}, {"context": "ap", "wave": 1}, {"context": "eu", "wave": 1}]
    )
    eu_uid = fleet.uid("eu")

    def stop(cluster: str, step: str) -> None:
        if (cluster, step) == ("ap", "deleted"):
            raise KeyboardInterrupt

    with ExitStack() as stack:
        for op in fleet.operators("us", "ap"):
            stack.enter_context(op)
        base = fleet.context()
        members = fleet_flow.members(base.config)
        assert members is not None
        first = fleet_flow.recreate(
            base, members, yes=True, boundary=stop, resume_args=["--config", config]
        )
        states = {r.name: r.state for r in first.results}
        assert states == {"us": "recreated", "ap": "interrupted", "eu": "not-started"}
        assert first.exit_code == ExitCode.INTERRUPTED
        assert fleet.selector("us") == NEW
        us_uid = fleet.uid("us")
        # Deleted, not recreated: gone, or still going (one read: the operator may release
        # its finalizer between two).
        ap = fleet.clusters["ap"].live_target()
        assert ap is None or ap["spec"]["nodeSelector"] == OLD, ap

        r = run_cli(*shlex.split(first.resume or "")[1:], "-o", "json")
        assert r.exit_code == ExitCode.OK, r.output
    states = {n: c["state"] for n, c in r.json["clusters"].items()}
    assert states == {"us": "nothing-to-do", "ap": "recreated", "eu": "nothing-to-do"}
    assert fleet.uid("us") == us_uid, "the canary is not touched again"
    assert fleet.uid("eu") == eu_uid
    assert fleet.selector("ap") == NEW
    for name in ("us", "ap"):
        audit = fleet.root / "state" / "clusters" / name / "audit.log"
        assert audit.is_file(), name


def test_a_canary_whose_nodes_never_become_ready_stops_the_rollout(fleet: Fleet) -> None:
    seed_incident(fleet.clusters["us"])
    seed_incident(fleet.clusters["ap"])
    fleet.clusters["us"].kube.patch(
        NODES, "b200-0", {"metadata": {"annotations": {NEVER_READY: "never-ready"}}}
    )
    config = fleet.write_config(
        [{"context": "us", "wave": 0}, {"context": "ap", "wave": 1}], ready="3s"
    )
    with ExitStack() as stack:
        for op in fleet.operators("us", "ap"):
            stack.enter_context(op)
        r = run_cli("--config", config, "recreate", "--yes", "-o", "json")
    assert r.exit_code == ExitCode.TIMEOUT, r.output
    us, ap = r.json["clusters"]["us"], r.json["clusters"]["ap"]
    assert (us["state"], us["exit_code"]) == ("failed", 4)
    assert "b200-0: False (MPSDaemonCrashLoop" in us["error"]
    assert ap["state"] == "not-started"
    assert fleet.selector("ap") == OLD, "the next wave never started"


def test_continue_on_failure_goes_on_with_the_other_clusters(fleet: Fleet) -> None:
    seed_three(fleet)
    config = fleet.write_config(
        [{"context": "ap", "wave": 0}, {"context": "us", "wave": 1}, {"context": "eu", "wave": 1}]
    )
    with ExitStack() as stack:
        for op in fleet.operators("us"):
            stack.enter_context(op)
        r = run_cli("--config", config, "recreate", "--yes", "--continue-on-failure", "-o", "json")
    assert r.exit_code == ExitCode.FINDING, r.output
    states = {n: c["state"] for n, c in r.json["clusters"].items()}
    assert states == {"ap": "refused", "us": "recreated", "eu": "nothing-to-do"}
    assert fleet.selector("us") == NEW and fleet.selector("ap") == OLD
    assert r.json["resume"] == (f"fracctl --config {config} recreate --yes --continue-on-failure")


def test_each_cluster_is_judged_against_its_own_path_in_git(fleet: Fleet) -> None:
    seed_incident(fleet.clusters["us"])
    seed_incident(fleet.clusters["ap"])
    overlay = fleet.gitops / "clusters" / "us"
    overlay.mkdir(parents=True)
    (overlay / "gpufractioningconfig.yaml").write_text(
        "apiVersion: gpu-fractioning.kai.scheduler/v1alpha1\nkind: GpuFractioningConfig\n"
        "metadata:\n  name: default\nspec:\n  nodeSelector:\n"
        "    example.org/gpu-class: rtx-pro-6000\n"
    )
    commit_all(fleet.gitops, message="us keeps the class selector")
    config = fleet.write_config([{"context": "us", "path": "clusters/us"}, "ap"])
    r = run_cli("--config", config, "drift", "-o", "json")
    assert r.exit_code == ExitCode.FINDING, r.output
    clusters = r.json["clusters"]
    assert verdicts(clusters["us"]) == ["in-sync"]
    assert clusters["us"]["path"] == "clusters/us"
    assert clusters["us"]["result"]["source"]["path"] == "clusters/us"
    assert verdicts(clusters["ap"]) == ["needs-recreate"]
