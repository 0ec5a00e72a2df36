"""``recreate.backend: flux`` with ``flux.helmrelease``: the operator chart's upgrade by
the real helm-controller, run as a guarded recreate.

source-controller v1.9.0 builds the operator's chart (examples/charts/gpu-fractioning,
shaped like upstream's: the config a ``post-install,post-upgrade`` hook) from the test's
git repository; the real helm-controller v1.6.4, running as its own service account,
installs and upgrades it. The guard policy refuses its hook's delete until fracctl arms
the lock for it; the operator simulation releases the finalizer and writes readiness.
"""

from __future__ import annotations

import contextlib
import shutil
import signal
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from fracctl.adapters.git import init_repo
from fracctl.core.kube.resources import LEASES, NODES, PODS
from fracctl.errors import ExitCode
from fracctl.sandbox.operator_sim import OperatorSimulation, SimulationThread
from tests.support.config_files import write_config
from tests.support.flux_real import RealFlux, ServedChart, ready
from tests.support.helm import CHART, find
from tests.support.helm_chart import GPU, OPT_IN, RELEASE, UPSTREAM
from tests.support.helpers import Cluster, commit_all, run_cli, wait_enforced
from tests.support.killing import kill_then_rerun
from tests.support.recreate_fixtures import NEW

Obj = dict[str, Any]
pytestmark = pytest.mark.e2e
FRACTIONAL = {"gpu-fraction": "0.5"}


@dataclass
class HookRelease:
    """The operator's chart in git, installed by a HelmRelease; fracctl.yaml beside it."""

    cluster: Cluster
    root: Path
    served: ServedChart
    config: Path

    @property
    def gitops(self) -> Path:
        return self.root / "gitops"

    def cli(self, *args: str) -> Any:
        return run_cli("-c", str(self.config), *args)

    def uid(self) -> str:
        live = self.cluster.live_target()
        return str(live["metadata"]["uid"]) if live else ""

    def want_opt_in(self) -> None:
        """Commit the opt-in selector; helm-controller tries it and its hook is refused."""
        cr = self.gitops / RELEASE / "templates" / "default-cr.yaml"
        cr.write_text(cr.read_text().replace(UPSTREAM, OPT_IN))
        commit_all(self.gitops, message="select the opt-in label, not every GPU node")
        self.served.reconcile_source()
        hr = self.served.wait_upgrade_failed()
        # The refusal names the tool that owns the release: helm-controller, not helm.
        said = ready(hr)["message"]
        assert "upgrade guarded, fracctl recreate --backend flux; see runbooks/" in said, said
        assert "--backend helm" not in said, said
        # The line a user reads (helm-controller's condition: helm's error, the API
        # server's, the policy's) stays readable: 829 characters before it was shortened.
        assert len(said) <= 560, (len(said), said)

    def history(self) -> Obj:
        return dict((self.served.helm_release().get("status") or {}).get("history", [{}])[0])


@pytest.fixture
def hook(cluster: Cluster, real_flux: RealFlux, tmp_path: Path) -> Iterator[HookRelease]:
    with contextlib.ExitStack() as stack:
        yield from _hook(cluster, real_flux, tmp_path, stack)


