"""What Argo CD claims, beside the verdicts: the application's sync state and each resource's.

``check_app`` judges every resource of an Argo CD application with the desired state
Argo CD renders (resources it would prune are ``missing-desired``). Any report can be
annotated with the application's claims; where Argo CD says Synced but an object
drifted, the report warns with :data:`SYNCED_BUT_DIFFERS`.
"""

from __future__ import annotations

from typing import Any

from fracctl.core import drift as d
from fracctl.core.kube.resources import split_api_version
from fracctl.flows.context import Context
from fracctl.flows.drift.items import Item, Obj, items_from
from fracctl.flows.drift.judge import judge_all

SYNCED_BUT_DIFFERS = "Argo CD reports Synced but the live object differs"


def _claims(app_name: str, app: Obj) -> dict[str, Any]:
    status = app.get("status") or {}
    op = status.get("operationState") or {}
    return {
        "app": app_name,
        "sync": (status.get("sync") or {}).get("status") or "Unknown",
        "revision": (status.get("sync") or {}).get("revision") or "",
        "health": (status.get("health") or {}).get("status") or "Unknown",
        "operation": {
            "phase": op.get("phase") or "",
            "message": op.get("message") or "",
            "finishedAt": op.get("finishedAt") or "",
        },
    }


def _resource_claims(app: Obj) -> dict[tuple[str, str, str, str], dict[str, Any]]:
    status = app.get("status") or {}
    out: dict[tuple[str, str, str, str], dict[str, Any]] = {}
    for r in status.get("resources") or []:
        key = (
            r.get("group") or "",
            r.get("kind") or "",
            r.get("namespace") or "",
            r.get("name") or "",
        )
        out[key] = {
            "status": r.get("status") or "",
            "health": (r.get("health") or {}).get("status") or "",
            "requiresPruning": bool(r.get("requiresPruning")),
        }
    op = status.get("operationState") or {}
    for r in (op.get("syncResult") or {}).get("resources") or []:
        key = (
            r.get("group") or "",
            r.get("kind") or "",
            r.get("namespace") or "",
            r.get("name") or "",
        )
        entry = out.setdefault(key, {"status": "", "health": ""})
        entry["lastSync"] = r.get("status") or ""
        entry["lastSyncMessage"] = r.get("message") or ""
    return out


def annotate_with_argocd(report: d.DriftReport, app_name: str, app: Obj) -> None:
    """Add what the Argo CD application ``app_name`` claims of each object to ``report``."""
    claims = _claims(app_name, app)
    report.argocd = claims
    per_resource = _resource_claims(app)
    for o in report.objects:
        entry = per_resource.get((o.group, o.kind, o.namespace, o.name))
        if entry is None:
            entry = {"status": claims["sync"], "health": "", "fromApplication": True}
        o.argocd = entry
        if o.argocd_claims_synced:
            report.warnings.append(f"{SYNCED_BUT_DIFFERS}: {o.key} is {o.verdict}")
    if (
        any(o.verdict not in (d.IN_SYNC, d.HOOK) for o in report.objects)
        and claims["sync"] == "Synced"
        and not any(w.startswith(SYNCED_BUT_DIFFERS) for w in report.warnings)
    ):
        report.warnings.append(f"{SYNCED_BUT_DIFFERS} (application {app_name})")


def check_app(
    ctx: Context,
    *,
    app: str,
    revision: str | None = None,
    kind: str | None = None,
    name: str | None = None,
) -> d.DriftReport:
    """Judge every resource of an Argo CD application, desired state from Argo CD.

    Resources Argo CD would prune (live, no longer rendered) are ``missing-desired``.
    """
    from fracctl.flows.render import check_argocd_unique, select

    client = ctx.argocd
    application = client.get_application(app)
    manifests = [m for m in client.manifests(app, revision=revision) if isinstance(m, dict)]
    dest_ns = ((application.get("spec") or {}).get("destination") or {}).get("namespace") or ""
    ns = dest_ns or ctx.config.git.objects_namespace
    check_argocd_unique(ctx, manifests, app=app, default_namespace=ns)
    chosen = [manifests[i] for i in select(manifests, kind=kind, name=name)]
    items = items_from(chosen, ns)
    have = {(split_api_version(it.api_version)[0], it.kind, it.namespace, it.name) for it in items}
    for r in (application.get("status") or {}).get("resources") or []:
        if not r.get("requiresPruning"):
            continue
        group, rkind = r.get("group") or "", r.get("kind") or ""
        if (kind and rkind.lower() != kind.lower()) or (name and r.get("name") != name):
            continue
        key = (group, rkind, r.get("namespace") or "", r.get("name") or "")
        if key in have:
            continue
        api_version = f"{group}/{r.get('version')}" if group else str(r.get("version") or "v1")
        items.append(Item(api_version, rkind, key[2], key[3], None))
    report = d.DriftReport(
        objects=judge_all(ctx, items), source={"argocd_app": app, "revision": revision or ""}
    )
    for o in report.objects:
        if o.hook is not None:
            # Argo CD maps the chart's post-install/post-upgrade to PostSync and, with no
            # delete policy, BeforeHookCreation (argo-cd docs/user-guide/helm.md).
            o.hook["recreated_by"] = f"every sync of Argo CD application {app} (PostSync)"
    annotate_with_argocd(report, app, application)
    return report
