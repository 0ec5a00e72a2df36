"""``recreate.backend: helm``: the operator chart's own upgrade, run as a guarded recreate.

On the real API server with the real helm (3 and 4, built from their Go modules), the
chart shaped like upstream's installed as a release, the guard policy applied, and the
operator simulation releasing its finalizer and writing node readiness.
"""

from __future__ import annotations

import os
import random
import signal
import time
from collections.abc import Iterator

import pytest

from fracctl.errors import ExitCode
from fracctl.sandbox.operator_sim import OperatorSimulation, SimulationThread
from tests.support.git_reads import count_dry_runs, count_git_reads
from tests.support.helm_chart import (
    OPT_IN,
    RELEASE,
    ChartIncident,
)
from tests.support.helpers import commit_all, run_cli, wait_enforced
from tests.support.killing import kill_when
from tests.support.recreate_fixtures import NEW

FRACTIONAL = {"gpu-fraction": "0.5"}


@pytest.fixture
def operator(incident: ChartIncident) -> Iterator[SimulationThread]:
    sim = OperatorSimulation(incident.cluster.kube, incident.cluster.config, delay=0.2)
    with SimulationThread(sim) as running:
        yield running


def guard(incident: ChartIncident) -> None:
    r = run_cli("-c", str(incident.config_file), "policy", "apply")
    assert r.exit_code == ExitCode.OK, r.output
    wait_enforced(incident.cluster)


def recreate(incident: ChartIncident, *args: str):  # type: ignore[no-untyped-def]
    return run_cli("-c", str(incident.config_file), "recreate", *args)


def converged(incident: ChartIncident, *, after: int) -> None:
    """Git's selector live, the release deployed past ``after``, every selected node ready."""
    live = incident.cluster.live_target()
    assert live is not None and live["spec"]["nodeSelector"] == NEW
    release = incident.release()
    assert release.status == "deployed" and release.version > after, release
    assert any(h.kind == "GpuFractioningConfig" for h in release.hooks)
    assert OPT_IN.split(":")[0] in release.hook_for("GpuFractioningConfig", "default").manifest
    ready = run_cli("-c", str(incident.config_file), "wait", "--timeout", "30s")
    assert ready.exit_code == ExitCode.OK, ready.output


def said_next(config: object, command: str) -> None:
    """drift and doctor both find what is left and name ``command`` as the way on."""
    for what in ("drift", "doctor"):
        r = run_cli("--config", str(config), what)
        assert r.exit_code == ExitCode.FINDING, r.output
        assert command in " ".join(r.output.split()), r.output


def doctor_hook(config: str) -> tuple[str, str]:
    """doctor's ``config-hook`` check (``-o json``): its status, and its finding's words."""
    r = run_cli("-c", config, "doctor", "-o", "json")
    assert r.exit_code in (ExitCode.OK, ExitCode.FINDING), r.output
    (check,) = [c for c in r.json["checks"] if c["id"] == "config-hook"]
    found = [f for f in r.json["findings"] if f["check"] == "config-hook"]
    words = " ".join(" ".join([*f["evidence"], f["fix"]]) for f in found)
    return str(check["status"]), " ".join(words.split())


def test_a_values_only_change_is_not_green_and_the_recreate_finishes_it(
    incident: ChartIncident, operator: SimulationThread
) -> None:
    """The object matches git, the release does not (a value no object of the config
    reads): drift names what is left and the recreate that finishes it."""
    cfg = str(incident.config_file)
    assert recreate(incident, "--yes").exit_code == ExitCode.OK
    assert run_cli("-c", cfg, "drift").exit_code == ExitCode.OK
    status, _ = doctor_hook(cfg)
    assert status == "ok", status
    values = incident.gitops / RELEASE / "values.yaml"
    values.write_text(values.read_text().replace("logLevel: info", "logLevel: debug"))
    commit_all(incident.gitops, message="the operator logs more")
    r = run_cli("-c", cfg, "drift")
    assert r.exit_code == ExitCode.FINDING, r.output
    assert f"unfinished: git's chart changes release {RELEASE}/{RELEASE}" in r.output, r.output
    assert f"Next: finish it: fracctl --config {cfg} recreate --yes" in r.output, r.output
    # doctor reads it as drift does (git's chart, helm's dry run): not green either
    status, said = doctor_hook(cfg)
    assert status != "ok", (status, said)
    assert f"unfinished: git's chart changes release {RELEASE}/{RELEASE}" in said, said
    assert f"finish it: fracctl --config {cfg} recreate --yes" in said, said
    before = incident.release().version
    assert recreate(incident, "--yes").exit_code == ExitCode.OK
    assert incident.release().version > before
    r = run_cli("-c", cfg, "drift")
    assert r.exit_code == ExitCode.OK, r.output


