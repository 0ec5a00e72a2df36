"""``fracctl sandbox up --scenario examples/sandbox/operator-chart.yaml``: the operator from
its chart, by the real helm, and ``recreate.backend: helm`` carrying git's selector through
the chart's own upgrade, followed as ``runbooks/operator-upgrades.md`` prints it."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
from pathlib import Path

import pytest

from fracctl import config as cfg
from fracctl.adapters.kube import Kube
from fracctl.errors import ExitCode
from fracctl.sandbox.layout import REPO_ROOT
from tests.project.test_runbooks import command_lines
from tests.support.helpers import run_cli

pytestmark = pytest.mark.cluster
OK, FINDING = ExitCode.OK, ExitCode.FINDING
RUNBOOK = REPO_ROOT / "runbooks" / "operator-upgrades.md"
UP = "fracctl sandbox up --scenario examples/sandbox/operator-chart.yaml"

#: The runbook's sandbox lines, what each ends with and words its output holds.
STEPS: list[tuple[str, tuple[ExitCode, ...], tuple[str, ...]]] = [
    (UP, (OK,), ()),
    ("fracctl doctor", (FINDING,), ("denied-selected",)),
    ("fracctl drift", (FINDING,), (
        "needs-recreate", "carried: fracctl recreate (recreate.backend: helm)")),
    ("fracctl nodes label b200-0", (OK,), ("b200-0",)),
    ("fracctl recreate --backend helm --dry-run", (OK,), ("helm upgrade --dry-run=server",)),
    ("fracctl recreate --backend helm --yes", (OK,), (
        "helm upgrade of release gpu-fractioning/gpu-fractioning: revision 2 deployed",)),
    ("fracctl drift", (OK,), ("carried: fracctl recreate (recreate.backend: helm)",)),
    ("fracctl sandbox down", (OK,), ("sandbox stopped",)),
]  # fmt: skip


def sandbox_lines() -> list[str]:
    """The runbook's fracctl lines from the sandbox's ``up`` to its ``down``."""
    lines = command_lines(RUNBOOK)
    start = lines.index(UP)
    return lines[start : lines.index("fracctl sandbox down", start) + 1]


def test_the_chart_scenario_runs_as_the_runbook_prints_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.chdir(REPO_ROOT)
    assert sandbox_lines() == [s[0] for s in STEPS], "the runbook changed: update STEPS"
    up, *rest = STEPS
    r = run_cli(*shlex.split(up[0])[1:])
    assert r.exit_code == OK, r.output
    try:
        env = run_cli("sandbox", "env")  # eval "$(fracctl sandbox env)"
        assert env.exit_code == OK, env.output
        # A PATH with no helm on it: the one the sandbox installed with comes from env.
        bare = os.pathsep.join(p for p in os.environ.get("PATH", "").split(os.pathsep)
                               if not (Path(p) / "helm").exists())  # fmt: skip
        for name, value in re.findall(r'^export (\w+)="?(.*?)"?$', env.stdout, re.M):
            monkeypatch.setenv(name, value.replace("$PATH", bare))
        c = cfg.load(os.environ["FRACCTL_CONFIG"], env={})
        assert (c.recreate.backend, c.git.renderer, c.git.path) == (
            "helm", "helm", "gpu-fractioning")  # fmt: skip
        kube = Kube.connect(kubeconfig=os.environ["KUBECONFIG"])
        live = kube.get(c.target.ref, "default")
        assert live["metadata"]["annotations"]["helm.sh/hook"] == "post-install,post-upgrade"
        assert live["spec"]["nodeSelector"] == {"nvidia.com/gpu.present": "true"}
        for i, (line, codes, words) in enumerate(rest[:-1], start=2):
            r = run_cli(*shlex.split(line)[1:])
            assert r.exit_code in codes, f"line {i}: {line}\n{r.output}"
            for word in words:
                assert word in r.output, f"line {i}: {line}: no {word!r}\n{r.output}"
        after = kube.get(c.target.ref, "default")
        assert after["spec"]["nodeSelector"] == {"example.org/gpu-fractions": "enabled"}
        # The runbook's helm line, on the PATH `sandbox env` exported.
        history = subprocess.run(
            ["helm", "-n", "gpu-fractioning", "history", "gpu-fractioning"],
            capture_output=True, text=True, check=False, env=dict(os.environ),
        )  # fmt: skip
        assert history.returncode == 0, history.stderr
        assert re.search(r"^2\s.*deployed", history.stdout, re.M), history.stdout
    finally:
        down = run_cli(*shlex.split(STEPS[-1][0])[1:])
        assert down.exit_code == OK, down.output
        assert "sandbox stopped" in down.output
