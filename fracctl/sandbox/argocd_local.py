"""A real Argo CD on loopback beside a control plane: the e2e fixture and the sandbox.

Nothing here is a fake. One upstream ``argocd`` binary (built from its Go module by
``scripts/build-argocd.sh``) runs as three processes, chosen by ``ARGOCD_BINARY_NAME``:
the repo server, the application controller and the API server, with a ``redis-server``
beside them. ``ARGOCD_FAKE_IN_CLUSTER=true`` with ``KUBECONFIG`` makes the in-cluster
destination ``https://kubernetes.default.svc`` mean the given control plane.

Accounts: ``admin`` (password in the state dir, used only to mint tokens), a CI account
with exactly ``applications, get`` and ``applications, sync`` on one project, and a
``role:readonly`` viewer. Their tokens are written to ``tokens/<account>`` (mode 0600).
Processes are stopped by the PIDs recorded when they were started, nothing else.
"""

from __future__ import annotations

import os
import secrets
import shutil
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fracctl.adapters.kube import Kube
from fracctl.core.clock import utc_timestamp
from fracctl.core.resources import CRDS, NAMESPACES, ResourceRef
from fracctl.errors import Conflict, ExternalError, NotFound, TimedOut, UsageError
from fracctl.redact import redact, register
from fracctl.sandbox import controlplane

VERSION = "v3.2.11"
NAMESPACE = "argocd"
CI_ACCOUNT = "fracctl-ci"
VIEWER_ACCOUNT = "viewer"
IN_CLUSTER = "https://kubernetes.default.svc"
#: What the CI account may do on its project: what the README asks for, nothing more.
CI_ACTIONS = ("get", "sync")

CONFIGMAPS = ResourceRef("", "v1", "configmaps", "ConfigMap", True)
SECRETS = ResourceRef("", "v1", "secrets", "Secret", True)
APPLICATIONS = ResourceRef("argoproj.io", "v1alpha1", "applications", "Application", True)
APPPROJECTS = ResourceRef("argoproj.io", "v1alpha1", "appprojects", "AppProject", True)
_PART_OF = {"app.kubernetes.io/part-of": "argocd"}  # Argo CD only reads labelled settings
_PROCESSES = ("argocd-server", "argocd-application-controller", "argocd-repo-server", "redis")

Obj = dict[str, Any]


@dataclass
class LocalArgoCD:
    """A running (or recorded) local Argo CD."""

    state_dir: str
    kubeconfig: str
    port: int
    pids: dict[str, int] = field(default_factory=dict)
    namespace: str = NAMESPACE
    project: str = "default"
    version: str = VERSION

    @property
    def url(self) -> str:
        """The API server's base URL (plain HTTP on loopback)."""
        return f"http://127.0.0.1:{self.port}"

    @property
    def address(self) -> str:
        """``host:port``, as ``ARGOCD_SERVER`` is written."""
        return f"127.0.0.1:{self.port}"

    def token_file(self, account: str = CI_ACCOUNT) -> str:
        """Path of ``account``'s token file."""
        return str(Path(self.state_dir) / "tokens" / account)

    def token(self, account: str = CI_ACCOUNT) -> str:
        """``account``'s API token (``admin`` included)."""
        return Path(self.token_file(account)).read_text().strip()

    def log(self, process: str) -> Path:
        """The log file of one process."""
        return Path(self.state_dir) / "logs" / f"{process}.log"

    def save(self) -> None:
        """Record PIDs and ports in the state dir."""
        controlplane.save_record(self, Path(self.state_dir, "argocd.json"))

    @classmethod
    def load(cls, state_dir: str | Path) -> LocalArgoCD | None:
        """The Argo CD recorded in ``state_dir``, if any."""
        return controlplane.load_record(cls, Path(state_dir, "argocd.json"))

    def alive(self) -> bool:
        """Whether every recorded process still runs."""
        return bool(self.pids) and all(controlplane.alive(p) for p in self.pids.values())

    def stop(self, *, timeout: float = 15.0) -> None:
        """Stop the server, controller, repo server and redis, by their recorded PIDs."""
        for name in _PROCESSES:
            pid = self.pids.get(name)
            if pid:
                controlplane.terminate(pid, timeout)


