"""The REAL Argo CD (v3.2.11, built from its Go module) beside the session's control plane.

One Argo CD per pytest session, started by :func:`start_session` from the session
fixture ``real_argocd`` in conftest.py: redis + repo server + application controller +
ApplicationSet controller + API server as processes, stopped by their PIDs at the end.
The application's git repository is served as ``file://``. fracctl talks to it with the
CI account (``fracctl-ci``: ``applications, get`` and ``applications, sync`` on the
project ``gpu-fractioning``, nothing else); ``viewer`` has ``role:readonly``.

When the binary was never built the fixture skips with the command to build it, except
under ``CI=true``, where it fails: CI builds Argo CD first (``make argocd``), so a missing
binary there is a broken build, not a reason to skip.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fracctl.adapters.argocd import ArgoCD
from fracctl.adapters.kube import Kube
from fracctl.flows.engines.argocd.sync import wait_operation
from fracctl.sandbox import argocd_local
from fracctl.sandbox.controlplane import ControlPlane
from tests.support.helpers import Cluster
from tests.support.real_parts import keep_record, live_record, unavailable, write_records
from tests.support.recreate_fixtures import OLD, Incident, make_incident

PROJECT = "gpu-fractioning"
GROUP = "gpu-fractioning.kai.scheduler"
TARGET = {"group": GROUP, "kind": "GpuFractioningConfig", "name": "default", "namespace": ""}
# Read at import: the autouse clean_env fixture removes FRACCTL_* from each test's env.
RECORD_FILE = os.environ.get("FRACCTL_E2E_RECORD")
ENV = dict(os.environ)

Obj = dict[str, Any]


@dataclass
class RealArgoCD:
    """The session's Argo CD, with helpers to register applications and read results."""

    local: argocd_local.LocalArgoCD
    kube: Kube
    records: list[Obj] = field(default_factory=list)

    @property
    def version(self) -> str:
        """The Argo CD version (as ``/api/version`` reports it)."""
        doc = argocd_local.api(self.local.url, "GET", "/api/version")
        return str(doc.get("Version") or self.local.version)

    def token(self, account: str = argocd_local.CI_ACCOUNT) -> str:
        """An account's token (``fracctl-ci``, ``viewer`` or ``admin``)."""
        return self.local.token(account)

    def client(self, account: str = argocd_local.CI_ACCOUNT, token: str | None = None) -> ArgoCD:
        """fracctl's own client, as ``account`` (or with an explicit token)."""
        return ArgoCD(self.local.address, token or self.token(account), plaintext=True)

    def config_section(self, app: str, token_file: Path | str) -> dict[str, Any]:
        """The ``argocd:`` section of a fracctl.yaml that points at this server."""
        return {
            "server": self.local.address,
            "plaintext": True,
            "app": app,
            "token_file": str(token_file),
        }

    @contextmanager
    def app(
        self,
        name: str,
        *,
        repo: Path,
        path: str = "gpu-fractioning",
        sync_options: list[str] | None = None,
        ignore_differences: list[Obj] | None = None,
        target_revision: str = "HEAD",
        automated: Obj | None = None,
        compared: bool = True,
        namespace: str = "default",
    ) -> Iterator[str]:
        """An Application on ``file://repo``; removed (without cascade) afterwards.

        ``automated`` is ``spec.syncPolicy.automated`` (e.g. ``{"selfHeal": True}``);
        ``compared=False`` does not wait for Argo CD's first comparison; ``namespace`` is
        the destination's.
        """
        manifest = argocd_local.application(
            name,
            project=PROJECT,
            repo_url=f"file://{repo}",
            path=path,
            namespace=namespace,
            sync_options=sync_options,
            ignore_differences=ignore_differences,
        )
        manifest["spec"]["source"]["targetRevision"] = target_revision
        if automated is not None:
            manifest["spec"].setdefault("syncPolicy", {})["automated"] = automated
        argocd_local.put_application(self.kube, manifest)
        try:
            if compared:
                self.wait_compared(name)
            yield name
        finally:
            argocd_local.delete_application(self.kube, name)

    @contextmanager
    def project_spec(self, **changes: Any) -> Iterator[None]:
        """Change the AppProject's spec for the block (``syncWindows=[…]``, …), then undo."""
        ref = argocd_local.APPPROJECTS
        before = self.kube.get(ref, PROJECT, argocd_local.NAMESPACE)["spec"]
        self.kube.patch(ref, PROJECT, {"spec": changes}, namespace=argocd_local.NAMESPACE)
        try:
            yield
        finally:
            undo = {k: before.get(k) for k in changes}
            self.kube.patch(ref, PROJECT, {"spec": undo}, namespace=argocd_local.NAMESPACE)

    def wait_idle(self, name: str, timeout: float = 60.0) -> Obj:
        """Block until the application runs no operation (an automated sync ended)."""
        deadline = time.monotonic() + timeout
        with self.client("admin") as c:
            while True:
                app = c.get_application(name)
                phase = ((app.get("status") or {}).get("operationState") or {}).get("phase")
                if not app.get("operation") and phase not in ("Running", "Terminating"):
                    return app
                if time.monotonic() > deadline:
                    raise AssertionError(f"{name} still runs an operation: {app}")
                time.sleep(0.5)

    def wait_compared(self, name: str, timeout: float = 90.0) -> Obj:
        """Block until the controller has compared the app with git (a sync status)."""
        deadline = time.monotonic() + timeout
        with self.client("admin") as c:
            while True:
                app = c.get_application(name, refresh="normal")
                status = app.get("status") or {}
                if (status.get("sync") or {}).get("status") in ("Synced", "OutOfSync"):
                    return app
                if time.monotonic() > deadline:
                    raise AssertionError(f"Argo CD never compared {name}: {status}")
                time.sleep(0.5)

    def sync(
        self,
        name: str,
        *,
        timeout: float = 90.0,
        strategy: Obj | None = None,
        sync_options: list[str] | None = None,
    ) -> tuple[Obj, Obj]:
        """Sync the whole app as the CI account; the final operation state and the app.

        ``strategy`` and ``sync_options`` go in the request as the argocd CLI sends them
        (``--force`` is ``{"apply": {"force": true}}``). The app is read after a hard
        refresh, so its sync status is Argo CD's judgment after the operation.
        """
        with self.client() as c:
            if strategy is None:
                c.sync(name, resources=None, sync_options=sync_options)
            else:
                body: Obj = {"prune": False, "strategy": strategy}
                if sync_options is not None:
                    body["syncOptions"] = {"items": sync_options}
                argocd_local.api(
                    self.local.url,
                    "POST",
                    f"/api/v1/applications/{name}/sync",
                    token=self.token(),
                    body=body,
                )
            state = wait_operation(c, name, timeout=timeout)
            app = c.get_application(name, refresh="hard")
        return state, app

    def record(self, case: str, state: Obj, app: Obj, live: Obj | None, **extra: Any) -> Obj:
        """What Argo CD reported next to what the live object held (for the runbook)."""
        status = app.get("status") or {}
        entry = {
            "case": case,
            "argocd_version": self.local.version,
            "operation": {"phase": state.get("phase"), "message": state.get("message")},
            "resources": [
                {k: r.get(k) for k in ("kind", "name", "status", "message", "hookPhase")}
                for r in (state.get("syncResult") or {}).get("resources") or []
            ],
            "app": {
                "sync": (status.get("sync") or {}).get("status"),
                "health": (status.get("health") or {}).get("status"),
            },
            "live": live_record(live),
            **extra,
        }
        return keep_record(self.records, entry)