def test_a_branch_moved_mid_run_is_not_mixed_in(
    incident: ChartIncident, operator: SimulationThread, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The upgrade runs the commit the run rendered and proved, whatever the branch names
    by then: the revision is pinned to one commit, and the tree exported once, for the
    whole run (the plan's rendering, helm's dry run, the upgrade and verify read it)."""
    from fracctl.flows.recreate import recreate as run

    reads = count_git_reads(monkeypatch)
    moved: list[str] = []

    def look(step: str) -> None:
        if step == "guarded" and not moved:  # proven, and not yet upgraded
            incident.git_selector("example.org/elsewhere: enabled", message="moved mid-run")
            moved.append(step)

    ctx = incident.context()
    run(ctx, yes=True, boundary=look)
    live = incident.cluster.live_target()
    assert moved and live is not None and live["spec"]["nodeSelector"] == NEW, live
    assert len(reads.exports) == 1, reads
    assert reads.renders == ["helm"], reads
    ctx.close()


def test_one_run_renders_the_chart_once_and_runs_helms_dry_run_once(
    incident: ChartIncident, operator: SimulationThread, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The release's facts are the run's, not each backend's: the plan, drift's judge of
    the hook, the proofs and the upgrade share one rendering and one server dry run."""
    from fracctl.flows.recreate import recreate as run

    reads = count_git_reads(monkeypatch)
    dry_runs = count_dry_runs(monkeypatch)
    ctx = incident.context()
    try:
        run(ctx, yes=True, backend="helm")
    finally:
        ctx.close()
    live = incident.cluster.live_target()
    assert live is not None and live["spec"]["nodeSelector"] == NEW, live
    assert len(reads.exports) == 1, reads
    assert reads.renders == ["helm"], reads
    assert dry_runs == [RELEASE], dry_runs


def test_the_dry_run_plans_the_upgrade_and_says_every_daemon_restarts(
    incident: ChartIncident, operator: SimulationThread
) -> None:
    before, revision = incident.uid(), incident.release().version
    r = recreate(incident, "--dry-run")
    assert r.exit_code == ExitCode.OK, r.output
    assert "helm upgrade --dry-run=server of git's chart" in r.output
    assert "MPS daemons restart on every fraction node" in r.output
    assert "upgrade" in r.output
    assert incident.uid() == before and incident.release().version == revision


def test_drift_says_carried_only_where_the_recreate_would_run(
    incident: ChartIncident, operator: SimulationThread
) -> None:
    """ "carried" is said where recreate's own proofs pass (less the runner's identity);
    a misspelt release is named as what is wrong."""
    import yaml

    r = run_cli("-c", str(incident.config_file), "drift")
    assert r.exit_code == ExitCode.FINDING, r.output  # git wants the opt-in selector
    carried = f"carried: fracctl recreate (recreate.backend: helm) runs release {RELEASE}'s upgrade"
    assert carried in r.output, r.output
    doc = yaml.safe_load(incident.config_file.read_text())
    doc["git"]["helm_release"] = "gpu-fractionng"
    misspelt = incident.root / "misspelt.yaml"
    misspelt.write_text(yaml.safe_dump(doc))
    r = run_cli("-c", str(misspelt), "drift")
    assert r.exit_code == ExitCode.FINDING, r.output
    assert "\ncarried: fracctl" not in r.output, r.output
    assert (
        "not carried: fracctl recreate would refuse: there is no Helm release gpu-fractionng"
        in r.output
    ), r.output
    assert "Next: set git.helm_release and git.helm_namespace" in r.output, r.output


def test_guarded_refusal_then_convergence_with_the_policy_installed(
    incident: ChartIncident, operator: SimulationThread
) -> None:
    guard(incident)
    pod_ns = incident.cluster.namespace("ml-team")
    incident.cluster.pod(pod_ns, "train-0", node="rtx-pro-6000-0", annotations=FRACTIONAL)
    uid = incident.uid()
    # A plain helm upgrade (an unrelated value) fails at the hook: the policy refuses.
    plain = incident.run_helm("upgrade", RELEASE, str(incident.gitops / RELEASE),
                              "--set", "operator.logLevel=debug", check=False)  # fmt: skip
    assert plain.returncode != 0 and "fracctl recreate" in plain.stderr, plain.stderr
    assert incident.uid() == uid
    failed = incident.release()
    assert failed.status == "failed"

    r = recreate(incident, "--yes")
    assert r.exit_code == ExitCode.FINDING, r.output
    assert "ml-team/train-0" in r.output and "nothing changed" in r.output
    assert incident.uid() == uid and incident.release().version == failed.version

    _delete_pod(incident, "train-0", pod_ns)  # the fractional pod finished
    r = recreate(incident, "--yes")
    assert r.exit_code == ExitCode.OK, r.output
    assert incident.uid() != uid
    converged(incident, after=failed.version)
    from fracctl.flows.policy import POLICIES

    policies = [p["metadata"]["name"] for p in incident.cluster.kube.list(POLICIES)]
    assert any(n.startswith("fracctl-guard-") for n in policies), "the policy stays installed"
    again = recreate(incident, "--yes")
    assert again.exit_code == ExitCode.OK, again.output
    assert "already matches git" in again.output
    assert incident.release().version == failed.version + 1, "a rerun changes nothing"


def _delete_pod(incident: ChartIncident, name: str, namespace: str) -> None:
    from fracctl.core.kube.resources import PODS

    incident.cluster.kube.delete(PODS, name, namespace, grace_period=0)


def test_a_release_pending_for_another_reason_is_refused(
    incident: ChartIncident, operator: SimulationThread
) -> None:
    from fracctl.core.gitops import helm_release
    from fracctl.flows.engines.helm.release import SECRETS

    kube = incident.cluster.kube
    rel = incident.release()
    name = f"sh.helm.release.v1.{RELEASE}.v{rel.version}"
    secret = kube.get(SECRETS, name, incident.namespace)
    kube.replace(SECRETS, helm_release.with_status(secret, "pending-upgrade", "someone's helm"))
    uid = incident.uid()
    r = recreate(incident, "--yes")
    assert r.exit_code == ExitCode.FINDING, r.output
    assert "another helm operation is in progress" in r.output
    assert incident.uid() == uid and incident.release().status == "pending-upgrade"


@pytest.mark.parametrize(("moment", "sig"), [
    ("pending", signal.SIGKILL), ("deleted", signal.SIGKILL), ("recreated", signal.SIGKILL),
    ("random", signal.SIGKILL), ("pending", signal.SIGINT), ("deleted", signal.SIGINT),
], ids=["kill-pending", "kill-deleted", "kill-recreated", "kill-random", "ctrl-c-pending",
        "ctrl-c-deleted"])  # fmt: skip
def test_killed_mid_run_then_the_rerun_converges(
    incident: ChartIncident, operator: SimulationThread, moment: str, sig: int
) -> None:
    """SIGKILL, or a Ctrl-C (SIGINT to fracctl and helm), at a step of the run; then drift,
    doctor and the run's own error name one command, and running it converges."""
    seed = int(os.environ.get("FRACCTL_TEST_SEED", "0")) or random.randrange(1, 10**6)
    rng = random.Random(seed)
    jitter = rng.uniform(0, 0.3) if moment != "random" else rng.uniform(0.5, 6.0)
    print(f"killed at {moment} + {jitter:.2f}s (FRACCTL_TEST_SEED={seed})")
    guard(incident)
    first = incident.release().version
    uid = incident.uid()

    def reached() -> bool:
        if moment == "random":
            return True
        release = incident.release()
        if moment == "pending":
            return release.version > first
        live = incident.cluster.live_target()
        if moment == "deleted":
            return live is None or bool(live["metadata"].get("deletionTimestamp"))
        return live is not None and live["metadata"]["uid"] != uid

    args = ["-c", str(incident.config_file), "recreate", "--yes"]
    env = {**os.environ, "FRACCTL_TIMEOUTS_LOCK_LEASE": "2s"}
    said: list[str] = []
    mid = kill_when(args, env, reached, jitter=jitter, what=moment, timeout=120, poll=0.05,
                    sig=sig, said=said)  # fmt: skip
    print("killed mid-run" if mid else "the run had ended before the kill")
    way_on = f"fracctl --config {incident.config_file} recreate --yes"
    time.sleep(2.5)  # the dead holder's Lease expires
    left = incident.release()  # read once the run and its helm are gone, as drift reads it
    print(f"left the release at revision {left.version}, {left.status}")
    live = incident.cluster.live_target()
    settled = left.status == "deployed" and live is not None and not live["metadata"].get(
        "deletionTimestamp") and live["spec"]["nodeSelector"] == NEW  # fmt: skip
    touched = left.version > first or live is None or live["metadata"]["uid"] != uid
    if touched and not settled:  # half-done: drift and doctor name the command that goes on
        said_next(incident.config_file, way_on)
        if sig == signal.SIGINT and mid:  # and so does the interrupted run's own error
            assert way_on in " ".join("".join(said).split()), said
    r = recreate(incident, "--yes")
    assert r.exit_code == ExitCode.OK, r.output
    converged(incident, after=first)
    assert "another helm operation" not in r.output
    if left.pending:  # helm died with fracctl: its revision is recovered, not waited on for ever
        assert f"marked release {RELEASE}/{RELEASE} revision {left.version} failed" in r.output
        history = incident.run_helm("history", RELEASE).stdout
        assert "failed" in history and "Upgrade interrupted" in history, history


def test_an_upgrade_that_fails_after_the_hooks_delete_says_so_and_the_rerun_converges(
    incident: ChartIncident,
) -> None:
    # The operator puts its finalizer, then stops (its Lease still fresh): the hook's
    # delete waits on it and helm gives up first. The error must say the config is
    # deleted, and the way on; once the operator is back the rerun converges.
    sim = OperatorSimulation(incident.cluster.kube, incident.cluster.config, delay=0.2)
    finalizer = incident.cluster.config.target.finalizer
    with SimulationThread(sim):
        deadline = time.monotonic() + 20
        while finalizer not in (incident.cluster.live_target() or {})["metadata"].get(
            "finalizers", []
        ):
            assert time.monotonic() < deadline, "the operator never put its finalizer"
            time.sleep(0.1)
    first = incident.release().version
    short = incident.edit_config(to=incident.root / "short.yaml", helm={"timeout": "2s"})
    r = run_cli("-c", str(short), "recreate", "--yes")
    assert r.exit_code != ExitCode.OK, r.output
    assert "WAS DELETED and is still terminating" in r.output, r.output
    assert f"or fix the cause and resume: fracctl --config {short} recreate --yes" in r.output
    assert incident.release().status == "failed"
    said_next(short, f"fracctl --config {short} recreate --yes")
    with SimulationThread(OperatorSimulation(incident.cluster.kube, incident.cluster.config)):
        time.sleep(1)
        again = recreate(incident, "--yes")
        assert again.exit_code == ExitCode.OK, again.output
        converged(incident, after=first)


def test_a_toleration_added_in_the_values_is_refused_under_a_fractional_pod(
    incident: ChartIncident, operator: SimulationThread
) -> None:
    """A change that would only roll the daemons (were the config not the chart's hook):
    the chart's upgrade recreates the config, so it is refused while a fractional pod runs
    on a selected node, and carried once it is gone."""
    cfg = str(incident.config_file)
    assert recreate(incident, "--yes").exit_code == ExitCode.OK
    values = incident.gitops / RELEASE / "values.yaml"
    second = "  - key: example.org/dedicated\n    operator: Exists\n    effect: NoSchedule\n"
    text = values.read_text().replace(
        "    effect: NoSchedule\n", "    effect: NoSchedule\n" + second, 1
    )
    values.write_text(text)
    commit_all(incident.gitops, message="the daemons tolerate the ML pool")
    drift = run_cli("-c", cfg, "drift")
    assert drift.exit_code == ExitCode.FINDING, drift.output
    assert "restarts-daemons" in drift.output and "example.org/dedicated" in drift.output
    pod_ns = incident.cluster.namespace("ml-team")
    incident.cluster.pod(pod_ns, "train-0", node="rtx-pro-6000-0", annotations=FRACTIONAL)
    uid, version = incident.uid(), incident.release().version
    r = recreate(incident, "--yes")
    assert r.exit_code == ExitCode.FINDING, r.output
    assert "ml-team/train-0" in r.output
    assert incident.uid() == uid and incident.release().version == version
    _delete_pod(incident, "train-0", pod_ns)
    r = recreate(incident, "--yes")
    assert r.exit_code == ExitCode.OK, r.output
    live = incident.cluster.live_target()
    assert live is not None and len(live["spec"]["tolerations"]) == 2
    assert run_cli("-c", cfg, "drift").exit_code == ExitCode.OK
