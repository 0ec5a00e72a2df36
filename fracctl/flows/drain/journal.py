"""The drain's journal: a ConfigMap beside the lock Lease, so that any machine can resume.

It holds the run's id, how far the drain got (:data:`fracctl.core.drain.PHASES`), the
old and the new config, each fenced node's condition as it was before the fence, and the
pods evicted so far. It is written before the first fence and removed when the run is
done or undone; a journal that outlives its run is what ``recreate --drain`` resumes and
``recreate --abort`` undoes.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from fracctl.core.drain import journal_name as core_journal_name
from fracctl.core.kube.resources import CONFIGMAPS
from fracctl.errors import Conflict, NotFound
from fracctl.flows.context import Context

Obj = dict[str, Any]
KEY = "journal.json"


def journal_name(ctx: Context) -> str:
    """The ConfigMap's name: the lock Lease's, with ``-drain``."""
    return core_journal_name(ctx.config.recreate.lock_name)


@dataclass
class Journal:
    """What a drain has done, as recorded in the cluster."""

    run_id: str
    phase: str
    old: Obj  # the live config when the drain began
    new: Obj  # git's config
    nodes: dict[str, Obj | None] = field(default_factory=dict)  # condition before the fence
    evicted: list[str] = field(default_factory=list)  # namespace/name
    resource_version: str = ""

    def to_data(self) -> dict[str, str]:
        """The ConfigMap's data."""
        body = {
            "run": self.run_id,
            "phase": self.phase,
            "old": self.old,
            "new": self.new,
            "nodes": self.nodes,
            "evicted": self.evicted,
        }
        return {KEY: json.dumps(body, sort_keys=True)}

    @property
    def old_uid(self) -> str:
        """The uid of the config the drain began with."""
        return str((self.old.get("metadata") or {}).get("uid") or "")


def read(ctx: Context) -> Journal | None:
    """The journal in the cluster, if a drain left one."""
    cm = ctx.kube.get_or_none(CONFIGMAPS, journal_name(ctx), ctx.config.recreate.lock_namespace)
    if cm is None:
        return None
    try:
        body = json.loads((cm.get("data") or {})[KEY])
        return Journal(
            run_id=str(body["run"]),
            phase=str(body["phase"]),
            old=dict(body.get("old") or {}),
            new=dict(body.get("new") or {}),
            nodes=dict(body.get("nodes") or {}),
            evicted=list(body.get("evicted") or []),
            resource_version=str(cm["metadata"].get("resourceVersion") or ""),
        )
    except (KeyError, TypeError, ValueError):
        from fracctl.errors import ExternalError

        raise ExternalError(
            f"the drain journal ConfigMap {ctx.config.recreate.lock_namespace}/"
            f"{journal_name(ctx)} is not one fracctl wrote",
            hint="inspect it; delete it only once no node carries a FracctlDrain fence",
        ) from None


def write(ctx: Context, journal: Journal) -> None:
    """Create or update the journal (optimistically: a second writer is an error)."""
    ns = ctx.config.recreate.lock_namespace
    meta: Obj = {
        "name": journal_name(ctx),
        "namespace": ns,
        "labels": {"app.kubernetes.io/managed-by": "fracctl"},
    }
    body: Obj = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": meta,
        "data": journal.to_data(),
    }
    if journal.resource_version:
        meta["resourceVersion"] = journal.resource_version
        saved = ctx.kube.replace(CONFIGMAPS, body)
    else:
        ctx.kube.ensure_namespace(ns)
        saved = ctx.kube.create(CONFIGMAPS, body, namespace=ns)
    journal.resource_version = str(saved["metadata"].get("resourceVersion") or "")


def clear(ctx: Context) -> None:
    """Remove the journal (gone already is fine)."""
    try:
        ctx.kube.delete(CONFIGMAPS, journal_name(ctx), ctx.config.recreate.lock_namespace)
    except (NotFound, Conflict):
        pass
