"""``recreate --drain`` around a change that restarts the daemons in place, not a delete.

The busy cluster (fractional PodGroups on both RTX nodes) and git keeping the live
selector while adding a toleration: the fractional pods are fenced off and evicted
within their budgets, the config is updated in place (its uid kept), the daemons roll,
and scheduling reopens once every node is ready.
"""

from __future__ import annotations

from pathlib import Path

from fracctl.core.kube.nodes import condition
from fracctl.core.kube.resources import NODES
from fracctl.errors import ExitCode
from tests.recreate.test_restarts_daemons_cluster import TOLERATIONS_YAML, daemon_pods, git_wants
from tests.support.drain_fixtures import FRACTION_NODES, busy_cluster, ready_pods, witness
from tests.support.helpers import Cluster, run_cli
from tests.support.waiting import until


def test_a_busy_cluster_drains_updates_in_place_and_reopens(
    cluster: Cluster, tmp_path: Path
) -> None:
    with busy_cluster(cluster, tmp_path, groups=2, per_group=2) as busy:
        kube, ns = busy.kube, busy.ns
        kube.delete(NODES, "b200-0")  # git keeps the class selector: no other node opts in
        git_wants(busy.incident, TOLERATIONS_YAML)
        uid = cluster.live_target()["metadata"]["uid"]  # type: ignore[index]
        fractional = busy.uids("app=frac")
        daemons = daemon_pods(cluster)
        refused = run_cli("-c", str(busy.incident.config_file), "recreate", "--yes")
        assert refused.exit_code == ExitCode.FINDING, refused.output
        with witness(kube, ns) as seen:
            r = run_cli("-c", str(busy.incident.config_file), "recreate", "--drain", "--yes",
                        "-o", "json")  # fmt: skip
            assert r.exit_code == ExitCode.OK, r.output
            until("the replacements are placed again",
                  lambda: len(ready_pods(kube, ns, "app=frac")) == 4, timeout=60)  # fmt: skip
        assert r.json["outcome"] == "updated"
        assert set(fractional) <= seen.evicted, "every fractional pod went by eviction"
        live = cluster.live_target()
        assert live is not None and live["metadata"]["uid"] == uid
        assert len(live["spec"]["tolerations"]) == 2
        assert not set(daemon_pods(cluster).values()) & set(daemons.values())
        for name in FRACTION_NODES:
            c = condition(kube.get(NODES, name), cluster.config.condition) or {}
            assert c.get("status") == "True", (name, c)
        assert busy.fences() == {}
        assert busy.journal() is None
