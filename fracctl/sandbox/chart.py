"""A scenario's chart installed by the real helm: ``operator_chart:`` or ``helm_release:``.

``operator_chart``: the operator's chart (``examples/charts/gpu-fractioning``, shaped like
upstream's) is copied into the sandbox's git repository and installed as a release, so
its post-install hook creates the ``default`` config with the chart's hard-coded
selector; then the change git wants is committed (the hook's selector patched, as a team
that vendors the chart does), and the sandbox's fracctl.yaml uses ``recreate.backend:
helm``: ``fracctl drift`` sees the difference and ``fracctl recreate`` runs the chart's
upgrade as a guarded recreate.

``helm_release``: a team's own chart (``examples/charts/shop``) installed the same way;
then git's values change (``git_values``) is committed and the team's pipeline upgrade
runs, and fails on an immutable field: the release's newest revision is ``failed``
(runbooks/helm-releases.md).
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


#: The scenario keys that install a chart, and what each says of it.
KEYS = {
    "operator_chart": "the operator's chart, as upstream ships it",
    "helm_release": "a team's chart, as it runs today",
}


def chart_key(scenario: dict[str, Any]) -> str | None:
    """Which of :data:`KEYS` the scenario sets (at most one)."""
    found = [k for k in KEYS if scenario.get(k)]
    if len(found) > 1:
        raise UsageError(f"a scenario installs one chart: {' and '.join(found)} are both set")
    return found[0] if found else None


def install(
    box: Sandbox,
    cp: controlplane.ControlPlane,
    spec: dict[str, Any],
    scenario_file: Path,
    *,
    key: str = "operator_chart",
    by_helm: bool = True,
) -> dict[str, str]:
    """Install the chart as the scenario's ``key`` says; the fracctl.yaml ``git`` keys.

    ``by_helm``: helm installs it now and git then wants the scenario's change (and, for
    a ``helm_release``, the team's upgrade of it runs); else the chart is only put in
    git, for a Flux HelmRelease to install (:func:`fracctl.sandbox.flux_wiring.start_flux`,
    which then calls :func:`want`).
    """
    chart = (scenario_file.parent / str(spec.get("chart") or "")).resolve()
    if not (chart / "Chart.yaml").is_file():
        raise UsageError(f"{scenario_file}: {key}.chart {chart} is not a chart")
    release, namespace = release_of(spec, chart.name)
    folder = box.gitops / release
    shutil.copytree(chart, folder, dirs_exist_ok=True)
    init_repo(box.gitops, message=KEYS[key])
    if by_helm:
        _helm(
            cp,
            "install",
            release,
            str(folder),
            "--namespace",
            namespace,
            "--create-namespace",
            "--wait",
            "--timeout",
            "120s",
        )
        if want(box, spec, release) and key == "helm_release":
            # The team's pipeline upgrades to git's change; an immutable field fails it,
            # and the release's newest revision is left `failed`, as in their cluster.
            _helm(cp, "upgrade", release, str(folder), "--namespace", namespace, check=False)
    return {
        "path": release,
        "renderer": "helm",
        "helm_namespace": namespace,
        "helm_release": release,
    }


def _helm(cp: controlplane.ControlPlane, *args: str, check: bool = True) -> None:
    """Run the real helm on the sandbox; ExternalError if it fails and ``check``."""
    argv = [helm_binary(), *args, "--kubeconfig", cp.kubeconfig]
    proc = subprocess.run(
        argv,
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, "HELM_NO_PLUGINS": "1"},
    )
    if check and proc.returncode != 0:
        raise ExternalError(f"helm {args[0]} of the scenario's chart failed: {proc.stderr.strip()}")


def release_of(spec: dict[str, Any], chart_name: str) -> tuple[str, str]:
    """The scenario's release name and namespace."""
    return str(spec.get("release") or chart_name), str(spec.get("namespace") or "default")


def want(box: Sandbox, spec: dict[str, Any], release: str) -> bool:
    """Commit the change git wants (a selector, values); whether there was one."""
    changed = want_selector(box, spec, release)
    return want_values(box, spec, release) or changed


def want_values(box: Sandbox, spec: dict[str, Any], release: str) -> bool:
    """Merge the scenario's ``git_values`` into the chart's values.yaml and commit."""
    from ruamel.yaml import YAML

    changes = spec.get("git_values") or {}
    if not changes:
        return False
    path = box.gitops / release / "values.yaml"
    yaml = YAML()  # round trip: the chart's comments stay
    values = yaml.load(path.read_text()) if path.is_file() else {}
    _merge(values, changes)
    with path.open("w") as f:
        yaml.dump(values, f)
    commit_all(box.gitops, message="git's change: " + ", ".join(_leaves(changes)))
    return True


def _merge(into: Any, changes: dict[str, Any]) -> None:
    for k, v in changes.items():
        if isinstance(v, dict) and isinstance(into.get(k), dict):
            _merge(into[k], v)
        else:
            into[k] = v


def _leaves(changes: dict[str, Any], prefix: str = "") -> list[str]:
    out: list[str] = []
    for k, v in changes.items():
        out += _leaves(v, f"{prefix}{k}.") if isinstance(v, dict) else [f"{prefix}{k}={v}"]
    return out


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
