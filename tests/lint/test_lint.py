"""``fracctl lint``: every rule against a failing and a passing fixture, and the formats."""

from __future__ import annotations

import io
import re
import shlex
import shutil
from pathlib import Path
from typing import Any

import pytest

from fracctl.adapters.git import init_repo
from fracctl.core.lint import BY_ID, RULES, WARNING
from fracctl.errors import ExitCode
from tests.support.helpers import Result, run_cli

FIXTURES = Path(__file__).parent / "lint_fixtures"
RULES_DOC = Path(__file__).resolve().parents[2] / "runbooks" / "lint-rules.md"


def lint(*args: str, stdin: str | None = None, monkeypatch: Any = None) -> Result:
    if stdin is not None:
        monkeypatch.setattr("sys.stdin", io.StringIO(stdin))
    return run_cli("lint", *args)


def active(r: Result) -> list[str]:
    return [f["rule"] for f in r.json["findings"] if f["suppressed"] is None]


@pytest.mark.parametrize("rule", [r.id for r in RULES])
def test_the_failing_fixture_breaks_exactly_its_rule(rule: str) -> None:
    r = lint(str(FIXTURES / f"{rule}-fail.yaml"), "-o", "json")
    assert set(active(r)) == {rule}, r.output
    want = ExitCode.OK if BY_ID[rule].severity == WARNING else ExitCode.FINDING
    assert r.exit_code == want, r.output
    for f in r.json["findings"]:
        assert f["file"].endswith(f"{rule}-fail.yaml")
        assert f["line"] >= 1
        assert f["message"]


@pytest.mark.parametrize("rule", [r.id for r in RULES])
def test_the_passing_fixture_is_clean(rule: str) -> None:
    r = lint(str(FIXTURES / f"{rule}-pass.yaml"), "-o", "json")
    assert r.exit_code == ExitCode.OK, r.output
    assert active(r) == [], r.output
    assert r.json["objects"] >= 1


def test_every_rule_has_fixtures_and_a_doc_line() -> None:
    doc = RULES_DOC.read_text()
    for rule in RULES:
        assert (FIXTURES / f"{rule.id}-fail.yaml").is_file(), rule.id
        assert (FIXTURES / f"{rule.id}-pass.yaml").is_file(), rule.id
        assert f"### {rule.id} {rule.name}" in doc, rule.id
    listed = {p.name.split("-")[0] for p in FIXTURES.glob("FL*.yaml")}
    assert listed == {r.id for r in RULES}


def test_lines_point_at_the_field() -> None:
    r = lint(str(FIXTURES / "FL001-fail.yaml"), "-o", "json")
    (f,) = r.json["findings"]
    line = (FIXTURES / "FL001-fail.yaml").read_text().splitlines()[f["line"] - 1]
    assert line.strip() == "affinity:"
    r = lint(str(FIXTURES / "FL012-fail.yaml"), "-o", "json")
    lines = (FIXTURES / "FL012-fail.yaml").read_text().splitlines()
    assert [lines[f["line"] - 1].strip().split(":")[0] for f in r.json["findings"]] == ["image"] * 3


def test_a_suppression_keeps_the_finding_visible_but_not_failing() -> None:
    r = lint(str(FIXTURES / "FL000-pass.yaml"), "-o", "json")
    assert r.exit_code == ExitCode.OK, r.output
    (f,) = r.json["findings"]
    assert f["rule"] == "FL007"
    assert f["suppressed"] == "the image drops root after setup; reviewed in PLAT-142"
    assert r.json["suppressed"] == 1
    table = lint(str(FIXTURES / "FL000-pass.yaml"))
    assert "FL007 fractional-root [suppressed (the image drops root" in table.stdout


