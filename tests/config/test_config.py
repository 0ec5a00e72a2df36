from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from fracctl import config as cfg
from fracctl.errors import ConfigError, ExitCode
from tests.support.helpers import run_cli

REPO = Path(__file__).resolve().parents[2]


def write(tmp_path: Path, text: str) -> str:
    path = tmp_path / "fracctl.yaml"
    path.write_text(text)
    return str(path)


def test_defaults_name_the_gpu_fractioning_config() -> None:
    c = cfg.load(env={})
    assert c.target.kind == "GpuFractioningConfig"
    assert c.target.group == "gpu-fractioning.kai.scheduler"
    assert c.target.name == "default"
    assert c.target.finalizer == "gpu-fractioning.nvidia.com/cleanup-node-conditions"
    assert c.condition == "gpu-fractioning.nvidia.com/Ready"
    assert c.labels.opt_in_key == "example.org/gpu-fractions"
    assert c.labels.opt_in_value == "enabled"
    assert c.timeouts.ready == 600
    assert c.source is None


def test_older_gpu_sharing_naming_is_selectable(tmp_path: Path) -> None:
    c = cfg.load(write(tmp_path, "target:\n  naming: gpu-sharing\n"), env={})
    assert c.target.kind == "GpuSharingConfig"
    assert c.target.group == "gpu-sharing.kai.scheduler"
    assert c.target.finalizer == "gpu-sharing.nvidia.com/cleanup-node-conditions"
    assert c.condition == "gpu-sharing.nvidia.com/Ready"


def test_precedence_flags_over_env_over_file(tmp_path: Path) -> None:
    path = write(tmp_path, "argocd:\n  app: from-file\ntimeouts:\n  ready: 5m\n")
    assert cfg.load(path, env={}).argocd.app == "from-file"
    env = {"FRACCTL_ARGOCD_APP": "from-env", "FRACCTL_TIMEOUTS_READY": "90s"}
    c = cfg.load(path, env=env)
    assert c.argocd.app == "from-env"
    assert c.timeouts.ready == 90
    c = cfg.load(path, env=env, overrides={"argocd.app": "from-flag", "git.path": None})
    assert c.argocd.app == "from-flag"
    assert c.git.path == "."


def test_config_path_from_env_and_cwd(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = write(tmp_path, "git:\n  revision: v2\n")
    assert cfg.load(env={"FRACCTL_CONFIG": path}).git.revision == "v2"
    monkeypatch.chdir(tmp_path)
    assert cfg.load(env={}).git.revision == "v2"


def test_env_lists_are_comma_separated() -> None:
    c = cfg.load(env={"FRACCTL_LABELS_DENIED_CLASSES": "h200, h100"})
    assert c.labels.denied_classes == ["h200", "h100"]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("timeouts:\n  ready: ten\n", ":2: timeouts.ready: expected a duration"),
        ("timeouts:\n  redy: 1m\n", ":2: timeouts.redy: unknown key"),
        ("bogus:\n  a: 1\n", ":1: unknown section 'bogus'"),
        ("git: [1, 2]\n", ":1: git: expected a mapping"),
        ("git:\n  revision: [1\n", "not valid YAML"),
        ("- a\n- b\n", ":1: the top level must be a mapping"),
        ("kube:\n  in_cluster: maybe\n", ":2: kube.in_cluster: expected true or false"),
        ("pods:\n  page_size: many\n", ":2: pods.page_size: expected an integer"),
        ("labels:\n  opt_in: no-equals\n", "labels: opt_in must look like key=value"),
        (
            "labels:\n  allowed_classes: [h200]\n  denied_classes: [h200]\n",
            "classes both allowed and denied: h200",
        ),
        ("recreate:\n  backend: helmfile\n", "backend must be argocd, flux, helm or apply"),
        ("target:\n  naming: other\n", "naming must be one of"),
        ("git:\n  renderer: jsonnet\n", "renderer must be auto, plain, kustomize or helm"),
    ],
)
def test_bad_files_name_file_line_and_field(tmp_path: Path, text: str, expected: str) -> None:
    path = write(tmp_path, text)
    with pytest.raises(ConfigError) as e:
        cfg.load(path, env={})
    assert str(e.value).startswith(path)
    assert expected in str(e.value)
    assert "\n" not in str(e.value)


def test_a_section_check_points_at_the_key_it_names(tmp_path: Path) -> None:
    """The check says which key is at fault: its line, not the first key the message names."""
    path = write(tmp_path, "mps:\n  max_retries: 5\n  health_failures: 0\n")
    message = "mps: max_retries must be >= 0 and health_failures >= 1"
    with pytest.raises(ConfigError) as e:
        cfg.load(path, env={})
    assert str(e.value) == f"{path}:3: {message}"
    path = write(tmp_path, "mps:\n  max_retries: 5\n")
    with pytest.raises(ConfigError) as e:
        cfg.load(path, env={"FRACCTL_MPS_HEALTH_FAILURES": "0"})
    assert str(e.value) == f"environment variable FRACCTL_MPS_HEALTH_FAILURES: {message}"


