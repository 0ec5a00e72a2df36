"""``fracctl lint`` over correct manifests in each KAI form, and the mistakes it must catch.

The correct corpus (``corpus/correct``) is written in each form KAI documents: a
fraction, GPU memory, the fraction given to an init container or to a non-default
container, MPS, a gang-scheduled batch Job, a priority class, queues, and a
PyTorchJob. It must stay quiet, or raise only the warnings named here. The incorrect
corpus holds the optional-GPU trap and the untolerated GPU taint, also inside a
PyTorchJob's replica templates.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from fracctl.core import lint as core_lint
from fracctl.core.kube.podspec import path_string, pod_template, pod_templates
from fracctl.errors import ExitCode
from tests.support.helpers import run_cli

CORPUS = Path(__file__).parent / "corpus"

CORRECT = {
    "fraction.yaml": [],
    "memory.yaml": [],
    "init-container.yaml": [],
    "non-default-container.yaml": [],
    "mps.yaml": [],
    "batch.yaml": [],
    "priority.yaml": [],
    "queue.yaml": [],
    "pytorchjob.yaml": [],
    "whole-gpu-by-admission.yaml": ["FL013"],
}

INCORRECT = {
    "optional-gpu-trap.yaml": [("FL001", "spec.template.spec.affinity")],
    "fractional-untolerated.yaml": [("FL008", "spec")],
    "mig-untolerated.yaml": [("FL008", "spec")],
    "missing-container.yaml": [("FL006", "metadata.annotations")],
    "pytorchjob-traps.yaml": [
        ("FL001", "spec.pytorchReplicaSpecs.Master.template.spec.affinity"),
        ("FL008", "spec.pytorchReplicaSpecs.Worker.template.spec"),
    ],
}


def findings(path: Path, *args: str) -> tuple[int, list[dict[str, str]]]:
    r = run_cli("lint", str(path), "-o", "json", *args)
    assert r.exit_code in (ExitCode.OK, ExitCode.FINDING), r.output
    return r.exit_code, r.json["findings"]


def test_the_corpus_is_complete() -> None:
    assert {p.name for p in (CORPUS / "correct").glob("*.yaml")} == set(CORRECT)
    assert {p.name for p in (CORPUS / "incorrect").glob("*.yaml")} == set(INCORRECT)


@pytest.mark.parametrize("name", sorted(CORRECT))
def test_a_correct_manifest_is_quiet_or_warns_as_named(name: str) -> None:
    code, found = findings(CORPUS / "correct" / name)
    assert code == ExitCode.OK, found
    assert [f["rule"] for f in found] == CORRECT[name]
    assert all(f["severity"] == "warning" for f in found)


@pytest.mark.parametrize("name", sorted(INCORRECT))
def test_an_incorrect_manifest_is_caught(name: str) -> None:
    code, found = findings(CORPUS / "incorrect" / name)
    assert code == ExitCode.FINDING, found
    assert [(f["rule"], f["field"]) for f in found] == INCORRECT[name]


def test_the_caught_trap_points_at_its_replica_line() -> None:
    path = CORPUS / "incorrect" / "pytorchjob-traps.yaml"
    _, found = findings(path)
    lines = path.read_text().splitlines()
    assert [lines[f["line"] - 1].strip() for f in found] == ["affinity:", "spec:"]
    assert found[1]["line"] > found[0]["line"]


# --- FL006: the containers KAI looks among ------------------------------------------


def test_the_fraction_may_go_to_an_init_container() -> None:
    _, found = findings(CORPUS / "correct" / "init-container.yaml")
    assert found == []


def test_an_ephemeral_container_is_not_one_kai_reads() -> None:
    _, found = findings(CORPUS / "incorrect" / "missing-container.yaml")
    (f,) = found
    assert "debugger" in f["message"]
    assert "ephemeral container, which KAI does not look among" in f["message"]


# --- FL008 and FL013: what lint knows, and what it assumes ---------------------------


def test_the_admission_plugin_setting(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    by_admission = CORPUS / "correct" / "whole-gpu-by-admission.yaml"
    fractional = CORPUS / "incorrect" / "fractional-untolerated.yaml"
    (f,) = findings(by_admission)[1]
    assert f["rule"] == "FL013"
    assert "ExtendedResourceToleration" in f["message"]
    assert "assumed from cluster.gpu_taint_required: true" in f["message"]

    (tmp_path / "fracctl.yaml").write_text("lint:\n  extended_resource_toleration: true\n")
    assert findings(by_admission) == (ExitCode.OK, [])
    assert [f["rule"] for f in findings(fractional)[1]] == ["FL008"]  # still no toleration

    (tmp_path / "fracctl.yaml").write_text("lint:\n  extended_resource_toleration: false\n")
    code, found = findings(by_admission)
    assert code == ExitCode.FINDING
    assert [f["rule"] for f in found] == ["FL008"]
    assert "lint.extended_resource_toleration: false" in found[0]["message"]

    (tmp_path / "fracctl.yaml").write_text("cluster:\n  gpu_taint_required: false\n")
    assert findings(by_admission) == (ExitCode.OK, [])
    assert findings(fractional) == (ExitCode.OK, [])


def test_a_fractional_pod_gets_no_toleration_from_the_plugin() -> None:
    (f,) = findings(CORPUS / "incorrect" / "fractional-untolerated.yaml")[1]
    assert "requests no nvidia.com/gpu resource" in f["message"]
    (f,) = findings(CORPUS / "incorrect" / "mig-untolerated.yaml")[1]
    assert "nvidia.com/mig-1g.10gb, not nvidia.com/gpu" in f["message"]


def test_a_suppression_on_one_replica_template_silences_only_it(tmp_path: Path) -> None:
    text = (CORPUS / "incorrect" / "pytorchjob-traps.yaml").read_text()
    note = '            gpu-fraction: "0.5"'
    text = text.replace(note, f'{note}\n            fracctl.io/ignore: "FL008 tolerated by policy"')
    (tmp_path / "job.yaml").write_text(text)
    _, found = findings(tmp_path / "job.yaml")
    assert [(f["rule"], f["suppressed"]) for f in found] == [
        ("FL001", None),
        ("FL008", "tolerated by policy"),
    ]


def test_an_object_level_finding_is_reported_once_for_all_its_templates(
    tmp_path: Path,
) -> None:
    text = (CORPUS / "correct" / "pytorchjob.yaml").read_text()
    text = text.replace(
        "  name: resnet\n", '  name: resnet\n  annotations:\n    fracctl.io/ignore: "FL008"\n'
    )
    (tmp_path / "job.yaml").write_text(text)
    _, found = findings(tmp_path / "job.yaml")
    assert [f["rule"] for f in found] == ["FL000"]


# --- where the ML workload kinds keep their pod templates ----------------------------


def _pod(name: str) -> dict[str, object]:
    return {"metadata": {"name": name}, "spec": {"containers": [{"name": name}]}}


RAY_CLUSTER = {
    "headGroupSpec": {"template": _pod("head")},
    "workerGroupSpecs": [{"template": _pod("small")}, {"template": _pod("large")}],
}
KINDS = [
    (
        {
            "kind": "PyTorchJob",
            "spec": {"pytorchReplicaSpecs": {"Master": {"template": _pod("m")}}},
        },
        ["spec.pytorchReplicaSpecs.Master.template"],
    ),
    (
        {"kind": "TFJob", "spec": {"tfReplicaSpecs": {"PS": {"template": _pod("p")}}}},
        ["spec.tfReplicaSpecs.PS.template"],
    ),
    (
        {
            "kind": "MPIJob",
            "spec": {
                "mpiReplicaSpecs": {
                    "Launcher": {"template": _pod("l")},
                    "Worker": {"template": _pod("w")},
                }
            },
        },
        ["spec.mpiReplicaSpecs.Launcher.template", "spec.mpiReplicaSpecs.Worker.template"],
    ),
    (
        {"kind": "RayCluster", "spec": RAY_CLUSTER},
        [
            "spec.headGroupSpec.template",
            "spec.workerGroupSpecs[0].template",
            "spec.workerGroupSpecs[1].template",
        ],
    ),
    (
        {
            "kind": "RayJob",
            "spec": {"rayClusterSpec": RAY_CLUSTER, "submitterPodTemplate": _pod("submit")},
        },
        [
            "spec.rayClusterSpec.headGroupSpec.template",
            "spec.rayClusterSpec.workerGroupSpecs[0].template",
            "spec.rayClusterSpec.workerGroupSpecs[1].template",
            "spec.submitterPodTemplate",
        ],
    ),
    (
        {"kind": "RayService", "spec": {"rayClusterConfig": RAY_CLUSTER}},
        [
            "spec.rayClusterConfig.headGroupSpec.template",
            "spec.rayClusterConfig.workerGroupSpecs[0].template",
            "spec.rayClusterConfig.workerGroupSpecs[1].template",
        ],
    ),
    (
        {
            "kind": "JobSet",
            "spec": {"replicatedJobs": [{"template": {"spec": {"template": _pod("j")}}}]},
        },
        ["spec.replicatedJobs[0].template.spec.template"],
    ),
    (
        {
            "kind": "TrainingRuntime",
            "spec": {
                "template": {
                    "spec": {"replicatedJobs": [{"template": {"spec": {"template": _pod("n")}}}]}
                }
            },
        },
        ["spec.template.spec.replicatedJobs[0].template.spec.template"],
    ),
    ({"kind": "Deployment", "spec": {"template": _pod("d")}}, ["spec.template"]),
    ({"kind": "Pod", "spec": {}}, [""]),
    ({"kind": "PyTorchJob", "spec": {"pytorchReplicaSpecs": ["odd", None]}}, []),
    ({"kind": "RayCluster", "spec": {"workerGroupSpecs": {"template": 3}}}, []),
]


@pytest.mark.parametrize(("obj", "paths"), KINDS, ids=[str(k[0]["kind"]) for k in KINDS])
def test_pod_templates_of_each_kind(obj: dict[str, object], paths: list[str]) -> None:
    found = pod_templates(obj)
    assert [path_string(t.path) for t in found] == paths
    first = pod_template(obj)
    assert (first.path if first else None) == (found[0].path if found else None)


def test_every_rule_is_registered_once() -> None:
    assert len({r.id for r in core_lint.RULES}) == len(core_lint.RULES)
