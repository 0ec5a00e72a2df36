"""The runbooks' command lines, run in order against the sandbox, as a newcomer would.

``test_runbooks.py`` holds every ``fracctl …`` line of every runbook to the CLI's flags;
here ``drain.md`` and ``recreate-kinds.md`` are followed literally on a sandbox
(``fracctl sandbox up``: a real control plane, KWOK nodes, the operator and KAI
simulations). Each runbook's lines are listed below with what each must do: the list is
held equal to the runbook, so a line added to it is run here too. A placeholder in a
line (``BACKUP.yaml``) is filled from what an earlier line printed. The workloads the
runbooks assume (fractional pods; a StatefulSet in git's ``shop`` folder) are set up
first. The sandbox is then stopped with its own fracctl.yaml made invalid: stopping what
it started needs no valid configuration.
"""

from __future__ import annotations

import contextlib
import re
import shlex
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from fracctl.adapters.kube import Kube
from fracctl.core.kube.resources import DEPLOYMENTS, PODS
from fracctl.errors import ExitCode
from fracctl.sandbox.agents import kwok_delays
from fracctl.sandbox.controlplane import ControlPlane
from tests.project.test_runbooks import command_lines
from tests.support.helpers import Result, commit_all, run_cli
from tests.support.waiting import until

pytestmark = pytest.mark.cluster

RUNBOOKS = Path(__file__).resolve().parents[2] / "runbooks"
OK, FINDING, USAGE = ExitCode.OK, ExitCode.FINDING, ExitCode.USAGE

#: One runbook line: the line, the exit codes it may end with, words its output holds.
Step = tuple[str, tuple[ExitCode, ...], tuple[str, ...]]

DRAIN: list[Step] = [
    ("fracctl preflight", (FINDING,), ("opt-in-missing:", "fractional-pods:")),
    ("fracctl nodes label b200-0", (OK,), ("b200-0",)),
    ("fracctl preflight", (FINDING,), ("preflight refused: 1 check(s) failed", "fractional-pods:")),
    ("fracctl recreate --drain --dry-run", (OK,), ("the drain evicts 2 pod(s) first",)),
    ("fracctl recreate --drain --yes", (OK,), ("outcome: recreated", "backup: ")),
    ("fracctl recreate --drain --yes", (OK,), ("outcome: nothing-to-do",)),
    ("fracctl recreate --abort", (OK,), ("no drain is journaled: nothing to undo",)),
    ("fracctl doctor", (OK,), ("doctor: healthy",)),
    # The original's backup, once the recreate is done: it refuses, and says why.
    ("fracctl recreate --restore-from BACKUP.yaml --yes", (FINDING,), ("--restore-from only",)),
    ("fracctl rbac print --role recreate", (OK,), ("pods/eviction", "nodes/status")),
]

KINDS: list[Step] = [
    ("fracctl drift --all --path shop", (FINDING,), (
        "needs-recreate",
        "Next: only delete + recreate can change it: fracctl recreate StatefulSet/db -n shop "
        "--path shop --backend apply runs the orphan-and-adopt procedure",
    )),
    ("fracctl recreate StatefulSet/db -n shop --path shop --backend apply --dry-run", (OK,),
     ("the orphan-and-adopt procedure",)),
    ("fracctl recreate sts/db -n shop --path shop --backend apply --yes", (OK,),
     ("outcome: recreated",)),
    ("fracctl recreate --all --path shop --backend apply --dry-run", (OK,),
     ("no object needs a recreate",)),
    # No Argo CD beside this sandbox: the object is in sync, nothing to do or prove.
    ("fracctl recreate StatefulSet/db -n shop --path shop --backend argocd --dry-run", (OK,),
     ("nothing-to-do",)),
    ("fracctl rbac print --role recreate-objects", (OK,), ("statefulsets",)),
]  # fmt: skip


def follow(doc: str, steps: list[Step], config: str, *, then: Callable[[int, Result], None],
           fill: dict[str, str]) -> None:  # fmt: skip
    """Run ``doc``'s lines in order; each ends as its step says; ``then`` after each."""
    lines = command_lines(RUNBOOKS / doc)
    assert lines == [s[0] for s in steps], f"{doc} changed: update this test's steps"
    for i, (line, codes, words) in enumerate(steps):
        argv = shlex.split(line)[1:]
        argv = [fill.get(w, w) for w in argv]
        r = run(config, argv, codes)
        assert r.exit_code in codes, f"{doc} line {i + 1}: {line}\n{r.output}"
        for word in words:
            assert word in r.output, f"{doc} line {i + 1}: {line}: no {word!r}\n{r.output}"
        then(i, r)


def run(config: str, argv: list[str], codes: tuple[ExitCode, ...]) -> Result:
    """One line; ``doctor`` again while the replacements are still being placed."""
    deadline = time.monotonic() + (30 if argv[:1] == ["doctor"] else 0)
    while True:
        r = run_cli("--config", config, *argv)
        if r.exit_code in codes or time.monotonic() > deadline:
            return r
        time.sleep(0.5)


