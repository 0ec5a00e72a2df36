"""What ``fracctl fleet status`` makes of an ApplicationSet and its Applications (the
shapes Argo CD v3.2.11 writes; tests/argocd/test_argocd_gate_e2e.py reads the real ones)."""

from __future__ import annotations

from typing import Any

from fracctl.core.appset import fix_of, hook_failure, rollout
from fracctl.errors import ExitCode
from tests.support.helpers import Cluster, run_cli

REFUSAL = (
    "fracctl gate pre-sync: preflight refused, nothing changed: fractional-pods: 1 "
    "fractional pod(s) running or pending: team-a/trainer-0 on rtx-pro-6000-0 "
    "[gpu-fraction] -> let them finish or scale them down first; label-coverage: "
    "b200-0 lacks the opt-in label -> fracctl nodes label b200-0"
)


REV, OLDER = "c" * 40, "d" * 40


def appset(*entries: dict[str, Any]) -> dict[str, Any]:
    steps = [{"matchExpressions": [{"key": "step", "operator": "In", "values": ["canary"]}]},
             {"matchExpressions": [{"key": "step", "operator": "In", "values": ["rest"]}],
              "maxUpdate": "25%"}]  # fmt: skip
    return {
        "metadata": {"name": "fleet", "uid": "u"},
        "spec": {"strategy": {"type": "RollingSync", "rollingSync": {"steps": steps}}},
        "status": {"applicationStatus": list(entries)},
    }


def app(name: str, server: str, *, phase: str = "Succeeded", hooks: list[Any] | None = None,
        health: str = "Healthy") -> dict[str, Any]:  # fmt: skip
    return {
        "metadata": {"name": name},
        "spec": {"destination": {"server": server, "namespace": "fracctl"}},
        "status": {
            "sync": {"status": "Synced", "revision": REV},
            "health": {"status": health},
            "operationState": {"phase": phase, "message": "one or more tasks failed",
                               "syncResult": {"resources": hooks or [], "revision": REV}},
        },
    }  # fmt: skip


def entry(name: str, step: str, status: str) -> dict[str, Any]:
    return {"application": name, "step": step, "status": status, "message": "m",
            "lastTransitionTime": "2026-12-06T05:00:00Z", "targetRevisions": ["abc"]}  # fmt: skip


def test_steps_clusters_and_the_stopped_one_with_its_fix() -> None:
    failed = {"kind": "Pod", "name": "fracctl-gate-pre-sync", "hookType": "PreSync",
              "hookPhase": "Failed", "message": REFUSAL}  # fmt: skip
    ok = {"kind": "Pod", "name": "fracctl-gate-post-sync", "hookType": "PostSync",
          "hookPhase": "Succeeded", "message": "fine"}  # fmt: skip
    r = rollout(
        appset(entry("b", "2", "Progressing"), entry("a", "1", "Healthy")),
        [app("a", "https://a", hooks=[ok]),
         app("b", "https://b", phase="Failed", hooks=[failed], health="Missing")],
    )  # fmt: skip
    assert r.steps == ["step In canary", "step In rest; maxUpdate 25%"]
    assert [(c.application, c.step, c.cluster) for c in r.clusters] == [
        ("a", "1", "https://a"), ("b", "2", "https://b")]  # fmt: skip
    (stopped,) = r.stopped
    assert stopped.hook is not None and stopped.hook.message == REFUSAL
    assert stopped.fix == (
        "let them finish or scale them down first; fracctl nodes label b200-0; then Argo "
        "CD's retry (syncPolicy.retry), or one `argocd app sync b`, goes on"
    )
    assert not r.done and r.to_dict()["stopped"] == ["b"]
    assert r.to_dict()["clusters"][1]["revision"] == "abc"


def test_a_retry_in_progress_is_still_stopped_and_says_so() -> None:
    retrying = app("b", "https://b", phase="Running")
    retrying["status"]["operationState"].update(
        retryCount=3, message="Retrying operation. Attempt #3", syncResult=None
    )
    r = rollout(appset(entry("b", "2", "Progressing")), [retrying])
    (stopped,) = r.stopped
    assert stopped.retrying and stopped.retries == 3 and stopped.hook is None
    assert stopped.fix.startswith("its last attempt failed and Argo CD is trying again")
    first = app("c", "https://c", phase="Running")  # a first attempt running is no stop
    assert not rollout(appset(entry("c", "1", "Progressing")), [first]).stopped


