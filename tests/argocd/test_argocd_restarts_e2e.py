"""A change that restarts the MPS daemons in place, carried through the REAL Argo CD.

Git keeps the live selector and adds a toleration: Argo CD's sync would apply it in place
and the operator would roll both daemons under the fractional pod. ``recreate --backend
argocd`` refuses while the pod runs (the daemons keep their pods), and once it is gone
has Argo CD sync the one resource, then waits until both daemons were replaced and the
node is ready; the config keeps its uid.
"""

from __future__ import annotations

import pytest

from fracctl.core.kube.resources import NODES
from fracctl.errors import ExitCode
from tests.recreate.test_restarts_daemons_cluster import (
    TOLERATIONS_YAML,
    assert_updated,
    git_wants,
    refused_then_updated,
    settled,
)
from tests.support.argocd_real import RealArgoCD, configure
from tests.support.helpers import run_cli
from tests.support.recreate_fixtures import Incident

pytestmark = pytest.mark.e2e


def test_argocd_carries_a_daemon_restarting_change_guarded(
    real_incident: Incident, real_argocd: RealArgoCD
) -> None:
    cluster = real_incident.cluster
    cluster.kube.delete(NODES, "b200-0")  # one fraction node: git keeps the class selector
    git_wants(real_incident, TOLERATIONS_YAML)
    app_name = "incident-restarts"
    config = configure(real_incident, real_argocd, app_name, real_argocd.token())
    with real_argocd.app(app_name, repo=real_incident.root / "gitops"):
        with real_incident.operator():
            before = settled(cluster)
            uid = cluster.live_target()["metadata"]["uid"]  # type: ignore[index]
            cluster.pod("team-a", "trainer-0", annotations={"gpu-fraction": "0.5"},
                        node="rtx-pro-6000-0")  # fmt: skip
            drift = run_cli("-c", config, "drift", "--app", app_name)
            assert drift.exit_code == ExitCode.FINDING, drift.output
            assert "restarts-daemons" in drift.stdout and "team-a/trainer-0" in drift.stdout
            r = refused_then_updated(cluster, "team-a", before, lambda *o: run_cli(
                "-c", config, "recreate", "--yes", "--backend", "argocd", *o))  # fmt: skip
            assert any("Argo CD" in n for n in r.json["notes"]), r.json["notes"]
            assert_updated(real_incident, uid, before)
