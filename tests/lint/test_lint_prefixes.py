"""FL014 and FL004 read the agents' annotation prefix from the config among the manifests."""

from __future__ import annotations

from pathlib import Path

import pytest

from fracctl.core.fractions.fractional import agent_prefixes
from fracctl.core.fractions.memory import memory_key_container, quantity_bytes
from fracctl.errors import ExitCode
from tests.support.helpers import run_cli

CONFIG = """\
apiVersion: gpu-fractioning.kai.scheduler/v1alpha1
kind: GpuFractioningConfig
metadata:
  name: default
spec:
  nodeSelector: {example.org/gpu-fractions: enabled}
  fractioningAgent:
    annotationPrefix: example.org/frac.
---
"""

POD = """\
apiVersion: v1
kind: Pod
metadata:
  name: trainer
  namespace: ml
  annotations:
    gpu-fraction: "0.5"
    {key}: "6Gi"
spec:
  securityContext: {{runAsNonRoot: true}}
  tolerations: [{{key: nvidia.com/gpu, operator: Exists, effect: NoSchedule}}]
  containers: [{{name: main, image: registry.example.org/ml/serve:1.0.3}}]
"""


def lint(tmp_path: Path, text: str) -> list[dict[str, str]]:
    f = tmp_path / "m.yaml"
    f.write_text(text)
    r = run_cli("lint", str(f), "-o", "json")
    assert r.exit_code in (ExitCode.OK, ExitCode.FINDING), r.output
    return [x for x in r.json["findings"] if x["rule"] in ("FL004", "FL014")]


def test_the_configs_own_prefix_is_what_the_agents_read(tmp_path: Path) -> None:
    assert lint(tmp_path, CONFIG + POD.format(key="example.org/frac.main.gpu-memory.limit")) == []
    (f,) = lint(tmp_path, CONFIG + POD.format(key="nvidia.com/container.main.gpu-memory.limit"))
    assert f["rule"] == "FL014"
    assert "under example.org/frac. (git's GpuFractioningConfig/default" in f["message"]
    assert "(read: example.org/frac.main.gpu-memory.limit)" in f["message"]


def test_without_a_config_the_default_prefix_and_it_says_so(tmp_path: Path) -> None:
    assert lint(tmp_path, POD.format(key="nvidia.com/container.main.gpu-memory.limit")) == []
    (f,) = lint(tmp_path, POD.format(key="nvidia.com/gpu-memory.container.main.limit"))
    assert f["rule"] == "FL014" and "documented default" in f["message"]
    # a prefix lint knows nothing of is not judged: no config says the agents read it
    assert lint(tmp_path, POD.format(key="example.org/frac.main.gpu-memory.limit")) == []


@pytest.mark.parametrize(
    ("text", "size"),
    [("4Gi", 4 * 2**30), ("4096Mi", 4 * 2**30), ("4096M", 4.096e9), ("1.5Gi", 1.5 * 2**30),
     ("4096", 4096.0), ("4 Gi", None), ("-1Gi", None), ("4GB", None), ("", None)],
)  # fmt: skip
def test_quantities_as_the_agents_read_them(text: str, size: float | None) -> None:
    assert quantity_bytes(text) == size


def test_a_memory_key_names_its_container_in_either_generations_form() -> None:
    ps = agent_prefixes("gpu-fractioning")
    assert memory_key_container("nvidia.com/container.main.gpu-memory.limit", ps) == "main"
    assert memory_key_container("nvidia.com/gpu-memory.container.main.request", ps) == "main"
    assert memory_key_container("nvidia.com/container.main.gpus.devices", ps) is None
    assert memory_key_container("gpu-memory", ps) is None