def test_a_suppression_of_an_unknown_rule_is_a_finding(tmp_path: Path) -> None:
    text = (FIXTURES / "FL000-fail.yaml").read_text().replace("FL007", "FL999 because")
    (tmp_path / "x.yaml").write_text(text)
    r = lint(str(tmp_path / "x.yaml"), "-o", "json")
    assert r.exit_code == ExitCode.FINDING, r.output
    assert active(r) == ["FL000"]
    assert "'FL999' is not a rule id or name" in r.json["findings"][0]["message"]


def test_a_whole_folder_and_the_summary() -> None:
    r = lint(str(FIXTURES))
    assert r.exit_code == ExitCode.FINDING, r.output
    assert re.search(r"lint: \d+ error\(s\), 2 warning\(s\), 1 suppressed in \d+ object", r.stdout)
    assert f"{FIXTURES}/FL003-fail.yaml:6: FL003 gpu-fraction-range [error] Pod/ml/too-much" in (
        r.stdout
    )


# --- SARIF 2.1.0 ----------------------------------------------------------------------

LEVELS = {"none", "note", "warning", "error"}


def check_sarif(log: dict[str, Any]) -> None:
    """The required properties of the SARIF 2.1.0 schema, for what fracctl writes."""
    assert log["version"] == "2.1.0"  # sarifLog: required version, runs
    assert isinstance(log["runs"], list) and log["runs"]
    for run in log["runs"]:
        driver = run["tool"]["driver"]  # run: required tool; tool: required driver
        assert isinstance(driver["name"], str) and driver["name"]  # toolComponent: name
        ids = []
        for rule in driver.get("rules", []):
            assert isinstance(rule["id"], str)  # reportingDescriptor: required id
            ids.append(rule["id"])
            assert rule["shortDescription"]["text"]  # multiformatMessageString: text
            assert rule["defaultConfiguration"]["level"] in LEVELS
        for result in run["results"]:
            assert "text" in result["message"] or "id" in result["message"]  # result: message
            assert result["level"] in LEVELS
            assert result["ruleId"] in ids
            assert driver["rules"][result["ruleIndex"]]["id"] == result["ruleId"]
            for loc in result["locations"]:
                phys = loc["physicalLocation"]
                assert "artifactLocation" in phys or "address" in phys
                assert phys["region"]["startLine"] >= 1
            for s in result.get("suppressions", []):
                assert s["kind"] in ("inSource", "external")  # suppression: required kind


def test_sarif_holds_the_schema_required_fields() -> None:
    r = lint(str(FIXTURES), "-o", "sarif")
    assert r.exit_code == ExitCode.FINDING, r.output
    log = r.json
    check_sarif(log)
    run = log["runs"][0]
    assert run["tool"]["driver"]["name"] == "fracctl"
    assert [x["id"] for x in run["tool"]["driver"]["rules"]] == [x.id for x in RULES]
    by_rule = {x["ruleId"] for x in run["results"]}
    assert by_rule == {x.id for x in RULES}
    suppressed = [x for x in run["results"] if x.get("suppressions")]
    assert len(suppressed) == 1
    assert suppressed[0]["suppressions"][0]["justification"].startswith("the image drops root")


def test_sarif_of_a_clean_input_has_an_empty_result_list() -> None:
    r = lint(str(FIXTURES / "FL001-pass.yaml"), "-o", "sarif")
    assert r.exit_code == ExitCode.OK, r.output
    check_sarif(r.json)
    assert r.json["runs"][0]["results"] == []


def test_sarif_from_standard_input(monkeypatch: pytest.MonkeyPatch) -> None:
    text = (FIXTURES / "FL009-fail.yaml").read_text()
    r = lint("-", "-o", "sarif", stdin=text, monkeypatch=monkeypatch)
    assert r.exit_code == ExitCode.FINDING, r.output
    check_sarif(r.json)
    (result,) = r.json["runs"][0]["results"]
    place = result["locations"][0]["physicalLocation"]
    assert place["artifactLocation"] == {"description": {"text": "standard input"}}
    assert place["region"]["startLine"] == 4


