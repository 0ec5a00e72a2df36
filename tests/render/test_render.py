"""``fracctl render``: git export, plain YAML, kustomize, helm, Argo CD, and every error."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import httpx
import pytest
import respx

from fracctl.adapters.git import init_repo
from fracctl.adapters.render import (
    detect_renderer,
    field_line,
    normalise_path,
    parse_documents,
    render_git,
)
from fracctl.errors import ExitCode, ExternalError, UsageError
from tests.support.helpers import commit_all, run_cli

REPO = Path(__file__).resolve().parents[2]
GITOPS = REPO / "examples" / "gitops"

CM = """\
apiVersion: v1
kind: ConfigMap
metadata:
  name: {name}
  namespace: team
data:
  k: v
"""


def make_repo(root: Path, files: dict[str, str]) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    for rel, text in files.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
    init_repo(root, message="init")
    return root


def gitops_repo(tmp_path: Path) -> Path:
    dest = tmp_path / "gitops"
    shutil.copytree(GITOPS, dest)
    init_repo(dest, message="desired state")
    return dest


# --- plain YAML ---------------------------------------------------------------------------


def test_plain_yaml_is_recursive_multi_document_and_expands_lists(tmp_path: Path) -> None:
    repo = make_repo(
        tmp_path / "r",
        {
            "apps/a.yaml": CM.format(name="a") + "---\n# comment only\n---\n" + CM.format(name="b"),
            "apps/nested/c.yml": CM.format(name="c"),
            "apps/list.json": json.dumps(
                {
                    "apiVersion": "v1",
                    "kind": "List",
                    "items": [
                        json.loads(
                            json.dumps(
                                {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "d"}}
                            )
                        )
                    ],
                }
            ),
            "apps/values.yaml": "replicas: 3\n",  # not a manifest: ignored
            "apps/README.md": "not yaml: [",
            "other/e.yaml": CM.format(name="e"),
        },
    )
    out = render_git(str(repo), "HEAD", "apps")
    assert [o["metadata"]["name"] for o in out.objects] == ["a", "b", "d", "c"]
    assert out.renderer == "plain"
    assert out.locations[0] is not None and out.locations[0].file == "apps/a.yaml"
    assert out.locations[1] is not None and out.locations[1].line == 11
    assert (
        out.commit
        == subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=repo, capture_output=True, text=True, check=True
        ).stdout.strip()
    )


def test_a_single_file_path_renders_that_file(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "r", {"a.yaml": CM.format(name="a"), "b.yaml": CM.format(name="b")})
    out = render_git(str(repo), "HEAD", "./b.yaml", "auto")
    assert [o["metadata"]["name"] for o in out.objects] == ["b"]


def test_render_reads_the_revision_not_the_working_tree(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "r", {"a.yaml": CM.format(name="first")})
    first = subprocess.run(
        ["git", "rev-parse", "HEAD"], cwd=repo, capture_output=True, text=True, check=True
    ).stdout.strip()
    (repo / "a.yaml").write_text(CM.format(name="second"))
    commit_all(repo, message="second")
    (repo / "a.yaml").write_text("uncommitted: [broken")
    assert render_git(str(repo), first, ".").objects[0]["metadata"]["name"] == "first"
    assert render_git(str(repo), "main", ".").objects[0]["metadata"]["name"] == "second"
    # the working tree is untouched: still the uncommitted edit, nothing else changed
    assert (repo / "a.yaml").read_text() == "uncommitted: [broken"
    status = subprocess.run(
        ["git", "status", "--porcelain"], cwd=repo, capture_output=True, text=True, check=True
    ).stdout
    assert status.strip() == "M a.yaml"


def test_a_remote_url_is_cloned_to_a_temporary_place(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "r", {"x/a.yaml": CM.format(name="a")})
    out = render_git(f"file://{repo}", "main", "x")
    assert out.objects[0]["metadata"]["name"] == "a"


def test_yaml_timestamps_stay_strings(tmp_path: Path) -> None:
    repo = make_repo(
        tmp_path / "r",
        {"a.yaml": CM.format(name="a").replace("k: v", "when: 2024-01-02")},
    )
    assert render_git(str(repo), "HEAD", ".").objects[0]["data"]["when"] == "2024-01-02"


# --- kustomize and helm -----------------------------------------------------------------


def test_kustomize_renders_the_example_and_points_back_at_the_file(tmp_path: Path) -> None:
    if not (shutil.which("kustomize") or shutil.which("kubectl")):
        pytest.skip("needs kustomize or kubectl")
    repo = gitops_repo(tmp_path)
    out = render_git(str(repo), "HEAD", "gpu-fractioning")
    assert out.renderer == "kustomize"
    (obj,) = out.objects
    assert obj["kind"] == "GpuFractioningConfig"
    assert obj["spec"]["nodeSelector"] == {"example.org/gpu-fractions": "enabled"}
    loc = out.locations[0]
    assert loc is not None and loc.file == "gpu-fractioning/gpufractioningconfig.yaml"
    assert field_line(out.texts[0], "spec.nodeSelector") == 8


def test_kustomize_reaching_outside_its_folder_works(tmp_path: Path) -> None:
    if not (shutil.which("kustomize") or shutil.which("kubectl")):
        pytest.skip("needs kustomize or kubectl")
    repo = make_repo(
        tmp_path / "r",
        {
            "base/cm.yaml": CM.format(name="a"),
            "base/kustomization.yaml": "resources: [cm.yaml]\n",
            "overlays/prod/kustomization.yaml": "resources: [../../base]\nnamePrefix: prod-\n",
        },
    )
    out = render_git(str(repo), "HEAD", "overlays/prod")
    assert [o["metadata"]["name"] for o in out.objects] == ["prod-a"]


def test_kustomize_error_is_reported(tmp_path: Path) -> None:
    if not (shutil.which("kustomize") or shutil.which("kubectl")):
        pytest.skip("needs kustomize or kubectl")
    repo = make_repo(tmp_path / "r", {"k/kustomization.yaml": "resources: [missing.yaml]\n"})
    with pytest.raises(ExternalError) as e:
        render_git(str(repo), "HEAD", "k")
    assert "build of k failed" in str(e.value)
    assert "missing.yaml" in str(e.value)


def test_missing_kustomize_names_what_is_missing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = gitops_repo(tmp_path)
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "git").symlink_to(shutil.which("git") or "/usr/bin/git")
    monkeypatch.setenv("PATH", str(bin_dir))
    with pytest.raises(UsageError) as e:
        render_git(str(repo), "HEAD", "gpu-fractioning")
    assert "needs kustomize" in str(e.value)
    assert "neither 'kustomize' nor 'kubectl' is on PATH" in str(e.value)


CHART = {
    "chart/Chart.yaml": "apiVersion: v2\nname: demo\nversion: 0.1.0\n",
    "chart/values.yaml": "replicas: 1\n",
    "chart/prod.yaml": "replicas: 4\n",
    "chart/templates/cm.yaml": (
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}-cm\n"
        "  namespace: {{ .Release.Namespace }}\n"
        "data:\n  replicas: {{ .Values.replicas | quote }}\n"
    ),
}


def test_missing_helm_names_what_is_missing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = make_repo(tmp_path / "r", CHART)
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "git").symlink_to(shutil.which("git") or "/usr/bin/git")
    monkeypatch.setenv("PATH", str(bin_dir))
    with pytest.raises(UsageError) as e:
        render_git(str(repo), "HEAD", "chart")
    assert e.value.message == (
        "chart is a Helm chart: rendering it needs helm, but 'helm' is not on PATH"
    )
    assert "helm.binary in fracctl.yaml" in (e.value.hint or "")


@pytest.mark.skipif(shutil.which("helm") is None, reason="needs a helm binary")
def test_helm_template_renders_a_chart_with_values(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "r", CHART)
    out = render_git(
        str(repo),
        "HEAD",
        "chart",
        helm_release="rel",
        helm_namespace="ml",
        helm_values=["prod.yaml"],
    )
    assert out.renderer == "helm"
    (obj,) = out.objects
    assert obj["metadata"] == {"name": "rel-cm", "namespace": "ml"}
    assert obj["data"] == {"replicas": "4"}
    assert out.locations[0] is not None and out.locations[0].file == "chart/templates/cm.yaml"


@pytest.mark.skipif(shutil.which("helm") is None, reason="needs a helm binary")
def test_helm_missing_values_file_is_named(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "r", CHART)
    with pytest.raises(ExternalError, match="values file chart/nope.yaml not in the revision"):
        render_git(str(repo), "HEAD", "chart", helm_values=["nope.yaml"])


def test_detect_renderer() -> None:
    assert detect_renderer(["Chart.yaml", "templates"]) == "helm"
    assert detect_renderer(["kustomization.yml"]) == "kustomize"
    assert detect_renderer(["Kustomization"]) == "kustomize"
    assert detect_renderer(["a.yaml"]) == "plain"


# --- errors ---------------------------------------------------------------------------------


def test_malformed_yaml_is_named_with_file_and_line(tmp_path: Path) -> None:
    repo = make_repo(
        tmp_path / "r",
        {
            "apps/ok.yaml": CM.format(name="a"),
            "apps/bad.yaml": CM.format(name="a") + "---\nkind: [x\n",
        },
    )
    with pytest.raises(ExternalError) as e:
        render_git(str(repo), "HEAD", "apps")
    assert str(e.value).startswith("apps/bad.yaml:10: not valid YAML")


def test_malformed_yaml_in_a_kustomization_is_named_before_kustomize_runs(tmp_path: Path) -> None:
    repo = make_repo(
        tmp_path / "r",
        {"k/kustomization.yaml": "resources: [a.yaml]\n", "k/a.yaml": "a: b\n  c: d\n"},
    )
    with pytest.raises(ExternalError) as e:
        render_git(str(repo), "HEAD", "k")
    assert str(e.value).startswith("k/a.yaml:2: not valid YAML")


def test_unknown_revision_and_path_are_named(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "r", {"a.yaml": CM.format(name="a")})
    with pytest.raises(ExternalError) as e:
        render_git(str(repo), "no-such-branch", ".")
    assert str(e.value) == f"unknown revision 'no-such-branch' in git repository {repo}"
    with pytest.raises(ExternalError) as e:
        render_git(str(repo), "HEAD", "clusters/prod")
    assert "path 'clusters/prod' does not exist at revision 'HEAD'" in str(e.value)


def test_not_a_repository_and_missing_repository(tmp_path: Path) -> None:
    (tmp_path / "plain").mkdir()
    with pytest.raises(ExternalError, match="is not a git repository"):
        render_git(str(tmp_path / "plain"), "HEAD", ".")
    with pytest.raises(ExternalError, match="does not exist"):
        render_git(str(tmp_path / "nope"), "HEAD", ".")
    with pytest.raises(ExternalError, match="git clone file:///nonexistent"):
        render_git("file:///nonexistent/repo.git", "HEAD", ".")


def test_paths_must_stay_inside_the_repository() -> None:
    assert normalise_path("./a/b/") == "a/b"
    assert normalise_path(".") == ""
    assert normalise_path("") == ""
    for bad in ("../x", "/etc", "a/../../b"):
        with pytest.raises(UsageError):
            normalise_path(bad)


def test_non_folder_path_with_kustomize_is_refused(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "r", {"a.yaml": CM.format(name="a")})
    with pytest.raises(UsageError, match="needs a folder"):
        render_git(str(repo), "HEAD", "a.yaml", "kustomize")
    with pytest.raises(UsageError, match="renderer must be one of"):
        render_git(str(repo), "HEAD", ".", "jsonnet")


def test_parse_documents_handles_end_markers_and_empty_documents() -> None:
    docs = parse_documents("---\n---\na: 1\n...\n---\nb: 2\n", "x.yaml")
    assert [d.obj for d in docs] == [{"a": 1}, {"b": 2}]
    assert [d.line for d in docs] == [3, 6]


def test_field_line_follows_keys_and_indexes() -> None:
    text = "spec:\n  items:\n  - name: a\n  - name: b\n"
    assert field_line(text, "spec.items[1].name") == 4
    assert field_line(text, "spec.missing") == 1
    assert field_line("a: [", "a") is None


# --- the command ----------------------------------------------------------------------------


def write_config(tmp_path: Path, repo: Path, path: str = ".") -> Path:
    cfg = tmp_path / "fracctl.yaml"
    cfg.write_text(f"git:\n  repo: {repo}\n  path: {path}\n")
    return cfg


def test_cli_renders_yaml_and_json_with_selection(tmp_path: Path) -> None:
    repo = make_repo(
        tmp_path / "r",
        {"a.yaml": CM.format(name="a") + "---\n" + CM.format(name="b")},
    )
    cfg = write_config(tmp_path, repo)
    r = run_cli("-c", str(cfg), "render")
    assert r.exit_code == ExitCode.OK, r.output
    assert "name: a" in r.stdout and "name: b" in r.stdout
    r = run_cli("-c", str(cfg), "render", "--name", "b", "--kind", "configmap", "-o", "json")
    assert r.exit_code == ExitCode.OK, r.output
    assert [i["metadata"]["name"] for i in r.json["items"]] == ["b"]
    r = run_cli("-c", str(cfg), "render", "--name", "zzz")
    assert r.exit_code == ExitCode.OK, r.output
    assert "no objects rendered matched the selection" in r.stderr


def test_cli_errors_are_one_line_with_the_right_exit_code(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "r", {"a.yaml": "a: b\n  c: d\n"})
    cfg = write_config(tmp_path, repo)
    cases = [
        (["render"], ExitCode.EXTERNAL, "a.yaml:2: not valid YAML"),
        (["render", "--revision", "v9.9"], ExitCode.EXTERNAL, "unknown revision 'v9.9'"),
        (["render", "--path", "nope"], ExitCode.EXTERNAL, "path 'nope' does not exist"),
        (["render", "--path", "../x"], ExitCode.USAGE, "must be relative"),
        (["render", "--renderer", "jsonnet"], ExitCode.USAGE, "must be one of"),
        (["render", "-o", "xml"], ExitCode.USAGE, "must be one of"),
        (["render", "--from-argocd", "app", "--path", "x"], ExitCode.USAGE, "--from-argocd"),
    ]
    for args, code, text in cases:
        r = run_cli("-c", str(cfg), *args)
        assert r.exit_code == code, (args, r.output)
        assert text in r.stderr, (args, r.stderr)
        assert len(r.stderr.strip().splitlines()) == 1, r.stderr
        assert "Traceback" not in r.output


def test_cli_from_argocd_asks_for_the_revision(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ARGOCD_SERVER", "argocd.test")
    monkeypatch.setenv("ARGOCD_AUTH_TOKEN", "s3cret-token")
    manifest = json.dumps(
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "from-argo"}}
    )
    with respx.mock(base_url="https://argocd.test") as mock:
        route = mock.get("/api/v1/applications/gpu-fractioning/manifests").respond(
            json={"manifests": [manifest], "revision": "abc"}
        )
        r = run_cli("render", "--from-argocd", "gpu-fractioning", "-r", "abc", "-o", "json")
    assert r.exit_code == ExitCode.OK, r.output
    assert r.json["items"][0]["metadata"]["name"] == "from-argo"
    request = route.calls.last.request
    assert request.url.params["revision"] == "abc"
    assert request.headers["Authorization"] == "Bearer s3cret-token"


def test_cli_from_argocd_errors_exit_3_without_the_token(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ARGOCD_SERVER", "argocd.test")
    monkeypatch.setenv("ARGOCD_AUTH_TOKEN", "s3cret-token")
    with respx.mock(base_url="https://argocd.test") as mock:
        mock.get("/api/v1/applications/nope/manifests").respond(
            404, json={"error": "not found", "code": 5, "message": "app 'nope' not found"}
        )
        r = run_cli("render", "--from-argocd", "nope")
        assert r.exit_code == ExitCode.EXTERNAL, r.output
        assert "not found" in r.stderr
        mock.get("/api/v1/applications/down/manifests").mock(
            side_effect=httpx.ConnectError("connection refused")
        )
        r = run_cli("render", "--from-argocd", "down")
        assert r.exit_code == ExitCode.EXTERNAL, r.output
        assert "cannot reach Argo CD" in r.stderr
    assert "s3cret-token" not in r.output


def test_render_does_not_need_a_cluster_or_the_network(tmp_path: Path) -> None:
    # No kubeconfig anywhere: render must still work.
    repo = make_repo(tmp_path / "r", {"a.yaml": CM.format(name="a")})
    assert "KUBECONFIG" not in os.environ
    r = run_cli("render", "--repo", str(repo))
    assert r.exit_code == ExitCode.OK, r.output


# --- one document per object ------------------------------------------------------------

GFC = """\
apiVersion: gpu-fractioning.kai.scheduler/v1alpha1
kind: GpuFractioningConfig
metadata:
  name: default{namespace}