def _hook(
    cluster: Cluster, real_flux: RealFlux, tmp_path: Path, stack: contextlib.ExitStack
) -> Iterator[HookRelease]:
    cluster.node("rtx-pro-6000-0", gpu_class="rtx-pro-6000", opt_in=True, labels=GPU)
    cluster.node("b200-0", gpu_class="b200", opt_in=True, labels=GPU)
    cluster.node("h200-0", gpu_class="h200", labels=GPU)
    cluster.runtime_class()
    cluster.wipe_target()
    cluster.namespace(RELEASE)
    gitops = tmp_path / "gitops"
    shutil.copytree(CHART, gitops / RELEASE)
    init_repo(gitops, message="the operator's chart, as upstream ships it")
    sim = OperatorSimulation(cluster.kube, cluster.config, delay=0.2)
    with real_flux.serving_chart(gitops, chart=f"./{RELEASE}", release=RELEASE,
                                 target=RELEASE) as served:  # fmt: skip
        cluster.operator_leads()  # the chart installed its Deployment
        stack.enter_context(SimulationThread(sim))
        config = write_config(tmp_path / "fracctl.yaml", {
            "kube": {"kubeconfig": cluster.kubeconfig},
            "git": {"repo": gitops, "path": RELEASE, "renderer": "helm",
                    "helm_namespace": RELEASE},
            "recreate": {"backend": "flux", "lock_namespace": "fracctl-test",
                         "state_dir": tmp_path / "state"},
            "flux": served.config_section(),
            "helm": {"binary": find("helm4").path, "timeout": "60s"},
            "timeouts": {"ready": "30s", "delete": "30s", "lock_lease": "30s", "sync": "90s"},
        })  # fmt: skip
        found = HookRelease(cluster, tmp_path, served, config)
        r = found.cli("policy", "apply")
        assert r.exit_code == ExitCode.OK, r.output
        wait_enforced(cluster)
        try:
            yield found
        finally:
            cluster.wipe_target()


def converged(h: HookRelease, *, after: int) -> None:
    """Git's selector live, the HelmRelease Ready at a newer revision, every node ready."""
    live = h.cluster.live_target()
    assert live is not None and live["spec"]["nodeSelector"] == NEW
    hr = h.served.helm_release()
    assert ready(hr)["status"] == "True", hr.get("status")
    assert h.history()["status"] == "deployed" and int(h.history()["version"]) > after
    assert not (hr.get("spec") or {}).get("suspend")
    r = h.cli("wait", "--timeout", "30s")
    assert r.exit_code == ExitCode.OK, r.output


def test_the_hook_refused_by_the_guard_then_run_guarded_by_helm_controller(
    hook: HookRelease,
) -> None:
    uid = hook.uid()
    hook.want_opt_in()  # helm-controller's upgrade fails at the hook: nothing changed
    assert hook.uid() == uid
    failed = int(hook.history()["version"])

    plan = hook.cli("recreate", "--dry-run")
    assert plan.exit_code == ExitCode.OK, plan.output
    assert "helm-controller upgrades as system:serviceaccount:flux-system:helm-controller" in (
        plan.output
    )
    assert "creates GpuFractioningConfig/default with git's nodeSelector" in plan.output

    r = refused_then_carried(hook, uid, failed)
    assert "and system:serviceaccount:flux-system:helm-controller" in r.output  # armed
    assert "its hook deleted and recreated the object" in r.output
    assert hook.uid() != uid
    converged(hook, after=failed)
    lease = hook.cluster.kube.get(LEASES, "fracctl-recreate", "fracctl-test")
    annotations = lease["metadata"].get("annotations") or {}
    assert not {k for k in annotations if k.startswith("fracctl.io/delete-")}, "disarmed"

    again = hook.cli("recreate", "--yes")
    assert again.exit_code == ExitCode.OK, again.output
    assert "already matches git" in again.output, again.output
    assert int(hook.history()["version"]) == failed + 1, "a rerun changes nothing"


def test_a_helmrelease_that_has_not_tried_git_is_refused(hook: HookRelease) -> None:
    uid = hook.uid()
    cr = hook.gitops / RELEASE / "templates" / "default-cr.yaml"
    cr.write_text(cr.read_text().replace(UPSTREAM, OPT_IN))
    commit_all(hook.gitops, message="not fetched by the source yet")
    r = hook.cli("recreate", "--yes")
    assert r.exit_code == ExitCode.FINDING, r.output
    assert "it has not tried git's chart yet" in r.output
    assert f"flux reconcile helmrelease {hook.served.name} -n flux-system" in r.output
    assert hook.uid() == uid


