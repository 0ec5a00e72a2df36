"""Checks on the fractional pods themselves: stuck Pending, or able to run as root.

A Pending fractional pod's own messages come from the scheduler and KAI's binder;
the same complaint from many pods is grouped, and a known one names its cause. In
multi-user MPS a root pod can reach past its own cap, so fractional pods must run
as non-root.
"""

from __future__ import annotations

from fracctl.core.doctor.helpers import (
    fractional,
    listing,
    name_of,
    ns_name,
    target_selector,
    without_target,
)
from fracctl.core.doctor.model import GPU_MEMORY_LABEL, DoctorSettings, Signature, Snapshot, check
from fracctl.core.drain import FENCE_REASON
from fracctl.core.fractions.fractional import AnnotationMatcher, agent_prefixes
from fracctl.core.fractions.memory import unread_memory_keys
from fracctl.core.kube.nodes import labels_of, matches
from fracctl.core.kube.podspec import items, mapping, root_problems


def _pending_messages(
    snap: Snapshot, s: DoctorSettings, m: AnnotationMatcher
) -> dict[str, list[str]]:
    """Each scheduler or binder message of a Pending fractional pod -> the pods it names."""
    groups: dict[str, list[str]] = {}
    for pod in snap.pods:
        if mapping(pod.get("status")).get("phase") != "Pending" or not fractional(pod, m, s):
            continue
        key = ns_name(pod)
        messages: list[str] = []
        for e in snap.events.get(key, []):
            text = str(e.get("message") or "").strip()
            source = str(mapping(e.get("source")).get("component") or e.get("reportingComponent"))
            # The scheduler's and the binder's complaints; a kubelet's are about a pod that
            # was placed, and Normal events are progress.
            if text and e.get("type") == "Warning" and source != "kubelet":
                messages.append(f"{e.get('reason') or 'Event'}: {text}")
        for c in items(mapping(pod.get("status")).get("conditions")):
            c = mapping(c)
            if c.get("type") == "PodScheduled" and c.get("status") == "False" and c.get("message"):
                messages.append(f"{c.get('reason') or 'Unschedulable'}: {c.get('message')}")
        for text in dict.fromkeys(messages):
            groups.setdefault(text, []).append(key)
    return groups


@check(
    "pending-fractional-pods",
    "no fractional pod is stuck Pending",
    reads=("pods", "events"),
)
def pending_fractional_pods(
    snap: Snapshot, s: DoctorSettings, m: AnnotationMatcher
) -> list[Signature]:
    """Pending fractional pods with scheduler or binder messages, grouped by message."""
    groups = _pending_messages(snap, s, m)
    if not groups:
        return []
    text = " ".join(groups)
    if GPU_MEMORY_LABEL in text:
        cause = f"a node lacks the {GPU_MEMORY_LABEL} label the binder reads"
        fix = f"kubectl get nodes -L {GPU_MEMORY_LABEL}, then label or fix GPU Feature Discovery"
    elif f"Reason: {FENCE_REASON}" in text:
        cause = (
            f"fracctl's drain fenced the nodes (reason {FENCE_REASON}): KAI places the pods "
            "once the drain reopens scheduling"
        )
        fix = "see the drain-fence finding: it names the run and what to do"
    elif "not ready for fractional GPU scheduling" in text:
        cause = "the pool's nodes do not report the readiness condition (daemons not running)"
        fix = "fracctl wait (and see the node-readiness finding)"
    else:
        cause = "the scheduler or binder refuses the pods; the messages say why"
        fix = "kubectl get events -n NAMESPACE --field-selector involvedObject.name=POD"
    pods = sorted({p for ps in groups.values() for p in ps})
    return [
        Signature(
            f"{len(pods)} fractional pod(s) Pending with scheduler or binder messages "
            f"({len(groups)} distinct)",
            cause,
            fix,
            tuple(pods),
            tuple(f"{msg} [{len(ps)} pod(s): {listing(ps, 5)}]" for msg, ps in groups.items()),
        )
    ]


@check("fractional-pods-non-root", "fractional pods run as non-root", reads=("pods",))
def fractional_pods_non_root(
    snap: Snapshot, s: DoctorSettings, m: AnnotationMatcher
) -> list[Signature]:
    """Fractional pods whose spec lets a process run as root."""
    evidence = []
    pods = []
    for pod in snap.pods:
        if not fractional(pod, m, s):
            continue
        problems = root_problems(mapping(pod.get("spec")))
        if problems:
            pods.append(ns_name(pod))
            evidence.append(f"{ns_name(pod)}: {'; '.join(problems)}")
    if not pods:
        return []
    return [
        Signature(
            f"{len(pods)} fractional pod(s) may run as root: {listing(pods)}",
            "in multi-user MPS the server is owned by root, so a root pod can raise its own "
            "cap or delete a neighbour's namespace",
            "set securityContext.runAsNonRoot: true and a non-zero runAsUser in each workload "
            "(fracctl lint catches it before merge, rule FL007), and enforce it with Pod "
            "Security Admission",
            tuple(pods),
            tuple(evidence),
        )
    ]


@check(
    "unread-memory-annotations",
    "fractional pods' GPU-memory annotations are the keys the agents read",
    reads=("target", "nodes", "pods"),
    skip=without_target,
)
def unread_memory_annotations(
    snap: Snapshot, s: DoctorSettings, m: AnnotationMatcher
) -> list[Signature]:
    """Pods on fraction nodes whose memory keys use a format the live agents do not read.

    The agents give a container its MPS memory limit from ``<prefix><container>.
    gpu-memory.limit`` under the live config's prefix only (kai-gpu-fractioning
    ``fractiond/internal/annotations``); the same limit written under another prefix or
    generation's format is ignored, and the container runs with the whole GPU's memory.
    """
    assert snap.target is not None  # skipped otherwise
    read = agent_prefixes(s.target.naming, live=snap.target)[0]
    sel = target_selector(snap.target)
    fraction_nodes = {name_of(n) for n in snap.nodes if matches(sel, labels_of(n))}
    pods: list[str] = []
    evidence: list[str] = []
    for pod in snap.pods:
        node = mapping(pod.get("spec")).get("nodeName")
        if node not in fraction_nodes or not fractional(pod, m, s):
            continue
        unread = unread_memory_keys(mapping(mapping(pod.get("metadata")).get("annotations")), read)
        if unread:
            pods.append(ns_name(pod))
            evidence += [f"{ns_name(pod)} on {node}: {key} (read: {alt})" for key, alt in unread]
    if not pods:
        return []
    return [
        Signature(
            f"{len(pods)} fractional pod(s) on fraction nodes run with no GPU memory limit: "
            f"{listing(pods)}",
            f"their GPU-memory annotations use a format the agents do not read: the live "
            f"config's agents read {read.format.memory_key(read.value, '<container>')} "
            f"({read.describe()})",
            "rename the annotations in the workloads to the key the agents read (each "
            "evidence line names it), or set the config's annotationPrefix to match; "
            "fracctl lint catches it before merge",
            tuple(pods),
            tuple(evidence),
        )
    ]
