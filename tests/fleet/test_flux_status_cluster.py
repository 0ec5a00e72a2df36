"""``fracctl fleet status --flux`` against the real kube-apiserver holding Flux's own CRDs:
the render's objects created on the hub, their status written through the status
subresource in kustomize-controller v1.9.6's shapes (tests/fleet/test_flux_status.py says
where each comes from), read back by the command, table and JSON, exit codes."""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from fracctl.adapters.kube import Kube
from fracctl.core import flux_fleet as ff
from fracctl.core.flux_rollout import GITREPOSITORIES, KUSTOMIZATIONS
from fracctl.errors import ExitCode
from tests.fleet.test_flux_status import MEMBERS, REV, WHEN, all_ready, stopped_at_member_2
from tests.support.flux_hub import flux_hub, left_alone
from tests.support.helpers import Cluster, Result, run_cli

URL = "https://git.example.org/gitops.git"
Obj = dict[str, Any]
FLEET = """\
fleet:
  clusters:
    - {context: ctx-1, name: member-1}
    - {context: ctx-2, name: member-2, wave: 1}
    - {context: ctx-3, name: member-3, wave: 2}
"""


@pytest.fixture
def hub(cluster: Cluster) -> Iterator[tuple[Kube, str]]:
    with flux_hub(cluster) as found:
        yield found


def artifact(revision: str | None) -> Obj:
    """A GitRepository's status as source-controller v1.9.0 writes it (the fields its CRD
    requires), or none fetched yet."""
    if revision is None:
        return {"conditions": []}
    path = f"gitrepository/flux-system/gpu-fractioning/{revision.rsplit(':', 1)[-1]}.tar.gz"
    return {
        "artifact": {
            "revision": revision,
            "digest": "sha256:" + hashlib.sha256(revision.encode()).hexdigest(),
            "lastUpdateTime": WHEN,
            "path": path,
            "url": f"http://source-controller.flux-system.svc.cluster.local./{path}",
        }
    }


def seed(kube: Kube, namespace: str, statuses: dict[str, Obj | None], fetched: str | None) -> None:
    """The render's objects on the hub, each with its status (none where ``None``)."""
    for obj in ff.render(MEMBERS, ff.RenderOptions(url=URL, namespace=namespace)):
        ref = GITREPOSITORIES if obj["kind"] == "GitRepository" else KUSTOMIZATIONS
        kube.create(ref, left_alone(obj))
        name = obj["metadata"]["name"]
        status = artifact(fetched) if ref is GITREPOSITORIES else statuses.get(name)
        if status is not None:
            kube.patch(ref, name, {"status": status}, namespace=namespace, subresource="status")


def status(cluster: Cluster, tmp_path: Path, namespace: str, *args: str) -> Result:
    config = tmp_path / "fracctl.yaml"
    config.write_text(FLEET)
    return run_cli(
        "--kubeconfig",
        cluster.kubeconfig,
        "--config",
        str(config),
        "fleet",
        "status",
        "--flux",
        "-n",
        namespace,
        *args,
    )


def test_a_refused_gate_is_named_with_where_to_read_it_and_exit_1(
    cluster: Cluster, hub: tuple[Kube, str], tmp_path: Path
) -> None:
    kube, namespace = hub
    seed(kube, namespace, stopped_at_member_2(), REV)
    r = status(cluster, tmp_path, namespace)
    assert r.exit_code == ExitCode.FINDING, r.output
    out = r.stdout
    assert "git's revision: main@ccccccc" in out
    assert "  wave 1: member-2" in out
    assert "stopped at member-2 (wave 1): pre-half gpu-fractioning-member-2-pre failed " in out
    assert "[Job/fracctl/fracctl-gate-pre-sync status: 'Failed']" in out
    assert "kubectl --context ctx-2 -n fracctl logs job/fracctl-gate-pre-sync" in out
    assert "waits for wave 1 (member-2)" in out
    assert out.rstrip().splitlines()[-1] == "1 of 3 cluster(s) run main@ccccccc: not done"


def test_json_and_a_done_rollout_exit_0(
    cluster: Cluster, hub: tuple[Kube, str], tmp_path: Path
) -> None:
    kube, namespace = hub
    seed(kube, namespace, all_ready(), REV)
    r = status(cluster, tmp_path, namespace, "-o", "json")
    assert r.exit_code == ExitCode.OK, r.output
    d = r.json
    assert (d["fleet"], d["namespace"], d["source"]) == (
        "gpu-fractioning",
        namespace,
        "gpu-fractioning",
    )
    assert d["revision"] == REV and d["done"] is True and d["stopped"] == []
    assert d["waves"] == [["member-1"], ["member-2"], ["member-3"]]
    assert [c["context"] for c in d["clusters"]] == ["ctx-1", "ctx-2", "ctx-3"]
    table = status(cluster, tmp_path, namespace)
    assert table.stdout.rstrip().endswith(
        "every cluster (3) runs main@ccccccc: the rollout is done"
    )


def test_revision_given_or_not_fetched(
    cluster: Cluster, hub: tuple[Kube, str], tmp_path: Path
) -> None:
    kube, namespace = hub
    seed(kube, namespace, all_ready(), None)
    r = status(cluster, tmp_path, namespace, "-o", "json")
    assert r.exit_code == ExitCode.OK, r.output
    assert r.json["done"] is False
    assert r.json["revision_unknown"] == (
        f"the GitRepository {namespace}/gpu-fractioning has fetched nothing yet"
    )
    given = status(cluster, tmp_path, namespace, "--revision", "c" * 12, "-o", "json")
    assert given.json["done"] is True, given.output
    older = status(cluster, tmp_path, namespace, "--revision", "d" * 40, "-o", "json")
    assert older.json["done"] is False
    assert all(c["behind"] for c in older.json["clusters"])


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--revision", "main"], "--revision 'main' is not a commit"),
        (["--fleet", "other"], "no Kustomization labelled fracctl.io/fleet=other in namespace"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(
    cluster: Cluster, hub: tuple[Kube, str], tmp_path: Path, args: list[str], message: str
) -> None:
    kube, namespace = hub
    seed(kube, namespace, all_ready(), REV)
    r = status(cluster, tmp_path, namespace, *args)
    assert r.exit_code == ExitCode.USAGE, r.output
    assert message in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1, r.stderr
