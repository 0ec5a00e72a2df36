"""The local Argo CD's accounts, their rights and their API tokens.

``admin`` (password in the state dir, used only to mint tokens), a CI account with
exactly ``applications, get`` and ``applications, sync`` on one project, and a
``role:readonly`` viewer. The settings go into ``argocd-cm``, ``argocd-rbac-cm`` and
``argocd-secret``; the tokens are written to ``tokens/<account>`` (mode 0600), and every
password and token is registered with :mod:`fracctl.redact`.
"""

from __future__ import annotations

import json
import os
import secrets
import subprocess
import time
from pathlib import Path
from typing import Any

from fracctl.adapters.kube import Kube
from fracctl.core.clock import utc_timestamp
from fracctl.errors import ExternalError, TimedOut
from fracctl.redact import register
from fracctl.sandbox.argocd_local.applications import put_object
from fracctl.sandbox.argocd_local.names import (
    CI_ACCOUNT,
    CI_ACTIONS,
    CONFIGMAPS,
    NAMESPACE,
    PART_OF,
    SECRETS,
    VIEWER_ACCOUNT,
)
from fracctl.sandbox.argocd_local.processes import LocalArgoCD
from fracctl.sandbox.argocd_local.rest import api


def write_settings(kube: Kube, exe: Path, password: str, project: str) -> None:
    """argocd-cm (accounts), argocd-rbac-cm (their rights), argocd-secret (admin)."""
    bcrypt = _bcrypt(exe, password)
    meta = {"namespace": NAMESPACE, "labels": dict(PART_OF)}
    put_object(kube, CONFIGMAPS, _accounts_configmap(meta))
    put_object(kube, CONFIGMAPS, _rbac_configmap(meta, project))
    put_object(kube, SECRETS, _admin_secret(meta, bcrypt))


def _bcrypt(exe: Path, password: str) -> str:
    """The bcrypt hash of ``password``, as ``argocd account bcrypt`` prints it."""
    return subprocess.run(
        [str(exe), "account", "bcrypt", "--password", password],
        check=True,
        capture_output=True,
        text=True,
        env={k: v for k, v in os.environ.items() if k != "ARGOCD_BINARY_NAME"},
    ).stdout.strip()


def _accounts_configmap(meta: dict[str, Any]) -> dict[str, Any]:
    """argocd-cm: the CI and viewer accounts (API keys only), admin enabled."""
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "argocd-cm", **meta},
        "data": {
            f"accounts.{CI_ACCOUNT}": "apiKey",
            f"accounts.{VIEWER_ACCOUNT}": "apiKey",
            "admin.enabled": "true",
            "timeout.reconciliation": "180s",
        },
    }


def _rbac_configmap(meta: dict[str, Any], project: str) -> dict[str, Any]:
    """argocd-rbac-cm: the CI account's actions on ``project``, the viewer read-only."""
    rules = [f"p, role:fracctl-ci, applications, {a}, {project}/*, allow" for a in CI_ACTIONS]
    return {
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
    }


def _admin_secret(meta: dict[str, Any], bcrypt: str) -> dict[str, Any]:
    """argocd-secret: a fresh server key and admin's password hash, changed now."""
    now = utc_timestamp()
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": "argocd-secret", **meta},
        "type": "Opaque",
        "stringData": {
            "server.secretkey": secrets.token_urlsafe(32),
            "admin.password": bcrypt,
            "admin.passwordMtime": now,
        },
    }


def write_secret_file(path: Path, value: str) -> None:
    """Write a password or token to ``path`` (mode 0600), masked in all fracctl writes."""
    register(value)  # a password or token: masked in everything fracctl writes
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(value + "\n")


def mint_tokens(argocd: LocalArgoCD, password: str, deadline: float) -> None:
    """Log in as admin and write its token, then one for the CI and viewer accounts."""
    admin = _login(argocd, password, deadline)
    write_secret_file(Path(argocd.token_file("admin")), admin)
    for account in (CI_ACCOUNT, VIEWER_ACCOUNT):
        doc = api(
            argocd.url,
            "POST",
            f"/api/v1/account/{account}/token",
            token=admin,
            body={"name": account},
        )
        write_secret_file(Path(argocd.token_file(account)), str(doc["token"]))


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
        except (ExternalError, TimedOut):
            if time.monotonic() > deadline:
                raise
            time.sleep(0.5)


def write_cli(argocd: LocalArgoCD, exe: Path) -> None:
    """The ``argocd`` CLI for a shell: a link to the binary and a config as admin.

    ``fracctl sandbox env`` puts ``cli/bin`` on ``PATH`` and names ``cli/config``
    (``--config`` in ``ARGOCD_OPTS``), so the fixes fracctl prints (``argocd app sync
    APP``) run as written. The config is the CLI's own (argo-cd ``util/localconfig``:
    one context whose server is this API server in plain text, whose user holds admin's
    token), JSON being YAML, mode 0600.
    """
    cli = Path(argocd.state_dir) / "cli"
    (cli / "bin").mkdir(parents=True, exist_ok=True)
    link = cli / "bin" / "argocd"
    link.unlink(missing_ok=True)
    link.symlink_to(exe)
    token = Path(argocd.token_file("admin")).read_text().strip()
    name = argocd.address
    config = {
        "current-context": name,
        "contexts": [{"name": name, "server": name, "user": name}],
        "servers": [{"server": name, "plain-text": True}],
        "users": [{"name": name, "auth-token": token}],
    }
    # Written as it is, not registered as a secret: only its token is one (registered when
    # it was minted); its other lines are words every output has.
    fd = os.open(cli / "config", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(json.dumps(config, indent=2) + "\n")
