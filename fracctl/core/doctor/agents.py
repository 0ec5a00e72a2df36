"""Checks on the node agents and the scheduler's workloads: pinned images, ready DaemonSets.

The node agents (mpsd, fractiond) run as DaemonSets the gpu-fractioning operator
creates; the scheduler and the operator run as Deployments. An unpinned image runs
a chart's default build instead of yours; a DaemonSet short of ready pods leaves
the nodes it misses without fraction daemons, and the pods' own state says why.
"""

from __future__ import annotations

from fracctl.core.doctor.helpers import container_troubles, listing, name_of, ns_name, pod_ready
from fracctl.core.doctor.model import DoctorSettings, Obj, Signature, Snapshot, check
from fracctl.core.fractions.fractional import AnnotationMatcher
from fracctl.core.kube.nodes import labels_of, matches
from fracctl.core.kube.podspec import items, mapping, pod_template, unpinned


@check("image-tags", "node-agent and scheduler images are pinned", reads=("workloads",))
def image_tags(snap: Snapshot, s: DoctorSettings, m: AnnotationMatcher) -> list[Signature]:
    """Node-agent and scheduler containers that run an unpinned image."""
    bad: list[str] = []
    agent = scheduler = False
    for w in snap.workloads:
        t = pod_template(w)
        if t is None:
            continue
        for key in ("containers", "initContainers"):
            for c in items(t.spec.get(key)):
                image = mapping(c).get("image")
                if isinstance(image, str) and unpinned(image):
                    meta = mapping(w.get("metadata"))
                    agent = agent or meta.get("namespace") == s.cluster.agent_namespace
                    scheduler = scheduler or meta.get("namespace") == s.cluster.scheduler_namespace
                    bad.append(f"{w.get('kind')}/{ns_name(w)} {mapping(c).get('name')}: {image}")
    if not bad:
        return []
    fixes = []
    if agent:
        fixes.append(
            f"helm upgrade gpu-fractioning ./operator/charts -n {s.cluster.agent_namespace} "
            "--reuse-values --set images.operator.tag=$TAG --set images.fractiond.tag=$TAG "
            "--set images.metricsd.tag=$TAG --set images.mpsd.tag=$TAG"
        )
    if scheduler:
        fixes.append(
            "helm upgrade kai-scheduler ./deployments/kai-scheduler -n "
            f"{s.cluster.scheduler_namespace} --reuse-values --set global.tag=$TAG"
        )
    fix = " && ".join(fixes)
    return [
        Signature(
            f"{len(bad)} node-agent or scheduler container(s) run an unpinned image (no tag, "
            "latest, or a chart default such as 0.0.0): pods run the wrong code, or pull 0.0.0",
            "a tag value was left empty, so the chart fell back to its appVersion, which is not "
            "your build; the scheduler and node-agent forks then stop matching",
            fix,
            tuple(sorted({b.split(" ", 1)[0] for b in bad})),
            tuple(bad),
        )
    ]


@check(
    "agent-daemonsets",
    "node-agent DaemonSets are ready everywhere",
    reads=("daemonsets", "target", "nodes", "agent_pods"),
)
def agent_daemonsets(snap: Snapshot, s: DoctorSettings, m: AnnotationMatcher) -> list[Signature]:
    """DaemonSets missing although the config exists, then each one short of ready pods."""
    out: list[Signature] = []
    missing = [n for n, ds in snap.daemonsets.items() if ds is None]
    if missing and snap.target is not None:
        out.append(
            Signature(
                f"DaemonSet(s) {', '.join(missing)} missing in {s.cluster.agent_namespace} "
                f"although {s.target.kind}/{s.target.name} exists: no MPS daemons run anywhere",
                "the gpu-fractioning operator is not running, or cannot create them",
                f"kubectl -n {s.cluster.agent_namespace} get deploy,pods -o wide && kubectl -n "
                f"{s.cluster.agent_namespace} logs deploy/gpu-fractioning-operator --tail=50",
                tuple(missing),
            )
        )
    for name, ds in sorted(snap.daemonsets.items()):
        if ds is not None:
            out.extend(_not_ready(name, ds, snap, s))
    return out


def _not_ready(name: str, ds: Obj, snap: Snapshot, s: DoctorSettings) -> list[Signature]:
    """The DaemonSet's nodes without a ready pod, and why, when it is short of ready pods."""
    status = mapping(ds.get("status"))
    desired = int(status.get("desiredNumberScheduled") or 0)
    ready = int(status.get("numberReady") or 0)
    if desired == ready:
        return []
    selector = {
        str(k): str(v)
        for k, v in mapping(
            mapping(mapping(ds.get("spec")).get("selector")).get("matchLabels")
        ).items()
    }
    pods = [p for p in snap.agent_pods if selector and matches(selector, labels_of(p))]
    evidence: list[str] = []
    lagging: list[str] = []
    broken: list[str] = []  # pods not ready, whose logs say why
    with_pod: set[str] = set()
    for p in sorted(pods, key=name_of):
        node = str(mapping(p.get("spec")).get("nodeName") or "")
        with_pod.add(node)
        if pod_ready(p):
            continue
        lagging.append(node or "(unscheduled)")
        broken.append(name_of(p))
        troubles = "; ".join(container_troubles(p)) or str(
            mapping(p.get("status")).get("phase") or "not ready"
        )
        evidence.append(f"{node or '(unscheduled)'}: pod {name_of(p)} not ready: {troubles}")
    template = pod_template(ds)
    node_selector = {
        str(k): str(v)
        for k, v in mapping(template.spec.get("nodeSelector") if template else {}).items()
    }
    nodes = {name_of(n): n for n in snap.nodes}
    for node_name, node_obj in sorted(nodes.items()):
        if (
            node_name not in with_pod
            and node_selector
            and matches(node_selector, labels_of(node_obj))
        ):
            lagging.append(node_name)
            evidence.append(f"{node_name}: no {name} pod")
    fix = (
        f"kubectl -n {s.cluster.agent_namespace} logs {broken[0]} --all-containers --tail=50"
        if broken
        else f"kubectl -n {s.cluster.agent_namespace} describe ds/{name}"
    )
    return [
        Signature(
            f"DaemonSet {s.cluster.agent_namespace}/{name}: {ready} of {desired} pod(s) ready; not "
            f"ready on: {listing(lagging) or 'nodes not known'}",
            "usually a node failed the NRI or CRI socket check (fractiond), or mpsd ran out "
            "of host memory (about 50 MiB per GPU) or found no MPS protocol 3 driver",
            fix,
            tuple(lagging),
            tuple(evidence),
        )
    ]
