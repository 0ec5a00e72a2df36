"""SIMULATION of a kubelet for pods of fracctl's own image, for the sandbox and the tests.

KWOK plays the kubelet of every pod on its nodes, but runs no container. Pods of
fracctl's image (the gate's Argo CD hooks) matter only for what their process does, so
for them, and only them, this runner plays the kubelet instead: KWOK's pod stages are
given one more selector that leaves such pods alone (:func:`leave_to_runner`), and the
runner, once the scheduler has bound one to a node, runs it as a local ``fracctl``
process:

* with exactly the container's command and arguments after the image's entrypoint, its
  working directory, and its environment (``value`` and ``valueFrom`` of ConfigMaps,
  Secrets and the pod's own fields) over the image's, plus the API server's address as
  ``KUBERNETES_SERVICE_HOST``/``PORT``;
* with its mounted files at their paths (ConfigMap, Secret and emptyDir volumes, bound
  into a mount namespace of its own), the service account's token where the
  ServiceAccount admission plugin and the kubelet put it (a TokenRequest bound to the
  pod, the cluster's CA, the namespace), and the termination-message file;
* as the user the image or the pod's securityContext names;

and writes what a kubelet writes: the pod ``Running`` with its container started, then
``Succeeded`` or ``Failed`` with the container's exit code, reason and termination message
(the file's contents; with ``FallbackToLogsOnError`` the end of its output). A pod
deleted while it runs has its process sent SIGTERM, then SIGKILL after the grace period.

What it does not show: the image pull (the local fracctl is the image), resource
requests and limits, a read-only root filesystem, seccomp and capabilities, the pod's
network namespace and hostname, and container logs (no kubelet serves them here).
"""

from __future__ import annotations

import re
from typing import Any

Obj = dict[str, Any]

#: A container of fracctl's image: any registry and tag, the repository named fracctl.
IMAGE = re.compile(r"(^|/)fracctl(:[^/@]*)?(@sha256:[0-9a-f]{64})?$")

#: KWOK's pod stages skip a pod this matches (its jq; ``NotIn ["true"]``).
KWOK_SKIP: Obj = {
    "key": '.spec.containers.[].image | test("(^|/)fracctl(:|@|$)")',
    "operator": "NotIn",
    "values": ["true"],
}


def is_runners(pod: Obj) -> bool:
    """Whether ``pod`` is one this runner runs: one container, of fracctl's image."""
    containers = (pod.get("spec") or {}).get("containers") or []
    return len(containers) == 1 and bool(IMAGE.search(str(containers[0].get("image", ""))))


def leave_to_runner(stage: Obj) -> Obj:
    """KWOK ``stage`` with fracctl's pods left out, but for the stages that delete a pod.

    KWOK still removes a deleted pod of fracctl's once its process is gone, as it does
    every pod's; starting, readying and completing one is the runner's.
    """
    spec = stage.get("spec") or {}
    ref = spec.get("resourceRef") or {}
    if ref.get("kind") != "Pod" or str(stage["metadata"]["name"]).startswith("pod-delete"):
        return stage
    expressions = spec.setdefault("selector", {}).setdefault("matchExpressions", [])
    if KWOK_SKIP not in expressions:
        expressions.append(dict(KWOK_SKIP))
    return stage
