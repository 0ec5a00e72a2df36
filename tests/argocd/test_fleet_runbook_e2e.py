"""runbooks/fleet-rollout.md §A "Try it locally", run as written on the sandbox.

The runbook's block runs in one ``bash -e`` as a user types it (its own ``fracctl``,
``argocd`` from ``sandbox env``, ``git``, ``sed``); its last line, which the runbook
says to run again until done, runs again until it says so. Then every member runs git's
selector, and the canary's config was recreated before the later steps' were.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from fracctl.errors import ExitCode
from fracctl.sandbox import fleet_box
from fracctl.sandbox.layout import Sandbox
from tests.support.argocd_real import require_built
from tests.support.helpers import run_cli

pytestmark = pytest.mark.e2e

RUNBOOK = Path(__file__).resolve().parents[2] / "runbooks" / "fleet-rollout.md"
FENCE = re.compile(r"```bash\n(.*?)```", re.S)
NEW = {"example.org/gpu-fractions": "enabled"}


def try_it_locally() -> list[str]:
    """The commands of §A's "Try it locally" block, continuation lines joined."""
    text = RUNBOOK.read_text()
    block = FENCE.search(text, text.index("**Try it locally.**"))
    assert block is not None, "the runbook lost its Try it locally block"
    return block.group(1).replace("\\\n", " ").splitlines()


def script(lines: list[str], *, tries: int = 160) -> str:
    """All but the last line once; the last ("again, until done") until it says done."""
    *setup, last = lines
    last = last.split(" #")[0].strip()  # its comment would end inside $( )
    again = (
        f'for _ in $(seq {tries}); do out=$({last}) && case "$out" in '
        '*"the rollout is done"*) echo "$out"; exit 0;; esac; sleep 3; done; '
        'echo "$out"; exit 1'
    )
    return "\n".join([*setup, again])


@pytest.mark.timeout(600)
def test_section_a_try_it_locally_runs_as_written(tmp_path: Path) -> None:
    require_built()
    lines = try_it_locally()
    assert lines[0] == "fracctl sandbox up --argocd --clusters 3", lines
    assert lines[-1].startswith("fracctl fleet status --appset gpu-fractioning"), lines
    state = tmp_path / "sandbox"
    me = {"NAME": "Platform Team", "EMAIL": "platform@example.org"}
    identity = {f"GIT_{who}_{k}": v for who in ("AUTHOR", "COMMITTER") for k, v in me.items()}
    env = {
        **os.environ,
        **identity,  # a user's own git identity
        "FRACCTL_SANDBOX_DIR": str(state),
        "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}",  # this fracctl
    }
    try:
        run = subprocess.run(["bash", "-e", "-c", script(lines)], cwd=tmp_path, env=env,
                             capture_output=True, text=True, timeout=540)  # fmt: skip
        assert run.returncode == 0, f"{run.stdout}\n{run.stderr}"
        assert "the rollout is done" in run.stdout
        st = run_cli("sandbox", "status", "-o", "json", "--state-dir", str(state)).json
        assert [m["nodeSelector"] for m in st["members"]] == [NEW] * 3, st["members"]
        assert st["argocd"]["app"] == "hub-incident"  # not named like the ApplicationSet
        created = [created_at(m) for m in fleet_box.members_of(Sandbox(state)).values()]
        assert created == sorted(created), f"the canary was not recreated first: {created}"
    finally:
        down = run_cli("sandbox", "down", "--state-dir", str(state))
    assert down.exit_code == ExitCode.OK, down.output


def created_at(member: Sandbox) -> str:
    """When the member's live config was created (its recreate, after the rollout)."""
    from fracctl.adapters.kube import Kube

    kube = Kube.connect(kubeconfig=str(member.kubeconfig))
    try:
        ref = kube.resolve("gpu-fractioning.kai.scheduler/v1alpha1", "GpuFractioningConfig")
        obj = kube.get_or_none(ref, "default")
    finally:
        kube.close()
    assert obj is not None, f"{member.root}: no config"
    return str(obj["metadata"]["creationTimestamp"])
