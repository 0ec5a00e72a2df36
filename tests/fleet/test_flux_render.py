"""``fracctl fleet render --flux``: each member's three gate Kustomizations on one source,
waves chained by ``dependsOn`` (fracctl/core/flux_fleet.py), and the command's refusals.

tests/fleet/test_flux_render_cluster.py holds the objects to Flux's real CRDs."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from ruamel.yaml import YAML

from fracctl.core import flux_fleet as ff
from fracctl.errors import ExitCode, UsageError
from tests.support.helpers import run_cli

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "flux" / "fleet"
URL = "https://git.example.org/gitops.git"
OPTS = ff.RenderOptions(url=URL)
Obj = dict[str, Any]


def load_all(text: str) -> list[Obj]:
    return [d for d in YAML(typ="safe").load_all(text) if d]


def kustomizations(objs: list[Obj]) -> dict[str, Obj]:
    return {o["metadata"]["name"]: o for o in objs if o["kind"] == "Kustomization"}


def depends(ks: Obj) -> list[str]:
    return [d["name"] for d in ks["spec"].get("dependsOn", [])]


MEMBERS = [
    ff.Member("canary", wave=0, path="gate"),
    ff.Member("eu-1", wave=2, path="gate"),  # wave 1 has no member: passed over
    ff.Member("us-1", wave=5, path="gate", secret="us-1-kubeconfig"),
    ff.Member("ap-1", wave=5, path="gate"),
    ff.Member("eu-2", wave=2, path="gate"),
]


def test_each_member_has_three_kustomizations_named_and_labelled_for_status() -> None:
    ks = kustomizations(ff.render(MEMBERS, OPTS))
    assert len(ks) == 3 * len(MEMBERS)
    for m in MEMBERS:
        n = ff.names("gpu-fractioning", m.name)
        assert (n.pre, n.config, n.post) == (
            f"gpu-fractioning-{m.name}-pre",
            f"gpu-fractioning-{m.name}",
            f"gpu-fractioning-{m.name}-post",
        )
        for half in ff.HALVES:
            meta = ks[n.of(half)]["metadata"]
            assert meta["namespace"] == "flux-system"
            assert meta["labels"] == {
                "fracctl.io/fleet": "gpu-fractioning",
                "fracctl.io/cluster": m.name,
                "fracctl.io/wave": str(m.wave),
                "fracctl.io/half": half,
            }
            assert ks[n.of(half)]["spec"]["path"] == f"./gate/{half}"


def test_within_a_member_the_config_waits_for_the_pre_half_and_the_post_half_for_it() -> None:
    ks = kustomizations(ff.render(MEMBERS, OPTS))
    for m in MEMBERS:
        n = ff.names("gpu-fractioning", m.name)
        assert depends(ks[n.config]) == [n.pre]
        assert depends(ks[n.post]) == [n.config]


def test_each_wave_starts_after_every_post_half_of_the_wave_before() -> None:
    ks = kustomizations(ff.render(MEMBERS, OPTS))
    assert depends(ks["gpu-fractioning-canary-pre"]) == []
    assert "dependsOn" not in ks["gpu-fractioning-canary-pre"]["spec"]
    wave2 = ["gpu-fractioning-canary-post"]
    assert depends(ks["gpu-fractioning-eu-1-pre"]) == wave2
    assert depends(ks["gpu-fractioning-eu-2-pre"]) == wave2
    wave5 = ["gpu-fractioning-eu-1-post", "gpu-fractioning-eu-2-post"]
    assert depends(ks["gpu-fractioning-us-1-pre"]) == wave5
    assert depends(ks["gpu-fractioning-ap-1-pre"]) == wave5
    assert [[m.name for m in w] for w in ff.waves(MEMBERS)] == [
        ["canary"],
        ["eu-1", "eu-2"],
        ["us-1", "ap-1"],
    ]


def test_the_chain_is_acyclic_and_lists_no_kustomization_before_its_dependencies() -> None:
    objs = ff.render(MEMBERS, OPTS)
    seen: set[str] = set()
    for name, ks in kustomizations(objs).items():
        assert set(depends(ks)) <= seen, name  # rendered after what it waits for
        seen.add(name)


def test_the_config_is_never_forced_and_the_gate_halves_wait_and_force() -> None:
    ks = kustomizations(ff.render(MEMBERS, OPTS))
    for name, k in ks.items():
        spec, half = k["spec"], k["metadata"]["labels"]["fracctl.io/half"]
        assert spec["prune"] is True
        assert "targetNamespace" not in spec and "serviceAccountName" not in spec
        if half == "config":
            assert spec["force"] is False, name
            assert spec["wait"] is False
            assert spec["deletionPolicy"] == "Orphan"
            assert spec["timeout"] == "5m"
        else:
            assert spec["force"] is True and spec["wait"] is True, name
            assert spec["timeout"] == {"pre": "20m", "post": "35m"}[half]


def test_each_member_is_reached_through_its_kubeconfig_secret() -> None:
    ks = kustomizations(ff.render(MEMBERS, OPTS))
    assert ks["gpu-fractioning-canary"]["spec"]["kubeConfig"] == {
        "secretRef": {"name": "fracctl-fleet-canary", "key": "value"}
    }
    for half in ("us-1-pre", "us-1", "us-1-post"):
        ref = ks[f"gpu-fractioning-{half}"]["spec"]["kubeConfig"]["secretRef"]
        assert ref == {"name": "us-1-kubeconfig", "key": "value"}


def test_one_source_for_every_kustomization() -> None:
    objs = ff.render(MEMBERS, ff.RenderOptions(url=URL, branch="release", source="fleet"))
    (repo,) = [o for o in objs if o["kind"] == "GitRepository"]
    assert objs[0] is repo
    assert repo["metadata"] == {
        "name": "fleet",
        "namespace": "flux-system",
        "labels": {"fracctl.io/fleet": "gpu-fractioning"},
    }
    assert repo["spec"] == {"interval": "1m", "url": URL, "ref": {"branch": "release"}}
    refs = {str(k["spec"]["sourceRef"]) for k in kustomizations(objs).values()}
    assert refs == {str({"kind": "GitRepository", "name": "fleet"})}


def test_without_a_url_no_source_is_rendered() -> None:
    objs = ff.render(MEMBERS, ff.RenderOptions(source="flux-system"))
    assert {o["kind"] for o in objs} == {"Kustomization"}
    assert objs[0]["spec"]["sourceRef"]["name"] == "flux-system"


@pytest.mark.parametrize(
    ("path", "pre"),
    [
        (".", "./pre"),
        ("", "./pre"),
        ("gate", "./gate/pre"),
        ("./clusters/eu-1/", "./clusters/eu-1/pre"),
    ],
)
def test_paths_are_relative_to_the_sources_root(path: str, pre: str) -> None:
    (ks, *_) = ff.render([ff.Member("a", path=path)], OPTS)[1:]
    assert ks["spec"]["path"] == pre


BAD_OPTIONS = [
    ({"fleet": "GPU_fleet"}, "--fleet 'GPU_fleet' is not a valid name"),
    ({"namespace": "flux.system"}, "--namespace 'flux.system' is not a valid name"),
    ({"source": "-fleet"}, "--source '-fleet' is not a valid name"),
    ({"interval": "10 minutes"}, "--interval '10 minutes' is not a Flux duration"),
    ({"retry_interval": "1"}, "--retry-interval '1' is not a Flux duration"),
    ({"url": "git@host:org/repo"}, "is not one a GitRepository takes"),
    ({"url": "https://me:hunter2@git.example.org/r"}, "the git URL holds a password"),
    ({"branch": " "}, "--branch cannot be empty"),
]


@pytest.mark.parametrize(("given", "message"), BAD_OPTIONS)
def test_bad_options_are_refused(given: dict[str, str], message: str) -> None:
    opts = ff.RenderOptions(**{"url": URL, **given})
    with pytest.raises(UsageError, match=message) as e:
        ff.render(MEMBERS, opts)
    assert "hunter2" not in str(e.value)


BAD_MEMBERS = [
    ([], "the fleet has no clusters"),
    ([ff.Member("arn:aws:eks:eu-west-1:1:cluster/prod")], "its name is not a DNS label"),
    ([ff.Member("Prod")], "its name is not a DNS label"),
    ([ff.Member("x" * 50)], "is longer than 63 characters"),
    ([ff.Member("a", secret="Bad_Secret")], "kubeconfig_secret 'Bad_Secret' is not a Secret"),
    ([ff.Member("a", path="/srv/gate")], "path '/srv/gate' is not inside the repository"),
    ([ff.Member("a", path="gate/../../x")], "is not inside the repository"),
]


@pytest.mark.parametrize(("members", "message"), BAD_MEMBERS)
def test_bad_members_are_refused(members: list[ff.Member], message: str) -> None:
    with pytest.raises(UsageError, match=message):
        ff.render(members, OPTS)


# --- the command ------------------------------------------------------------------------

CONFIG = """\
git:
  repo: {repo}
  path: gate
