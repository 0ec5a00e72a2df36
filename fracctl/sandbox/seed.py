"""Populating a new sandbox: the scenario, the CRDs, the nodes, the gitops repository.

A scenario file names the namespaces, the nodes (KWOK plays their kubelets: see
:mod:`.controllers`) and the objects to create. Populating installs the fractioning CRD
and a minimal KAI ``Config`` CRD (:func:`install_crds`, before the controllers start),
then seeds the scenario, copies its gitops folder into a local git repository and
writes the fracctl.yaml that points every command at the sandbox (:func:`populate`).
"""

from __future__ import annotations

import shutil
import time
from pathlib import Path
from typing import Any

from fracctl.adapters.git import init_repo
from fracctl.adapters.kube import Kube
from fracctl.config import Config
from fracctl.core.doctor import KAI_CONFIG
from fracctl.core.fractions.crd import fractioning_crd, kai_config_crd
from fracctl.core.fractions.fractional import AGENT_FORMATS
from fracctl.core.kube.resources import CRDS, NAMESPACES, NODES
from fracctl.errors import Conflict, TimedOut, UsageError
from fracctl.flows.context import Context
from fracctl.sandbox import controlplane
from fracctl.sandbox.controllers import kwok_node, wait_node_ready
from fracctl.sandbox.layout import Sandbox


def load_scenario(path: Path) -> dict[str, Any]:
    """Read and minimally validate a scenario file."""
    from ruamel.yaml import YAML
    from ruamel.yaml.error import YAMLError

    if not path.is_file():
        what = "is a directory, not a scenario file" if path.is_dir() else "scenario file not found"
        raise UsageError(f"{path}: {what}")
    try:
        doc = YAML(typ="safe").load(path.read_text())
    except YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f":{mark.line + 1}" if mark is not None else ""
        raise UsageError(f"{path}{where}: not valid YAML: {getattr(e, 'problem', e)}") from None
    if isinstance(doc, dict) and doc.get("base"):  # another scenario's keys, these over them
        base = load_scenario(path.parent / str(doc["base"]))
        doc = {**base, **{k: v for k, v in doc.items() if k != "base"}}
    if not isinstance(doc, dict) or not isinstance(doc.get("nodes"), list):
        raise UsageError(f"{path}: a scenario needs a 'nodes' list")
    for i, node in enumerate(doc["nodes"]):
        if not isinstance(node, dict) or not node.get("name"):
            raise UsageError(f"{path}: nodes[{i}] needs a name")
    return doc


def install_crd(kube: Kube, config: Config, *, timeout: float = 30.0) -> None:
    """Create (or keep) the fractioning CRD and wait until it is established."""
    t = config.target
    crd = fractioning_crd(
        group=t.group,
        kind=t.kind,
        plural=t.plural,
        version=t.version,
        agent=AGENT_FORMATS[t.naming].agent,
    )
    _establish(kube, crd, f"/apis/{t.group}/{t.version}/{t.plural}", timeout)


def install_kai_config_crd(kube: Kube, *, timeout: float = 30.0) -> None:
    """Create (or keep) a minimal CRD for KAI's ``Config``, as a KAI install brings it."""
    _establish(kube, kai_config_crd(), KAI_CONFIG.path(), timeout)


def _establish(kube: Kube, crd: dict[str, Any], list_path: str, timeout: float) -> None:
    """Create ``crd`` unless it exists; return once it is established and served."""
    try:
        kube.create(CRDS, crd)
    except Conflict:
        pass
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        live = kube.get(CRDS, crd["metadata"]["name"])
        for c in (live.get("status") or {}).get("conditions") or []:
            if c.get("type") == "Established" and c.get("status") == "True":
                # Discovery can lag a moment behind Established.
                try:
                    kube.request("GET", list_path)
                    return
                except Exception:  # noqa: BLE001 - retried until the deadline
                    break
        time.sleep(0.2)
    raise TimedOut(f"CRD {crd['metadata']['name']} not established after {timeout:.0f}s")


def node_object(node: dict[str, Any]) -> dict[str, Any]:
    """The Node of a scenario entry, as its kubelet registers it (KWOK plays the kubelet).

    ``gpus`` (default 8 where ``nvidia.com/gpu.present`` is "true", else none) is its
    ``nvidia.com/gpu`` capacity, as the device plugin reports it.
    """
    labels = {str(k): str(v) for k, v in (node.get("labels") or {}).items()}
    gpus = node.get("gpus", 8 if labels.get("nvidia.com/gpu.present") == "true" else 0)
    return kwok_node(
        node["name"],
        labels,
        taints=node.get("taints"),
        annotations={str(k): str(v) for k, v in (node.get("annotations") or {}).items()},
        gpus=int(gpus),
    )


