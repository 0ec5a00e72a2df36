"""``-o prometheus`` read back with the Prometheus client's own parser, and a drift setup."""

from __future__ import annotations

import re
import shutil
from pathlib import Path
from typing import Any

from prometheus_client.parser import text_string_to_metric_families

from fracctl.adapters.git import init_repo

REPO = Path(__file__).resolve().parents[2]
TARGET_YAML = REPO / "examples" / "gitops" / "gpu-fractioning" / "gpufractioningconfig.yaml"
RTX = {"example.org/gpu-class": "rtx-pro-6000"}
OPT_IN = {"example.org/gpu-fractions": "enabled"}
NOW = 1_760_000_000.25
# Prometheus's own rules: names and label names, and the conventions fracctl keeps to.
NAME = re.compile(r"^fracctl_(drift|doctor)_[a-z0-9_]+$")
LABEL = re.compile(r"^[a-z][a-z0-9_]*$")

Samples = dict[str, dict[tuple[tuple[str, str], ...], float]]


def parse(text: str) -> tuple[dict[str, Any], Samples]:
    """The families by name and each family's samples by their sorted labels."""
    families = {f.name: f for f in text_string_to_metric_families(text)}
    samples: Samples = {}
    for fam in families.values():
        for s in fam.samples:
            key = tuple(sorted(s.labels.items()))
            assert key not in samples.get(s.name, {}), f"{s.name}{s.labels} twice"
            samples.setdefault(s.name, {})[key] = s.value
    return families, samples


def assert_conventions(text: str) -> None:
    families, _ = parse(text)
    assert text.endswith("\n")
    for name, fam in families.items():
        assert NAME.match(name), name
        assert fam.type == "gauge", name
        assert not name.endswith("_total"), f"{name}: _total is for counters"
        assert fam.documentation, f"{name} has no HELP"
        for s in fam.samples:
            assert all(LABEL.match(k) for k in s.labels), s
    assert text.count("# TYPE ") == len(families)  # one family per metric
    assert text.count("# HELP ") == len(families)


def lbl(**labels: str) -> tuple[tuple[str, str], ...]:
    return tuple(sorted(labels.items()))


def plain_config(tmp_path: Path, kubeconfig: str) -> str:
    """The example's GpuFractioningConfig as plain YAML in a git repository, and a config."""
    repo = tmp_path / "gitops"
    (repo / "gpu-fractioning").mkdir(parents=True)
    shutil.copy(TARGET_YAML, repo / "gpu-fractioning" / TARGET_YAML.name)
    init_repo(repo, message="desired state: select the opt-in label")
    f = tmp_path / "fracctl.yaml"
    f.write_text(
        f"kube:\n  kubeconfig: {kubeconfig}\n"
        f"git:\n  repo: {repo}\n  path: gpu-fractioning\n  revision: HEAD\n"
    )
    return str(f)
