"""A real control plane on loopback: the test fixture and ``fracctl sandbox``.

etcd and kube-apiserver here; kube-controller-manager, kube-scheduler and KWOK beside
them are started by :mod:`.controllers` and recorded here, so that :meth:`ControlPlane.stop`
stops them all. Nothing here is a fake: the
binaries are the upstream ones (from ``KUBEBUILDER_ASSETS`` or built from Go modules by
``scripts/build-control-plane.sh``). The API server runs
with RBAC authorization, a static token file (an admin in ``system:masters`` and a
``viewer`` with no rights, for RBAC tests), and its own self-signed serving certificate.
Processes are stopped by the PIDs recorded when they were started, nothing else.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from fracctl.adapters.process import alive as alive  # the sandbox asks here
from fracctl.errors import ExternalError, TimedOut, UsageError

ADMIN_USER = "fracctl-admin"
VIEWER_USER = "viewer"


@dataclass
class ControlPlane:
    """A running (or recorded) control plane."""

    state_dir: str
    etcd_pid: int
    apiserver_pid: int
    port: int
    admin_token: str
    viewer_token: str
    etcd_port: int = 0
    components: dict[str, int] = field(default_factory=dict)  # controllers' PIDs by name

    @property
    def etcd_url(self) -> str:
        """The client URL of etcd (plain HTTP on loopback)."""
        return f"http://127.0.0.1:{self.etcd_port}"

    @property
    def url(self) -> str:
        """The API server URL."""
        return f"https://127.0.0.1:{self.port}"

    @property
    def kubeconfig(self) -> str:
        """Path of the admin kubeconfig."""
        return str(Path(self.state_dir) / "kubeconfig")

    @property
    def ca_file(self) -> str:
        """The API server's serving certificate bundle."""
        return str(Path(self.state_dir) / "certs" / "apiserver.crt")

    def save(self) -> None:
        """Record PIDs and ports in the state dir."""
        save_record(self, Path(self.state_dir, "controlplane.json"))

    @classmethod
    def load(cls, state_dir: str | Path) -> ControlPlane | None:
        """The control plane recorded in ``state_dir``, if any."""
        return load_record(cls, Path(state_dir, "controlplane.json"))

    def alive(self) -> bool:
        """Whether both recorded processes still run."""
        return alive(self.etcd_pid) and alive(self.apiserver_pid)

    def write_kubeconfig(self, path: str, *, token: str, user: str) -> None:
        """Write a kubeconfig for ``user`` with a bearer token (mode 0600)."""
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as f:
            f.write(self.kubeconfig_text(token=token, user=user))

    def kubeconfig_text(self, *, token: str, user: str) -> str:
        """A kubeconfig (JSON, which is YAML) for ``user`` with a bearer token."""
        import base64

        ca = base64.b64encode(Path(self.ca_file).read_bytes()).decode()
        cluster = {"server": self.url, "certificate-authority-data": ca}
        doc = {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [{"name": "fracctl-sandbox", "cluster": cluster}],
            "users": [{"name": user, "user": {"token": token}}],
            "contexts": [
                {"name": "fracctl-sandbox", "context": {"cluster": "fracctl-sandbox", "user": user}}
            ],
            "current-context": "fracctl-sandbox",
        }
        return json.dumps(doc, indent=2)

    def stop(self, *, timeout: float = 15.0) -> None:
        """Stop the controllers, the API server, then etcd, by their recorded PIDs."""
        for pid in reversed(list(self.components.values())):
            terminate(pid, timeout)
        for pid in (self.apiserver_pid, self.etcd_pid):
            terminate(pid, timeout)


R = TypeVar("R")
Process = subprocess.Popen[bytes]  # a child process started by :func:`spawn`


def save_record(record: Any, path: Path) -> None:
    """Write a dataclass of PIDs and ports as JSON, for a later process to find."""
    path.write_text(json.dumps(asdict(record)))


def load_record(cls: type[R], path: Path) -> R | None:
    """The dataclass recorded at ``path`` by :func:`save_record`, if any (None if unreadable)."""
    if not path.is_file():
        return None
    try:
        return cls(**json.loads(path.read_text()))
    except (ValueError, TypeError):
        return None


#: What ``scripts/build-control-plane.sh`` builds, and ``KUBEBUILDER_ASSETS`` must hold.
BINARIES = ("etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler")