@contextlib.contextmanager
def sandbox(root: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[str, Kube]]:
    up = run_cli("sandbox", "up", "--state-dir", str(root))
    assert up.exit_code == OK, up.output
    kube = Kube.connect(kubeconfig=str(root / "controlplane" / "kubeconfig"))
    try:
        yield str(root / "fracctl.yaml"), kube
    finally:
        kube.close()
        cp = ControlPlane.load(root / "controlplane")
        # Stopping needs no valid configuration: the sandbox's own made invalid first.
        cfg = root / "fracctl.yaml"
        if cfg.is_file():
            cfg.write_text(cfg.read_text().replace("  backend: apply\n", "  backend: nope\n"))
            broken = run_cli("--config", str(cfg), "config", "view")
            assert broken.exit_code == USAGE, broken.output  # it no longer loads
            monkeypatch.setenv("FRACCTL_CONFIG", str(cfg))  # as `sandbox env` exports it
        down = run_cli("sandbox", "down", "--state-dir", str(root))
        assert down.exit_code == OK, down.output
        assert "sandbox stopped" in down.stdout
        assert cp is None or not cp.alive(), "the sandbox's processes still run"
        assert not root.exists()


def fractional(replicas: int) -> dict[str, Any]:
    labels = {"app": "frac"}
    return {
        "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "frac"},
        "spec": {"replicas": replicas, "selector": {"matchLabels": labels},
                 "template": {
                     "metadata": {"labels": labels,
                                  "annotations": {"gpu-fraction": "0.5", **kwok_delays(0)}},
                     "spec": {"schedulerName": "kai-scheduler",
                              "securityContext": {"runAsNonRoot": True, "runAsUser": 1000},
                              "terminationGracePeriodSeconds": 1,
                              "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists"}],
                              "containers": [{"name": "main", "image": "busybox"}]}}},
    }  # fmt: skip


def running(kube: Kube, ns: str, selector: str) -> list[dict[str, Any]]:
    out = []
    for p in kube.list(PODS, namespace=ns, label_selector=selector):
        conds = (p.get("status") or {}).get("conditions") or []
        ready = any(c.get("type") == "Ready" and c.get("status") == "True" for c in conds)
        if ready and not p["metadata"].get("deletionTimestamp"):
            out.append(p)
    return out


def statefulset(service: str) -> dict[str, Any]:
    labels = {"app": "db"}
    return {
        "apiVersion": "apps/v1", "kind": "StatefulSet",
        "metadata": {"name": "db", "namespace": "shop"},
        "spec": {"serviceName": service, "replicas": 2, "selector": {"matchLabels": labels},
                 "template": {"metadata": {"labels": labels, "annotations": kwok_delays(0)},
                              "spec": {"nodeSelector": {"kubernetes.io/hostname": "cpu-0"},
                                       "terminationGracePeriodSeconds": 1,
                                       "containers": [{"name": "db", "image": "db:1"}]}}},
    }  # fmt: skip


def identity(pods: list[dict[str, Any]]) -> dict[str, tuple[str, int]]:
    out = {}
    for p in pods:
        statuses = (p.get("status") or {}).get("containerStatuses") or []
        out[p["metadata"]["name"]] = (
            p["metadata"]["uid"],
            sum(int(s.get("restartCount") or 0) for s in statuses),
        )
    return out


def test_the_drain_and_recreate_kinds_runbooks_run_as_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "sbx"
    with sandbox(root, monkeypatch) as (config, kube):
        sts = kube.resolve("apps/v1", "StatefulSet")
        # drain.md: two fractional pods run on the RTX node, where the live config selects.
        kube.create(DEPLOYMENTS, fractional(2), namespace="ml-team")
        until("two fractional pods run", lambda: len(running(kube, "ml-team", "app=frac")) == 2,
              timeout=60)  # fmt: skip
        fill: dict[str, str] = {}

        def after_drain_line(i: int, r: Result) -> None:
            if i == 3:  # the dry run: the fractional-pods row passes, with no stale fix
                assert "let them finish" not in r.output, r.output
            if i == 4:
                (line,) = [ln for ln in r.stdout.splitlines() if ln.startswith("backup: ")]
                fill["BACKUP.yaml"] = line.removeprefix("backup: ")
                assert Path(fill["BACKUP.yaml"]).is_file(), line

        follow("drain.md", DRAIN, config, then=after_drain_line, fill=fill)
        until("the evicted pods' replacements run",
              lambda: len(running(kube, "ml-team", "app=frac")) == 2, timeout=60)  # fmt: skip

        # recreate-kinds.md: a StatefulSet in git's shop folder, which git.path leaves out.
        gitops = root / "gitops"
        (gitops / "shop").mkdir()
        (gitops / "shop" / "db.yaml").write_text(yaml.safe_dump(statefulset("db")))
        commit_all(gitops, message="shop: db")
        kube.ensure_namespace("shop")
        kube.create(sts, statefulset("db"), namespace="shop")
        until("both db pods run", lambda: len(running(kube, "shop", "app=db")) == 2,
              timeout=60)  # fmt: skip
        before = identity(running(kube, "shop", "app=db"))
        (gitops / "shop" / "db.yaml").write_text(yaml.safe_dump(statefulset("db-v2")))
        commit_all(gitops, message="shop: db's serviceName")

        def after_kinds_line(i: int, r: Result) -> None:
            if i == 0:  # the field git changes, not the spec with the server's defaults
                assert re.search(r"needs-recreate\s+spec\.serviceName", r.stdout), r.stdout
                assert "podManagementPolicy" not in r.stdout, r.stdout
            if i == 2:  # same pods, not restarted
                assert identity(running(kube, "shop", "app=db")) == before
                live = kube.get(sts, "db", "shop")
                assert live["spec"]["serviceName"] == "db-v2"

        follow("recreate-kinds.md", KINDS, config, then=after_kinds_line, fill={})
