"""``fracctl sandbox up --scenario examples/sandbox/helm-release.yaml``: a team's chart,
installed by the real helm (or by Flux's helm-controller with ``--flux``), stuck on an
immutable field, carried across as ``runbooks/helm-releases.md`` prints it.

Every line of each of the runbook's two sandbox blocks runs as printed, in order:
fracctl's through the CLI, helm's and kubectl's as the programs on the PATH that
``fracctl sandbox env`` exported.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
from pathlib import Path

import pytest

from fracctl.adapters.kube import Kube
from fracctl.errors import ExitCode
from fracctl.sandbox.layout import REPO_ROOT
from tests.project.test_runbooks import FENCE
from tests.support.helpers import run_cli

pytestmark = pytest.mark.cluster
OK, FINDING = ExitCode.OK, ExitCode.FINDING
RUNBOOK = REPO_ROOT / "runbooks" / "helm-releases.md"
SCENARIO = "examples/sandbox/helm-release.yaml"
PVCS = ("v1", "PersistentVolumeClaim")

#: Each block's lines (comments cut), what each ends with and words its output holds.
HELM: list[tuple[str, int, tuple[str, ...]]] = [
    (f"fracctl sandbox up --scenario {SCENARIO}", OK, ()),
    ('eval "$(fracctl sandbox env)"', OK, ()),
    ("helm -n shop history app", OK, ("failed", 'Upgrade "app" failed')),
    ("fracctl drift --all", FINDING, (
        "StatefulSet/shop/db: needs-recreate", "an object of Helm release shop/app",
        "fracctl recreate StatefulSet/db -n shop --backend helm runs the orphan-and-adopt")),
    ("fracctl recreate StatefulSet/db -n shop --backend helm --dry-run", OK, (
        "helm upgrade --dry-run=server of git's chart",)),
    ("fracctl recreate StatefulSet/db -n shop --backend helm --yes", OK, (
        "none restarted", "helm upgrade of release shop/app: revision 3 deployed")),
    ("fracctl drift --all", OK, ("2 objects: 2 in-sync",)),
    ("helm -n shop history app", OK, ("deployed",)),
    ("fracctl sandbox down", OK, ("sandbox stopped",)),
]  # fmt: skip

FLUX: list[tuple[str, int, tuple[str, ...]]] = [
    (f"fracctl sandbox up --flux --scenario {SCENARIO}", OK, ("HelmRelease flux-system/app",)),
    ('eval "$(fracctl sandbox env)"', OK, ()),
    ("kubectl -n flux-system get helmrelease app", OK, (
        "False", "Helm upgrade failed for release shop/app")),
    ("fracctl drift --all", FINDING, (
        "an object of Flux HelmRelease flux-system/app, Ready=False",
        "fracctl recreate StatefulSet/db -n shop --backend flux runs the orphan-and-adopt")),
    ("fracctl recreate StatefulSet/db -n shop --backend flux --dry-run", OK, (
        "fracctl suspends HelmRelease flux-system/app",)),
    ("fracctl recreate StatefulSet/db -n shop --backend flux --yes", OK, (
        "none restarted", "Flux HelmRelease flux-system/app is Ready: release revision 3")),
    ("kubectl -n flux-system get helmrelease app", OK, (
        "True", "Helm upgrade succeeded for release shop/app.v3")),
    ("fracctl sandbox down", OK, ("sandbox stopped",)),
]  # fmt: skip


def blocks() -> list[list[str]]:
    """The runbook's shell blocks that start the sandbox, each line without its comment."""
    found = []
    for lang, block in FENCE.findall(RUNBOOK.read_text()):
        lines = [ln.split("  #")[0].strip() for ln in block.splitlines() if ln.strip()]
        if lang == "sh" and lines and lines[0].startswith("fracctl sandbox up"):
            found.append(lines)
    return found


def test_the_runbook_has_one_block_for_helm_and_one_for_flux() -> None:
    assert blocks() == [[s[0] for s in HELM], [s[0] for s in FLUX]], (
        "the runbook changed: update HELM and FLUX"
    )


def follow(steps: list[tuple[str, int, tuple[str, ...]]], monkeypatch: pytest.MonkeyPatch,
           tmp_path: Path) -> Kube:  # fmt: skip
    """Run ``steps`` up to the last (``sandbox down``, the caller's); the sandbox's Kube."""
    monkeypatch.chdir(REPO_ROOT)
    monkeypatch.setenv("FRACCTL_SANDBOX_DIR", str(tmp_path / "sandbox"))
    kube: Kube | None = None
    for i, (line, code, words) in enumerate(steps[:-1], start=1):
        if line.startswith("eval "):  # eval "$(fracctl sandbox env)"
            env = run_cli("sandbox", "env")
            assert env.exit_code == OK, env.output
            for name, value in re.findall(r'^export (\w+)="?(.*?)"?$', env.stdout, re.M):
                monkeypatch.setenv(name, value.replace("$PATH", os.environ.get("PATH", "")))
            kube = Kube.connect(kubeconfig=os.environ["KUBECONFIG"])
            continue
        argv = shlex.split(line)
        if argv[0] == "fracctl":
            r = run_cli(*argv[1:])
            rc, output = r.exit_code, r.output
        else:
            if argv[0] == "kubectl" and shutil.which("kubectl") is None:
                pytest.skip("kubectl is not installed")  # pragma: no cover
            proc = subprocess.run(argv, capture_output=True, text=True, check=False,
                                  env=dict(os.environ))  # fmt: skip
            rc, output = proc.returncode, proc.stdout + proc.stderr
        assert rc == code, f"line {i}: {line}\n{output}"
        for word in words:
            assert word in output, f"line {i}: {line}: no {word!r}\n{output}"
    assert kube is not None
    return kube


def down(steps: list[tuple[str, int, tuple[str, ...]]]) -> None:
    r = run_cli(*shlex.split(steps[-1][0])[1:])
    assert r.exit_code == OK, r.output
    assert "sandbox stopped" in r.output


def claims_grew(kube: Kube) -> None:
    """Both claims were expanded to git's 2Gi, and still bound to their volumes."""
    ref = kube.resolve(*PVCS)
    for n in (0, 1):
        claim = kube.get(ref, f"data-db-{n}", "shop")
        assert claim["spec"]["resources"]["requests"]["storage"] == "2Gi"
        assert claim["status"]["phase"] == "Bound"


@pytest.mark.parametrize(("steps"), [HELM, FLUX], ids=["helm", "flux"])
def test_the_release_scenario_runs_as_the_runbook_prints_it(
    steps: list[tuple[str, int, tuple[str, ...]]],
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    try:
        kube = follow(steps, monkeypatch, tmp_path)
        claims_grew(kube)
        sts = kube.get(kube.resolve("apps/v1", "StatefulSet"), "db", "shop")
        assert sts["spec"]["podManagementPolicy"] == "Parallel"
        kube.close()
    finally:
        down(steps)