def test_a_failure_without_a_fracctl_refusal_points_at_the_hook() -> None:
    hook = {"kind": "Pod", "name": "x", "hookType": "PreSync", "hookPhase": "Error",
            "message": "container gate failed with exit code 137"}  # fmt: skip
    failure = hook_failure(app("a", "s", phase="Error", hooks=[hook]))
    assert failure is not None and failure.phase == "Error"
    assert fix_of(failure, "a").startswith("see the hook's message; then Argo CD's retry")
    assert fix_of(None, "a") == ""


def test_done_only_when_every_cluster_runs_gits_revision() -> None:
    a = appset(entry("a", "1", "Healthy"))
    r = rollout(a, [app("a", "s")], REV)
    assert r.done and not r.stopped and r.clusters[0].behind == ""
    assert r.to_dict()["revision"] == REV and r.to_dict()["done"]
    unknown = rollout(a, [app("a", "s")], unknown="git ls-remote x: denied")
    assert not unknown.done and unknown.to_dict()["revision_unknown"] == "git ls-remote x: denied"
    newer = rollout(a, [app("a", "s")], OLDER)  # git moved on; Argo CD has not seen it
    assert not newer.done
    assert newer.clusters[0].behind == "Argo CD compares it with ccccccc"
    between = app("b", "s", phase="Running")
    between["status"]["operationState"]["syncResult"]["revision"] = OLDER
    two = rollout(appset(entry("a", "1", "Healthy"), entry("b", "2", "Progressing")),
                  [app("a", "s"), between], REV)  # fmt: skip
    assert not two.done and [c.behind for c in two.clusters] == [
        "", "its last sync (Running) was of ddddddd"]  # fmt: skip


def test_a_sync_window_is_the_blocker_not_the_last_attempts_refusal() -> None:
    failed = {"kind": "Pod", "name": "fracctl-gate-pre-sync", "hookType": "PreSync",
              "hookPhase": "Failed", "message": REFUSAL}  # fmt: skip
    held = app("b", "https://b", phase="Running", hooks=[failed])
    held["status"]["operationState"]["message"] = "Sync operation blocked by sync window"
    held["metadata"]["labels"] = {"fracctl.io/cluster": "member-2"}
    (c,) = rollout(appset(entry("b", "2", "Progressing")), [held], REV).stopped
    assert c.windowed and c.hook is None and c.cluster == "member-2"
    assert c.blocker == "a sync window holds its sync"
    assert c.fix.startswith("the window's end (or `argocd app sync b` where the window allows")
    retrying = app("r", "s", phase="Running")
    retrying["status"]["operationState"].update(retryCount=2, syncResult=None)
    (r,) = rollout(appset(entry("r", "2", "Progressing")), [retrying], REV).clusters
    assert r.blocker == "Argo CD retries a failed sync (attempt #2)"
    js = rollout(appset(entry("r", "2", "Progressing")), [retrying], REV).to_dict()
    assert js["clusters"][0]["blocker"] == r.blocker


def test_an_application_not_found() -> None:
    missing = rollout(appset(entry("gone", "1", "Waiting")), [])
    assert missing.clusters[0].cluster == "" and not missing.stopped
    plain = rollout({"metadata": {"name": "x"}, "spec": {}}, [])
    assert plain.strategy == "AllAtOnce" and plain.steps == [] and not plain.done


def test_an_unknown_appset_is_usage_and_names_where_it_looked(cluster: Cluster) -> None:
    r = run_cli("--kubeconfig", cluster.kubeconfig, "fleet", "status", "--appset", "nope")
    assert r.exit_code == ExitCode.USAGE, r.output
    assert "no ApplicationSet argocd/nope in this cluster" in r.stderr
    assert r.stderr.count("\n") == 1
