"""``fracctl recreate KIND/NAME --backend flux`` against the REAL Flux and controllers.

The Kustomization that applies the object brings it back: the rehearsal is the flux
backend's own (its source's commit rendered at its path holds git's immutable fields,
the controller handles a request now, its last verdict fails only on this object's
immutable field); a workload is created held from that rendering, adopts its pods
without a restart, and Flux's reconcile ends it; a binding is applied by Flux behind
the bridge.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from fracctl.errors import ExitCode
from tests.support.flux_real import RealFlux, Served, ready
from tests.support.helpers import run_cli
from tests.support.killing import kill_when
from tests.support.kinds_fixtures import PVCS, Shop, controller_of, identity, statefulset

pytestmark = pytest.mark.e2e
Obj = dict[str, Any]
RBAC = "rbac.authorization.k8s.io"
FLUX_LABEL = "kustomize.toolkit.fluxcd.io/name"


@dataclass
class Root:
    """What :meth:`RealFlux.serving` reads of an incident: its folder (``root/gitops``)."""

    root: Path


def in_ns(shop: Shop, obj: Obj) -> Obj:
    """The object with the shop's namespace, as Flux needs it (no targetNamespace)."""
    return {**obj, "metadata": {**obj["metadata"], "namespace": shop.ns}}


def served(shop: Shop, flux: Served) -> None:
    """Point the shop's fracctl.yaml at the Kustomization."""
    section = flux.config_section()
    with shop.config.open("a") as f:
        f.write("flux:\n" + "".join(f"  {k}: {v}\n" for k, v in section.items()))


def changed(shop: Shop, flux: Served, *objects: Obj) -> None:
    """Commit ``objects``; the source fetches it and Flux tries it (and fails on it)."""
    shop.commit(*objects, message="immutable change")
    head = flux.head()
    flux.reconcile_source(commit=head)
    flux.wait_attempted(head)


def recreate(shop: Shop, obj: str, *more: str) -> Any:
    return run_cli("-c", str(shop.config), "recreate", obj, "-n", shop.ns, "--backend", "flux",
                   *more)  # fmt: skip


def test_flux_brings_a_statefulset_back_held_and_no_pod_restarts(
    shop: Shop, real_flux: RealFlux
) -> None:
    shop.bound_claims(["data-db-0", "data-db-1"], size="5Gi")
    shop.commit(in_ns(shop, statefulset(shop)), message="db")
    with real_flux.serving(Root(shop.config.parent), path="."):  # type: ignore[arg-type]
        pass  # Flux created it; the Kustomization is removed (its objects stay)
    before = identity(shop.running(2, timeout=120))
    old = shop.live("apps/v1", "StatefulSet", "db")
    assert old is not None and FLUX_LABEL in old["metadata"]["labels"]
    with real_flux.serving(Root(shop.config.parent), path=".") as flux:  # type: ignore[arg-type]
        served(shop, flux)
        changed(shop, flux, in_ns(shop, statefulset(shop, service="db-v2", size="2Gi")))
        assert ready(flux.kustomization()).get("status") == "False"

        plan = recreate(shop, "StatefulSet/db", "--dry-run")
        assert plan.exit_code == ExitCode.OK, plan.output
        assert (
            f"renders StatefulSet/{shop.ns}/db at . with spec.serviceName db-v2 and "
            "spec.volumeClaimTemplates[0].spec.resources.requests.storage 2Gi, as git has"
        ) in plan.stdout  # each field git changes, read where git sets it
        assert f"its last verdict fails only on StatefulSet/{shop.ns}/db's immutable" in (
            plan.stdout
        )
        # The operator's HelmRelease configured too: the Kustomization's object still goes
        # through its Kustomization, never the HelmRelease.
        both = shop.config.parent / "with-helmrelease.yaml"
        both.write_text(
            shop.config.read_text().replace(
                "\nflux:\n", "\nflux:\n  helmrelease: gpu-fractioning\n", 1
            )
        )
        again = run_cli("-c", str(both), "recreate", "StatefulSet/db", "-n", shop.ns,
                        "--backend", "flux", "--dry-run")  # fmt: skip
        assert again.exit_code == ExitCode.OK, again.output
        assert f"its last verdict fails only on StatefulSet/{shop.ns}/db's immutable" in (
            again.stdout
        )
        assert "HelmRelease" not in again.output, again.output

        r = recreate(shop, "StatefulSet/db", "--yes")
        assert r.exit_code == ExitCode.OK, r.output
        assert "created from Flux's rendering, held" in r.stderr
        assert "Flux applied revision" in r.stderr
        new = shop.live("apps/v1", "StatefulSet", "db")
        assert new is not None and new["metadata"]["uid"] != old["metadata"]["uid"]
        assert new["spec"]["serviceName"] == "db-v2"
        assert (new["spec"]["updateStrategy"].get("rollingUpdate") or {}).get("partition", 0) == 0
        assert new["metadata"]["labels"][FLUX_LABEL] == flux.name
        assert ready(flux.kustomization()).get("status") == "True"
        assert not flux.kustomization()["spec"].get("suspend")  # resumed at the release
    pods = shop.pods()
    assert identity(pods) == before
    assert {controller_of(p) for p in pods.values()} == {new["metadata"]["uid"]}
    assert {c["metadata"]["name"] for c in shop.kube.list(PVCS, namespace=shop.ns)} == {
        "data-db-0", "data-db-1"}  # fmt: skip


