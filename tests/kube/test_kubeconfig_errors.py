"""A kubeconfig that cannot be used: one line naming the file or context, exit 2."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from fracctl.adapters.kube import Kube
from fracctl.core.kube.resources import NODES
from fracctl.errors import ConfigError, ExitCode
from tests.support.helpers import Result, run_cli

TOKEN = "s3cret-bearer-token-0123456789"

GOOD = f"""\
apiVersion: v1
kind: Config
clusters:
- name: c
  cluster: {{server: "https://127.0.0.1:1"}}
users:
- name: u
  user: {{token: {TOKEN}}}
contexts:
- name: a
  context: {{cluster: c, user: u}}
- name: b
  context: {{cluster: c, user: u}}
current-context: a
"""


def refused(r: Result, *needles: str) -> str:
    assert r.exit_code == ExitCode.USAGE, r.output
    assert len(r.stderr.strip().splitlines()) == 1, r.stderr
    assert "Traceback" not in r.output
    assert TOKEN not in r.output
    for needle in needles:
        assert needle in r.stderr, r.stderr
    return r.stderr


def test_missing_file_from_the_flag_is_named() -> None:
    refused(run_cli("--kubeconfig", "/missing", "wait"), "kubeconfig /missing: file not found")


def test_missing_file_from_kubeconfig_env_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    # Read when connecting, not when the client library was imported.
    monkeypatch.setenv("KUBECONFIG", "/missing/config")
    refused(run_cli("wait"), "KUBECONFIG=/missing/config: file not found")
    monkeypatch.setenv("KUBECONFIG", f"/missing/a{os.pathsep}/missing/b")
    refused(run_cli("wait"), "none of these files exists", "/missing/a", "/missing/b")


def test_missing_file_from_the_config_file_is_named() -> None:
    Path("fracctl.yaml").write_text("kube:\n  kubeconfig: /missing/kc\n")
    refused(run_cli("wait"), "kubeconfig /missing/kc: file not found")


def test_no_kubeconfig_at_all_names_the_default_path() -> None:
    err = refused(run_cli("wait"), "no kubeconfig:", ".kube/config does not exist")
    assert "--kubeconfig" in err


def test_not_yaml_names_file_and_line_without_content(tmp_path: Path) -> None:
    kc = tmp_path / "kc"
    kc.write_text(f"users:\n- name: u\n  user: {{token: {TOKEN}}}\nclusters: [ {{name: c\n")
    refused(run_cli("--kubeconfig", str(kc), "wait"), f"kubeconfig {kc}:", "not valid YAML")


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ("", "is empty"),
        ("just a string\n", "not a kubeconfig"),
        ("- a\n- b\n", "not a kubeconfig"),
        ("contexts: 5\n", "not a kubeconfig"),
    ],
)
def test_not_a_kubeconfig_is_named(tmp_path: Path, text: str, needle: str) -> None:
    kc = tmp_path / "kc"
    kc.write_text(text)
    refused(run_cli("--kubeconfig", str(kc), "wait"), f"kubeconfig {kc}", needle)


def test_a_directory_is_not_a_kubeconfig(tmp_path: Path) -> None:
    refused(run_cli("--kubeconfig", str(tmp_path), "wait"), "is a directory")


def test_missing_context_is_named_with_the_known_ones(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    kc = tmp_path / "kc"
    kc.write_text(GOOD)
    refused(
        run_cli("--kubeconfig", str(kc), "--context", "prod", "wait"),
        f"kubeconfig {kc}: context 'prod' not found (contexts: a, b)",
    )
    monkeypatch.setenv("KUBECONFIG", str(kc))
    refused(run_cli("--context", "prod", "wait"), "(from KUBECONFIG)", "context 'prod' not found")
    kc.write_text(GOOD.replace("current-context: a", "current-context: gone"))
    refused(run_cli("wait"), "current-context 'gone' not found")
    kc.write_text(GOOD.replace("current-context: a\n", ""))
    refused(run_cli("wait"), "no current-context set", "--context")


def test_broken_entry_is_one_line_without_the_entry(tmp_path: Path) -> None:
    kc = tmp_path / "kc"
    kc.write_text(GOOD.replace("context: {cluster: c, user: u}\n- name: b", "context: {}\n- x: b"))
    refused(run_cli("--kubeconfig", str(kc), "wait"), f"kubeconfig {kc}")
    # The library names a broken entry by its whole dict; it is left out.
    kc.write_text(
        GOOD.replace(
            "- name: a\n  context: {cluster: c, user: u}", "- name: a\n  context: {user: u}"
        )
    )
    err = refused(run_cli("--kubeconfig", str(kc), "wait"), "Expected key cluster")
    assert "'name'" not in err


def test_connect_raises_config_error() -> None:
    with pytest.raises(ConfigError, match="kubeconfig /missing: file not found"):
        Kube.connect(kubeconfig="/missing")


def test_kubeconfig_list_skips_missing_entries_like_kubectl(
    kubeconfig: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """On the real API server: $KUBECONFIG with a missing entry still connects."""
    monkeypatch.setenv("KUBECONFIG", f"/missing/config{os.pathsep}{kubeconfig}")
    kube = Kube.connect()
    assert isinstance(kube.list(NODES), list)
    r = run_cli("--context", "nope", "nodes", "check")
    refused(r, f"{kubeconfig} (from KUBECONFIG): context 'nope' not found")
