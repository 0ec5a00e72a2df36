"""What the real helm does with the operator chart's hook on a plain ``helm upgrade``.

The facts the helm backend and runbooks/operator-upgrades.md build on, measured on the real
API server with the real helm 3 and 4 and the operator's finalizer on the config (the
operator simulation releases it once it cleared its node conditions).
"""

from __future__ import annotations

import time

from fracctl.sandbox.operator_sim import OperatorSimulation, SimulationThread
from tests.support.helm import Helm
from tests.support.helm_chart import (
    CHART,
    RELEASE,
    ChartIncident,
)

FINALIZER = "gpu-fractioning.nvidia.com/cleanup-node-conditions"


def test_a_plain_upgrade_of_an_unrelated_value_deletes_the_config(
    incident: ChartIncident, helm_bin: Helm
) -> None:
    """Helm 3 deletes the config, waits for the operator to release it, creates it again
    (a new uid: every agent restarts). Helm 4 does not wait (its default ``hookOnly``
    waiter's ``WaitForDelete`` returns at once): the hook's server-side apply lands on the
    terminating object, the upgrade reports ``deployed``, and once the operator releases
    its finalizer the cluster has no config at all (a race: an operator quicker than helm's
    apply leaves a new config instead; a slower one, none)."""
    # An operator that takes a couple of seconds to clear its node conditions: the
    # finalizer holds the delete that long (on a real cluster, a node list and patches).
    sim = OperatorSimulation(incident.cluster.kube, incident.cluster.config, delay=2.0)
    with SimulationThread(sim):
        deadline = time.monotonic() + 20
        while FINALIZER not in (
            ((incident.cluster.live_target() or {}).get("metadata") or {}).get("finalizers") or []
        ):
            assert time.monotonic() < deadline, "the operator never put its finalizer"
            time.sleep(0.1)
        uid = incident.uid()
        # The chart as installed, one unrelated value changed: nothing about the config.
        proc = incident.run_helm(
            "upgrade", RELEASE, str(CHART), "--set", "operator.logLevel=debug",
            "--timeout", "30s", check=False,
        )  # fmt: skip
        deadline = time.monotonic() + 30
        while (live := incident.cluster.live_target()) is not None and (
            live["metadata"].get("deletionTimestamp") or live["metadata"]["uid"] == uid
        ):
            assert time.monotonic() < deadline, "the config neither came back nor went"
            time.sleep(0.1)
        release = incident.release()
        print(f"{helm_bin.major}: exit {proc.returncode}, revision "
              f"{release.version} {release.status}, config "
              f"{'gone' if live is None else 'recreated'}")  # fmt: skip
        if helm_bin.major == "helm3":
            assert proc.returncode == 0 and release.status == "deployed"
            assert live is not None and live["metadata"]["uid"] != uid
        else:  # recreated when the operator released it before helm's apply; else gone
            assert live is None or live["metadata"]["uid"] != uid
