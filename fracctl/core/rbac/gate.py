"""The gate's two roles: each Argo CD hook of ``fracctl gate`` runs as its own account."""

from __future__ import annotations

from dataclasses import replace

from fracctl.core.drain import drain_grants, journal_grants
from fracctl.core.rbac.model import Params, RbacRule, Rules
from fracctl.core.rbac.rules import lock_rules, recreate_rules, rollout_rule


def pre_sync_rules(p: Params) -> Rules:
    """``gate pre-sync``: recreate's first half, and the backup ConfigMap beside the lock.

    No backend's rules: the sync creates the object.
    """
    cluster, namespaced = recreate_rules(replace(p, backend="apply"))
    namespaced.setdefault(p.recreate.lock_namespace, []).append(
        RbacRule(
            ("",),
            ("configmaps",),
            ("create", "list"),
            "keep the backup of the object in the cluster (a hook's files end with "
            "it), and name an earlier try's after a failure",
        )
    )
    return cluster, namespaced


def post_sync_rules(p: Params) -> Rules:
    """``gate post-sync``: read the object the sync made, watch the nodes, end the run."""
    cluster = [
        RbacRule(
            (p.target.group,),
            (p.target.plural,),
            ("get", "list", "watch"),
            "read the object the sync created, to hold it to the revision; watch the "
            "operator act on its generation",
            (p.target.name,),
        ),
        RbacRule(("",), ("nodes",), ("list", "watch"), "watch the selected nodes become ready"),
        *(
            RbacRule(*g)
            for g in drain_grants(p.cluster.scheduler_config)
            if g[1] == ("nodes/status",)
        ),  # lift a drain's fence: nothing else of it
    ]
    namespaced: dict[str, list[RbacRule]] = {}
    namespaced.setdefault(p.recreate.lock_namespace, []).extend(
        [*lock_rules(p), *(RbacRule(*g) for g in journal_grants(p.recreate.lock_name))]
    )
    namespaced.setdefault(p.events_namespace, []).append(
        RbacRule(("",), ("events",), ("create",), "record a Recreated Event on the object")
    )
    namespaced.setdefault(p.cluster.agent_namespace, []).append(rollout_rule())
    return cluster, namespaced


def fleet_status_rules(p: Params) -> Rules:
    """``fleet status``: read an ApplicationSet and its Applications where Argo CD runs."""
    return [], {
        p.argocd_namespace: [
            RbacRule(
                ("argoproj.io",),
                ("applicationsets",),
                ("get",),
                "read the ApplicationSet's rollout (status.applicationStatus)",
            ),
            RbacRule(
                ("argoproj.io",),
                ("applications",),
                ("list",),
                "read each Application's last sync and its hooks' messages",
            ),
        ]
    }
