"""A change that restarts the MPS daemons in place, through the REAL Flux.

Git keeps the live selector and adds a toleration. Flux applies git's object on its own:
with fracctl's guard policy installed its apply is refused, naming the guarded run, and
``recreate --backend flux`` arms the policy for this one update, has Flux reconcile, and
waits until both daemons were replaced (the config keeps its uid). Without the policy,
``recreate --backend flux`` refuses before anything changes: Flux would apply the change
itself, unguarded, as soon as it reconciled.
"""

from __future__ import annotations

import pytest

from fracctl.core.kube.resources import NODES
from fracctl.errors import ExitCode
from tests.recreate.test_restarts_daemons_cluster import (
    TOLERATIONS_YAML,
    assert_updated,
    daemon_pods,
    git_wants,
    refused_then_updated,
    settled,
)
from tests.support.flux_real import RealFlux, ready
from tests.support.helpers import run_cli
from tests.support.recreate_fixtures import Incident

pytestmark = pytest.mark.e2e


def test_flux_carries_a_daemon_restarting_change_once_armed(
    real_guarded: Incident, real_flux: RealFlux
) -> None:
    incident = real_guarded
    cluster = incident.cluster
    cluster.kube.delete(NODES, "b200-0")  # one fraction node: git keeps the class selector
    git_wants(incident, TOLERATIONS_YAML)
    with incident.operator():
        before = settled(cluster)
        uid = cluster.live_target()["metadata"]["uid"]  # type: ignore[index]
        with real_flux.serving(incident) as served:
            ks = served.kustomization()
            assert "restarts the MPS daemons" in str(ready(ks).get("message")), ready(ks)
            assert daemon_pods(cluster) == before, "Flux's own apply was refused"
            config = served.configure(incident)
            cluster.pod("ml-team", "trainer-0", annotations={"gpu-fraction": "0.5"},
                        node="rtx-pro-6000-0")  # fmt: skip
            r = refused_then_updated(cluster, "ml-team", before, lambda *o: run_cli(
                "-c", config, "recreate", "--backend", "flux", "--yes", *o))  # fmt: skip
            assert any("guard policy refuses Flux's own apply" in p for p in r.json["proofs"])
            assert_updated(incident, uid, before)


def test_without_the_guard_policy_flux_is_refused_before_anything_changes(
    real_incident: Incident, real_flux: RealFlux
) -> None:
    incident = real_incident
    cluster = incident.cluster
    cluster.kube.delete(NODES, "b200-0")
    with incident.operator():
        settled(cluster)
        with real_flux.serving(incident) as served:
            # A commit the source fetches only at its interval (10 min): not applied yet.
            git_wants(incident, TOLERATIONS_YAML)
            before = daemon_pods(cluster)
            config = served.configure(incident)
            r = run_cli("-c", config, "recreate", "--backend", "flux", "--yes")
            assert r.exit_code == ExitCode.FINDING, r.output
            assert "Flux applies it on its own unless fracctl's guard policy" in r.output
            assert "fracctl policy apply" in r.output
            assert daemon_pods(cluster) == before