spec:
  nodeSelector:
    example.org/gpu-class: {cls}
"""


def test_two_documents_for_one_object_name_both_files_and_lines(tmp_path: Path) -> None:
    repo = make_repo(
        tmp_path / "r",
        {
            "gpu/a.yaml": GFC.format(namespace="", cls="b200"),
            "gpu/b.yaml": CM.format(name="other") + "---\n" + GFC.format(namespace="", cls="h200"),
        },
    )
    with pytest.raises(UsageError) as e:
        render_git(str(repo), "HEAD", "gpu")
    message = str(e.value)
    assert "GpuFractioningConfig/default (gpu-fractioning.kai.scheduler group)" in message
    assert "declare GpuFractioningConfig/default" in message
    assert "group) twice: gpu/a.yaml:1 and gpu/b.yaml:9" in message
    assert e.value.exit_code == ExitCode.USAGE

    cfg = tmp_path / "fracctl.yaml"
    cfg.write_text(f"git:\n  repo: {repo}\n  path: gpu\n")
    for args in (("render",), ("render", "--kind", "ConfigMap")):
        r = run_cli("-c", str(cfg), *args)
        assert r.exit_code == ExitCode.USAGE, r.output
        assert r.stdout == ""  # nothing printed: no half of a contradiction
        assert "gpu/a.yaml:1 and gpu/b.yaml:9" in r.stderr
        assert len(r.stderr.strip().splitlines()) == 1, r.stderr


def test_one_object_is_its_group_kind_namespace_and_name(tmp_path: Path) -> None:
    def rendered(*docs: str, namespace: str = "default") -> list[str]:
        repo = make_repo(
            tmp_path / f"r{len(list(tmp_path.iterdir()))}", {"a.yaml": "---\n".join(docs)}
        )
        out = render_git(
            str(repo),
            "HEAD",
            ".",
            default_namespace=namespace,
            cluster_scoped={("gpu-fractioning.kai.scheduler", "GpuFractioningConfig")},
        )
        return [o["metadata"]["name"] for o in out.objects]

    cm = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n{extra}"
    secret = "apiVersion: v1\nkind: Secret\nmetadata:\n  name: x\n"
    # different namespaces, kinds or groups: different objects
    assert rendered(cm.format(extra="  namespace: a\n"), cm.format(extra="  namespace: b\n"))
    assert rendered(cm.format(extra=""), secret)
    assert rendered(
        "apiVersion: example.org/v1\nkind: ConfigMap\nmetadata:\n  name: x\n", cm.format(extra="")
    )
    # no namespace means the default one
    with pytest.raises(UsageError, match=r"ConfigMap/default/x \(core group\) twice"):
        rendered(cm.format(extra=""), cm.format(extra="  namespace: default\n"))
    # another version of the same group and kind is the same object
    with pytest.raises(UsageError, match="twice"):
        rendered(
            GFC.format(namespace="", cls="b200"),
            GFC.format(namespace="", cls="h200").replace("v1alpha1", "v1beta1"),
        )
    # a namespace written on a cluster-scoped object does not make it another object
    with pytest.raises(UsageError, match="a.yaml:1 and a.yaml:9"):
        rendered(
            GFC.format(namespace="", cls="b200"),
            GFC.format(namespace="\n  namespace: x", cls="h200"),
        )


def test_duplicate_list_items_are_named_by_position(tmp_path: Path) -> None:
    item = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "d", "namespace": "t"}}
    repo = make_repo(
        tmp_path / "r",
        {"l.json": json.dumps({"apiVersion": "v1", "kind": "List", "items": [item, item]})},
    )
    with pytest.raises(UsageError) as e:
        render_git(str(repo), "HEAD", ".")
    assert "l.json:1, item 1 of the List and l.json:1, item 2 of the List" in str(e.value)


@pytest.mark.skipif(
    not (shutil.which("kustomize") or shutil.which("kubectl")), reason="needs kustomize or kubectl"
)
def test_duplicates_in_kustomize_output_are_named_by_their_position(tmp_path: Path) -> None:
    # kustomize refuses two resources with one id, but it cannot know that this kind is
    # cluster-scoped, so a stray namespace makes it pass both through.
    repo = make_repo(
        tmp_path / "r",
        {
            "k/kustomization.yaml": "resources:\n  - a.yaml\n  - b.yaml\n",
            "k/a.yaml": GFC.format(namespace="", cls="b200"),
            "k/b.yaml": GFC.format(namespace="\n  namespace: gpu", cls="h200"),
        },
    )
    with pytest.raises(UsageError) as e:
        render_git(
            str(repo),
            "HEAD",
            "k",
            cluster_scoped={("gpu-fractioning.kai.scheduler", "GpuFractioningConfig")},
        )
    message = str(e.value)
    assert " output (line " in message
    assert "document 1 of the " in message and "document 2 of the " in message


@pytest.mark.skipif(shutil.which("helm") is None, reason="needs a helm binary")
def test_duplicates_in_helm_output_are_named_by_position_and_template(tmp_path: Path) -> None:
    cm = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: same\n  namespace: ml\n"
    repo = make_repo(
        tmp_path / "r",
        {
            "chart/Chart.yaml": "apiVersion: v2\nname: chart\nversion: 0.1.0\n",
            "chart/templates/a.yaml": cm,
            "chart/templates/b.yaml": cm,
        },
    )
    with pytest.raises(UsageError) as e:
        render_git(str(repo), "HEAD", "chart")
    message = str(e.value)
    assert "document 1 of the helm output (line 3), from chart/templates/a.yaml" in message
    assert "document 2 of the helm output (line 10), from chart/templates/b.yaml" in message


def test_cli_from_argocd_refuses_two_manifests_for_one_object(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ARGOCD_SERVER", "argocd.test")
    monkeypatch.setenv("ARGOCD_AUTH_TOKEN", "s3cret-token")
    a = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}, "data": {"k": "1"}}
    b = {**a, "data": {"k": "2"}}
    with respx.mock(base_url="https://argocd.test") as mock:
        mock.get("/api/v1/applications/gpu-fractioning/manifests").respond(
            json={"manifests": [json.dumps(a), json.dumps(b)]}
        )
        r = run_cli("render", "--from-argocd", "gpu-fractioning")
    assert r.exit_code == ExitCode.USAGE, r.output
    assert "manifest 1 of Argo CD's rendering and manifest 2 of Argo CD's rendering" in r.stderr
    assert r.stdout == ""