@pytest.mark.parametrize(
    ("spec", "said"),
    [
        ({"suspend": True}, "is suspended: it would not upgrade"),
        ({"upgrade": {"disableHooks": True}}, "spec.upgrade.disableHooks"),
        (
            {"upgrade": {"remediation": {"retries": 2, "strategy": "uninstall"}}},
            "uninstalls the release after a failed upgrade",
        ),
        ({"kubeConfig": {"secretRef": {"name": "remote"}}}, "installs into another cluster"),
        (
            {"serviceAccountName": "nobody"},
            "helm-controller upgrades as system:serviceaccount:flux-system:nobody, which may "
            "not delete",
        ),
    ],
    ids=["suspended", "no-hooks", "uninstall-remediation", "remote", "identity"],
)
def test_a_helmrelease_that_would_not_run_the_hook_safely_is_refused(
    hook: HookRelease, spec: Obj, said: str
) -> None:
    from fracctl.core.kube.resources import HELMRELEASES

    hook.want_opt_in()
    kube = hook.cluster.kube
    patched = kube.patch(HELMRELEASES, hook.served.name, {"spec": spec}, namespace="flux-system")
    try:
        # With hooks off, helm-controller upgrades the release itself for the changed spec
        # (without the hook): what fracctl must not change is read after that.
        if (spec.get("upgrade") or {}).get("disableHooks"):
            _observed(hook, int(patched["metadata"]["generation"]))
        uid, failed = hook.uid(), int(hook.history()["version"])
        r = hook.cli("recreate", "--yes")
        assert r.exit_code == ExitCode.FINDING, r.output
        assert said in r.output and "nothing was deleted or changed" in r.output
        assert hook.uid() == uid  # the config was not deleted
        # helm-controller itself retries the failed upgrade where remediation asks it to
        # (a new, failed release version, without fracctl); elsewhere none is added.
        retries = ((spec.get("upgrade") or {}).get("remediation") or {}).get("retries")
        if not retries:
            assert int(hook.history()["version"]) == failed
        d = hook.cli("drift")  # never "carried" where the recreate refuses
        assert d.exit_code == ExitCode.FINDING, d.output
        assert "not carried: fracctl recreate would refuse:" in d.output, d.output
        assert said in " ".join(d.output.split()) and "\ncarried: fracctl" not in d.output
    finally:
        undo = dict.fromkeys(spec)
        kube.patch(HELMRELEASES, hook.served.name, {"spec": undo}, namespace="flux-system")


def _observed(h: HookRelease, generation: int, timeout: float = 60) -> None:
    """Until helm-controller has reconciled the HelmRelease's ``generation``."""
    import time

    from fracctl.core.kube.resources import HELMRELEASES

    deadline = time.monotonic() + timeout
    while True:
        hr = h.cluster.kube.get(HELMRELEASES, h.served.name, "flux-system")
        status = hr.get("status") or {}
        ready = [c for c in status.get("conditions") or [] if c.get("type") == "Ready"]
        if (
            int(status.get("observedGeneration") or 0) >= generation
            and ready
            and all(c.get("observedGeneration", generation) >= generation for c in ready)
        ):
            return
        assert time.monotonic() < deadline, f"helm-controller never reconciled: {status}"
        time.sleep(0.2)


def test_a_guard_policy_that_does_not_know_delegates_is_refused(hook: HookRelease) -> None:
    from fracctl.flows.policy import POLICIES

    hook.want_opt_in()
    uid = hook.uid()
    kube = hook.cluster.kube
    policy = kube.get(POLICIES, "fracctl-guard-gpufractioningconfigs")
    rule = policy["spec"]["validations"][0]
    rule["expression"] = rule["expression"].split(" || ")[0] + ")"  # the requester alone
    kube.replace(POLICIES, policy)
    r = hook.cli("recreate", "--yes")
    assert r.exit_code == ExitCode.FINDING, r.output
    assert "the guard policy is not fracctl's current one" in r.output
    assert "fracctl policy apply" in r.output
    assert hook.uid() == uid


