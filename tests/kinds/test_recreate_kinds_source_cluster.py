"""Where git's objects are, and how a kind is named: what a newcomer types, on the real API server.

A GitOps repository holds many folders: fracctl.yaml names one (``git.path``), and the
object to recreate is in another. ``drift``, ``recreate KIND/NAME`` and ``recreate --all``
take the same ``--path``/``--revision``, and the "Next:" line ``drift`` prints runs as
printed. A kind is spelled as kubectl takes it (through discovery), and an unknown one is
named. What ``drift`` shows of a StatefulSet or a Job is the fields git changes, not the
server's defaults.
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path
from typing import Any

import pytest
import yaml

from fracctl.errors import ExitCode
from tests.support.helpers import commit_all, run_cli
from tests.support.kinds_fixtures import Shop, identity, statefulset

Obj = dict[str, Any]


def elsewhere(shop: Shop) -> None:
    """fracctl.yaml names ``gpu-fractioning``; the shop's objects go under ``shop/``."""
    text = shop.config.read_text().replace("  path: .\n", "  path: gpu-fractioning\n")
    shop.config.write_text(text)
    (shop.repo / "gpu-fractioning").mkdir()
    cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "other"}, "data": {}}
    (shop.repo / "gpu-fractioning" / "other.yaml").write_text(yaml.safe_dump(cm))
    commit_all(shop.repo, message="gpu-fractioning")
    shop.create(cm)  # in sync: drift at git.path finds nothing to do


def commit_under(shop: Shop, folder: str, *objects: Obj, message: str = "change") -> None:
    (shop.repo / folder).mkdir(exist_ok=True)
    for obj in objects:
        name = f"{obj['kind'].lower()}-{obj['metadata']['name']}.yaml"
        (shop.repo / folder / name).write_text(yaml.safe_dump(obj))
    commit_all(shop.repo, message=message)


def cli(shop: Shop, *args: str) -> Any:
    return run_cli("-c", str(shop.config), *args)


def next_command(stdout: str) -> list[str]:
    """The ``fracctl …`` command of drift's "Next:" line, as a user would copy it."""
    (line,) = [ln for ln in stdout.splitlines() if ln.startswith("Next:")]
    found = re.search(r"(fracctl recreate .*?) runs the ", line)
    assert found, line
    return shlex.split(found.group(1))[1:]


@pytest.fixture
def db(shop: Shop) -> dict[str, tuple[str, int]]:
    """A StatefulSet under ``shop/`` (not under git.path), its two pods running; git
    then changes its serviceName."""
    elsewhere(shop)
    shop.bound_claims(["data-db-0", "data-db-1"], size="1Gi")
    commit_under(shop, "shop", statefulset(shop), message="db")
    shop.create(statefulset(shop))
    pods = identity(shop.running(2))
    commit_under(shop, "shop", statefulset(shop, service="db-v2"), message="serviceName")
    return pods


def test_every_command_takes_the_path_and_the_next_line_runs_as_printed(
    shop: Shop, db: dict[str, tuple[str, int]], monkeypatch: pytest.MonkeyPatch
) -> None:
    here = cli(shop, "drift", "--all")
    assert here.exit_code == ExitCode.OK, here.output  # only git.path: the ConfigMap
    assert "StatefulSet" not in here.stdout

    found = cli(shop, "drift", "--all", "--path", "shop")
    assert found.exit_code == ExitCode.FINDING, found.output
    # What git changes, not the whole spec with the server's defaults.
    assert re.search(r"StatefulSet/\S+/db\s+needs-recreate\s+spec\.serviceName\b", found.stdout)
    fields = "\n".join(ln for ln in found.stdout.splitlines() if not ln.startswith("API server:"))
    for default in ("podManagementPolicy", "revisionHistoryLimit", "updateStrategy"):
        assert default not in fields, found.stdout  # the API server's message names some
    argv = next_command(found.stdout)
    assert argv[:4] == ["recreate", "StatefulSet/db", "-n", shop.ns], argv
    assert argv[4:6] == ["--path", "shop"], argv

    # Without --path, git.path has no such object: said with the way to name the folder.
    missing = cli(shop, "recreate", "StatefulSet/db", "-n", shop.ns, "--dry-run")
    assert missing.exit_code == ExitCode.USAGE, missing.output
    assert "under gpu-fractioning" in missing.stderr and "--path" in missing.stderr

    every = cli(shop, "recreate", "--all", "--path", "shop", "--dry-run")
    assert every.exit_code == ExitCode.OK, every.output
    assert f"Plan for StatefulSet/{shop.ns}/db: the orphan-and-adopt procedure" in every.stdout

    # The Next: line as printed: off a terminal it asks for --yes, and says so; with it, it
    # runs, its backup line whole on a narrow terminal.
    asked = cli(shop, *argv)
    assert asked.exit_code == ExitCode.USAGE, asked.output
    assert "without confirmation: stdin is not a terminal" in asked.stderr
    assert "then pass --yes" in asked.stderr
    monkeypatch.setenv("COLUMNS", "40")
    done = cli(shop, *argv, "--yes")
    assert done.exit_code == ExitCode.OK, done.output
    (backup,) = [ln for ln in done.stdout.splitlines() if ln.startswith("backup: ")]
    path = backup.removeprefix("backup: ")
    assert path.endswith(".yaml") and len(path) > 40
    assert yaml.safe_load(Path(path).read_text())["kind"] == "StatefulSet"
    new = shop.live("apps/v1", "StatefulSet", "db")
    assert new is not None and new["spec"]["serviceName"] == "db-v2"
    assert identity(shop.pods()) == db  # same pods, no restart
    again = cli(shop, "drift", "--all", "--path", "shop")
    assert again.exit_code == ExitCode.OK, again.output