# --- binaries -------------------------------------------------------------------------


def cache_dir(env: dict[str, str] | None = None) -> Path:
    """``$FRACCTL_CACHE`` or ``~/.cache/fracctl``, as the build scripts use it."""
    env = dict(os.environ) if env is None else env
    if env.get("FRACCTL_CACHE"):
        return Path(env["FRACCTL_CACHE"])
    return Path(env.get("HOME") or Path.home()) / ".cache" / "fracctl"


def locate(env: dict[str, str] | None = None) -> Path | None:
    """The folder holding a built ``argocd`` and its ``crds/``, without building."""
    env = dict(os.environ) if env is None else env
    folder = Path(env.get("FRACCTL_ARGOCD_DIR") or cache_dir(env) / "argocd" / VERSION)
    if (folder / "argocd").is_file() and (folder / "crds" / "application-crd.yaml").is_file():
        return folder
    return None


def locate_kustomize(env: dict[str, str] | None = None) -> Path | None:
    """The folder holding ``kustomize``: on PATH, else the build cache; None if neither."""
    env = dict(os.environ) if env is None else env
    found = shutil.which("kustomize", path=env.get("PATH"))
    if found:
        return Path(found).parent
    tools = cache_dir(env) / "tools"
    for folder in sorted(tools.glob("kustomize-*"), reverse=True):
        if (folder / "kustomize").is_file():
            return folder
    return None


def build(script: str, repo_root: Path | None = None) -> Path:
    """Run ``scripts/<script>`` (which builds only when its cache is empty); its folder."""
    roots = [r for r in (repo_root, Path(__file__).resolve().parents[2]) if r]
    for root in roots:
        path = root / "scripts" / script
        if path.is_file():
            break
    else:
        raise UsageError(f"scripts/{script} not found: run from a fracctl source checkout")
    try:
        out = subprocess.run(
            ["bash", str(path)], check=True, stdout=subprocess.PIPE, text=True
        ).stdout
    except subprocess.CalledProcessError as e:
        raise ExternalError(f"scripts/{script} failed (exit {e.returncode})") from None
    return Path(out.strip().splitlines()[-1])


# --- start ----------------------------------------------------------------------------