def test_github_annotations() -> None:
    r = lint(str(FIXTURES / "FL008-fail.yaml"), str(FIXTURES / "FL002-fail.yaml"), "-o", "github")
    assert r.exit_code == ExitCode.FINDING, r.output
    lines = r.stdout.splitlines()
    assert lines[0].startswith(
        f"::error file={FIXTURES}/FL008-fail.yaml,line=11,title=fracctl lint"
    )
    assert lines[1].startswith("::warning file=")
    assert lines[-1].startswith("::notice title=fracctl lint::1 error(s), 1 warning(s)")


def test_github_annotations_from_standard_input_name_no_file(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    text = (FIXTURES / "FL009-fail.yaml").read_text()
    r = lint("-", "-o", "github", stdin=text, monkeypatch=monkeypatch)
    assert r.stdout.splitlines()[0].startswith("::error title=fracctl lint FL009")


# --- inputs ---------------------------------------------------------------------------


def test_malformed_yaml_is_one_line_with_file_and_line_exit_3(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("apiVersion: v1\nkind: Pod\nmetadata:\n  name: x\n   labels: [\n")
    r = lint(str(bad))
    assert r.exit_code == ExitCode.EXTERNAL, r.output
    assert len(r.stderr.strip().splitlines()) == 1, r.stderr
    assert f"{bad}:5: not valid YAML" in r.stderr
    assert "Traceback" not in r.output


def test_malformed_yaml_on_stdin(monkeypatch: pytest.MonkeyPatch) -> None:
    text = "kind: Pod\n---\nkind: Pod\nmetadata: {name: [x}\nspec: {}\n"
    r = lint("-", stdin=text, monkeypatch=monkeypatch)
    assert r.exit_code == ExitCode.EXTERNAL, r.output
    assert r.stderr == "Error: <stdin>:4: not valid YAML: did not find expected ',' or ']'\n"


ODD = """\
just a string
---
- a
- list
---
apiVersion: v1
kind: ConfigMap
metadata: {name: cm}
data: {a: b}
---
apiVersion: example.org/v1
kind: Widget
metadata: [not, a, mapping]
spec:
  template: oops
---
apiVersion: v1
kind: Pod
metadata: {name: p, annotations: {gpu-fraction: {nested: 1}}}
spec:
  containers: "not a list"
  securityContext: 7
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: d}
spec:
  template:
    metadata: {annotations: null}
    spec:
      affinity: {nodeAffinity: {preferredDuringSchedulingIgnoredDuringExecution: [null, 3]}}
      tolerations: [null, "x"]
      containers: [null, 5, {name: c, resources: {limits: [1, 2]}, securityContext: []}]
---
apiVersion: gpu-fractioning.kai.scheduler/v1alpha1
kind: GpuFractioningConfig
metadata: {name: default}
spec: {nodeSelector: [a, b], fractioningAgent: {image: 3}}
---
apiVersion: v1
kind: List
items: [3, {apiVersion: v1, kind: Pod}]
---
42
"""


def test_unexpected_kinds_and_shapes_never_crash(monkeypatch: pytest.MonkeyPatch) -> None:
    r = lint("-", "-o", "json", stdin=ODD, monkeypatch=monkeypatch)
    assert r.exit_code in (ExitCode.OK, ExitCode.FINDING), r.output
    assert "Unexpected error" not in r.output
    assert r.json["objects"] >= 5


def test_render_output_on_stdin(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    repo = tmp_path / "gitops"
    (repo / "gpu").mkdir(parents=True)
    shutil.copy(FIXTURES / "FL010-fail.yaml", repo / "gpu" / "config.yaml")
    shutil.copy(FIXTURES / "FL008-pass.yaml", repo / "gpu" / "job.yaml")
    init_repo(repo, message="init")
    rendered = run_cli("render", "--repo", str(repo), "--path", "gpu")
    assert rendered.exit_code == ExitCode.OK, rendered.output
    r = lint("-", "-o", "json", stdin=rendered.stdout, monkeypatch=monkeypatch)
    assert r.exit_code == ExitCode.FINDING, r.output
    assert active(r) == ["FL010"]
    (f,) = r.json["findings"]
    assert f["file"] == "<stdin>"
    assert rendered.stdout.splitlines()[f["line"] - 1].strip() == "nodeSelector:"


def test_a_missing_path_or_none_is_a_usage_error(tmp_path: Path) -> None:
    r = lint(str(tmp_path / "nope"))
    assert r.exit_code == ExitCode.USAGE, r.output
    assert "nope: no such file or directory" in r.stderr
    r = lint()
    assert r.exit_code == ExitCode.USAGE, r.output
    assert "give one or more PATHs" in r.stderr


def test_list_rules() -> None:
    r = lint("--list-rules")
    assert r.exit_code == ExitCode.OK, r.output
    assert len(r.stdout.splitlines()) == len(RULES)
    assert "FL001  error    optional-gpu-trap:" in r.stdout
    r = lint("--list-rules", "-o", "json")
    assert [x["id"] for x in r.json] == [x.id for x in RULES]


# --- configuration --------------------------------------------------------------------


def test_multi_vendor_from_the_configuration(monkeypatch: pytest.MonkeyPatch) -> None:
    fixture = str(FIXTURES / "FL008-pass.yaml")  # an NVIDIA job without the annotation
    assert active(lint(fixture, "-o", "json")) == []
    monkeypatch.setenv("FRACCTL_LINT_MULTI_VENDOR", "true")
    assert active(lint(fixture, "-o", "json")) == ["FL002"]


def test_disabled_rules_and_an_untainted_policy(tmp_path: Path) -> None:
    (tmp_path / "fracctl.yaml").write_text("lint:\n  disable: [gpu-toleration-missing]\n")
    assert active(lint(str(FIXTURES / "FL008-fail.yaml"), "-o", "json")) == []
    (tmp_path / "fracctl.yaml").write_text("cluster:\n  gpu_taint_required: false\n")
    assert active(lint(str(FIXTURES / "FL008-fail.yaml"), "-o", "json")) == []


@pytest.mark.parametrize("stdin", ["", "# helm: command not found\n", "---\n"])
def test_an_input_without_objects_fails_as_nothing_was_checked(
    monkeypatch: pytest.MonkeyPatch, stdin: str
) -> None:
    # `helm template … | fracctl lint -` where helm failed: the pipe is empty.
    r = lint("-", stdin=stdin, monkeypatch=monkeypatch)
    assert r.exit_code == ExitCode.EXTERNAL, r.output
    assert "no Kubernetes objects in the input: nothing was checked" in r.stderr
    assert "check that it ran" in r.stderr


# --- the CI examples ------------------------------------------------------------------

CI = Path(__file__).resolve().parents[2] / "examples" / "ci"


def ci_commands(text: str) -> list[list[str]]:
    """Every fracctl command line in a CI file's run/script entries, split at pipes."""
    from ruamel.yaml import YAML

    found: list[list[str]] = []

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            for v in node.values():
                walk(v)
        elif isinstance(node, list):
            for v in node:
                walk(v)
        elif isinstance(node, str) and "fracctl " in node:
            for part in node.split("|"):
                words = shlex.split(part.split(">")[0].split("||")[0])
                if words and words[0] == "fracctl":
                    found.append(words[1:])

    walk(YAML(typ="safe").load(text))
    return found


@pytest.mark.parametrize("name", ["github-actions-lint.yaml", "gitlab-ci.yml"])
def test_the_ci_examples_lint_rendered_manifests(name: str) -> None:
    from tests.project.test_runbooks import parse

    commands = ci_commands((CI / name).read_text())
    lints = [c for c in commands if c[0] == "lint"]
    assert lints, commands
    assert any(c[0] == "render" for c in commands)
    for argv in commands:
        assert parse(argv), argv
    if name.startswith("github"):
        assert ["lint", "-o", "github", "-"] in lints  # fracctl render | fracctl lint -
        assert any("sarif" in c for c in lints)