def seed(kube: Kube, scenario: dict[str, Any]) -> None:
    """Create the scenario's namespaces, nodes and objects (existing ones are kept)."""
    for ns in scenario.get("namespaces") or []:
        try:
            kube.create(
                NAMESPACES, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}}
            )
        except Conflict:
            pass
    for node in scenario["nodes"]:
        try:
            kube.create(NODES, node_object(node))
        except Conflict:
            pass
    for node in scenario["nodes"]:
        wait_node_ready(kube, node["name"])
    for obj in scenario.get("objects") or []:
        ref = kube.resolve(obj["apiVersion"], obj["kind"])
        try:
            kube.create(ref, obj)
        except Conflict:
            pass


def sandbox_config(
    box: Sandbox,
    gitops_path: str,
    *,
    git: dict[str, str] | None = None,
    backend: str = "apply",
    lock_namespace: str = "gpu-fractioning",
    repo: Path | None = None,
) -> str:
    """The fracctl.yaml that points every command at the sandbox (git: ``repo`` or its own)."""
    extra = "".join(f"  {k}: {v}\n" for k, v in (git or {}).items() if k != "path")
    return (
        "# Written by `fracctl sandbox up`: points fracctl at the local sandbox.\n"
        "kube:\n"
        f"  kubeconfig: {box.kubeconfig}\n"
        "git:\n"
        f"  repo: {repo or box.gitops}\n"
        f"  path: {gitops_path}\n"
        "  revision: HEAD\n"
        f"{extra}"
        "recreate:\n"
        f"  backend: {backend}\n"
        f"  lock_namespace: {lock_namespace}\n"
        f"  state_dir: {box.root / 'state'}\n"
        "timeouts:\n"
        "  ready: 2m\n"
        "  delete: 1m\n"
    )


def install_crds(ctx: Context, cp: controlplane.ControlPlane) -> None:
    """The fractioning CRD and KAI's ``Config`` CRD, established."""
    kube = Kube.connect(kubeconfig=cp.kubeconfig)
    install_crd(kube, ctx.config)
    install_kai_config_crd(kube)


def populate(
    ctx: Context,
    box: Sandbox,
    cp: controlplane.ControlPlane,
    scenario: dict[str, Any],
    scenario_file: Path,
    *,
    flux: bool = False,
    lock_namespace: str = "gpu-fractioning",
) -> str:
    """Seed the scenario, write the gitops repository and fracctl.yaml, install the guard.

    With ``flux``, an operator chart is left for Flux's HelmRelease to install.
    ``lock_namespace`` is where the lock Lease (and the guard policy's) lives.
    Returns the manifests' path inside the gitops repository.
    """
    kube = Kube.connect(kubeconfig=cp.kubeconfig)
    seed(kube, scenario)

    gitops_src = (scenario_file.parent / str(scenario.get("gitops") or "")).resolve()
    gitops_path = "."
    if scenario.get("gitops") and gitops_src.is_dir():
        shutil.copytree(gitops_src, box.gitops, dirs_exist_ok=True)
        subdirs = [p.name for p in box.gitops.iterdir() if p.is_dir() and p.name != ".git"]
        gitops_path = subdirs[0] if len(subdirs) == 1 else "."
        if not (box.gitops / ".git").exists():
            init_repo(box.gitops, message="desired state: select the opt-in label")
    from fracctl.sandbox import chart as charts

    key = charts.chart_key(scenario)
    if key:  # a chart the real helm installs (runbooks/operator-upgrades.md, helm-releases.md)
        git = charts.install(box, cp, scenario[key], scenario_file, key=key, by_helm=not flux)
        backend = "apply" if flux else "helm"  # start_flux makes it flux
        text = sandbox_config(box, git["path"], git=git, backend=backend)
        # the helm that renders git's chart (and, for the helm backend, upgrades it)
        box.config_file.write_text(text + f"helm:\n  binary: {charts.helm_binary()}\n")
        guard(kube, box)
        return git["path"]
    box.config_file.write_text(sandbox_config(box, gitops_path, lock_namespace=lock_namespace))
    guard(kube, box)
    return gitops_path


def guard(kube: Kube, box: Sandbox) -> None:
    """Install the guard policy, as ``fracctl policy apply`` does with the sandbox's config."""
    from fracctl import config as cfg
    from fracctl.flows.policy import apply

    sandboxed = Context(config=cfg.load(str(box.config_file), env={}), kube_factory=lambda: kube)
    apply(sandboxed)