def start(
    state_dir: str | Path,
    *,
    kubeconfig: str,
    binaries: Path,
    kustomize: Path | None = None,
    project: str = "default",
    detach: bool = False,
    timeout: float = 180.0,
) -> LocalArgoCD:
    """Install Argo CD's CRDs and settings, start its processes, mint the tokens.

    Args:
        state_dir: logs, tokens and working folders (created).
        kubeconfig: the control plane (an admin kubeconfig).
        binaries: the folder holding ``argocd`` and ``crds/``.
        kustomize: the folder holding ``kustomize``, for kustomize sources.
        project: the AppProject the CI account may get and sync in (created).
        detach: give the processes their own session so they outlive the caller.
        timeout: seconds to wait for every process to be ready.
    """
    if shutil.which("redis-server") is None:
        raise UsageError(
            "redis-server is not installed; Argo CD needs it",
            hint="install the redis-server package (apt-get install redis-server)",
        )
    if shutil.which("git") is None:
        raise UsageError("git is not installed; Argo CD's repo server needs it")
    state = Path(state_dir).resolve()
    for sub in ("logs", "tokens", "tmp", "tls", "ssh", "gnupg", "gpg-source", "redis"):
        (state / sub).mkdir(parents=True, exist_ok=True)
    (state / "gnupg").chmod(0o700)
    password = secrets.token_urlsafe(18)
    _write_secret_file(state / "admin.password", password)
    kube = Kube.connect(kubeconfig=kubeconfig)
    try:
        install_crds(kube, binaries / "crds")
        _ensure(
            kube,
            NAMESPACES,
            {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}},
        )
        _settings(kube, binaries / "argocd", password, project)
        ensure_project(kube, project)
    finally:
        kube.close()

    argocd = LocalArgoCD(str(state), kubeconfig, controlplane.free_port(), project=project)
    ports = {
        name: controlplane.free_port()
        for name in ("redis", "repo", "repo-metrics", "ctl-metrics", "server-metrics", "dex")
    }
    env = {
        **os.environ,
        "KUBECONFIG": kubeconfig,
        "ARGOCD_FAKE_IN_CLUSTER": "true",
        "ARGOCD_GPG_ENABLED": "false",
        "ARGOCD_TLS_DATA_PATH": str(state / "tls"),
        "ARGOCD_SSH_DATA_PATH": str(state / "ssh"),
        "ARGOCD_GNUPGHOME": str(state / "gnupg"),
        "ARGOCD_GPG_DATA_PATH": str(state / "gpg-source"),
        "TMPDIR": str(state / "tmp"),
        "HOME": str(state / "tmp"),
    }
    for name in list(env):
        if name.startswith("ARGOCD_") and name not in (
            "ARGOCD_FAKE_IN_CLUSTER",
            "ARGOCD_GPG_ENABLED",
            "ARGOCD_TLS_DATA_PATH",
            "ARGOCD_SSH_DATA_PATH",
            "ARGOCD_GNUPGHOME",
            "ARGOCD_GPG_DATA_PATH",
        ):
            del env[name]  # an operator's ARGOCD_SERVER/ARGOCD_AUTH_TOKEN must not leak in
    if kustomize is not None:
        env["PATH"] = f"{kustomize}{os.pathsep}{env.get('PATH', '')}"
    redis = f"127.0.0.1:{ports['redis']}"
    repo = f"127.0.0.1:{ports['repo']}"
    exe = str(binaries / "argocd")
    # fmt: off
    commands: dict[str, list[str]] = {
        "redis": [
            str(shutil.which("redis-server")),
            "--bind", "127.0.0.1",
            "--port", str(ports["redis"]),
            "--save", "",
            "--appendonly", "no",
            "--dir", str(state / "redis"),
        ],
        "argocd-repo-server": [
            exe,
            "--port", str(ports["repo"]),
            "--metrics-port", str(ports["repo-metrics"]),
            "--address", "127.0.0.1",
            "--metrics-address", "127.0.0.1",
            "--redis", redis,
            "--disable-tls",
            "--parallelismlimit", "2",
            "--loglevel", "info",
        ],
        "argocd-application-controller": [
            exe,
            "--namespace", NAMESPACE,
            "--repo-server", repo,
            "--repo-server-plaintext",
            "--redis", redis,
            "--metrics-port", str(ports["ctl-metrics"]),
            "--status-processors", "4",
            "--operation-processors", "2",
            "--loglevel", "info",
        ],
        "argocd-server": [
            exe,
            "--namespace", NAMESPACE,
            "--insecure",
            "--address", "127.0.0.1",
            "--port", str(argocd.port),
            "--metrics-address", "127.0.0.1",
            "--metrics-port", str(ports["server-metrics"]),
            "--redis", redis,
            "--repo-server", repo,
            "--repo-server-plaintext",
            # No Dex: SSO is off; point it at a closed port so nothing is reached.
            "--dex-server", f"http://127.0.0.1:{ports['dex']}",
            # No UI assets: the API is all that is needed.
            "--staticassets", str(state / "no-ui"),
            "--loglevel", "info",
        ],
    }
    # fmt: on
    try:
        for name in reversed(_PROCESSES):
            proc_env = dict(env)
            if name != "redis":
                proc_env["ARGOCD_BINARY_NAME"] = name
            with open(argocd.log(name), "ab") as log:
                proc = controlplane.spawn(commands[name], log, detach, env=proc_env)
            argocd.pids[name] = proc.pid
            argocd.save()
        deadline = time.monotonic() + timeout
        for name, url in (
            ("argocd-repo-server", f"http://127.0.0.1:{ports['repo-metrics']}/healthz"),
            ("argocd-application-controller", f"http://127.0.0.1:{ports['ctl-metrics']}/healthz"),
            ("argocd-server", f"{argocd.url}/healthz?full=true"),
        ):
            _wait_http(argocd, name, url, deadline)
        admin = _login(argocd, password, deadline)
        _write_secret_file(Path(argocd.token_file("admin")), admin)
        for account in (CI_ACCOUNT, VIEWER_ACCOUNT):
            doc = api(
                argocd.url,
                "POST",
                f"/api/v1/account/{account}/token",
                token=admin,
                body={"name": account},
            )
            _write_secret_file(Path(argocd.token_file(account)), str(doc["token"]))
    except BaseException:
        argocd.stop()
        raise
    return argocd


