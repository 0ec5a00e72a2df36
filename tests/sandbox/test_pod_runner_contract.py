"""The pod runner stands in for fracctl's image: hold its idea of the image to the
Containerfile that builds it, and its KWOK selector to what the runner runs."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from fracctl.sandbox.pod_runner import IMAGE, KWOK_SKIP, is_runners, launch, leave_to_runner

CONTAINERFILE = Path(__file__).resolve().parents[2] / "Containerfile"


def final_stage() -> str:
    text = CONTAINERFILE.read_text()
    return text[text.rindex("\nFROM ") :]


def test_the_entrypoint_cmd_workdir_and_user_are_the_images() -> None:
    stage = final_stage()
    assert re.search(r'^ENTRYPOINT \["fracctl"\]$', stage, re.M)
    assert tuple(re.findall(r'^CMD \["([^"]+)"\]$', stage, re.M)) == launch.CMD
    assert re.search(rf"^WORKDIR {re.escape(launch.WORKDIR)}$", stage, re.M)
    uid, gid = launch.USER
    assert re.search(rf"^USER {uid}:{gid}$", stage, re.M)
    assert f"--home-dir {launch.IMAGE_HOME}" in stage


def test_the_environment_is_the_images() -> None:
    stage = final_stage()
    env = re.search(r"^ENV (.*?)(?=^\S)", stage, re.M | re.S)
    assert env is not None
    pairs = dict(re.findall(r"(\w+)=(\S+)", env.group(1).replace("\\\n", " ")))
    assert pairs.pop("PATH") == f"{launch.IMAGE_BIN}:$PATH"
    assert pairs == launch.IMAGE_ENV


def test_the_downward_api_reads_annotations_and_labels_as_a_kubelet_does() -> None:
    """``metadata.annotations['KEY']`` and ``metadata.labels['KEY']``, "" when the pod has
    none of that key (kubernetes ``pkg/fieldpath/fieldpath.go``,
    ``ExtractFieldPathAsString``: the map's value, its zero value when absent). The gate's
    PreSync hook reads Argo CD's tracking id this way."""
    pod = {"metadata": {"name": "p", "namespace": "fracctl", "uid": "u",
                        "annotations": {"argocd.argoproj.io/tracking-id": "app:/Pod:fracctl/p"},
                        "labels": {"app": "gate"}},
           "spec": {}}  # fmt: skip

    def ref(path: str) -> dict[str, object]:
        return {"name": path, "valueFrom": {"fieldRef": {"fieldPath": path}}}

    paths = ("metadata.annotations['argocd.argoproj.io/tracking-id']",
             "metadata.labels['app']", "metadata.annotations['none']")  # fmt: skip
    container = {"env": [ref(path) for path in paths]}
    env = launch.environment(None, pod, container, ("127.0.0.1", 6443))  # type: ignore[arg-type]
    assert env["metadata.annotations['argocd.argoproj.io/tracking-id']"] == "app:/Pod:fracctl/p"
    assert env["metadata.labels['app']"] == "gate"
    assert env["metadata.annotations['none']"] == ""


@pytest.mark.parametrize(
    ("image", "runs"),
    [
        ("fracctl", True),
        ("fracctl:0.1.0", True),
        ("registry.example/platform/fracctl:0.1.0", True),
        ("localhost:5000/fracctl@sha256:" + "a" * 64, True),
        ("fracctl-operator:1", False),
        ("busybox", False),
        ("registry.example/notfracctl:1", False),
    ],
)
def test_which_images_are_fracctls(image: str, runs: bool) -> None:
    pod = {"spec": {"containers": [{"name": "c", "image": image}]}}
    assert is_runners(pod) is runs
    # KWOK's jq (gojq) `test` is the same regular expression, anchored the same way.
    kwok = re.search(r'test\("(.*)"\)', KWOK_SKIP["key"])
    assert kwok is not None
    assert bool(re.search(kwok.group(1), image)) is runs
    assert bool(IMAGE.search(image)) is runs


def test_kwok_deletes_fracctls_pods_but_starts_none() -> None:
    def stage(name: str) -> dict:
        selector = {"matchExpressions": []}
        selector: dict = {"matchExpressions": []}
        return {"metadata": {"name": name},
                "spec": {"resourceRef": {"kind": "Pod"}, "selector": selector}}  # fmt: skip

    assert KWOK_SKIP in leave_to_runner(stage("pod-create"))["spec"]["selector"]["matchExpressions"]
    assert KWOK_SKIP in leave_to_runner(stage("pod-ready"))["spec"]["selector"]["matchExpressions"]
    assert leave_to_runner(stage("pod-delete"))["spec"]["selector"]["matchExpressions"] == []
    node = {"metadata": {"name": "node-initialize"}, "spec": {"resourceRef": {"kind": "Node"}}}
    assert "selector" not in leave_to_runner(node)["spec"]


def _launch(mounts: list[tuple[str, str]]) -> launch.Launch:
    return launch.Launch(argv=["fracctl"], env={}, cwd="/tmp", user=launch.USER,
                         termination_file=Path("/dev/null"), policy="File",
                         mounts=mounts)  # fmt: skip


@pytest.fixture
def open_folder() -> Iterator[Path]:
    """A folder every ancestor of which others may enter (pytest's own tmp is 0700)."""
    import shutil
    import tempfile

    folder = Path(tempfile.mkdtemp(dir="/tmp", prefix="fracctl-open-"))
    folder.chmod(0o755)
    try:
        yield folder
    finally:
        shutil.rmtree(folder)


def test_a_checkout_in_a_folder_others_may_not_enter_is_reached_through_a_tmpfs(
    open_folder: Path,
) -> None:
    """A ``mktemp -d`` clone (mode 0700): the image's user could not open the venv's
    fracctl; the runner covers that folder with a world-readable tmpfs in the pod's mount
    namespace and binds fracctl's own folders back into it, and nothing else."""
    tmp_path = open_folder
    private = tmp_path / "private"
    (private / "ci" / ".venv").mkdir(parents=True)
    private.chmod(0o700)
    roots = [str(private / "ci"), str(private / "ci" / ".venv")]
    lines = _launch([])._reachable(roots)
    assert lines[0] == f"mount -t tmpfs -o mode=0755 tmpfs {private}"
    assert f"mount --bind {launch.ROOT_VIEW}{private / 'ci'} {private / 'ci'}" in lines
    assert len(lines) == 1 + 2 * len(roots)
    private.chmod(0o755)
    assert _launch([])._reachable(roots) == [], "an open folder needs nothing"
    private.chmod(0o700)
    covered = _launch([("/src", str(tmp_path))])._reachable(roots)
    assert covered == [], "a volume mounted over it already bound the roots afresh"
