"""The gate's backup, kept in the cluster: a hook pod's own files end with the pod."""

from __future__ import annotations

import io

from fracctl.core.kube.resources import CONFIGMAPS
from fracctl.errors import Conflict
from fracctl.flows.context import Context
from fracctl.flows.engines import Obj

KEY = "object.yaml"
LABELS = {"app.kubernetes.io/name": "fracctl", "app.kubernetes.io/component": "backup"}


def _prefix(name: str) -> str:
    return f"fracctl-backup-{name}-"


def backup_name(live: Obj) -> str:
    """One ConfigMap per incarnation of the object: ``fracctl-backup-<name>-<uid[:8]>``."""
    meta = live["metadata"]
    return _prefix(meta["name"]) + str(meta["uid"])[:8]


def to_cluster(ctx: Context, live: Obj) -> str:
    """Write ``live`` (secrets redacted) as a ConfigMap in the lock's namespace; its name.

    Written once per incarnation: a rerun finds the one its first try wrote.
    """
    from ruamel.yaml import YAML

    from fracctl.redact import redact_data

    namespace = ctx.config.recreate.lock_namespace
    name = backup_name(live)
    yaml = YAML(typ="safe")
    yaml.default_flow_style = False
    text = io.StringIO()
    yaml.dump(redact_data(live), text)
    body = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "labels": dict(LABELS),
        },
        "data": {KEY: text.getvalue()},
    }
    try:
        ctx.kube.create(CONFIGMAPS, body)
    except Conflict as e:
        if e.status.reason != "AlreadyExists":
            raise
    return f"ConfigMap {namespace}/{name}"


def latest(ctx: Context, name: str) -> str | None:
    """The newest backup ConfigMap of the object ``name`` (an earlier try's), if any."""
    namespace = ctx.config.recreate.lock_namespace
    selector = ",".join(f"{k}={v}" for k, v in LABELS.items())
    found = [
        cm
        for cm in ctx.kube.list(CONFIGMAPS, namespace=namespace, label_selector=selector)
        if cm["metadata"]["name"].startswith(_prefix(name))
    ]
    if not found:
        return None
    newest = max(found, key=lambda cm: str(cm["metadata"].get("creationTimestamp", "")))
    return f"ConfigMap {namespace}/{newest['metadata']['name']}"
