"""A scenario's ``operator_chart:``: the operator installed from its chart by the real helm.

The chart (``examples/charts/gpu-fractioning``, shaped like upstream's) is copied into the
sandbox's git repository and installed as a release, so its post-install hook creates the
``default`` config with the chart's hard-coded selector; then the change git wants is
committed (the hook's selector patched, as a team that vendors the chart does), and the
sandbox's fracctl.yaml uses ``recreate.backend: helm``: ``fracctl drift`` sees the
difference and ``fracctl recreate`` runs the chart's upgrade as a guarded recreate.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

from fracctl.adapters.git import commit_all, init_repo
from fracctl.errors import ExternalError, UsageError
from fracctl.sandbox import controlplane
from fracctl.sandbox.layout import REPO_ROOT, Sandbox

#: The selector line upstream's default-cr.yaml hard-codes.
UPSTREAM_SELECTOR = 'nvidia.com/gpu.present: "true"'


def helm_binary() -> str:
    """Helm on PATH, else the one ``scripts/build-helm.sh`` builds into the cache."""
    found = shutil.which("helm")
    if found:
        return found
    script = REPO_ROOT / "scripts" / "build-helm.sh"
    try:
        out = subprocess.run(["bash", str(script)], capture_output=True, text=True, check=True)
    except subprocess.CalledProcessError as e:
        raise UsageError(
            "the operator_chart scenario needs helm, and building it failed: "
            f"{(e.stderr or '').strip()[-300:]}",
            hint="put helm on PATH, or run make helm",
        ) from None
    return str(Path(out.stdout.strip().splitlines()[-1]) / "helm")


def install(box: Sandbox, cp: controlplane.ControlPlane, spec: dict[str, Any],
            scenario_file: Path, *, by_helm: bool = True) -> dict[str, str]:  # fmt: skip
    """Install the chart as the scenario says; the fracctl.yaml ``git`` keys that follow.

    ``by_helm``: helm installs it now and git then wants the scenario's selector; else
    the chart is only put in git, for a Flux HelmRelease to install
    (:func:`fracctl.sandbox.flux_wiring.start_flux`, which then calls :func:`want_selector`).
    """
    chart = (scenario_file.parent / str(spec.get("chart") or "")).resolve()
    if not (chart / "Chart.yaml").is_file():
        raise UsageError(f"{scenario_file}: operator_chart.chart {chart} is not a chart")
    release, namespace = release_of(spec, chart.name)
    folder = box.gitops / release
    shutil.copytree(chart, folder, dirs_exist_ok=True)
    init_repo(box.gitops, message="the operator's chart, as upstream ships it")
    if by_helm:
        argv = [helm_binary(), "install", release, str(folder), "--namespace", namespace,
                "--kubeconfig", cp.kubeconfig, "--wait", "--timeout", "120s"]  # fmt: skip
        proc = subprocess.run(argv, capture_output=True, text=True, check=False,
                              env={**os.environ, "HELM_NO_PLUGINS": "1"})  # fmt: skip
        if proc.returncode != 0:
            raise ExternalError(f"helm install of the operator chart failed: {proc.stderr.strip()}")
        want_selector(box, spec, release)
    return {"path": release, "renderer": "helm", "helm_namespace": namespace,
            "helm_release": release}  # fmt: skip


def release_of(spec: dict[str, Any], chart_name: str) -> tuple[str, str]:
    """The scenario's release name and namespace."""
    return str(spec.get("release") or chart_name), str(spec.get("namespace") or "default")


def want_selector(box: Sandbox, spec: dict[str, Any], release: str) -> bool:
    """Commit the chart with the hook's selector git wants (the scenario's); whether any."""
    selector = spec.get("git_selector") or {}
    if not selector:
        return False
    cr = box.gitops / release / "templates" / "default-cr.yaml"
    lines = "\n".join(f"    {k}: {v}" for k, v in selector.items())
    cr.write_text(cr.read_text().replace(f"    {UPSTREAM_SELECTOR}", lines))
    commit_all(box.gitops, message="select the opt-in label, not every GPU node")
    return True