def install_crds(kube: Kube, folder: Path, *, timeout: float = 60.0) -> None:
    """Create Argo CD's CRDs (one by one; the folder's kustomization is not used)."""
    from ruamel.yaml import YAML

    names = []
    for name in ("application", "appproject", "applicationset"):
        crd = YAML(typ="safe").load((folder / f"{name}-crd.yaml").read_text())
        names.append(crd["metadata"]["name"])
        _ensure(kube, CRDS, crd)
    deadline = time.monotonic() + timeout
    for name in names:
        while True:
            live = kube.get(CRDS, name)
            conds = (live.get("status") or {}).get("conditions") or []
            if any(c.get("type") == "Established" and c.get("status") == "True" for c in conds):
                break
            if time.monotonic() > deadline:
                raise TimedOut(f"CRD {name} not established after {timeout:.0f}s")
            time.sleep(0.2)


def ensure_project(kube: Kube, name: str) -> None:
    """An AppProject that may deploy anything from anywhere into the in-cluster target."""
    if name == "default":
        return  # argocd-server creates it
    _ensure(
        kube,
        APPPROJECTS,
        {
            "apiVersion": "argoproj.io/v1alpha1",
            "kind": "AppProject",
            "metadata": {"name": name, "namespace": NAMESPACE},
            "spec": {
                "sourceRepos": ["*"],
                "destinations": [{"server": IN_CLUSTER, "namespace": "*"}],
                "clusterResourceWhitelist": [{"group": "*", "kind": "*"}],
            },
        },
    )


def application(
    name: str,
    *,
    project: str,
    repo_url: str,
    path: str,
    namespace: str = "default",
    sync_options: list[str] | None = None,
    ignore_differences: list[Obj] | None = None,
) -> Obj:
    """An Application manifest for a git source deployed to the in-cluster target."""
    spec: Obj = {
        "project": project,
        "source": {"repoURL": repo_url, "path": path, "targetRevision": "HEAD"},
        "destination": {"server": IN_CLUSTER, "namespace": namespace},
    }
    if sync_options:
        spec["syncPolicy"] = {"syncOptions": list(sync_options)}
    if ignore_differences:
        spec["ignoreDifferences"] = ignore_differences
    return {
        "apiVersion": "argoproj.io/v1alpha1",
        "kind": "Application",
        "metadata": {"name": name, "namespace": NAMESPACE},
        "spec": spec,
    }


def put_application(kube: Kube, app: Obj) -> None:
    """Create the Application, or replace the spec of the one there."""
    name = app["metadata"]["name"]
    live = kube.get_or_none(APPLICATIONS, name, NAMESPACE)
    if live is None:
        kube.create(APPLICATIONS, app)
        return
    live["spec"] = app["spec"]
    kube.replace(APPLICATIONS, live)


def delete_application(kube: Kube, name: str) -> None:
    """Remove the Application object only (no cascade: its resources stay)."""
    try:
        live = kube.get(APPLICATIONS, name, NAMESPACE)
        if live["metadata"].get("finalizers"):
            kube.patch(APPLICATIONS, name, {"metadata": {"finalizers": None}}, namespace=NAMESPACE)
        kube.delete(APPLICATIONS, name, NAMESPACE)
    except NotFound:
        pass


def wait_compared(argocd: LocalArgoCD, name: str, *, timeout: float = 120.0) -> Obj:
    """Block until the controller has compared application ``name`` with git."""
    deadline = time.monotonic() + timeout
    while True:
        app: Obj = api(
            argocd.url,
            "GET",
            f"/api/v1/applications/{name}?refresh=normal",
            token=argocd.token("admin"),
        )
        status = app.get("status") or {}
        if (status.get("sync") or {}).get("status") in ("Synced", "OutOfSync"):
            return app
        if time.monotonic() > deadline:
            raise TimedOut(f"Argo CD never compared application {name} with git")
        time.sleep(0.5)


