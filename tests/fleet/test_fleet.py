"""Fleets without a cluster: configuration, targets, waves, results and reports."""

from __future__ import annotations

import shlex
import threading
import time
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest

from fracctl import config as cfg
from fracctl.core.drift import DriftReport
from fracctl.core.drift.report import fleet_junit, to_github
from fracctl.errors import ConfigError, ExitCode, Refused, TimedOut, Unreachable
from fracctl.flows import fleet
from fracctl.flows.context import Context
from tests.support.helpers import run_cli

REPO = Path(__file__).resolve().parents[2]

KUBECONFIG = """\
apiVersion: v1
kind: Config
clusters:
- {name: c, cluster: {server: "https://127.0.0.1:1"}}
users:
- {name: u, user: {token: t}}
contexts:
- {name: eu-1, context: {cluster: c, user: u}}
- {name: us-1, context: {cluster: c, user: u}}
- {name: ap-1, context: {cluster: c, user: u}}
current-context: eu-1
"""


def write(tmp_path: Path, text: str) -> str:
    path = tmp_path / "fracctl.yaml"
    path.write_text(text)
    return str(path)


def test_fleet_section_with_entries_and_short_forms(tmp_path: Path) -> None:
    c = cfg.load(
        write(
            tmp_path,
            "fleet:\n  parallel: 2\n  clusters:\n    - eu-1\n"
            "    - context: us-1\n      name: us\n      wave: 1\n      app: gpu-us\n"
            "      path: overlays/us\n",
        ),
        env={},
    )
    assert c.fleet.parallel == 2
    eu, us = c.fleet.clusters
    assert (eu.context, eu.name, eu.wave, eu.app, eu.path) == ("eu-1", "eu-1", 0, None, None)
    assert (us.context, us.name, us.wave, us.app, us.path) == (
        "us-1",
        "us",
        1,
        "gpu-us",
        "overlays/us",
    )
    env = cfg.load(None, env={"FRACCTL_FLEET_CLUSTERS": "a, b"})
    assert [m.context for m in env.fleet.clusters] == ["a", "b"]


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (
            "fleet:\n  clusters:\n    - context: a\n      wav: 1\n",
            ":2: fleet.clusters: entry 1: unknown key 'wav'",
        ),
        ("fleet:\n  clusters:\n    - name: a\n", "fleet.clusters: entry 1: context is required"),
        ("fleet:\n  clusters:\n    - context: a\n      wave: -1\n", "wave must be 0 or more"),
        ("fleet:\n  clusters: [a, a]\n", "'a' is listed twice"),
        ("fleet:\n  parallel: 0\n", "fleet: parallel must be 1 or more"),
        ("fleet:\n  clusters:\n    - [a]\n", "expected a mapping with context"),
    ],
)
def test_bad_fleet_sections_name_the_line(tmp_path: Path, body: str, message: str) -> None:
    with pytest.raises(ConfigError, match=None) as e:
        cfg.load(write(tmp_path, body), env={})
    assert message in str(e.value)


def test_targets_one_cluster_unless_a_fleet_is_addressed(tmp_path: Path) -> None:
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(KUBECONFIG)
    plain = cfg.load(None, env={}, overrides={"kube.kubeconfig": str(kubeconfig)})
    assert fleet.members(plain) is None
    assert fleet.members(plain, contexts=["eu-1"]) is None  # as before the fleet existed
    two = fleet.members(plain, contexts=["eu-1", "us-1", "eu-1"])
    assert [m.context for m in two or []] == ["eu-1", "us-1"]
    every = fleet.members(plain, all_contexts=True, env={})
    assert [m.name for m in every or []] == ["eu-1", "us-1", "ap-1"]

    configured = cfg.load(
        write(tmp_path, "fleet:\n  clusters:\n    - {context: us-1, name: us, wave: 1, app: x}\n"),
        env={},
        overrides={"kube.kubeconfig": str(kubeconfig)},
    )
    (us,) = fleet.members(configured) or []
    assert (us.name, us.wave, us.app) == ("us", 1, "x")
    # one --context with a fleet: that cluster, with its entry's overrides
    (one,) = fleet.members(configured, contexts=["us-1"]) or []
    assert one == us
    every = fleet.members(configured, all_contexts=True, env={})
    assert [(m.name, m.wave) for m in every or []] == [("eu-1", 0), ("us", 1), ("ap-1", 0)]


