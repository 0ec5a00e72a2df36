"""The REAL Flux (source-controller v1.9.0, kustomize-controller v1.9.6, helm-controller
v1.6.4) beside the session's control plane.

One Flux per pytest session, started by :func:`start_session` from the session fixture
``real_flux`` in conftest.py: the three controllers (built from their Go modules by
``scripts/build-flux.sh``) and a ``git http-backend`` server as processes, stopped by
their PIDs at the end. Each test serves its incident's git repository over http and
gets its own GitRepository and Kustomization (:meth:`RealFlux.serving`), removed when
the test ends so that nothing reapplies a target after the test.

When the controllers were never built the fixture skips with the command to build them,
except under ``CI=true``, where it fails.
"""

from __future__ import annotations

import itertools
import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fracctl.adapters.git import git
from fracctl.adapters.kube import Kube
from fracctl.sandbox import flux_local
from fracctl.sandbox.controlplane import ControlPlane
from tests.support.helpers import pods_report
from tests.support.real_parts import keep_record, live_record, unavailable, write_records
from tests.support.recreate_fixtures import Incident

RECORD_FILE = os.environ.get("FRACCTL_FLUX_RECORD")
ENV = dict(os.environ)
REQUESTED_AT = "reconcile.fluxcd.io/requestedAt"
_SERIAL = itertools.count(1)

Obj = dict[str, Any]


def ready(obj: Obj, kind: str = "Ready") -> Obj:
    """A condition of a Flux object's status (empty when absent)."""
    conds = (obj.get("status") or {}).get("conditions") or []
    return next((c for c in conds if c.get("type") == kind), {})


@dataclass
class Served:
    """One test's GitRepository and Kustomization, reading the incident's repository."""

    flux: RealFlux
    repo: Path  # the incident's working repository
    source: str
    name: str
    target: str | None = None

    @property
    def namespace(self) -> str:
        return flux_local.NAMESPACE

    def config_section(self) -> dict[str, Any]:
        """The ``flux:`` section of a fracctl.yaml pointing at this Kustomization."""
        # No leader election out of a cluster: the controller proves itself by handling
        # a reconcile request (flux.leases empty).
        return {"namespace": self.namespace, "kustomization": self.name, "leases": []}

    def configure(self, incident: Incident) -> str:
        """A fracctl.yaml for the flux backend: the incident's, plus :meth:`config_section`."""
        path = incident.root / f"fracctl-{self.name}.yaml"
        written = incident.edit_config(
            to=path, recreate={"backend": "flux"}, flux=self.config_section()
        )
        return str(written)

    def kustomization(self) -> Obj:
        return self.flux.kube.get(flux_local.KUSTOMIZATIONS, self.name, self.namespace)

    def git_repository(self) -> Obj:
        return self.flux.kube.get(flux_local.GITREPOSITORIES, self.source, self.namespace)

    def head(self, branch: str = "main") -> str:
        return git(["rev-parse", branch], cwd=self.repo).stdout.strip()

    def patch(self, spec: Obj) -> None:
        """Change the Kustomization's spec."""
        kube = self.flux.kube
        kube.patch(flux_local.KUSTOMIZATIONS, self.name, {"spec": spec}, namespace=self.namespace)

    def patch_source(self, spec: Obj) -> None:
        kube = self.flux.kube
        kube.patch(
            flux_local.GITREPOSITORIES, self.source, {"spec": spec}, namespace=self.namespace
        )

    def request(self, ref: Any, name: str) -> str:
        token = time.strftime("%Y-%m-%dT%H:%M:%S") + f".{time.time_ns() % 10**9:09d}Z"
        body = {"metadata": {"annotations": {REQUESTED_AT: token}}}
        self.flux.kube.patch(ref, name, body, namespace=self.namespace)
        return token

    def reconcile_source(self, *, commit: str | None = None, timeout: float = 60.0) -> Obj:
        """Ask source-controller to fetch now; wait until it handled the request."""
        token = self.request(flux_local.GITREPOSITORIES, self.source)

        def done(obj: Obj) -> bool:
            st = obj.get("status") or {}
            revision = str((st.get("artifact") or {}).get("revision") or "")
            return st.get("lastHandledReconcileAt") == token and (
                commit is None or revision.endswith(commit)
            )

        return self.wait(self.git_repository, done, "the source handled the request", timeout)

    def wait_attempted(self, commit: str, timeout: float = 60.0) -> Obj:
        """Wait until the Kustomization tried to apply ``commit`` (and settled Ready)."""

        def done(obj: Obj) -> bool:
            st = obj.get("status") or {}
            return str(st.get("lastAttemptedRevision") or "").endswith(commit) and ready(obj).get(
                "status"
            ) in ("True", "False")

        return self.wait(self.kustomization, done, f"Flux attempted {commit[:12]}", timeout)

    def wait(self, read: Any, done: Any, what: str, timeout: float) -> Obj:
        deadline = time.monotonic() + timeout
        while True:
            obj: Obj = read()
            if done(obj):
                return obj
            if time.monotonic() > deadline:
                raise AssertionError(f"not so after {timeout:.0f}s: {what}: {obj.get('status')}")
            time.sleep(0.2)


