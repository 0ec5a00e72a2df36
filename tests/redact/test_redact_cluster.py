"""On the real API server: an Argo CD token echoed back never reaches stderr, stdout,
the audit log or the Events of ``fracctl recreate``."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from fracctl import redact as r
from fracctl.core.kube.resources import EVENTS
from fracctl.errors import ExitCode
from tests.redact.test_redact import FORMS, TOKEN, leaked, needles
from tests.support.argocd_standin import ArgoCDStandIn, grpc_error
from tests.support.helpers import Cluster, run_cli
from tests.support.recreate_fixtures import Incident, make_incident

#: Every form at once, as a server that quotes what it was sent might.
ECHO = " | ".join(f(TOKEN) for k, f in FORMS.items() if k != "truncated-at-the-end")


@pytest.fixture
def incident(cluster: Cluster, tmp_path: Path) -> Iterator[Incident]:
    r.forget_all()
    yield make_incident(cluster, tmp_path)
    r.forget_all()


def assert_no_token(*texts: str) -> None:
    for text in texts:
        assert not leaked(text, *needles("raw")), text


def argocd_env(monkeypatch: pytest.MonkeyPatch, argo: ArgoCDStandIn) -> None:
    monkeypatch.setenv("ARGOCD_AUTH_TOKEN", TOKEN)
    monkeypatch.setenv("FRACCTL_ARGOCD_SERVER", argo.url)
    monkeypatch.setenv("FRACCTL_ARGOCD_APP", argo.app_name)


def test_a_failed_sync_echoing_the_token_leaks_nowhere(
    incident: Incident, monkeypatch: pytest.MonkeyPatch
) -> None:
    desired = incident.desired()
    with ArgoCDStandIn(
        kubeconfig=incident.cluster.kubeconfig, manifests=desired, token=TOKEN
    ) as argo:
        rehearse = argo.sync

        def sync(body: dict[str, Any]) -> dict[str, Any]:
            if body.get("dryRun"):  # the rehearsal passes; the sync after the delete fails
                return rehearse(body)
            raise grpc_error(500, 13, f"sync failed for session {ECHO}")

        argo.sync = sync  # type: ignore[method-assign]
        argocd_env(monkeypatch, argo)
        with incident.operator():
            res = run_cli(
                "-c", str(incident.config_file), "recreate", "--yes", "--backend", "argocd"
            )
    assert res.exit_code == ExitCode.EXTERNAL, res.output
    assert "sync failed for session invalid token ***" in res.stderr
    audit = (incident.state_dir / "audit.log").read_text().splitlines()
    last = json.loads(audit[-1])
    assert last["outcome"].startswith("failed: ") and "***" in last["outcome"]
    assert_no_token(res.stdout, res.stderr, "\n".join(audit))
    for backup in (incident.state_dir / "backups").glob("*.yaml"):
        assert_no_token(backup.read_text())


def test_a_sync_message_echoing_the_token_leaks_nowhere(
    incident: Incident, monkeypatch: pytest.MonkeyPatch
) -> None:
    desired = incident.desired()
    with ArgoCDStandIn(
        kubeconfig=incident.cluster.kubeconfig, manifests=desired, token=TOKEN
    ) as argo:
        finish = argo._finish

        def finish_echoing(state: dict[str, Any], phase: str, message: str) -> None:
            finish(state, phase, f"{message} (as {ECHO})")

        argo._finish = finish_echoing  # type: ignore[method-assign]
        argocd_env(monkeypatch, argo)
        with incident.operator():
            res = run_cli(
                "-c",
                str(incident.config_file),
                "recreate",
                "--yes",
                "--backend",
                "argocd",
                "-o",
                "json",
            )
    assert res.exit_code == ExitCode.OK, res.output
    notes = res.json["notes"]
    assert any("Argo CD sync" in n and "(as invalid token ***" in n for n in notes), notes
    audit = (incident.state_dir / "audit.log").read_text()
    events = incident.cluster.kube.list(EVENTS, namespace="default")
    messages = "\n".join(str(e.get("message")) for e in events)
    assert_no_token(res.stdout, res.stderr, audit, messages)