def test_member_config_overrides_context_app_path_and_state_dir() -> None:
    base = cfg.load(None, env={}, overrides={"argocd.app": "all", "git.path": "base"})
    m = fleet.Member(name="eu/1", context="ctx-eu", app="gpu-eu", path="overlays/eu")
    c = fleet.member_config(base, m)
    assert (c.kube.context, c.argocd.app, c.git.path) == ("ctx-eu", "gpu-eu", "overlays/eu")
    assert c.recreate.state_dir.endswith("/clusters/eu_1")
    plain = fleet.member_config(base, fleet.Member(name="us", context="us"))
    assert (plain.argocd.app, plain.git.path) == ("all", "base")


def test_waves_are_ordered_and_keep_fleet_order() -> None:
    ms = [
        fleet.Member("c", "c", wave=2),
        fleet.Member("a", "a", wave=1),
        fleet.Member("canary", "canary", wave=0),
        fleet.Member("b", "b", wave=1),
    ]
    assert [(w, [m.name for m in g]) for w, g in fleet.waves(ms)] == [
        (0, ["canary"]),
        (1, ["a", "b"]),
        (2, ["c"]),
    ]


def test_resume_command_repeats_how_the_fleet_was_addressed() -> None:
    args = ["--config", "my file.yaml", "--context", "eu", "--context", "us"]
    assert fleet.resume_command(args, backend="argocd", parallel=2) == (
        "fracctl --config 'my file.yaml' --context eu --context us recreate --yes "
        "--backend argocd --parallel 2"
    )


# --- running every cluster, with stand-in jobs --------------------------------------------


def no_kube() -> Any:
    return None


def base_context(tmp_path: Path) -> Context:
    config = cfg.load(None, env={}, overrides={"recreate.state_dir": str(tmp_path / "state")})
    return Context(config=config, kube_factory=no_kube, env={})


@pytest.fixture
def no_clients(monkeypatch: pytest.MonkeyPatch) -> None:
    """Member contexts without a kube client (the jobs below never use one)."""
    monkeypatch.setattr(
        fleet.contexts, "build_context", lambda c: Context(config=c, kube_factory=no_kube, env={})
    )


def run_jobs(
    tmp_path: Path, outcomes: dict[str, Any], *, parallel: int, stop: bool = False
) -> tuple[list[fleet.ClusterResult], float]:
    base = base_context(tmp_path)
    runner = fleet.MemberRunner(base, fleet.PlainFleetProgress(base))
    members = [fleet.Member(n, n) for n in outcomes]

    def job(ctx: Context, m: fleet.Member, step: Any) -> tuple[str, int, Any]:
        what = outcomes[m.name]
        time.sleep(0.3)
        if isinstance(what, BaseException):
            raise what
        ctx.info(f"checked {ctx.config.kube.context}")
        return what, 0, None

    start = time.monotonic()
    results = runner.each(members, job, parallel=parallel, stop=threading.Event() if stop else None)
    return results, time.monotonic() - start


