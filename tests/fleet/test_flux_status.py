"""What ``fracctl fleet status --flux`` makes of a hub's Kustomizations (fracctl/core/
flux_rollout.py), from status objects written as kustomize-controller v1.9.6 writes them
(internal/controller/kustomization_controller.go: Ready=True "Applied revision: <rev>" and
lastAppliedRevision after the health check, l.551-558; DependencyNotReady "dependency
'<ns>/<name>' is not ready", l.250-268 and l.620-643; Ready=Unknown "Reconciliation in
progress" with Reconciling "Running health checks for revision …", l.331-332 and
l.1093-1095; HealthCheckFailed "health check failed after …: failed early due to stalled
resources: [Job/… status: 'Failed']", l.545-546 and fluxcd/pkg/ssa v0.76.2
manager_wait.go l.163-196; Reconciling's reason ProgressingWithRetry after a failure,
finalizeStatus l.1351-1357)."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from fracctl.core import flux_fleet as ff
from fracctl.core.flux_rollout import FluxRollout, half_state, matches, rollout, short
from fracctl.errors import ExitCode
from tests.support.helpers import run_cli

REV = "main@sha1:" + "c" * 40
OLD = "main@sha1:" + "d" * 40
WHEN = "2025-06-01T10:00:00Z"
MEMBERS = [
    ff.Member("member-1", 0, "gate"),
    ff.Member("member-2", 1, "gate"),
    ff.Member("member-3", 2, "gate"),
]
CONTEXTS = {"member-1": "ctx-1", "member-2": "ctx-2", "member-3": "ctx-3"}
Obj = dict[str, Any]


def cond(kind: str, status: str, reason: str, message: str) -> Obj:
    return {
        "type": kind,
        "status": status,
        "reason": reason,
        "message": message,
        "lastTransitionTime": WHEN,
        "observedGeneration": 1,
    }


def ready(applied: str = REV) -> Obj:
    return {
        "observedGeneration": 1,
        "lastAppliedRevision": applied,
        "lastAttemptedRevision": applied,
        "conditions": [
            cond("Ready", "True", "ReconciliationSucceeded", f"Applied revision: {applied}"),
            cond("Healthy", "True", "Succeeded", "Health check passed in 1.2s"),
        ],
    }


def waiting(dependency: str, why: str = "is not ready", applied: str = OLD) -> Obj:
    message = f"dependency 'flux-system/{dependency}' {why}"
    return {
        "observedGeneration": 1,
        "lastAppliedRevision": applied,
        "lastAttemptedRevision": applied,
        "conditions": [cond("Ready", "False", "DependencyNotReady", message)],
    }


CHECKING = f"Running health checks for revision {REV} with a timeout of 20m0s"


def applying() -> Obj:
    return {
        "observedGeneration": 1,
        "lastAppliedRevision": OLD,
        "lastAttemptedRevision": REV,
        "conditions": [
            cond("Reconciling", "True", "Progressing", CHECKING),
            cond("Ready", "Unknown", "Progressing", "Reconciliation in progress"),
            cond("Healthy", "Unknown", "Progressing", CHECKING),
        ],
    }


def gate_failed(job: str) -> Obj:
    stalled = f"failed early due to stalled resources: [Job/fracctl/{job} status: 'Failed']"
    return {
        "observedGeneration": 1,
        "lastAppliedRevision": OLD,
        "lastAttemptedRevision": REV,
        "conditions": [
            cond("Reconciling", "True", "ProgressingWithRetry", CHECKING),
            cond(
                "Ready", "False", "HealthCheckFailed", f"health check failed after 2.1s: {stalled}"
            ),
            cond("Healthy", "False", "HealthCheckFailed", stalled),
        ],
    }


def fleet(statuses: dict[str, Obj | None]) -> list[Obj]:
    """The render of MEMBERS, each Kustomization with ``statuses[name]`` (generation 1)."""
    out = []
    for obj in ff.render(MEMBERS, ff.RenderOptions()):
        obj = copy.deepcopy(obj)
        obj["metadata"]["generation"] = 1
        status = statuses.get(obj["metadata"]["name"])
        if status is not None:
            obj["status"] = status
        out.append(obj)
    return out


def names(cluster: str) -> ff.Names:
    return ff.names("gpu-fractioning", cluster)


def all_ready(applied: str = REV) -> dict[str, Obj | None]:
    return {names(m.name).of(h): ready(applied) for m in MEMBERS for h in ff.HALVES}


def stopped_at_member_2() -> dict[str, Obj | None]:
    """A commit whose wave-1 gate refused: member-1 done, member-2's pre-half failed."""
    m2, m3 = names("member-2"), names("member-3")
    statuses = all_ready()
    statuses |= {
        m2.pre: gate_failed("fracctl-gate-pre-sync"),
        m2.config: waiting(m2.pre),
        m2.post: waiting(m2.config),
        m3.pre: waiting(m2.post),
        m3.config: waiting(m3.pre, "revision is not up to date"),
        m3.post: waiting(m3.config),
    }
    return statuses


