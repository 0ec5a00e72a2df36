"""What ``fracctl recreate KIND/NAME`` needs from RBAC, rule by rule with its reason.

The role ``recreate-objects`` is this and the lock Lease. It does not hold ``bind`` or
``escalate``: a binding's bridge and its recreate need the identity to hold the roles it
binds (the rehearsal's dry-run create proves it before any change).
"""

from __future__ import annotations

from typing import Any

OBJECTS = (
    ("apps", ("statefulsets", "deployments", "daemonsets")),
    ("batch", ("jobs",)),
    ("", ("services",)),
    ("rbac.authorization.k8s.io", ("rolebindings", "clusterrolebindings")),
)


def object_grants() -> list[tuple[Any, ...]]:
    """``(apiGroups, resources, verbs, why)`` for each cluster-wide rule."""
    return [
        *(
            ((group,), resources, ("get", "list", "watch", "create", "patch", "delete"),
             "the object: judge it (a list and dry runs), delete it, watch it go, create it "
             "from git by server-side apply")
            for group, resources in OBJECTS
        ),
        (("",), ("pods",), ("list",),
         "the pods a workload's selector selects: their uids, restarts and adoption"),
        (("",), ("persistentvolumeclaims",), ("list", "patch"),
         "a StatefulSet's claims: read them, grow them before the recreate"),
        (("storage.k8s.io",), ("storageclasses",), ("list",),
         "whether a claim's class allows volume expansion"),
        (("apps",), ("replicasets",), ("list", "delete"),
         "a Deployment's ReplicaSets: which the original owned, the empty ones left, "
         "and the old ones a surge replaces"),
        (("rbac.authorization.k8s.io",), ("roles", "clusterroles"), ("get",),
         "the role git's binding names, whose access each subject must be proven to have"),
        (("authorization.k8s.io",), ("subjectaccessreviews",), ("create",),
         "prove each subject's access under the new role before the bridge goes"),
    ]  # fmt: skip