@dataclass
class ServedChart:
    """One test's GitRepository and HelmRelease, reading a repository with a chart."""

    flux: RealFlux
    repo: Path
    source: str
    name: str
    target: str | None = None

    @property
    def namespace(self) -> str:
        return flux_local.NAMESPACE

    def helm_release(self) -> Obj:
        return self.flux.kube.get(flux_local.HELMRELEASES, self.name, self.namespace)

    def config_section(self) -> dict[str, Any]:
        """The ``flux:`` section of a fracctl.yaml naming this HelmRelease."""
        return {"namespace": self.namespace, "helmrelease": self.name, "leases": []}

    def wait_ready(self, *, status: str = "True", timeout: float = 120.0) -> Obj:
        """Until the HelmRelease's Ready condition has ``status`` for its generation."""

        def done(obj: Obj) -> bool:
            st = obj.get("status") or {}
            fresh = st.get("observedGeneration") == obj["metadata"].get("generation")
            return fresh and ready(obj).get("status") == status

        deadline = time.monotonic() + timeout
        while True:
            obj = self.helm_release()
            if done(obj):
                return obj
            if time.monotonic() > deadline:
                pods = pods_report(self.flux.kube, self.target) if self.target else ""
                raise AssertionError(
                    f"HelmRelease {self.name} not Ready={status}: {obj.get('status')}; {pods}"
                )
            time.sleep(0.3)

    def wait_reason(self, reason: str, timeout: float = 120.0) -> Obj:
        """Until the HelmRelease's Ready condition gives ``reason``."""
        deadline = time.monotonic() + timeout
        while True:
            obj = self.helm_release()
            if ready(obj).get("reason") == reason:
                return obj
            if time.monotonic() > deadline:
                raise AssertionError(f"HelmRelease {self.name} never {reason}: {obj.get('status')}")
            time.sleep(0.3)

    def wait_upgrade_failed(self, timeout: float = 120.0) -> Obj:
        """Until Ready says ``UpgradeFailed`` and the history's newest entry is that failed
        revision (helm-controller writes the condition and the history in separate
        status patches)."""
        deadline = time.monotonic() + timeout
        while True:
            obj = self.helm_release()
            history = ((obj.get("status") or {}).get("history") or [{}])[0]
            if ready(obj).get("reason") == "UpgradeFailed" and history.get("status") == "failed":
                return obj
            if time.monotonic() > deadline:
                raise AssertionError(f"HelmRelease {self.name} never failed: {obj.get('status')}")
            time.sleep(0.3)

    def reconcile_source(self) -> None:
        """Ask source-controller to fetch the repository now."""
        token = time.strftime("%Y-%m-%dT%H:%M:%S") + f".{time.time_ns() % 10**9:09d}Z"
        body = {"metadata": {"annotations": {REQUESTED_AT: token}}}
        self.flux.kube.patch(flux_local.GITREPOSITORIES, self.source, body,
                             namespace=self.namespace)  # fmt: skip