def read(statuses: dict[str, Obj | None], revision: str | None = REV) -> FluxRollout:
    return rollout(
        "gpu-fractioning",
        "flux-system",
        fleet(statuses),
        source="gpu-fractioning",
        revision=revision,
        contexts=CONTEXTS,
    )


def test_every_half_ready_at_the_revision_is_done() -> None:
    r = read(all_ready())
    assert r.done and not r.stopped
    assert r.waves == [["member-1"], ["member-2"], ["member-3"]]
    d = r.to_dict()
    assert d["done"] is True and d["stopped"] == []
    assert [c["applied"] for c in d["clusters"]] == [REV] * 3
    assert all(h["state"] == "ready" for c in d["clusters"] for h in c["halves"].values())


def test_a_refused_gate_stops_its_wave_and_the_next_waits_for_it() -> None:
    r = read(stopped_at_member_2())
    assert not r.done
    (stopped,) = r.stopped
    assert stopped.cluster == "member-2"
    assert stopped.blocker == ("pre-half gpu-fractioning-member-2-pre failed (HealthCheckFailed)")
    assert "kubectl --context ctx-2 -n fracctl logs job/fracctl-gate-pre-sync" in stopped.fix
    assert "kubectl --context ctx-2 -n fracctl delete job fracctl-gate-pre-sync" in stopped.fix
    m3 = r.clusters[2]
    assert m3.blocker == "waits for wave 1 (member-2)"
    assert [h.state for h in m3.halves.values() if h] == ["waiting"] * 3
    d = r.to_dict()
    assert d["stopped"] == ["member-2"]
    assert d["clusters"][1]["halves"]["pre"]["message"].endswith(
        "[Job/fracctl/fracctl-gate-pre-sync status: 'Failed']"
    )
    assert d["clusters"][1]["behind"] is True and d["clusters"][0]["behind"] is False


def test_a_failed_post_half_names_its_job() -> None:
    statuses = all_ready()
    statuses[names("member-1").post] = gate_failed("fracctl-gate-post-sync")
    (stopped,) = read(statuses).stopped
    assert stopped.blocker.startswith("post-half gpu-fractioning-member-1-post failed")
    assert "logs job/fracctl-gate-post-sync" in stopped.fix


def test_a_config_that_fails_to_apply_says_where_to_look() -> None:
    statuses = all_ready()
    failed = gate_failed("x")
    failed["conditions"][1] |= {"reason": "ReconciliationFailed", "message": "denied by policy"}
    statuses[names("member-1").config] = failed
    (stopped,) = read(statuses).stopped
    assert stopped.blocker == "config-half gpu-fractioning-member-1 failed (ReconciliationFailed)"
    assert stopped.fix.startswith("flux get kustomizations gpu-fractioning-member-1")


