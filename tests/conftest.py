"""Fixtures: a clean environment for every test, and one real control plane per session."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from fracctl import config as cfg
from fracctl.adapters.kube import Kube
from fracctl.sandbox import controlplane
from fracctl.sandbox.flow import install_crd
from tests.support.canned import CannedServer
from tests.support.helpers import Cluster

if TYPE_CHECKING:
    from tests.support.argocd_real import RealArgoCD
    from tests.support.fleet_fixtures import Fleet
    from tests.support.flux_real import RealFlux
    from tests.support.helm import Helm
    from tests.support.recreate_fixtures import Incident

pytest_plugins = ["tests.support.order", "pytester"]

REPO = Path(__file__).resolve().parents[1]
# typer sets PYDANTIC_DISABLE_PLUGINS while it builds a command's parameters and deletes it
# after (typer/_adapters.py). A test runs the CLI in its own process while a thread there
# (an operator simulation) reads the environment, and a delete during that read is a
# KeyError that kills the thread. Set, the variable is only ever set again, never removed.
os.environ.setdefault("PYDANTIC_DISABLE_PLUGINS", "1")
# Tests get a fresh HOME, but keep using the real build cache of the control plane.
CACHE = os.environ.get("FRACCTL_CACHE") or str(Path.home() / ".cache" / "fracctl")
#: What a test reads from the caller on purpose: the seed a kill test prints to replay it.
KEPT = frozenset({"FRACCTL_TEST_SEED"})


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """No kubeconfig, fracctl or Argo CD settings leak in; fixed width; no colour."""
    for name in list(os.environ):
        if name in KEPT:
            continue
        if name.startswith(("FRACCTL_", "ARGOCD_")) or name in ("KUBECONFIG",):
            monkeypatch.delenv(name)
    monkeypatch.setenv("FRACCTL_CACHE", CACHE)
    monkeypatch.setenv("COLUMNS", "160")
    monkeypatch.setenv("NO_COLOR", "1")
    monkeypatch.setenv("TERM", "dumb")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    (tmp_path / "home").mkdir()
    monkeypatch.chdir(tmp_path)


@pytest.fixture(scope="session")
def control_plane(tmp_path_factory: pytest.TempPathFactory) -> Iterator[controlplane.ControlPlane]:
    """One real control plane for the whole session (etcd, kube-apiserver,
    kube-controller-manager, kube-scheduler and KWOK), stopped by PID at the end."""
    from fracctl.sandbox.controllers import start_beside

    binaries = controlplane.find_binaries(REPO)
    cp = controlplane.start(tmp_path_factory.mktemp("controlplane"), binaries=binaries)
    try:
        kube = Kube.connect(kubeconfig=cp.kubeconfig)
        install_crd(kube, cfg.Config())
        start_beside(cp, binaries=binaries, kwok=paced_kwok(tmp_path_factory))
        yield cp
    finally:
        cp.stop()


def paced_kwok(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """KWOK with its module's stages at the tests' pace (tests/support/kwok_pace.py)."""
    from fracctl.sandbox.controllers import find_kwok
    from tests.support.kwok_pace import paced

    return paced(find_kwok(REPO), tmp_path_factory.getbasetemp() / "kwok-paced")


@pytest.fixture(scope="session")
def api_only_plane(
    control_plane: controlplane.ControlPlane, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[controlplane.ControlPlane]:
    """A kube-apiserver + etcd with no controller beside them, for the tests of how
    fracctl reads the API server's pages: pods planted there stay exactly as written
    (no scheduler places them, no KWOK rewrites their status, no garbage collector
    takes those whose owner is made up)."""
    binaries = controlplane.find_binaries(REPO)
    cp = controlplane.start(tmp_path_factory.mktemp("api-only"), binaries=binaries)
    try:
        install_crd(Kube.connect(kubeconfig=cp.kubeconfig), cfg.Config())
        yield cp
    finally:
        cp.stop()


@pytest.fixture
def api_only(api_only_plane: controlplane.ControlPlane) -> Iterator[Cluster]:
    """Builders on :func:`api_only_plane`; nodes there are bare (``kwok=False``)."""
    kube = Kube.connect(kubeconfig=api_only_plane.kubeconfig)
    c = Cluster(kube=kube, config=cfg.Config(), kubeconfig=api_only_plane.kubeconfig, kwok=False)
    c.cleanup()
    try:
        yield c
    finally:
        c.cleanup()


@pytest.fixture
def kubeconfig(control_plane: controlplane.ControlPlane) -> str:
    return control_plane.kubeconfig


@pytest.fixture
def cluster(control_plane: controlplane.ControlPlane) -> Iterator[Cluster]:
    """Builders on the shared control plane; the test's objects are removed afterwards."""
    kube = Kube.connect(kubeconfig=control_plane.kubeconfig)
    c = Cluster(kube=kube, config=cfg.Config(), kubeconfig=control_plane.kubeconfig)
    c.cleanup()
    try:
        yield c
    finally:
        c.cleanup()


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Tests that use the control plane are marked ``cluster`` automatically."""
    for item in items:
        if "control_plane" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.cluster)


@pytest.fixture(params=["helm3", "helm4"])
def helm_bin(request: pytest.FixtureRequest) -> Helm:
    """Each real helm in turn (3 and 4, built from their Go modules; tests/support/helm.py)."""
    from tests.support.helm import find

    return find(str(request.param))


@pytest.fixture(scope="session")
def real_argocd(
    control_plane: controlplane.ControlPlane, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[RealArgoCD]:
    """One real Argo CD (v3.2.11) per session beside the control plane.

    See tests/support/argocd_real.py.
    """
    from tests.support.argocd_real import start_session

    with start_session(control_plane, tmp_path_factory.mktemp("argocd")) as argocd:
        yield argocd


@pytest.fixture(scope="session")
def real_flux(
    control_plane: controlplane.ControlPlane, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[RealFlux]:
    """One real Flux (source- and kustomize-controller) per session beside the control
    plane. See tests/support/flux_real.py."""
    from tests.support.flux_real import start_session

    with start_session(control_plane, tmp_path_factory.mktemp("flux")) as flux:
        yield flux


@pytest.fixture(scope="session")
def extra_control_planes(
    control_plane: controlplane.ControlPlane, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[list[controlplane.ControlPlane]]:
    """Two more control planes beside the session's, for fleet tests (each with its
    controllers, scheduler and KWOK); stopped by PID at the end."""
    from fracctl.sandbox.controllers import start_beside

    binaries, kwok = controlplane.find_binaries(REPO), paced_kwok(tmp_path_factory)
    started: list[controlplane.ControlPlane] = []
    try:
        for i in (1, 2):
            cp = controlplane.start(tmp_path_factory.mktemp(f"fleet-{i}"), binaries=binaries)
            started.append(cp)
            install_crd(Kube.connect(kubeconfig=cp.kubeconfig), cfg.Config())
            start_beside(cp, binaries=binaries, kwok=kwok)
        yield started
    finally:
        for cp in started:
            cp.stop()


@pytest.fixture
def fleet(
    cluster: Cluster,
    control_plane: controlplane.ControlPlane,
    extra_control_planes: list[controlplane.ControlPlane],
    tmp_path: Path,
) -> Iterator[Fleet]:
    """Three clusters as one fleet (eu on the session's API server, us and ap on two more),
    a kubeconfig with a context each and one unreachable (gone); each test seeds its own."""
    from tests.support.fleet_fixtures import make_fleet, merged_kubeconfig

    planes = dict(zip(("eu", "us", "ap"), (control_plane, *extra_control_planes), strict=True))
    clusters = {"eu": cluster}
    for name in ("us", "ap"):
        cp = planes[name]
        clusters[name] = Cluster(
            kube=Kube.connect(kubeconfig=cp.kubeconfig),
            config=cfg.Config(),
            kubeconfig=cp.kubeconfig,
        )
        clusters[name].cleanup()
    kubeconfig = merged_kubeconfig(planes, tmp_path / "fleet.kubeconfig", unreachable="gone")
    try:
        yield make_fleet(clusters, kubeconfig, tmp_path)
    finally:
        for name in ("us", "ap"):
            clusters[name].cleanup()


@pytest.fixture
def canned_server() -> Iterator[CannedServer]:
    """A local server answering every GET with one canned body (HTML unless changed)."""
    server = CannedServer()
    try:
        yield server
    finally:
        server.close()


@pytest.fixture
def real_incident(cluster: Cluster, tmp_path: Path) -> Incident:
    """The incident with the real controllers' (Argo CD's, Flux's) slower timeouts.

    There is no root ``incident``: a module that wants one defines its own.
    """
    from tests.support import argocd_real

    return argocd_real.real_incident(cluster, tmp_path)


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """Fail the run when a child process was left unwaited (a leak the interpreter
    would only report as ``ResourceWarning: subprocess N is still running`` at exit)."""
    import gc
    import warnings

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ResourceWarning)
        gc.collect()
    leaks = [str(w.message) for w in caught if "subprocess" in str(w.message)]
    leaks += [
        f"subprocess {pid} ({Path(str(p.args[0])).name}) was never waited for"
        for pid, p in controlplane._CHILDREN.items()
        if p.poll() is not None or controlplane.alive(pid)
    ]
    if leaks:
        session.config.get_terminal_writer().line(
            "child processes left behind: " + "; ".join(leaks), red=True
        )
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def _guard(incident: Incident) -> Iterator[Incident]:
    """``incident`` with the guard policy applied (``fracctl policy apply``); removed after."""
    from fracctl.errors import ExitCode
    from tests.support.helpers import run_cli, wait_enforced

    r = run_cli("-c", str(incident.config_file), "policy", "apply")
    assert r.exit_code == ExitCode.OK, r.output
    try:
        wait_enforced(incident.cluster)
        yield incident
    finally:
        incident.cluster.unguard()


@pytest.fixture
def guarded(incident: Incident) -> Iterator[Incident]:
    """The module's own ``incident`` with the guard policy applied; removed after."""
    yield from _guard(incident)


@pytest.fixture
def real_guarded(real_incident: Incident) -> Iterator[Incident]:
    """:func:`real_incident` with the guard policy applied; removed after."""
    yield from _guard(real_incident)