@dataclass
class RealFlux:
    """The session's Flux, with a helper to serve a test's repository to it."""

    local: flux_local.LocalFlux
    kube: Kube
    records: list[Obj] = field(default_factory=list)

    @contextmanager
    def serving(
        self,
        incident: Incident,
        *,
        branch: str = "main",
        path: str = "./gpu-fractioning",
        settle: bool = True,
        **spec: Any,
    ) -> Iterator[Served]:
        """The incident's repository over http, and a GitRepository and a Kustomization on
        it (``spec`` adds to the Kustomization's). The source has fetched the branch's
        commit before the block starts; with ``settle`` the Kustomization has also tried
        it once (the incident's old object makes that try fail on the immutable
        selector)."""
        serial = next(_SERIAL)
        link = self.local.git_root / f"repo-{serial}"
        repo = incident.root / "gitops"
        link.symlink_to(repo)
        served = Served(self, repo, f"source-{serial}", f"gpu-fractioning-{serial}")
        url = self.local.git_url(link.name)
        source = flux_local.git_repository(served.source, url, branch=branch)
        flux_local.put(self.kube, flux_local.GITREPOSITORIES, source)
        body = flux_local.kustomization(served.name, source=served.source, path=path, **spec)
        flux_local.put(self.kube, flux_local.KUSTOMIZATIONS, body)
        try:
            head = served.head(branch)

            def fetched(obj: Obj) -> bool:
                revision = ((obj.get("status") or {}).get("artifact") or {}).get("revision")
                return str(revision or "").endswith(head)

            # The source has the commit before anything asks the Kustomization for it:
            # a request handled earlier ends in ArtifactFailed ("Source artifact not found").
            served.wait(served.git_repository, fetched, f"the source fetched {head[:12]}", 60)
            if settle:
                served.wait_attempted(head)
            yield served
        finally:
            flux_local.remove(self.kube, flux_local.KUSTOMIZATIONS, served.name)
            flux_local.remove(self.kube, flux_local.GITREPOSITORIES, served.source)
            link.unlink()

    @contextmanager
    def serving_chart(
        self, repo: Path, *, chart: str, release: str, target: str, **spec: Any
    ) -> Iterator[ServedChart]:
        """``repo`` over http, a GitRepository on it and a HelmRelease of its ``chart``
        folder installed as ``release`` in ``target`` (``spec`` adds to the HelmRelease's).
        The HelmRelease is Ready before the block starts."""
        serial = next(_SERIAL)
        link = self.local.git_root / f"repo-{serial}"
        link.symlink_to(repo)
        served = ServedChart(self, repo, f"source-{serial}", f"{release}-{serial}", target)
        source = flux_local.git_repository(served.source, self.local.git_url(link.name))
        flux_local.put(self.kube, flux_local.GITREPOSITORIES, source)
        body = flux_local.helm_release(
            served.name, source=served.source, chart=chart, release=release, target=target,
            **spec,
        )  # fmt: skip
        flux_local.put(self.kube, flux_local.HELMRELEASES, body)
        try:
            served.wait_ready(timeout=120)
            yield served
        finally:
            flux_local.remove(self.kube, flux_local.HELMRELEASES, served.name)
            flux_local.remove(self.kube, flux_local.GITREPOSITORIES, served.source)
            link.unlink()

    def record(self, case: str, served: Served, live: Obj | None, **extra: Any) -> Obj:
        """What Flux reported next to what the live object held (for the runbook)."""
        ks = served.kustomization()
        st = ks.get("status") or {}
        entry = {
            "case": case,
            "flux": {
                "source_controller": flux_local.SOURCE_VERSION,
                "kustomize_controller": flux_local.KUSTOMIZE_VERSION,
            },
            "ready": {k: ready(ks).get(k) for k in ("status", "reason", "message")},
            "reconciling": {k: ready(ks, "Reconciling").get(k) for k in ("status", "reason")},
            "lastAppliedRevision": st.get("lastAppliedRevision"),
            "lastAttemptedRevision": st.get("lastAttemptedRevision"),
            "live": live_record(live),
            **extra,
        }
        return keep_record(self.records, entry)


def require_built() -> Path:
    """The controllers' folder; skip (locally) or fail (CI) when they were never built."""
    import shutil

    binaries = flux_local.locate(ENV)
    missing = []
    if binaries is None:
        missing.append(
            f"source-controller {flux_local.SOURCE_VERSION} and kustomize-controller "
            f"{flux_local.KUSTOMIZE_VERSION} (build them: make flux)"
        )
    if shutil.which("git") is None:
        missing.append("git (install the git package)")
    if missing or binaries is None:
        message = "the real Flux cannot run: missing " + "; ".join(missing)
        unavailable(message)
    return binaries


@contextmanager
def start_session(cp: ControlPlane, state_dir: Path) -> Iterator[RealFlux]:
    """Start Flux for the session; skip (locally) or fail (CI) when it is not built."""
    binaries = require_built()
    from tests.support.flux_standin import STANDIN_LABEL

    local = flux_local.start(
        state_dir, kubeconfig=cp.kubeconfig, binaries=binaries, ignore_label=STANDIN_LABEL
    )
    real = RealFlux(local=local, kube=Kube.connect(kubeconfig=cp.kubeconfig))
    try:
        yield real
    finally:
        real.kube.close()
        local.stop()
        write_records(RECORD_FILE, real.records)
