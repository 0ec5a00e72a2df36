"""`fracctl config view`: every setting's effective value, where it came from, secrets masked."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

from fracctl.config.view import effective
from fracctl.core.gitops import backends as registry
from fracctl.core.gitops.backends import BackendEntry
from fracctl.errors import ConfigError, ExitCode
from fracctl.redact import MASK
from tests.support.helpers import run_cli

FILE = """\
kube:
  kubeconfig: /etc/kube/admin.conf
timeouts:
  ready: 15m
  sync: 90
argocd:
  server: argocd.example.org
  token_file: /run/secrets/argocd-token
fleet:
  clusters:
    - eu-1
    - context: us-1
      wave: 1
"""


@dataclass(frozen=True)
class VaultConfig:
    """A backend's own section, with a secret in it."""

    address: str = "https://vault.example.org"
    api_token: str = ""


@pytest.fixture
def vault(monkeypatch: pytest.MonkeyPatch) -> None:
    entry = BackendEntry(
        "vault",
        "a backend with a section of its own",
        "tests.support.dry_backend:DryBackend",
        section=f"{__name__}:VaultConfig",
    )
    monkeypatch.setattr(registry, "REGISTRY", (*registry.REGISTRY, entry))


@pytest.fixture
def config(tmp_path: Path) -> Path:
    path = tmp_path / "fracctl.yaml"
    path.write_text(FILE)
    return path


def by_key(data: dict[str, object]) -> dict[str, dict[str, object]]:
    return {s["key"]: s for s in data["settings"]}  # type: ignore[attr-defined,index]


def test_each_value_says_where_it_came_from(config: Path) -> None:
    env = {"FRACCTL_TIMEOUTS_READY": "20m", "FRACCTL_GIT_REVISION": "main"}
    view = effective(
        str(config),
        env=env,
        overrides={"kube.context": "prod-eu-1", "kube.kubeconfig": None},
        flags={"kube.context": "--context"},
    )
    got = {s.key: (s.shown, s.source, s.origin) for s in view.settings}
    assert view.file == str(config)
    assert got["kube.context"] == ("prod-eu-1", "flag", "--context")
    assert got["timeouts.ready"] == (1200.0, "env", "FRACCTL_TIMEOUTS_READY")  # env beats file
    assert got["git.revision"] == ("main", "env", "FRACCTL_GIT_REVISION")
    assert got["kube.kubeconfig"] == ("/etc/kube/admin.conf", "file", f"{config}:2")
    assert got["timeouts.sync"] == (90.0, "file", f"{config}:5")
    assert got["timeouts.delete"] == (120.0, "default", None)
    assert got["target.kind"] == ("GpuFractioningConfig", "default", None)  # from the preset
    assert got["fleet.clusters"][0] == [  # type: ignore[index]
        {
            "context": "eu-1",
            "name": "eu-1",
            "wave": 0,
            "app": None,
            "path": None,
            "kubeconfig_secret": None,
        },
        {
            "context": "us-1",
            "name": "us-1",
            "wave": 1,
            "app": None,
            "path": None,
            "kubeconfig_secret": None,
        },
    ]


def test_every_key_of_every_section_is_listed(vault: None) -> None:
    from fracctl.config.loader import section_types, sections

    keys = [s.key for s in effective(None, env={}).settings]
    expected = [f"{name}.{key}" for name, cls in sections().items() for key in section_types(cls)]
    assert keys == expected
    assert "vault.api_token" in keys and "fleet.parallel" in keys


def test_secrets_are_masked_in_every_format(
    config: Path, vault: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FRACCTL_VAULT_API_TOKEN", "hvs.very-secret-value")
    r = run_cli("--config", str(config), "config", "view", "-o", "json")
    assert r.exit_code == ExitCode.OK, r.output
    rows = by_key(r.json)
    assert rows["argocd.token_file"]["value"] == MASK  # even a path: it leads to the token
    assert rows["vault.api_token"] == {
        "key": "vault.api_token",
        "value": MASK,
        "source": "env",
        "origin": "FRACCTL_VAULT_API_TOKEN",
    }
    assert rows["argocd.server"]["value"] == "argocd.example.org"
    for args in ([], ["-o", "yaml"]):
        out = run_cli("--config", str(config), "config", "view", *args)
        assert out.exit_code == ExitCode.OK, out.output
        assert "very-secret" not in out.stdout and "argocd-token" not in out.stdout
    assert by_key(yaml.safe_load(out.stdout)) == rows  # yaml and json say the same


def test_an_unset_secret_shows_that_it_is_unset() -> None:
    r = run_cli("config", "view", "-o", "json")
    assert r.exit_code == ExitCode.OK, r.output
    assert r.json["file"] is None
    assert by_key(r.json)["argocd.token_file"] == {
        "key": "argocd.token_file",
        "value": None,
        "source": "default",
        "origin": None,
    }


def test_the_table_has_every_setting_one_list_entry_a_line(config: Path) -> None:
    r = run_cli("--config", str(config), "--context", "prod", "config", "view")
    assert r.exit_code == ExitCode.OK, r.output
    lines = r.stdout.splitlines()
    assert lines[0].split() == ["SETTING", "VALUE", "SOURCE"]
    row = {line.split()[0]: line.split()[1:] for line in lines[1:-1] if not line.startswith(" ")}
    assert row["kube.context"] == ["prod", "--context"]
    assert row["timeouts.ready"] == ["15m", f"{config}:4"]
    assert row["timeouts.sync"] == ["90s", f"{config}:5"]
    assert row["timeouts.lock_lease"] == ["1m", "default"]
    assert row["argocd.token_file"] == [MASK, f"{config}:8"]
    assert row["argocd.app"] == ["null", "default"]
    assert row["git.helm_values"] == ["[]", "default"]
    at = next(i for i, line in enumerate(lines) if line.startswith("fleet.clusters "))
    assert lines[at].split()[1:4] == ["context=eu-1", "name=eu-1", "wave=0"]
    assert lines[at + 1].split() == ["context=us-1", "name=us-1", "wave=1"]
    assert lines[-1] == f"98 settings, 7 not default (file {config})"


def test_a_bad_value_is_the_one_line_error_every_command_gives(tmp_path: Path) -> None:
    path = tmp_path / "fracctl.yaml"
    path.write_text("timeouts:\n  ready: ten\n")
    r = run_cli("--config", str(path), "config", "view")
    assert r.exit_code == ExitCode.USAGE, r.output
    assert r.stderr == (
        f"Error: {path}:2: timeouts.ready: expected a duration like 10m or 600s, got 'ten'\n"
    )
    with pytest.raises(ConfigError):
        effective(str(path), env={})


def test_a_fleet_address_is_refused() -> None:
    r = run_cli("--context", "a", "--context", "b", "config", "view")
    assert r.exit_code == ExitCode.USAGE, r.output
    assert "give --context once" in r.stderr and "Traceback" not in r.output


def test_output_formats_are_checked_where_parsed() -> None:
    r = run_cli("config", "view", "-o", "xml")
    assert r.exit_code == ExitCode.USAGE, r.output
    assert "must be one of table, json, yaml; got 'xml'" in r.stderr
    assert json.loads(run_cli("config", "view", "-o", "json").stdout)["settings"]
