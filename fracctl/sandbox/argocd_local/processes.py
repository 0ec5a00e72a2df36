"""The local Argo CD's processes: how they are started, waited for and stopped.

One upstream ``argocd`` binary runs as the repo server, the application controller, the
ApplicationSet controller (progressive syncs on) and the API server (chosen by
``ARGOCD_BINARY_NAME``), with a ``redis-server`` beside them.
:class:`LocalArgoCD` is the record of a started one: its state dir, port and PIDs, saved
in the state dir so that a later process can find and stop it. Processes are stopped by
the PIDs recorded when they were started, nothing else.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar

from fracctl.sandbox import controlplane
from fracctl.sandbox.argocd_local.binaries import locate_redis
from fracctl.sandbox.argocd_local.names import CI_ACCOUNT, NAMESPACE, VERSION
from fracctl.sandbox.recorded import Recorded

PROCESSES = (
    "argocd-server",
    "argocd-applicationset-controller",
    "argocd-application-controller",
    "argocd-repo-server",
    "redis",
)
_PORTS = (
    "redis",
    "repo",
    "repo-metrics",
    "ctl-metrics",
    "server-metrics",
    "dex",
    "appset-metrics",
    "appset-probe",
    "appset-webhook",
)
#: The ``ARGOCD_*`` variables the processes are given; any other is left out.
_OWN_VARIABLES = (
    "ARGOCD_FAKE_IN_CLUSTER",
    "ARGOCD_GPG_ENABLED",
    "ARGOCD_TLS_DATA_PATH",
    "ARGOCD_SSH_DATA_PATH",
    "ARGOCD_GNUPGHOME",
    "ARGOCD_GPG_DATA_PATH",
)


@dataclass
class LocalArgoCD(Recorded):
    """A running (or recorded) local Argo CD."""

    RECORD: ClassVar[str] = "argocd.json"
    PROCESSES: ClassVar[tuple[str, ...]] = PROCESSES

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


def allocate_ports() -> dict[str, int]:
    """A free loopback port for redis, the repo server, each metrics server and Dex."""
    return controlplane.free_ports(_PORTS)


def process_env(state: Path, kubeconfig: str, kustomize: Path | None) -> dict[str, str]:
    """The environment the processes share: this one, less any other ``ARGOCD_*``.

    ``ARGOCD_FAKE_IN_CLUSTER=true`` with ``KUBECONFIG`` makes the in-cluster destination
    ``https://kubernetes.default.svc`` mean the given control plane.
    """
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
        if name.startswith("ARGOCD_") and name not in _OWN_VARIABLES:
            del env[name]  # an operator's ARGOCD_SERVER/ARGOCD_AUTH_TOKEN must not leak in
    if kustomize is not None:
        env["PATH"] = f"{kustomize}{os.pathsep}{env.get('PATH', '')}"
    return env


def commands(state: Path, exe: Path, ports: dict[str, int], port: int) -> dict[str, list[str]]:
    """The command line of each process; ``port`` is the API server's."""
    # fmt: off
    return {
        "redis": [
            str(locate_redis()),
            "--bind", "127.0.0.1",
            "--port", str(ports["redis"]),
            "--save", "",
            "--appendonly", "no",
            "--dir", str(state / "redis"),
        ],
        **_controllers(exe, ports),
        "argocd-server": [
            str(exe),
            "--namespace", NAMESPACE,
            "--insecure",
            "--address", "127.0.0.1",
            "--port", str(port),
            "--metrics-address", "127.0.0.1",
            "--metrics-port", str(ports["server-metrics"]),
            "--redis", f"127.0.0.1:{ports['redis']}",
            "--repo-server", f"127.0.0.1:{ports['repo']}",
            "--repo-server-plaintext",
            # No Dex: SSO is off; point it at a closed port so nothing is reached.
            "--dex-server", f"http://127.0.0.1:{ports['dex']}",
            # No UI assets: the API is all that is needed.
            "--staticassets", str(state / "no-ui"),
            "--loglevel", "info",
        ],
    }
    # fmt: on


def _controllers(exe: Path, ports: dict[str, int]) -> dict[str, list[str]]:
    """The command lines of the repo server and of both controllers."""
    redis = f"127.0.0.1:{ports['redis']}"
    repo = f"127.0.0.1:{ports['repo']}"
    # fmt: off
    return {
        "argocd-repo-server": [
            str(exe),
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
            str(exe),
            "--namespace", NAMESPACE,
            "--repo-server", repo,
            "--repo-server-plaintext",
            "--redis", redis,
            "--metrics-port", str(ports["ctl-metrics"]),
            "--status-processors", "4",
            "--operation-processors", "2",
            "--loglevel", "info",
        ],
        # Progressive syncs (RollingSync) are off unless asked for (its
        # cmd/argocd-applicationset-controller/commands/applicationset_controller.go).
        # Its Kubernetes clients read KUBECONFIG (controller-runtime), not --kubeconfig.
        "argocd-applicationset-controller": [
            str(exe),
            "--namespace", NAMESPACE,
            "--enable-progressive-syncs",
            "--argocd-repo-server", repo,
            "--repo-server-plaintext",
            "--metrics-addr", f"127.0.0.1:{ports['appset-metrics']}",
            "--probe-addr", f"127.0.0.1:{ports['appset-probe']}",
            "--webhook-addr", f"127.0.0.1:{ports['appset-webhook']}",
            "--loglevel", "info",
            "--logformat", "text",
        ],
    }
    # fmt: on


def launch(
    argocd: LocalArgoCD, argv: dict[str, list[str]], env: dict[str, str], detach: bool
) -> None:
    """Spawn redis first and the API server last, recording each PID as it starts."""
    for name in reversed(PROCESSES):
        proc_env = dict(env)
        if name != "redis":
            proc_env["ARGOCD_BINARY_NAME"] = name
        with open(argocd.log(name), "ab") as log:
            proc = controlplane.spawn(argv[name], log, detach, env=proc_env)
        argocd.pids[name] = proc.pid
        argocd.save()


def wait_ready(argocd: LocalArgoCD, ports: dict[str, int], deadline: float) -> None:
    """Block until the repo server, both controllers and the API server answer healthy."""
    for name, url in (
        ("argocd-repo-server", f"http://127.0.0.1:{ports['repo-metrics']}/healthz"),
        ("argocd-application-controller", f"http://127.0.0.1:{ports['ctl-metrics']}/healthz"),
        # It registers no health check of its own: its metrics answer once it serves.
        ("argocd-applicationset-controller", f"http://127.0.0.1:{ports['appset-metrics']}/metrics"),
        ("argocd-server", f"{argocd.url}/healthz?full=true"),
    ):
        argocd.wait_http(name, url, deadline)
