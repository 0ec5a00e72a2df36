"""An installed wheel (not an editable checkout) carries what the sandbox reads from the
tree: the scenarios, the GitOps examples and the gate's component."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from fracctl.sandbox import fleet_wiring, layout

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> zipfile.ZipFile:
    out = tmp_path_factory.mktemp("wheel")
    proc = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", str(REPO), "--no-deps", "--no-build-isolation",
         "-q", "-w", str(out)],
        capture_output=True, text=True, timeout=240, check=False,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    (built,) = out.glob("fracctl-*.whl")
    return zipfile.ZipFile(built)


def tracked(*folders: str) -> list[str]:
    proc = subprocess.run(["git", "-C", str(REPO), "ls-files", "--", *folders],
                          capture_output=True, text=True, check=True)  # fmt: skip
    return [line for line in proc.stdout.splitlines() if line]


def test_every_file_of_examples_and_deploy_is_in_the_wheel(wheel: zipfile.ZipFile) -> None:
    names = set(wheel.namelist())
    files = tracked("examples", "deploy")
    assert files, "git ls-files found nothing"
    missing = [f for f in files if f"fracctl/_tree/{f}" not in names]
    assert not missing, missing


def test_what_the_fleet_sandbox_reads_is_among_them(wheel: zipfile.ZipFile) -> None:
    names = set(wheel.namelist())
    read = [layout.DEFAULT_SCENARIO, fleet_wiring.EXAMPLE / "gate-applicationset.yaml",
            fleet_wiring.EXAMPLE / "gate" / "kustomization.yaml",
            REPO / "deploy" / "components" / "argocd-gate" / "hooks.yaml"]  # fmt: skip
    for path in read:
        assert f"fracctl/_tree/{path.relative_to(REPO)}" in names, path


def test_an_installed_package_reads_its_own_copy(tmp_path: Path) -> None:
    package = tmp_path / "site-packages" / "fracctl"
    (package / "_tree" / "examples").mkdir(parents=True)
    assert layout.tree_root(package) == package / "_tree"
    assert layout.tree_root(REPO / "fracctl") == REPO


def test_an_installed_package_finds_the_parts_already_built(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FRACCTL_CACHE", str(tmp_path))
    assert layout.built("kwok", ("kwok", "stages")) is None
    for version in ("v0.7.0", "v0.8.0", "v0.9.0"):
        folder = tmp_path / "kwok" / version
        (folder / "stages").mkdir(parents=True)
        if version != "v0.9.0":  # built only in part
            (folder / "kwok").write_text("")
    assert layout.built("kwok", ("kwok", "stages")) == tmp_path / "kwok" / "v0.8.0"