fleet:
  clusters:
    - context: member-1
    - context: member-2
      wave: 1
      path: clusters/member-2
    - context: member-3
      wave: 2
      kubeconfig_secret: member-3-kubeconfig
"""


def config(tmp_path: Path, repo: str = URL, text: str = CONFIG) -> str:
    path = tmp_path / "fracctl.yaml"
    path.write_text(text.format(repo=repo))
    return str(path)


def test_the_command_prints_the_render_of_fleet_clusters(tmp_path: Path) -> None:
    r = run_cli("--config", config(tmp_path), "fleet", "render", "--flux")
    assert r.exit_code == ExitCode.OK, r.output
    members = [
        ff.Member("member-1", 0, "gate"),
        ff.Member("member-2", 1, "clusters/member-2"),
        ff.Member("member-3", 2, "gate", "member-3-kubeconfig"),
    ]
    assert load_all(r.stdout) == ff.render(members, OPTS)


def test_json_and_the_flags_change_what_is_rendered(tmp_path: Path) -> None:
    r = run_cli(
        "--config",
        config(tmp_path),
        "fleet",
        "render",
        "--flux",
        "--fleet",
        "gpu",
        "-n",
        "hub",
        "--source",
        "fleet",
        "--url",
        "ssh://git@git.example.org/g",
        "--branch",
        "prod",
        "--path",
        "elsewhere",
        "--interval",
        "5m",
        "--retry-interval",
        "30s",
        "-o",
        "json",
    )
    assert r.exit_code == ExitCode.OK, r.output
    repo, first, *_ = r.json
    assert repo["metadata"]["name"] == "fleet" and repo["metadata"]["namespace"] == "hub"
    assert repo["spec"]["url"] == "ssh://git@git.example.org/g"
    assert repo["spec"]["ref"] == {"branch": "prod"}
    assert first["metadata"]["name"] == "gpu-member-1-pre"
    spec = first["spec"]
    assert (spec["interval"], spec["retryInterval"], spec["path"]) == (
        "5m",
        "30s",
        "./elsewhere/pre",
    )
    ks = kustomizations(r.json)
    # --path is git.path's stand-in; a cluster's own path still wins.
    assert ks["gpu-member-2"]["spec"]["path"] == "./clusters/member-2/config"


def test_an_existing_source_is_named_not_rendered(tmp_path: Path) -> None:
    r = run_cli(
        "--config",
        config(tmp_path, repo="."),
        "fleet",
        "render",
        "--flux",
        "--existing-source",
        "--source",
        "flux-system",
    )
    assert r.exit_code == ExitCode.OK, r.output
    objs = load_all(r.stdout)
    assert {o["kind"] for o in objs} == {"Kustomization"}
    assert {o["spec"]["sourceRef"]["name"] for o in objs} == {"flux-system"}


REFUSED = [
    ([], "fleet render writes Flux's objects only: give --flux"),
    (["--flux", "--existing-source", "--url", URL], "--url and --existing-source exclude"),
    (["--flux", "--source", ""], "cannot be empty"),
    (["--flux", "-o", "table"], "must be one of yaml, json"),
    (["--flux", "--interval", "soon"], "--interval 'soon' is not a Flux duration"),
    (["--flux", "--url", "https://u:secret@x.org/r"], "the git URL holds a password"),
]


@pytest.mark.parametrize(("args", "message"), REFUSED)
def test_bad_input_is_one_line_and_exit_2(tmp_path: Path, args: list[str], message: str) -> None:
    r = run_cli("--config", config(tmp_path), "fleet", "render", *args)
    assert r.exit_code == ExitCode.USAGE, r.output
    assert message in r.stderr
    assert r.stdout == ""
    assert "secret@" not in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1, r.stderr


def test_no_git_url_is_refused_with_the_ways_to_give_one(tmp_path: Path) -> None:
    r = run_cli("--config", config(tmp_path, repo="/srv/gitops"), "fleet", "render", "--flux")
    assert r.exit_code == ExitCode.USAGE, r.output
    assert r.stderr.strip().splitlines() == [
        "Error: no git URL for the GitRepository (give --url, or set git.repo to the "
        "repository's URL; or --existing-source --source NAME for one the hub has)"
    ]


def test_a_cluster_named_by_a_context_kubernetes_refuses_is_named(tmp_path: Path) -> None:
    text = "fleet:\n  clusters:\n    - context: arn:aws:eks:eu-west-1:1:cluster/prod\n"
    r = run_cli("--config", config(tmp_path, text=text), "fleet", "render", "--flux", "--url", URL)
    assert r.exit_code == ExitCode.USAGE, r.output
    assert "cluster 'arn:aws:eks:eu-west-1:1:cluster/prod' of fleet.clusters" in r.stderr
    assert "give it a name: in fleet.clusters" in r.stderr


def test_an_empty_fleet_is_refused(tmp_path: Path) -> None:
    r = run_cli(
        "--config", config(tmp_path, text="git:\n  repo: {repo}\n"), "fleet", "render", "--flux"
    )
    assert r.exit_code == ExitCode.USAGE, r.output
    assert "the fleet has no clusters: nothing to render" in r.stderr


def test_the_example_is_the_render_of_its_fracctl_yaml() -> None:
    r = run_cli("--config", str(EXAMPLE / "fracctl.yaml"), "fleet", "render", "--flux")
    assert r.exit_code == ExitCode.OK, r.output
    committed = (EXAMPLE / "hub-kustomizations.yaml").read_text()
    assert committed.split("\n", 1)[1] == r.stdout, (
        "examples/flux/fleet/hub-kustomizations.yaml is stale: run the command on its first line"
    )