def find_binaries(repo_root: Path | None = None) -> Path:
    """The folder holding the control plane's binaries (:data:`BINARIES`).

    They are built (``scripts/build-control-plane.sh``) when the cache lacks one.
    """
    assets = os.environ.get("KUBEBUILDER_ASSETS")
    if assets:
        folder = Path(assets)
        lacks = [name for name in BINARIES if not (folder / name).is_file()]
        if not lacks:
            return folder
        raise UsageError(f"KUBEBUILDER_ASSETS={assets} lacks {', '.join(lacks)}")
    script = _build_script(repo_root)
    if script is None:
        from fracctl.sandbox.layout import built

        cached = built("control-plane", BINARIES)
        if cached is not None:
            return cached
        raise UsageError(
            "no control-plane binaries: set KUBEBUILDER_ASSETS to a folder holding "
            + ", ".join(BINARIES)
        )
    try:
        out = subprocess.run(
            ["bash", str(script)], check=True, stdout=subprocess.PIPE, text=True
        ).stdout
    except subprocess.CalledProcessError as e:
        raise ExternalError(f"building the control plane failed (exit {e.returncode})") from None
    return Path(out.strip().splitlines()[-1])


def _build_script(repo_root: Path | None) -> Path | None:
    candidates = [repo_root] if repo_root else []
    from fracctl.sandbox.layout import REPO_ROOT  # the checkout, or an installed copy

    candidates.append(REPO_ROOT)
    for root in candidates:
        if root and (root / "scripts" / "build-control-plane.sh").is_file():
            return root / "scripts" / "build-control-plane.sh"
    return None


def free_ports(names: tuple[str, ...] | list[str]) -> dict[str, int]:
    """A distinct unused loopback TCP port for each name (all bound until all are chosen)."""
    from contextlib import ExitStack

    with ExitStack() as held:
        ports = {}
        for name in names:
            sock = held.enter_context(socket.socket())
            sock.bind(("127.0.0.1", 0))
            ports[name] = int(sock.getsockname()[1])
    return ports


def free_port() -> int:
    """An unused loopback TCP port."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start(state_dir: str | Path, *, binaries: Path, detach: bool = False) -> ControlPlane:
    """Start etcd and kube-apiserver with state under ``state_dir``; wait until ready.

    With ``detach`` the processes get their own session so they outlive the caller.
    :func:`.controllers.start_beside` starts the rest.
    """
    state = Path(state_dir)
    for sub in ("etcd", "certs", "logs"):
        (state / sub).mkdir(parents=True, exist_ok=True)
    etcd_port, peer_port, api_port = free_port(), free_port(), free_port()
    admin_token, viewer_token = secrets.token_hex(24), secrets.token_hex(24)
    tokens = _write_tokens(state / "tokens.csv", admin_token, viewer_token)
    sa_key = state / "certs" / "sa.key"
    if not sa_key.is_file():
        _openssl_key(sa_key)
    with open(state / "logs" / "etcd.log", "ab") as etcd_log:
        etcd = spawn(_etcd_argv(binaries, state, etcd_port, peer_port), etcd_log, detach)
    argv = _apiserver_argv(binaries, state, etcd_port, api_port, tokens=tokens, sa_key=sa_key)
    with open(state / "logs" / "kube-apiserver.log", "ab") as api_log:
        apiserver = spawn(argv, api_log, detach)
    cp = ControlPlane(
        str(state), etcd.pid, apiserver.pid, api_port, admin_token, viewer_token, etcd_port
    )
    cp.save()
    try:
        _wait_ready(cp, apiserver)
        cp.write_kubeconfig(cp.kubeconfig, token=admin_token, user=ADMIN_USER)
        cp.write_kubeconfig(str(state / "viewer.kubeconfig"), token=viewer_token, user=VIEWER_USER)
    except BaseException:
        cp.stop()
        raise
    return cp


def _write_tokens(path: Path, admin_token: str, viewer_token: str) -> Path:
    """The API server's static token file (mode 0600): the admin and the viewer."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(f'{admin_token},{ADMIN_USER},uid-admin,"system:masters"\n')
        f.write(f"{viewer_token},{VIEWER_USER},uid-viewer\n")
    return path


def _etcd_argv(binaries: Path, state: Path, port: int, peer_port: int) -> list[str]:
    """The argv of etcd on loopback, its data under ``state``, without fsync (thrown away)."""
    return [
        str(binaries / "etcd"),
        "--name=default",
        f"--data-dir={state / 'etcd'}",
        f"--listen-client-urls=http://127.0.0.1:{port}",
        f"--advertise-client-urls=http://127.0.0.1:{port}",
        f"--listen-peer-urls=http://127.0.0.1:{peer_port}",
        f"--initial-advertise-peer-urls=http://127.0.0.1:{peer_port}",
        f"--initial-cluster=default=http://127.0.0.1:{peer_port}",
        "--unsafe-no-fsync=true",
        "--quota-backend-bytes=8589934592",
        "--log-level=warn",
    ]