def require_built() -> tuple[Path, Path]:
    """The Argo CD and kustomize folders; skip (locally) or fail (CI) when missing."""
    import shutil

    binaries = argocd_local.locate(ENV)
    kustomize = argocd_local.locate_kustomize(ENV)
    missing = []
    if binaries is None:
        missing.append(f"argocd {argocd_local.VERSION} (build it: make argocd)")
    if kustomize is None:
        missing.append("kustomize (build it: make argocd)")
    if argocd_local.locate_redis(ENV) is None:
        missing.append("redis-server (fetch it: make argocd)")
    if shutil.which("git") is None:
        missing.append("git (install the git package)")
    if missing or binaries is None or kustomize is None:
        message = "the real Argo CD cannot run: missing " + "; ".join(missing)
        unavailable(message)
    return binaries, kustomize


@contextmanager
def start_session(cp: ControlPlane, state_dir: Path) -> Iterator[RealArgoCD]:
    """Start Argo CD for the session; skip (locally) or fail (CI) when it is not built."""
    binaries, kustomize = require_built()
    local = argocd_local.start(
        state_dir, kubeconfig=cp.kubeconfig, binaries=binaries, kustomize=kustomize, project=PROJECT
    )
    real = RealArgoCD(local=local, kube=Kube.connect(kubeconfig=cp.kubeconfig))
    try:
        yield real
    finally:
        real.kube.close()
        local.stop()
        write_records(RECORD_FILE, real.records)


# --- the incident against the real Argo CD (shared by the e2e modules) ---------------------


#: The incident's timeouts against the real controllers (slower than a stand-in).
REAL_TIMEOUTS = {"ready": "90s", "delete": "60s", "sync": "120s"}


def real_incident(cluster: Cluster, tmp_path: Path) -> Incident:
    """The incident with timeouts for the real controller (slower than a stand-in).

    The e2e modules ask for it as the ``real_incident`` fixture (conftest.py).
    """
    return make_incident(cluster, tmp_path, timeouts=REAL_TIMEOUTS)


def configure(incident: Incident, argocd: RealArgoCD, app: str, token: str) -> str:
    """Point the incident's fracctl.yaml at the real Argo CD with ``token``."""
    token_file = incident.root / f"token-{app}"
    token_file.write_text(token + "\n")
    token_file.chmod(0o600)
    path = incident.root / f"fracctl-{app}.yaml"
    return str(incident.edit_config(to=path, argocd=argocd.config_section(app, token_file)))


def unchanged(incident: Incident, uid: str) -> None:
    """The live object is the same incarnation, not deleting, with the old selector."""
    live = incident.cluster.live_target()
    assert live is not None, "the live object was deleted"
    assert live["metadata"]["uid"] == uid
    assert not live["metadata"].get("deletionTimestamp"), "a delete was started"
    assert live["spec"]["nodeSelector"] == OLD