def test_a_complaint_about_a_combination_blames_no_one_value(tmp_path: Path) -> None:
    message = "labels: classes both allowed and denied: h200"
    path = write(tmp_path, "labels:\n  opt_in: a=b\n  allowed_classes: [h200]\n")
    with pytest.raises(ConfigError) as e:
        cfg.load(path, env={})
    assert str(e.value) == f"{path}:2: {message}"  # all from the file: its first line
    with pytest.raises(ConfigError) as e:
        cfg.load(path, env={"FRACCTL_LABELS_DENIED_CLASSES": "h200"})
    assert str(e.value) == message  # from two places: neither is named


def test_invalid_value_carries_its_key() -> None:
    e = cfg.InvalidValue("protocol", "must be 2 or 3, got 5")
    assert (e.key, e.problem) == ("protocol", "must be 2 or 3, got 5")
    assert str(e) == "protocol must be 2 or 3, got 5"
    assert (
        str(cfg.InvalidValue("tolerations", "expected key", sep=": "))
        == "tolerations: expected key"
    )
    assert str(cfg.InvalidValue(None, "classes both allowed and denied: a")) == (
        "classes both allowed and denied: a"
    )
    with pytest.raises(cfg.InvalidValue) as caught:
        cfg.MPSConfig(health_failures=0)
    assert caught.value.key == "health_failures"
    assert str(caught.value) == "max_retries must be >= 0 and health_failures >= 1"


def test_bad_env_value_names_the_field() -> None:
    with pytest.raises(ConfigError, match="timeouts.ready: expected a duration"):
        cfg.load(env={"FRACCTL_TIMEOUTS_READY": "soon"})


def test_missing_explicit_file_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="config file not found"):
        cfg.load(str(tmp_path / "nope.yaml"), env={})


def test_empty_file_gives_defaults(tmp_path: Path) -> None:
    assert cfg.load(write(tmp_path, ""), env={}).target.name == "default"


@pytest.mark.parametrize(
    ("git", "namespace"),
    [
        ("", "default"),
        # A chart's objects that name no namespace land in the release's, as helm does.
        ("git:\n  renderer: helm\n  helm_namespace: shop\n", "shop"),
        ("git:\n  namespace: team\n  helm_namespace: shop\n", "team"),  # said, it wins
    ],
)
def test_the_namespace_of_rendered_objects_that_name_none(
    tmp_path: Path, git: str, namespace: str
) -> None:
    assert cfg.load(write(tmp_path, git), env={}).git.objects_namespace == namespace


@pytest.mark.parametrize(
    ("raw", "seconds"),
    [(90, 90), ("90", 90), ("90s", 90), ("10m", 600), ("1h", 3600), ("500ms", 0.5)],
)
def test_durations(raw: object, seconds: float) -> None:
    assert cfg.parse_duration(raw) == seconds


def test_example_config_documents_every_key() -> None:
    example = REPO / "examples" / "fracctl.yaml"
    c = cfg.load(str(example), env={})
    text = example.read_text()
    sections = dataclasses.asdict(c)
    sections.pop("source")
    sections.update(sections.pop("backends"))  # the backends' own sections too
    for section, values in sections.items():
        assert f"\n{section}:" in "\n" + text, section
        for key in values:
            assert f"  {key}:" in text, (
                f"{section}.{key} is not documented in examples/fracctl.yaml"
            )


def test_cli_bad_config_is_one_line_exit_2(tmp_path: Path) -> None:
    path = write(tmp_path, "timeouts:\n  ready: ten\n")
    r = run_cli("--config", path, "sandbox", "status")
    assert r.exit_code == ExitCode.USAGE, r.output
    assert r.stderr.strip().count("\n") == 0
    assert "fracctl.yaml:2: timeouts.ready" in r.stderr
    assert "Traceback" not in r.output


def test_loading_the_configuration_imports_nothing_above_config(tmp_path: Path) -> None:
    """``config.load`` and every backend's section read in a fresh interpreter: no module
    of flows, adapters, the CLI or the sandbox is imported (the layers hold at run time,
    where import-linter cannot look)."""
    import subprocess
    import sys

    config = tmp_path / "fracctl.yaml"
    config.write_text(
        "git:\n  repo: .\n  path: charts/gpu-fractioning\n  renderer: helm\n"
        "recreate:\n  backend: helm\nhelm:\n  binary: helm\n  timeout: 5m\n"
    )
    script = (
        "import sys\n"
        "from fracctl.config import load\n"
        "from fracctl.core.gitops.backends import sections\n"
        f"c = load({str(config)!r}, env={{}})\n"
        "for name in sections():\n"
        "    c.section(name)\n"
        "above = ('fracctl.flows', 'fracctl.adapters', 'fracctl.cli', 'fracctl.sandbox')\n"
        "print(sorted(m for m in sys.modules if m.startswith(above)))\n"
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         check=True, timeout=60)  # fmt: skip
    assert out.stdout.strip() == "[]", out.stdout