@pytest.mark.parametrize(("moment", "sig"), [
    ("guarded", signal.SIGKILL), ("upgrading", signal.SIGKILL), ("recreated", signal.SIGKILL),
    ("upgrading", signal.SIGINT),
], ids=["kill-guarded", "kill-upgrading", "kill-recreated", "ctrl-c-upgrading"])  # fmt: skip
def test_killed_then_the_rerun_converges(hook: HookRelease, moment: str, sig: int) -> None:
    """SIGKILL, or a Ctrl-C, at a step; drift, doctor and the run's own error then name
    one command, and running it converges."""
    hook.want_opt_in()
    failed = int(hook.history()["version"])
    uid = hook.uid()

    def reached() -> bool:
        if moment == "guarded":  # the lock armed for helm-controller, nothing asked yet
            return _armed(hook)
        if moment == "upgrading":  # the upgrade asked for
            hr = hook.served.helm_release()
            return "reconcile.fluxcd.io/forceAt" in (hr["metadata"].get("annotations") or {})
        return hook.uid() not in ("", uid)  # the hook created git's object

    said: list[str] = []
    way_on = f"fracctl --config {hook.config} recreate --yes"

    def named() -> None:  # what drift and doctor (and an interrupted run) say next
        drift = run_cli("-c", str(hook.config), "drift")
        if drift.exit_code == ExitCode.OK:
            return None  # the run had finished
        text = " ".join(drift.output.split())
        if "finish it:" in text:  # half-done: one command, wherever the user looks
            doctor = run_cli("-c", str(hook.config), "doctor")
            for what in (text, " ".join(doctor.output.split())):
                assert way_on in what, what
        else:  # nothing left half-done (a Ctrl-C undoes its own step): the plain advice
            assert "carried: fracctl recreate" in text, text
        if sig == signal.SIGINT and landed[0]:  # the interrupted run's own error says it too
            assert way_on in " ".join("".join(said).split()), said
        return None

    landed: list[bool] = []
    r = kill_then_rerun(["-c", str(hook.config), "recreate", "--yes"], reached, moment,
                        timeout=120, sig=sig, said=said, next_command=named,
                        landed=landed)  # fmt: skip
    assert r.exit_code == ExitCode.OK, r.output
    converged(hook, after=failed)
    assert not _armed(hook), "the lock is disarmed"


def _armed(h: HookRelease) -> bool:
    from fracctl.core.recreate.guard_policy import DELEGATE

    lease = h.cluster.kube.get_or_none(LEASES, "fracctl-recreate", "fracctl-test")
    return bool(((lease or {}).get("metadata") or {}).get("annotations", {}).get(DELEGATE))


def test_an_upgrade_that_fails_after_the_delete_says_the_way_back_and_the_rerun_converges(
    hook: HookRelease,
) -> None:
    """A second finalizer nobody releases holds the old config: helm-controller's hook
    cannot create git's, its upgrade fails; once released, the rerun converges."""
    from fracctl.core.kube.resources import HELMRELEASES

    hook.want_opt_in()
    failed = int(hook.history()["version"])
    kube, t = hook.cluster.kube, hook.cluster.config.target
    held = "example.org/hold"
    live = hook.cluster.live_target()
    assert live is not None
    kube.patch(t.ref, t.name, {"metadata": {"finalizers": [*live["metadata"]["finalizers"], held]}})
    kube.patch(HELMRELEASES, hook.served.name, {"spec": {"timeout": "10s"}},
               namespace="flux-system")  # fmt: skip
    r = hook.cli("recreate", "--yes")
    assert r.exit_code != ExitCode.OK, r.output
    assert "tried the upgrade and it failed" in r.stderr, r.stderr
    assert "fracctl recreate --restore-from " in r.stderr
    # The resume as this run was given it (its --config), run as printed next.
    assert f"or fix the cause and resume: fracctl --config {hook.config} recreate --yes" in (
        r.stderr
    )
    terminating = hook.cluster.live_target()
    assert terminating is not None and terminating["metadata"].get("deletionTimestamp")

    left = [f for f in terminating["metadata"]["finalizers"] if f != held]
    kube.patch(t.ref, t.name, {"metadata": {"finalizers": left or None}})
    r = hook.cli("recreate", "--yes")
    assert r.exit_code == ExitCode.OK, r.output
    converged(hook, after=failed)


def test_a_helmrelease_that_is_not_there_is_refused(hook: HookRelease) -> None:
    uid = hook.uid()
    hook.config.write_text(
        hook.config.read_text().replace(f"helmrelease: {hook.served.name}", "helmrelease: gone")
    )
    r = hook.cli("recreate", "--yes")
    assert r.exit_code == ExitCode.FINDING, r.output
    assert "there is no Flux HelmRelease flux-system/gone" in r.stderr
    assert hook.uid() == uid


