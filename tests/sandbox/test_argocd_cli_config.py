"""The sandbox's ``argocd`` CLI config: admin's token in a 0600 file, no other word masked."""

from __future__ import annotations

import json
import stat
from pathlib import Path

from fracctl import redact
from fracctl.sandbox.argocd_local.accounts import write_cli, write_secret_file
from fracctl.sandbox.argocd_local.processes import LocalArgoCD


def test_the_cli_config_holds_the_token_and_masks_nothing_else(tmp_path: Path) -> None:
    local = LocalArgoCD(str(tmp_path), kubeconfig="unused", port=43711)
    (tmp_path / "tokens").mkdir()
    token = "eyJhbGciOiJIUzI1NiJ9.sandbox-admin-token.signature"
    write_secret_file(Path(local.token_file("admin")), token)
    exe = tmp_path / "argocd-binary"
    exe.write_text("")
    write_cli(local, exe)
    config = tmp_path / "cli" / "config"
    assert stat.S_IMODE(config.stat().st_mode) == 0o600
    doc = json.loads(config.read_text())
    assert doc["users"] == [{"name": "127.0.0.1:43711", "auth-token": token}]
    assert doc["servers"] == [{"server": "127.0.0.1:43711", "plain-text": True}]
    assert (tmp_path / "cli" / "bin" / "argocd").resolve() == exe.resolve()
    # Only the token is a secret: the config's other lines stay readable everywhere.
    words = '"renderer": "plain", "current-context": "127.0.0.1:43711"'
    assert redact.redact(words) == words
    assert token not in redact.redact(f"token {token}")