@pytest.mark.usefixtures("no_clients")
def test_failures_become_each_clusters_result(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    outcomes = {
        "ok": "in-sync",
        "gone": Unreachable("cannot reach the API server at https://x: refused"),
        "slow": TimedOut("nodes not ready"),
        "no": Refused("a guard said no"),
        "bug": RuntimeError("boom"),
    }
    results, seconds = run_jobs(tmp_path, outcomes, parallel=5)
    got = {r.name: (r.state, r.exit_code) for r in results}
    assert got == {
        "ok": ("in-sync", 0),
        "gone": ("unreachable", 3),
        "slow": ("failed", 4),
        "no": ("refused", 1),
        "bug": ("failed", 3),
    }
    assert [r.name for r in results] == list(outcomes), "results keep fleet order"
    assert seconds < 1.0, "five clusters of 0.3s each ran at once"
    assert "[ok] checked ok" in capsys.readouterr().err
    assert fleet.FleetResult("drift", results).exit_code == 4


@pytest.mark.usefixtures("no_clients")
def test_one_at_a_time_stops_at_the_first_failure(tmp_path: Path) -> None:
    outcomes = {"a": "recreated", "b": Refused("no"), "c": "recreated"}
    results, _ = run_jobs(tmp_path, outcomes, parallel=1, stop=True)
    assert [(r.name, r.state) for r in results] == [
        ("a", "recreated"),
        ("b", "refused"),
        ("c", "not-started"),
    ]


@pytest.mark.usefixtures("no_clients")
def test_an_interrupt_stops_the_clusters_not_yet_started(tmp_path: Path) -> None:
    outcomes: dict[str, Any] = {"a": KeyboardInterrupt(), "b": "recreated"}
    results, _ = run_jobs(tmp_path, outcomes, parallel=1)
    assert [(r.name, r.state, r.exit_code) for r in results] == [
        ("a", "interrupted", ExitCode.INTERRUPTED),
        ("b", "not-started", 0),
    ]


# --- reports ------------------------------------------------------------------------------


def test_fleet_junit_has_a_suite_per_cluster_and_an_error_for_unreachable() -> None:
    xml = fleet_junit([("eu", DriftReport(), None), ("gone", None, "cannot reach")])
    root = ET.fromstring(xml)
    suites = root.findall("testsuite")
    assert [s.get("name") for s in suites] == ["fracctl drift: eu", "fracctl drift: gone"]
    assert root.get("errors") == "1"
    assert suites[1].find("testcase/error").get("message") == "cannot reach"  # type: ignore[union-attr]
    props = {p.get("name"): p.get("value") for p in suites[0].iter("property")}
    assert props["cluster"] == "eu"


def test_github_annotations_name_the_cluster() -> None:
    text = to_github(DriftReport(), "0 objects: none", cluster="eu-1")
    assert "title=fracctl drift [eu-1]" in text
    assert "[" not in to_github(DriftReport(), "0 objects: none")


# --- the command line ---------------------------------------------------------------------


def test_one_cluster_commands_refuse_a_fleet(tmp_path: Path) -> None:
    r = run_cli("--context", "a", "--context", "b", "nodes", "check")
    assert r.exit_code == ExitCode.USAGE, r.output
    assert "works on one cluster" in r.stderr
    r = run_cli("--all-contexts", "wait")
    assert r.exit_code == ExitCode.USAGE, r.output


@pytest.mark.parametrize("command", ["drift", "preflight", "recreate"])
def test_parallel_must_be_positive(command: str) -> None:
    r = run_cli(command, "--parallel", "0")
    assert r.exit_code == ExitCode.USAGE, r.output
    assert "--parallel" in r.stderr


def test_restore_from_takes_one_cluster(tmp_path: Path) -> None:
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(KUBECONFIG)
    r = run_cli(
        "--kubeconfig", str(kubeconfig), "--context", "eu-1", "--context", "us-1",
        "recreate", "--restore-from", "x.yaml", "--yes",
    )  # fmt: skip
    assert r.exit_code == ExitCode.USAGE, r.output
    assert "--restore-from restores one cluster" in r.stderr


def test_the_fleet_ci_example_checks_every_cluster_in_one_run() -> None:
    from ruamel.yaml import YAML

    from tests.project.test_runbooks import parse

    doc = YAML(typ="safe").load(
        (REPO / "examples" / "ci" / "github-actions-fleet.yaml").read_text()
    )
    steps = doc["jobs"]["drift"]["steps"]
    run = next(s["run"] for s in steps if "fracctl --config" in str(s.get("run", "")))
    words = shlex.split(run)
    argv = words[words.index("fracctl") + 1 :]
    assert parse(argv) == ["drift"]
    assert argv[argv.index("-o") + 1] == "github"
    assert "--junit-file" in argv and "--parallel" in argv
    example = cfg.load(str(REPO / "examples" / "fracctl.yaml"), env={})
    assert example.fleet.clusters == []  # the example stays a single cluster


def test_the_terminal_progress_has_a_row_per_cluster(tmp_path: Path) -> None:
    import io

    from rich.console import Console

    from fracctl.cli.progress import LiveFleetTable

    c = base_context(tmp_path)
    screen = io.StringIO()
    c._err = Console(file=screen, force_terminal=True, width=120, color_system=None)
    table = LiveFleetTable(c)
    table.start([fleet.Member("eu", "eu"), fleet.Member("us", "us", wave=1)])
    table.update("eu", state="deleted", note="object gone")
    table.update("eu", nodes=(1, 2))
    table.stop()
    last = screen.getvalue().split("fleet")[-1]
    assert "object gone" in last and "deleted" in last
    assert "1/2" in last and "waiting" in last