@pytest.mark.parametrize("moment", ["deleted", "created"])
def test_sigkill_while_flux_is_suspended_then_the_rerun_resumes_it(
    shop: Shop, real_flux: RealFlux, moment: str
) -> None:
    """Killed after the suspension (the delete, or the held create): the rerun proves
    again with the Kustomization suspended by its journal, finishes, and resumes Flux."""
    import json
    import os

    shop.bound_claims(["data-db-0", "data-db-1"], size="5Gi")
    shop.commit(in_ns(shop, statefulset(shop)), message="db")
    with real_flux.serving(Root(shop.config.parent), path=".") as flux:  # type: ignore[arg-type]
        served(shop, flux)
        before = identity(shop.running(2, timeout=120))
        changed(shop, flux, in_ns(shop, statefulset(shop, service="db-v2")))
        state = shop.config.parent / "state" / "objects" / f"StatefulSet_{shop.ns}_db.json"

        # The moment, or a later one while Flux is still suspended (it is resumed at the
        # release): a loaded host may read the journal only after it moved on.
        suspended = ("deleted", "created", "adopted")
        later = suspended[suspended.index(moment) :]

        def reached() -> bool:
            try:
                return bool(json.loads(state.read_text())["phase"] in later)
            except (OSError, ValueError, KeyError):
                return False

        args = ["-c", str(shop.config), "recreate", "StatefulSet/db", "-n", shop.ns,
                "--backend", "flux", "--yes"]  # fmt: skip
        env = {**os.environ, "FRACCTL_TIMEOUTS_LOCK_LEASE": "2s"}
        said: list[str] = []
        ended = "the run ended first; it said:\n"
        assert kill_when(args, env, reached, jitter=0.0, what=moment, said=said), ended + "".join(
            said
        )
        assert flux.kustomization()["spec"].get("suspend") is True
        time.sleep(2.5)  # the dead holder's lease expires
        r = run_cli(*args)
        assert r.exit_code == ExitCode.OK, r.output
        assert not flux.kustomization()["spec"].get("suspend")
        assert ready(flux.kustomization()).get("status") == "True"
        new = shop.live("apps/v1", "StatefulSet", "db")
        assert new is not None and new["spec"]["serviceName"] == "db-v2"
    assert identity(shop.pods()) == before, "no pod was lost or restarted"
    assert not state.exists()


