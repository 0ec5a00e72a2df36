"""``fracctl drift -o prometheus`` over a fleet of real API servers: a ``cluster`` label each."""

from __future__ import annotations

from fracctl.errors import ExitCode
from tests.support.fleet_fixtures import Fleet, seed_clean, seed_incident
from tests.support.helpers import run_cli
from tests.support.metrics import assert_conventions, lbl, parse


def test_fleet_metrics_label_each_cluster_and_mark_the_unreachable(fleet: Fleet) -> None:
    seed_clean(fleet.clusters["eu"])
    seed_incident(fleet.clusters["us"])
    prom = fleet.root / "fracctl_drift.prom"
    base = ("--config", str(fleet.config_file), "--context", "eu", "--context", "us")
    r = run_cli(*base, "--context", "gone", "drift", "-o", "prometheus")
    assert r.exit_code == ExitCode.EXTERNAL, r.output  # the worst cluster's, as for -o json
    assert_conventions(r.stdout)
    _, s = parse(r.stdout)
    assert s["fracctl_drift_cluster_up"] == {
        lbl(cluster="eu"): 1,
        lbl(cluster="us"): 1,
        lbl(cluster="gone"): 0,
    }
    objects = s["fracctl_drift_objects"]
    assert objects[lbl(cluster="eu", verdict="in-sync")] == 1
    assert objects[lbl(cluster="us", verdict="needs-recreate")] == 1
    assert {dict(k)["cluster"] for k in objects} == {"eu", "us"}

    r = run_cli(*base, "drift", "--metrics-file", str(prom))
    assert r.exit_code == ExitCode.FINDING, r.output
    assert "2 clusters: 1 in-sync, 1 drifted; exit 1" in r.stdout  # the table, as before
    _, s = parse(prom.read_text())
    assert s["fracctl_drift_cluster_up"] == {lbl(cluster="eu"): 1, lbl(cluster="us"): 1}
