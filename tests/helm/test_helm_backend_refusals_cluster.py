"""The helm backend's refusals, each on the real API server with the real helm: nothing changes.

Each refusal leaves the config's uid and the release's revision as they were.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from fracctl.errors import ExitCode
from tests.support.helm import find
from tests.support.helm_chart import RELEASE, ChartIncident, chart_incident
from tests.support.helpers import Cluster, commit_all, run_cli


@pytest.fixture
def incident(cluster: Cluster, tmp_path: Path) -> Iterator[ChartIncident]:
    found = chart_incident(cluster, tmp_path, find("helm3").path)
    try:
        yield found
    finally:
        found.remove()


def refused(
    incident: ChartIncident, code: ExitCode, *expected: str, args: tuple[str, ...] = ()
) -> None:
    uid, revision = incident.uid(), incident.release().version
    r = run_cli("-c", str(incident.config_file), "recreate", "--yes", *args)
    assert r.exit_code == code, r.output
    for text in expected:
        assert text in r.output, r.output
    assert incident.uid() == uid and incident.release().version == revision


def edit_chart(incident: ChartIncident, old: str, new: str) -> None:
    cr = incident.gitops / RELEASE / "templates" / "default-cr.yaml"
    cr.write_text(cr.read_text().replace(old, new))
    commit_all(incident.gitops, message="edit the hook")


def test_no_such_release(incident: ChartIncident) -> None:
    other = incident.edit_config(to=incident.root / "other.yaml", git={"helm_release": "nope"})
    uid = incident.uid()
    r = run_cli("-c", str(other), "recreate", "--yes")
    assert r.exit_code == ExitCode.FINDING, r.output
    assert "there is no Helm release nope in namespace gpu-fractioning" in r.output
    assert incident.uid() == uid


def test_a_hook_helm_deletes_after_it_ran(incident: ChartIncident) -> None:
    weight = '"helm.sh/hook-weight": "0"'
    edit_chart(incident, weight, f'{weight}\n    "helm.sh/hook-delete-policy": hook-succeeded')
    refused(incident, ExitCode.FINDING, "hook-delete-policy hook-succeeded",
            "would leave the cluster without it")  # fmt: skip


def test_a_chart_whose_upgrade_renders_another_selector_than_git(incident: ChartIncident) -> None:
    # helm template renders as an install; the upgrade as an upgrade: the rehearsal is helm's.
    line = "    example.org/gpu-fractions: enabled"
    edit_chart(incident, line, "    {{- if .Release.IsUpgrade }}\n    example.org/gpu-class: b200"
               f"\n    {{{{- else }}}}\n{line}\n    {{{{- end }}}}")  # fmt: skip
    refused(incident, ExitCode.FINDING, "helm's rendering of the chart creates",
            "not git's {'example.org/gpu-fractions': 'enabled'}")  # fmt: skip


def test_a_chart_without_the_hook(incident: ChartIncident) -> None:
    cr = incident.gitops / RELEASE / "templates" / "default-cr.yaml"
    text = cr.read_text().replace('    "helm.sh/hook": post-install,post-upgrade\n', "")
    cr.write_text(text)
    commit_all(incident.gitops, message="the config as a plain release object")
    # Helm's own dry run refuses to take the hook's object into the release: its rule.
    refused(incident, ExitCode.EXTERNAL, "nothing was deleted or changed",
            "invalid ownership metadata")  # fmt: skip


def test_git_rendered_by_another_renderer(incident: ChartIncident) -> None:
    uid = incident.uid()
    r = run_cli("-c", str(incident.config_file), "recreate", "--yes", "--renderer", "plain")
    assert r.exit_code == ExitCode.USAGE, r.output
    assert "git.renderer is plain" in r.output and "Traceback" not in r.output
    assert incident.uid() == uid


def test_a_helm_that_cannot_run(incident: ChartIncident) -> None:
    broken = incident.edit_config(to=incident.root / "broken.yaml",
                                  helm={"binary": str(incident.root / "no-helm")})  # fmt: skip
    uid = incident.uid()
    r = run_cli("-c", str(broken), "recreate", "--yes")
    assert r.exit_code == ExitCode.USAGE, r.output
    assert "no-helm" in r.output and "Traceback" not in r.output
    assert incident.uid() == uid


def test_a_chart_without_the_hook_once_the_config_is_gone(incident: ChartIncident) -> None:
    # With no config to take over, Helm's dry run passes: the object would be one of the
    # release's, never recreated by an upgrade, so the helm backend is not the way.
    incident.cluster.wipe_target()
    cr = incident.gitops / RELEASE / "templates" / "default-cr.yaml"
    cr.write_text(cr.read_text().replace('    "helm.sh/hook": post-install,post-upgrade\n', ""))
    commit_all(incident.gitops, message="the config as a plain release object")
    refused(incident, ExitCode.FINDING, "has no hook that creates GpuFractioningConfig/default")


def test_git_without_the_config_while_the_live_one_is_a_hook(incident: ChartIncident) -> None:
    other = incident.gitops / "other"
    other.mkdir()
    (other / "cm.yaml").write_text(
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x, namespace: default}\n"
    )
    commit_all(incident.gitops, message="manifests without the config")
    args = ("--backend", "apply", "--renderer", "plain", "--path", "other")
    refused(incident, ExitCode.FINDING, "the live one is a chart's hook",
            "recreate.backend helm", args=args)  # fmt: skip
