"""The guard policy against the REAL Argo CD v3.2.11: its own deletes are refused too.

With ``fracctl policy apply`` on the cluster, Argo CD's Force+Replace (the incident's
other road) and its prune are refused by the API server with the policy's message while
a fractional pod runs, the object keeps its uid, and Argo CD reports the sync failed with
that message. ``fracctl recreate`` through Argo CD still converges.
"""

from __future__ import annotations

import time
from typing import Any

import pytest

from fracctl.core.recreate.guard_policy import message
from fracctl.errors import ExitCode
from fracctl.flows.engines.argocd.sync import wait_operation
from tests.support.argocd_real import RealArgoCD, configure
from tests.support.helpers import commit_all, run_cli
from tests.support.recreate_fixtures import NEW, OLD, Incident

pytestmark = pytest.mark.e2e

FRACTIONAL = {"gpu-fraction": "0.5"}


def said(incident: Incident) -> str:
    return message(incident.cluster.config.target, incident.config().recreate)


def uid(incident: Incident) -> str:
    live = incident.cluster.live_target()
    assert live is not None and not live["metadata"].get("deletionTimestamp")
    return str(live["metadata"]["uid"])


def failed_with(state: dict[str, Any], text: str) -> bool:
    messages = [state.get("message") or ""] + [
        r.get("message") or "" for r in (state.get("syncResult") or {}).get("resources") or []
    ]
    return state.get("phase") in ("Failed", "Error") and any(text in m for m in messages)


def test_force_replace_is_refused_with_the_policy_message(
    real_guarded: Incident, real_argocd: RealArgoCD
) -> None:
    cluster = real_guarded.cluster
    before = uid(real_guarded)
    gitops = real_guarded.root / "gitops"
    manifest = gitops / "gpu-fractioning" / "gpufractioningconfig.yaml"
    manifest.write_text(
        manifest.read_text().replace(
            "  name: default\n",
            "  name: default\n  annotations:\n"
            "    argocd.argoproj.io/sync-options: Force=true,Replace=true\n",
        )
    )
    commit_all(gitops, message="force-replace the config")
    cluster.pod("team-a", "trainer-0", annotations=FRACTIONAL, node="rtx-pro-6000-0")
    app = "guard-force-replace"
    with real_argocd.app(app, repo=gitops), real_guarded.operator():
        state, argo_app = real_argocd.sync(app)
        real_argocd.record("force-replace under the guard policy", state, argo_app,
                           cluster.live_target())  # fmt: skip
    assert failed_with(state, said(real_guarded)), state
    assert uid(real_guarded) == before
    assert cluster.live_target()["spec"]["nodeSelector"] == OLD  # type: ignore[index]


def test_a_prune_is_refused_with_the_policy_message(
    real_guarded: Incident, real_argocd: RealArgoCD
) -> None:
    cluster = real_guarded.cluster
    before = uid(real_guarded)
    gitops = real_guarded.root / "gitops"
    cluster.pod("team-a", "trainer-0", annotations=FRACTIONAL, node="rtx-pro-6000-0")
    # Argo CD prunes only what it tracks: git first holds the live object, a sync adopts it.
    manifest = gitops / "gpu-fractioning" / "gpufractioningconfig.yaml"
    text = manifest.read_text()
    for (k_new, v_new), (k_old, v_old) in zip(NEW.items(), OLD.items(), strict=True):
        text = text.replace(f"{k_new}: {v_new}", f"{k_old}: {v_old}")
    manifest.write_text(text)
    commit_all(gitops, message="git holds the live selector")
    app = "guard-prune"
    with real_argocd.app(app, repo=gitops), real_guarded.operator():
        adopted, _ = real_argocd.sync(app)
        assert adopted["phase"] == "Succeeded", adopted
        # The config leaves git; the folder keeps rendering (an empty one is an error).
        folder = gitops / "gpu-fractioning"
        (folder / "gpufractioningconfig.yaml").unlink()
        (folder / "kustomization.yaml").write_text(
            "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\n"
            "resources: [placeholder.yaml]\n"
        )
        (folder / "placeholder.yaml").write_text(
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: guard-prune-placeholder\n"
            "  namespace: default\ndata: {}\n"
        )
        commit_all(gitops, message="the config leaves git")
        real_argocd.wait_compared(app)
        with real_argocd.client() as c:
            deadline = time.monotonic() + 60
            while True:  # Argo CD sees the object as extraneous once it compared the commit
                managed = c.get_application(app, refresh="hard")["status"].get("resources") or []
                if any(r.get("requiresPruning") for r in managed):
                    break
                assert time.monotonic() < deadline, managed
                time.sleep(0.5)
            c.sync(app, resources=None, prune=True)
            state = wait_operation(c, app, timeout=90)
            argo_app = c.get_application(app)
        real_argocd.record("prune under the guard policy", state, argo_app,
                           cluster.live_target())  # fmt: skip
    assert failed_with(state, said(real_guarded)), state
    assert uid(real_guarded) == before


def test_recreate_through_argocd_converges_through_the_policy(
    real_guarded: Incident, real_argocd: RealArgoCD
) -> None:
    app = "guard-recreate"
    config = configure(real_guarded, real_argocd, app, real_argocd.token())
    with real_argocd.app(app, repo=real_guarded.root / "gitops"), real_guarded.operator():
        r = run_cli("-c", config, "recreate", "--yes", "--backend", "argocd", "-o", "json")
    print(r.stderr)
    assert r.exit_code == ExitCode.OK, r.output
    assert r.json["outcome"] == "recreated"
    assert "armed the lock for" in r.stderr
    live = real_guarded.cluster.live_target()
    assert live is not None and live["spec"]["nodeSelector"] == NEW