def _apiserver_argv(
    binaries: Path, state: Path, etcd_port: int, port: int, *, tokens: Path, sa_key: Path
) -> list[str]:
    """The argv of kube-apiserver on loopback: RBAC, the static ``tokens``, its own cert."""
    return [
        str(binaries / "kube-apiserver"),
        f"--etcd-servers=http://127.0.0.1:{etcd_port}",
        "--bind-address=127.0.0.1",
        "--advertise-address=127.0.0.1",
        f"--secure-port={port}",
        f"--cert-dir={state / 'certs'}",
        f"--token-auth-file={tokens}",
        "--authorization-mode=RBAC",
        "--service-cluster-ip-range=10.0.0.0/24",
        "--allow-privileged=true",
        "--disable-admission-plugins=ServiceAccount",
        f"--service-account-key-file={sa_key}",
        f"--service-account-signing-key-file={sa_key}",
        "--service-account-issuer=https://fracctl.sandbox.local",
        "--enable-priority-and-fairness=false",
        "--max-requests-inflight=1000",
        # ConfigMaps are watched straight from etcd, not from the watch cache, so
        # that compacting etcd makes a real 410 Gone for a watch (tests rely on it).
        "--watch-cache-sizes=configmaps#0",
        "--v=0",
    ]


# Children started by this process, kept so they can be reaped (a detached sandbox's
# processes outlive us and are stopped later by PID alone).
_CHILDREN: dict[int, subprocess.Popen[bytes]] = {}


def spawn(
    argv: list[str],
    log: Any,
    detach: bool,
    *,
    cwd: str | Path | None = None,
    env: dict[str, str] | None = None,
) -> subprocess.Popen[bytes]:
    """Start a process with output to ``log``; remembered so it can be reaped."""
    proc = subprocess.Popen(
        argv,
        stdout=log,
        stderr=subprocess.STDOUT,
        stdin=subprocess.DEVNULL,
        start_new_session=detach,
        cwd=cwd,
        env=env,
    )
    stale = _CHILDREN.get(proc.pid)
    if stale is not None:  # the pid was reused: that process is gone, settle its record
        stale.poll()
    _CHILDREN[proc.pid] = proc
    return proc


def _wait_ready(cp: ControlPlane, proc: subprocess.Popen[bytes], timeout: float = 90.0) -> None:
    import ssl
    import urllib.request

    ctx = ssl.create_default_context()
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE  # only until the serving cert exists; probing readiness
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            log = Path(cp.state_dir, "logs", "kube-apiserver.log")
            tail = log.read_text(errors="replace").strip().splitlines()[-3:] if log.exists() else []
            raise ExternalError(f"kube-apiserver exited ({proc.returncode}): {' | '.join(tail)}")
        req = urllib.request.Request(
            cp.url + "/readyz", headers={"Authorization": f"Bearer {cp.admin_token}"}
        )
        try:
            with urllib.request.urlopen(req, context=ctx, timeout=2) as r:  # noqa: S310
                if r.status == 200 and Path(cp.ca_file).is_file():
                    return
        except OSError:
            pass
        time.sleep(0.25)
    raise TimedOut(f"kube-apiserver not ready after {timeout:.0f}s; see {cp.state_dir}/logs")


def _openssl_key(path: Path) -> None:
    if shutil.which("openssl") is None:
        raise ExternalError("openssl is needed to generate the service-account key")
    subprocess.run(
        ["openssl", "genrsa", "-out", str(path), "2048"],
        check=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    path.chmod(0o600)


def terminate(pid: int, timeout: float = 15.0) -> None:
    """SIGTERM ``pid``, then SIGKILL after ``timeout``; reap it if it is our child."""
    if not alive(pid):
        _settle(pid)
        return
    try:
        os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        _settle(pid)
        return
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        _reap(pid)
        if not alive(pid):
            _settle(pid)
            return
        time.sleep(0.1)
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    _settle(pid)


def _settle(pid: int) -> None:
    """Wait for a child that is gone or going (a zombie returns at once); forget it."""
    child = _CHILDREN.pop(pid, None)
    if child is not None:
        child.wait(timeout=10)
    else:
        _reap(pid)


def _reap(pid: int) -> None:
    child = _CHILDREN.get(pid)
    if child is not None:
        if child.poll() is not None:
            del _CHILDREN[pid]
        return
    try:
        os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        pass
