"""deploy/overlays/drift-cronjob-pushgateway: the drift CronJob that pushes its metrics.

The overlay is built with kustomize and passes a server-side dry run and fracctl lint,
like the others (tests/project/test_deploy.py); its container's script is then run for
real, with the fracctl of this checkout, against the session's API server and a stand-in
Pushgateway that records each push.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from prometheus_client.parser import text_string_to_metric_families

from fracctl.core.kube.resources import NAMESPACES
from fracctl.errors import Conflict, ExitCode
from tests.project.test_deploy import build, drift_pod, dump_all
from tests.support.helpers import Cluster, run_cli
from tests.support.metrics import OPT_IN, RTX, plain_config

OVERLAY = "drift-cronjob-pushgateway"
BIN = Path(sys.executable).parent  # the virtualenv's fracctl and python


@dataclass
class Pushgateway:
    """A stand-in Pushgateway: records (method, path, body) and answers ``status``."""

    url: str = ""
    status: int = 200
    pushes: list[tuple[str, str, str]] = field(default_factory=list)


@pytest.fixture
def pushgateway() -> Iterator[Pushgateway]:
    gw = Pushgateway()

    class Handler(BaseHTTPRequestHandler):
        def do_PUT(self) -> None:
            body = self.rfile.read(int(self.headers["Content-Length"])).decode()
            gw.pushes.append((self.command, self.path, body))
            self.send_response(gw.status)
            self.end_headers()

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    gw.url = f"http://127.0.0.1:{server.server_port}"
    try:
        yield gw
    finally:
        server.shutdown()
        server.server_close()


def the_container() -> dict[str, Any]:
    (container,) = drift_pod(build(OVERLAY), "CronJob")["containers"]
    return container  # type: ignore[no-any-return]


def test_the_overlay_is_the_drift_cronjob_with_a_push() -> None:
    objs = build(OVERLAY)
    assert [o["kind"] for o in objs] == [o["kind"] for o in build("drift-cronjob")]
    pod = drift_pod(objs, "CronJob")
    assert pod["serviceAccountName"] == "fracctl-drift"
    (container,) = pod["containers"]
    assert container["command"] == ["/bin/sh", "-c"]
    script = container["args"][0]
    assert 'fracctl drift --metrics-file "$METRICS_FILE"' in script
    assert '"PUT"' in script and "$PUSHGATEWAY_URL" in script
    assert "--metrics-file" in run_cli("drift", "--help").stdout
    env = {e["name"]: e.get("value") for e in container["env"]}
    assert env["FRACCTL_KUBE_IN_CLUSTER"] == "true"  # the base's environment is kept
    assert env["METRICS_FILE"].startswith("/tmp/")  # the writable emptyDir
    assert env["PUSHGATEWAY_URL"].endswith("/metrics/job/fracctl_drift")


def test_the_overlay_passes_a_dry_run_and_lint(cluster: Cluster, tmp_path: Path) -> None:
    objs = build(OVERLAY)
    for name in sorted({o["metadata"].get("namespace") for o in objs} - {None}):
        try:
            cluster.kube.create(NAMESPACES, {"metadata": {"name": name}})
        except Conflict:
            pass
    for obj in objs:
        try:
            cluster.kube.create(
                cluster.kube.resolve(obj["apiVersion"], obj["kind"]), obj, dry_run=True
            )
        except Conflict as e:
            assert e.status.reason == "AlreadyExists", e
    built = tmp_path / f"{OVERLAY}.yaml"
    built.write_text(dump_all(objs))
    r = run_cli("lint", str(built))
    assert r.exit_code == ExitCode.OK, r.output


def run_script(tmp_path: Path, config: str, gw: Pushgateway) -> subprocess.CompletedProcess[str]:
    """The container's script under /bin/sh, as the Job runs it, with this checkout's fracctl."""
    container = the_container()
    url = {e["name"]: e["value"] for e in container["env"]}["PUSHGATEWAY_URL"]
    env = {
        "PATH": f"{BIN}:{os.environ.get('PATH', '/usr/bin:/bin')}",
        "HOME": str(tmp_path),
        "COLUMNS": "160",
        "FRACCTL_CONFIG": config,
        "METRICS_FILE": str(tmp_path / "fracctl_drift.prom"),
        "PUSHGATEWAY_URL": gw.url + url.split(":9091", 1)[1],
    }
    return subprocess.run(
        [*container["command"], container["args"][0]],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def pushed_verdicts(body: str) -> dict[str, float]:
    (fam,) = [f for f in text_string_to_metric_families(body) if f.name == "fracctl_drift_objects"]
    return {s.labels["verdict"]: s.value for s in fam.samples if s.value}


def test_drift_is_pushed_and_still_fails_the_job(
    tmp_path: Path, cluster: Cluster, pushgateway: Pushgateway
) -> None:
    cluster.target(RTX)
    config = plain_config(tmp_path, cluster.kubeconfig)
    p = run_script(tmp_path, config, pushgateway)
    assert p.returncode == ExitCode.FINDING, p.stdout + p.stderr
    assert "needs-recreate" in p.stdout and "spec.nodeSelector" in p.stdout  # the table
    assert "pushed " in p.stdout
    ((method, path, body),) = pushgateway.pushes
    assert (method, path) == ("PUT", "/metrics/job/fracctl_drift")
    assert pushed_verdicts(body) == {"needs-recreate": 1}
    pushgateway.status = 500  # a failed push does not hide the drift's exit code
    p = run_script(tmp_path, config, pushgateway)
    assert p.returncode == ExitCode.FINDING, p.stdout + p.stderr


def test_in_sync_is_pushed_and_a_failed_push_fails_the_job(
    tmp_path: Path, cluster: Cluster, pushgateway: Pushgateway
) -> None:
    cluster.target(OPT_IN)
    config = plain_config(tmp_path, cluster.kubeconfig)
    p = run_script(tmp_path, config, pushgateway)
    assert p.returncode == ExitCode.OK, p.stdout + p.stderr
    assert pushed_verdicts(pushgateway.pushes[-1][2]) == {"in-sync": 1}
    pushgateway.status = 503
    p = run_script(tmp_path, config, pushgateway)
    assert p.returncode == ExitCode.EXTERNAL, p.stdout + p.stderr
    assert "503" in p.stderr


def test_a_run_that_cannot_judge_pushes_nothing(
    tmp_path: Path, cluster: Cluster, pushgateway: Pushgateway
) -> None:
    bad = tmp_path / "fracctl.yaml"
    bad.write_text(
        f"kube:\n  kubeconfig: {cluster.kubeconfig}\ngit:\n  repo: {tmp_path / 'none'}\n"
    )
    p = run_script(tmp_path, str(bad), pushgateway)
    assert p.returncode not in (ExitCode.OK, ExitCode.FINDING), p.stdout + p.stderr
    assert pushgateway.pushes == []  # the last good push stays; the stale-run alert fires