def test_after_ctrl_c_the_printed_rerun_carries_every_flag_and_runs_as_printed(
    shop: Shop, db: dict[str, tuple[str, int]], monkeypatch: pytest.MonkeyPatch
) -> None:
    # Ctrl-C while the new StatefulSet adopts the pods: the message's rerun command is
    # the run as it was given (its --config, --path, --backend and --yes), and it resumes.
    from fracctl.flows.kinds import run

    def ctrl_c(*_: Any) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(run, "wait_adopted", ctrl_c)
    given = ["-c", str(shop.config), "recreate", "StatefulSet/db", "-n", shop.ns,
             "--path", "shop", "--backend", "apply", "--yes"]  # fmt: skip
    stopped = run_cli(*given)
    assert stopped.exit_code == 130, stopped.output
    found = re.search(r"rerun `([^`]+)` to resume", stopped.stderr)
    assert found, stopped.stderr
    assert found.group(1) == (
        f"fracctl --config {shop.config} recreate StatefulSet/db -n {shop.ns} --path shop "
        "--backend apply --yes"
    )
    # drift and doctor name the same single command while the journal is open.
    drift = cli(shop, "drift", "--all", "--path", "shop", "-o", "json")
    assert drift.exit_code == ExitCode.FINDING, drift.output
    (o,) = [o for o in drift.json["objects"] if o["kind"] == "StatefulSet"]
    assert o["next_step"] == f"finish it: {found.group(1)}", o
    assert "stopped in its orphan-and-adopt procedure" in o["unfinished"], o
    doctor = cli(shop, "doctor", "-o", "json")
    (f,) = [f for f in doctor.json["findings"] if f["check"] == "unfinished-recreates"]
    assert f["fix"] == f"rerun {found.group(1)}", f
    monkeypatch.undo()
    resumed = run_cli(*shlex.split(found.group(1))[1:])
    assert resumed.exit_code == ExitCode.OK, resumed.output
    new = shop.live("apps/v1", "StatefulSet", "db")
    assert new is not None and new["spec"]["serviceName"] == "db-v2"
    assert identity(shop.pods()) == db  # same pods, no restart
    again = cli(shop, "drift", "--all", "--path", "shop")
    assert again.exit_code == ExitCode.OK, again.output  # the journal is closed


@pytest.mark.parametrize("word", ["sts", "statefulsets", "statefulset", "statefulsets.apps"])
def test_a_kind_is_taken_as_kubectl_takes_it(
    shop: Shop, db: dict[str, tuple[str, int]], word: str
) -> None:
    r = cli(shop, "recreate", f"{word}/db", "-n", shop.ns, "--path", "shop", "--dry-run")
    assert r.exit_code == ExitCode.OK, r.output
    assert f"Plan for StatefulSet/{shop.ns}/db: the orphan-and-adopt procedure" in r.stdout


def test_an_unknown_kind_is_named_with_the_nearest_one(shop: Shop) -> None:
    elsewhere(shop)
    commit_under(shop, "shop", statefulset(shop))
    r = cli(shop, "recreate", "StatfulSet/db", "-n", shop.ns, "--path", "shop", "--dry-run")
    assert r.exit_code == ExitCode.USAGE, r.output
    assert r.stderr.startswith("Error: the cluster serves no resource type 'StatfulSet'")
    assert "did you mean StatefulSet?" in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1


def test_recreate_takes_the_same_source_flags_as_render(shop: Shop) -> None:
    """--repo, --revision/-r, --path, --renderer: a bad value is refused as render's is."""
    for args in (["--renderer", "nope"], ["--revision", ""], ["-r", " "]):
        for command in (["render"], ["drift"], ["preflight"], ["recreate", "--dry-run"]):
            r = cli(shop, *command, *args)
            assert r.exit_code == ExitCode.USAGE, (command, args, r.output)
    restore = cli(shop, "recreate", "--restore-from", "x.yaml", "--path", "shop")
    assert restore.exit_code == ExitCode.USAGE and "no git source" in restore.stderr


def job(image: str) -> Obj:
    """A Job whose pod waits for a node it never gets: active, judged as it is."""
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "migrate"},
            "spec": {"backoffLimit": 0, "template": {"spec": {
                "restartPolicy": "Never", "nodeSelector": {"example.org/none": "x"},
                "containers": [{"name": "m", "image": image}]}}}}  # fmt: skip


def test_a_jobs_drift_shows_the_image_git_changes_and_no_server_labels(shop: Shop) -> None:
    shop.commit(job("registry.invalid/m:1"))
    shop.create(job("registry.invalid/m:1"))
    shop.commit(job("registry.invalid/m:2"))
    r = cli(shop, "drift", "--all", "--kind", "Job")
    assert r.exit_code == ExitCode.FINDING, r.output
    assert "spec.template.spec.containers[0].image" in r.stdout, r.stdout
    assert "controller-uid" not in r.stdout, r.stdout
    assert "spec.template: Invalid value: {…}" in r.stdout  # the dumped value, cut short
    assert max(len(line) for line in r.stdout.splitlines()) < 600, r.stdout
    data = cli(shop, "drift", "--all", "--kind", "Job", "-o", "json").json
    (o,) = data["objects"]
    assert [f["path"] for f in o["fields"]] == ["spec.template.spec.containers[0].image"]