def test_sandbox_up_flux_with_the_operator_chart_recreates_through_the_helmrelease(
    tmp_path: Path,
) -> None:
    """``sandbox up --flux --scenario operator-chart.yaml``: a HelmRelease installs the
    chart, its upgrade of git's change fails at the guarded hook; recreate runs it."""
    from fracctl.sandbox.layout import REPO_ROOT
    from tests.support.flux_real import require_built

    require_built()
    state = str(tmp_path / "sandbox")
    scenario = str(REPO_ROOT / "examples" / "sandbox" / "operator-chart.yaml")
    up = run_cli("sandbox", "up", "--flux", "--scenario", scenario, "--state-dir", state)
    try:
        assert up.exit_code == ExitCode.OK, up.output
        assert "HelmRelease flux-system/gpu-fractioning" in up.stdout
        config = str(Path(state) / "fracctl.yaml")
        text = Path(config).read_text()
        assert "backend: flux" in text and "helmrelease: gpu-fractioning" in text
        stuck = run_cli("-c", config, "drift")
        assert stuck.exit_code == ExitCode.FINDING, stuck.output
        assert "stuck: UpgradeFailed" in stuck.output
        assert run_cli("-c", config, "nodes", "label", "b200-0").exit_code == ExitCode.OK
        r = run_cli("-c", config, "recreate", "--yes")
        assert r.exit_code == ExitCode.OK, r.output
        assert "Flux HelmRelease flux-system/gpu-fractioning is Ready: release revision 3" in (
            r.output
        )
        settled = run_cli("-c", config, "drift")
        assert settled.exit_code == ExitCode.OK, settled.output  # helm-controller's rendering
        assert "carried: fracctl recreate (recreate.backend: flux" in settled.output
    finally:
        down = run_cli("sandbox", "down", "--state-dir", state)
    assert down.exit_code == ExitCode.OK, down.output


def test_a_toleration_added_in_the_values_is_refused_then_run_guarded(hook: HookRelease) -> None:
    """A values change that reaches the daemons (their tolerations): helm-controller's own
    upgrade is refused at the hook's delete; recreate refuses while a fractional pod runs
    on a selected node, then runs the upgrade guarded. The chart keeps upstream's
    selector (every GPU node), so the denied H200 node is taken out first: the label
    guard would refuse it, rightly."""
    hook.cluster.kube.delete(NODES, "h200-0")
    uid = hook.uid()
    values = hook.gitops / RELEASE / "values.yaml"
    second = "  - key: example.org/dedicated\n    operator: Exists\n    effect: NoSchedule\n"
    text = values.read_text()
    values.write_text(
        text.replace("    effect: NoSchedule\n", "    effect: NoSchedule\n" + second, 1)
    )
    commit_all(hook.gitops, message="the daemons tolerate the ML pool")
    hook.served.reconcile_source()
    hook.served.wait_upgrade_failed()
    assert hook.uid() == uid
    failed = int(hook.history()["version"])
    drift = hook.cli("drift")
    assert drift.exit_code == ExitCode.FINDING, drift.output
    refused_then_carried(hook, uid, failed)
    live = hook.cluster.live_target()
    assert live is not None and len(live["spec"]["tolerations"]) == 2


def refused_then_carried(hook: Any, uid: str | None, failed: int) -> Any:
    """`recreate --yes` refuses while a fractional pod runs (nothing changed: the object,
    the release), then carries the change once it is gone; the second run's result."""
    ns = hook.cluster.namespace("ml-team")
    hook.cluster.pod(ns, "train-0", node="rtx-pro-6000-0", annotations=FRACTIONAL)
    r = hook.cli("recreate", "--yes")
    assert r.exit_code == ExitCode.FINDING, r.output
    assert "ml-team/train-0" in r.output and "nothing changed" in r.output
    assert hook.uid() == uid and int(hook.history()["version"]) == failed
    hook.cluster.kube.delete(PODS, "train-0", ns, grace_period=0)
    r = hook.cli("recreate", "--yes")
    assert r.exit_code == ExitCode.OK, r.output
    return r