def api(url: str, method: str, path: str, *, token: str | None = None, body: Any = None) -> Any:
    """One call to the Argo CD API with JSON in and out (setup only, not fracctl's client)."""
    import httpx

    headers = {"Accept": "application/json"}
    if token:
        headers["Authorization"] = f"Bearer {token}"
    try:
        resp = httpx.request(method, url + path, json=body, headers=headers, timeout=30.0)
    except httpx.TransportError as e:
        raise ExternalError(f"Argo CD at {url}: {type(e).__name__}: {e}") from e
    if resp.status_code >= 400:
        raise ExternalError(
            f"Argo CD {method} {path}: {resp.status_code} {redact(resp.text)[:300]}"
        )
    return resp.json() if resp.content else {}


# --- helpers --------------------------------------------------------------------------


def _ensure(kube: Kube, ref: ResourceRef, body: Obj) -> None:
    try:
        kube.create(ref, body)
    except Conflict:
        pass


def _put(kube: Kube, ref: ResourceRef, body: Obj) -> None:
    live = kube.get_or_none(ref, body["metadata"]["name"], NAMESPACE)
    if live is None:
        kube.create(ref, body)
        return
    body["metadata"]["resourceVersion"] = live["metadata"]["resourceVersion"]
    kube.replace(ref, body)


def _settings(kube: Kube, exe: Path, password: str, project: str) -> None:
    """argocd-cm (accounts), argocd-rbac-cm (their rights), argocd-secret (admin)."""
    bcrypt = subprocess.run(
        [str(exe), "account", "bcrypt", "--password", password],
        check=True,
        capture_output=True,
        text=True,
        env={k: v for k, v in os.environ.items() if k != "ARGOCD_BINARY_NAME"},
    ).stdout.strip()
    meta = {"namespace": NAMESPACE, "labels": dict(_PART_OF)}
    _put(
        kube,
        CONFIGMAPS,
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "argocd-cm", **meta},
            "data": {
                f"accounts.{CI_ACCOUNT}": "apiKey",
                f"accounts.{VIEWER_ACCOUNT}": "apiKey",
                "admin.enabled": "true",
                "timeout.reconciliation": "180s",
            },
        },
    )
    rules = [f"p, role:fracctl-ci, applications, {a}, {project}/*, allow" for a in CI_ACTIONS]
    _put(
        kube,
        CONFIGMAPS,
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "argocd-rbac-cm", **meta},
            "data": {
                "policy.csv": "\n".join(
                    [
                        *rules,
                        f"g, {CI_ACCOUNT}, role:fracctl-ci",
                        f"g, {VIEWER_ACCOUNT}, role:readonly",
                    ]
                )
                + "\n",
                "policy.default": "",
            },
        },
    )
    now = utc_timestamp()
    _put(
        kube,
        SECRETS,
        {
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {"name": "argocd-secret", **meta},
            "type": "Opaque",
            "stringData": {
                "server.secretkey": secrets.token_urlsafe(32),
                "admin.password": bcrypt,
                "admin.passwordMtime": now,
            },
        },
    )


def _write_secret_file(path: Path, value: str) -> None:
    register(value)  # a password or token: masked in everything fracctl writes
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(value + "\n")


def _tail(argocd: LocalArgoCD, process: str, lines: int = 3) -> str:
    log = argocd.log(process)
    text = log.read_text(errors="replace").strip().splitlines()[-lines:] if log.exists() else []
    return " | ".join(text)


def _wait_http(argocd: LocalArgoCD, process: str, url: str, deadline: float) -> None:
    import httpx

    while True:
        for name, pid in argocd.pids.items():
            if not controlplane.alive(pid):
                raise ExternalError(f"{name} exited: {_tail(argocd, name)}")
        try:
            if httpx.get(url, timeout=2.0).status_code == 200:
                return
        except httpx.TransportError:
            pass
        if time.monotonic() > deadline:
            raise TimedOut(f"{process} not ready at {url}; see {argocd.log(process)}")
        time.sleep(0.3)


def _login(argocd: LocalArgoCD, password: str, deadline: float) -> str:
    """``POST /api/v1/session`` as admin; retried while the server loads its settings."""
    while True:
        try:
            doc = api(
                argocd.url,
                "POST",
                "/api/v1/session",
                body={"username": "admin", "password": password},
            )
            return str(doc["token"])
        except ExternalError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.5)