def test_a_cluster_without_a_context_gets_a_fix_without_one() -> None:
    r = rollout(
        "gpu-fractioning", "flux-system", fleet(stopped_at_member_2()), source="s", revision=REV
    )
    assert "kubectl -n fracctl logs job/fracctl-gate-pre-sync" in r.stopped[0].fix


@pytest.mark.parametrize(
    ("status", "state"),
    [
        (ready(), "ready"),
        (ready(OLD), "stale"),
        (applying(), "applying"),
        (waiting("x"), "waiting"),
        (gate_failed("fracctl-gate-pre-sync"), "failed"),
        (None, "pending"),
    ],
)
def test_each_half_state(status: Obj | None, state: str) -> None:
    (obj, *_) = fleet({names("member-1").pre: status})
    assert half_state(obj, REV).state == state


def test_a_new_generation_not_yet_reconciled_is_pending_and_suspend_is_named() -> None:
    (obj, *_) = fleet({names("member-1").pre: ready()})
    obj["metadata"]["generation"] = 2
    assert half_state(obj, REV).state == "pending"
    obj["spec"]["suspend"] = True
    assert half_state(obj, REV).state == "suspended"
    statuses = all_ready()
    objs = fleet(statuses)
    objs[0]["spec"]["suspend"] = True
    r = rollout("gpu-fractioning", "flux-system", objs, source="s", revision=REV)
    assert r.clusters[0].blocker == "gpu-fractioning-member-1-pre is suspended"
    assert r.clusters[0].fix == "flux resume kustomization gpu-fractioning-member-1-pre"
    assert not r.stopped


def test_the_holds_within_a_cluster() -> None:
    m1 = names("member-1")
    statuses = all_ready()
    statuses[m1.config] = waiting(m1.pre, "revision is not up to date")
    assert read(statuses).clusters[0].blocker == f"waits for {m1.pre}"
    statuses[m1.config] = applying()
    assert read(statuses).clusters[0].blocker == "config-half applying"
    statuses[m1.config] = None
    assert read(statuses).clusters[0].blocker == "config-half pending"


def test_a_missing_half_is_named() -> None:
    objs = [o for o in fleet(all_ready()) if o["metadata"]["name"] != names("member-3").post]
    r = rollout("gpu-fractioning", "flux-system", objs, source="s", revision=REV)
    assert r.clusters[2].blocker == "no post-half Kustomization"
    assert r.to_dict()["clusters"][2]["halves"]["post"] is None
    assert not r.done


def test_an_unknown_revision_is_never_done() -> None:
    r = rollout(
        "gpu-fractioning",
        "flux-system",
        fleet(all_ready()),
        source="s",
        revision=None,
        unknown="nothing fetched",
    )
    assert not r.done
    assert r.to_dict()["revision_unknown"] == "nothing fetched"
    assert all(c.blocker == "" for c in r.clusters)


def test_an_older_revision_everywhere_is_behind_not_done() -> None:
    r = read(all_ready(OLD))
    assert not r.done and not r.stopped
    assert all(c["behind"] for c in r.to_dict()["clusters"])


@pytest.mark.parametrize(
    ("want", "yes"),
    [
        (REV, True),
        ("sha1:" + "c" * 40, True),
        ("c" * 40, True),
        ("ccccccc", True),
        ("cccccc", False),
        ("d" * 40, False),
        ("", False),
    ],
)
def test_revisions_match_as_flux_writes_them(want: str, yes: bool) -> None:
    assert matches(REV, want) is yes
    assert short(REV) == "main@ccccccc"


# --- the command's own refusals (tests/fleet/test_flux_status_cluster.py reads a hub) ---


@pytest.mark.parametrize(
    "args",
    [[], ["--flux", "--appset", "fleet"], ["--appset", ""], ["--flux", "--fleet", ""]],
)
def test_one_mode_must_be_given(args: list[str]) -> None:
    r = run_cli("fleet", "status", *args)
    assert r.exit_code == ExitCode.USAGE, r.output
    assert len(r.stderr.strip().splitlines()) == 1, r.stderr
    assert r.stdout == ""