def test_flux_runs_a_job_again_and_the_recreated_one_completes(
    shop: Shop, real_flux: RealFlux
) -> None:
    def job(image: str) -> Obj:
        pod = {"restartPolicy": "Never", "containers": [{"name": "m", "image": image}]}
        return in_ns(shop, {"apiVersion": "batch/v1", "kind": "Job",
                            "metadata": {"name": "migrate"},
                            "spec": {"backoffLimit": 0, "template": {"spec": pod}}})  # fmt: skip

    def complete() -> Obj | None:
        j = shop.live("batch/v1", "Job", "migrate") or {}
        conds = (j.get("status") or {}).get("conditions") or []
        done = any(c["type"] == "Complete" and c["status"] == "True" for c in conds)
        return j if done else None

    from tests.support.waiting import until

    shop.commit(job("registry.invalid/m:1"))
    with real_flux.serving(Root(shop.config.parent), path=".") as flux:  # type: ignore[arg-type]
        served(shop, flux)
        old = until("the first Job completes", complete, timeout=90)
        changed(shop, flux, job("registry.invalid/m:2"))
        r = recreate(shop, "Job/migrate", "--yes")
        assert r.exit_code == ExitCode.OK, r.output
        assert "Flux applied revision" in r.stderr
        assert "the recreated Job/" in r.stdout + r.stderr and "ended Complete" in r.stderr
        new = complete()
        assert new is not None and new["metadata"]["uid"] != old["metadata"]["uid"]
        image = new["spec"]["template"]["spec"]["containers"][0]["image"]
        assert image == "registry.invalid/m:2"
        assert new["metadata"]["labels"][FLUX_LABEL] == flux.name


def binding(shop: Shop, role: str) -> Obj:
    return {"apiVersion": f"{RBAC}/v1", "kind": "RoleBinding",
            "metadata": {"name": "team", "namespace": shop.ns},
            "roleRef": {"apiGroup": RBAC, "kind": "ClusterRole", "name": role},
            "subjects": [{"apiGroup": RBAC, "kind": "User", "name": "alice"}]}  # fmt: skip


def test_flux_applies_a_binding_behind_the_bridge(shop: Shop, real_flux: RealFlux) -> None:
    shop.commit(binding(shop, "view"))
    with real_flux.serving(Root(shop.config.parent), path=".") as flux:  # type: ignore[arg-type]
        served(shop, flux)
        old = shop.live(f"{RBAC}/v1", "RoleBinding", "team")
        assert old is not None
        changed(shop, flux, binding(shop, "edit"))

        r = recreate(shop, "RoleBinding/team", "--yes")
        assert r.exit_code == ExitCode.OK, r.output
        assert "Flux applied revision" in r.stderr
        assert "User alice has the new role's access" in r.stdout + r.stderr
        new = shop.live(f"{RBAC}/v1", "RoleBinding", "team")
        assert new is not None and new["roleRef"]["name"] == "edit"
        assert new["metadata"]["uid"] != old["metadata"]["uid"]
        assert new["metadata"]["labels"][FLUX_LABEL] == flux.name
        assert shop.live(f"{RBAC}/v1", "RoleBinding", "team-fracctl-bridge") is None


def test_flux_failing_on_another_object_is_refused_and_nothing_changes(
    shop: Shop, real_flux: RealFlux
) -> None:
    """Flux would also apply a claim git changed in a way the API server refuses: Flux stops
    at the first failure, so the binding would stay deleted; refused before any change."""
    claim = {"apiVersion": "v1", "kind": "PersistentVolumeClaim",
             "metadata": {"name": "scratch", "namespace": shop.ns},
             "spec": {"accessModes": ["ReadWriteOnce"],
                      "resources": {"requests": {"storage": "1Gi"}}}}  # fmt: skip
    shop.commit(binding(shop, "view"), claim)
    with real_flux.serving(Root(shop.config.parent), path=".") as flux:  # type: ignore[arg-type]
        served(shop, flux)
        old = shop.live(f"{RBAC}/v1", "RoleBinding", "team")
        changed_claim = {**claim, "spec": {**claim["spec"], "accessModes": ["ReadWriteMany"]}}
        changed(shop, flux, binding(shop, "edit"), changed_claim)
        r = recreate(shop, "RoleBinding/team", "--yes")
        assert r.exit_code == ExitCode.FINDING, r.output
        assert "Flux would also apply PersistentVolumeClaim/scratch, which the API server " in (
            r.stderr
        )
        assert "the target would not be recreated" in r.stderr
        assert shop.live(f"{RBAC}/v1", "RoleBinding", "team") == old
