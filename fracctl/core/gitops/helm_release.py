"""Helm's release records, read as Helm writes them; and whether an object is a hook.

Helm 3 and 4 keep each revision of a release in a Secret named
``sh.helm.release.v1.<release>.v<revision>`` in the release's namespace, labelled
``owner=helm``, ``name``, ``status`` and ``version`` (helm/helm ``pkg/storage/driver/
secrets.go`` ``newSecretsObject``). Its ``data.release`` is, under the Secret's own base64,
``base64(gzip(json(release)))`` (``pkg/storage/driver/util.go`` ``encodeRelease``;
``decodeRelease`` accepts the payload without gzip too). The release JSON
(``pkg/release/v1/release.go``, ``hook.go``, ``info.go``) holds ``name``, ``namespace``,
``version``, ``info.status``, ``chart.metadata``, ``config`` (the values given),
``manifest`` (the release's own objects) and ``hooks`` (each with ``kind``, ``name``,
``path``, ``events``, ``manifest`` and ``delete_policies``): hooks are not in
``manifest``, which is why ``helm get manifest`` and ``helm uninstall`` never see them.

Pure data in, data out: the Secrets are read by the caller.
"""

from __future__ import annotations

import base64
import binascii
import gzip
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import PurePosixPath
from typing import Any

Obj = dict[str, Any]

SECRET_PREFIX = "sh.helm.release.v1."
OWNER_SELECTOR = "owner=helm"
HOOK = "helm.sh/hook"
HOOK_DELETE_POLICY = "helm.sh/hook-delete-policy"
# Argo CD's own hook annotation; Argo CD maps Helm's install/upgrade hooks onto its
# phases (argo-cd docs/user-guide/helm.md, "Helm Hooks").
ARGOCD_HOOK = "argocd.argoproj.io/hook"
# The finalizer Argo CD puts on every hook it creates, and the annotation it tracks its
# resources by ("<app>:<group>/<kind>:<namespace>/<name>"; argo-cd
# pkg/sync/hook/hook.go and util/argo/resource_tracking.go).
ARGOCD_HOOK_FINALIZER = "argocd.argoproj.io/hook-finalizer"
ARGOCD_TRACKING = "argocd.argoproj.io/tracking-id"
# Helm's default when a hook names no delete policy (pkg/action/hooks.go: a hook with
# no policy gets before-hook-creation): the old object is deleted, and the delete waited
# for, before the hook is created again.
BEFORE_HOOK_CREATION = "before-hook-creation"
# The statuses Helm treats as an operation in progress (pkg/release/v1/info.go
# ``Status.IsPending``); an upgrade refuses while the last revision has one ("another
# operation (install/upgrade/rollback) is in progress").
PENDING = ("pending-install", "pending-upgrade", "pending-rollback")
DEPLOYED = "deployed"
FAILED = "failed"
# What Helm writes on every object of a release (pkg/action/validate.go
# ``setMetadataVisitor``), and checks before it takes over an object (``checkOwnership``).
MANAGED_BY = "app.kubernetes.io/managed-by"
MANAGED_BY_HELM = "Helm"
RELEASE_NAME = "meta.helm.sh/release-name"
RELEASE_NAMESPACE = "meta.helm.sh/release-namespace"


# The labels helm-controller's post-renderer puts on every object of a HelmRelease.
FLUX_OWNER_NAME = "helm.toolkit.fluxcd.io/name"
FLUX_OWNER_NAMESPACE = "helm.toolkit.fluxcd.io/namespace"


def flux_owner_of(obj: Mapping[str, Any] | None) -> tuple[str, str] | None:
    """The (namespace, name) of the Flux HelmRelease whose labels ``obj`` carries, if any."""
    labels = ((obj or {}).get("metadata") or {}).get("labels") or {}
    name, ns = labels.get(FLUX_OWNER_NAME), labels.get(FLUX_OWNER_NAMESPACE)
    return (str(ns), str(name)) if name and ns else None


def owner_of(obj: Mapping[str, Any] | None) -> tuple[str, str] | None:
    """The (namespace, name) of the release whose marks ``obj`` carries, if any."""
    ann = ((obj or {}).get("metadata") or {}).get("annotations") or {}
    name, ns = ann.get(RELEASE_NAME), ann.get(RELEASE_NAMESPACE)
    return (str(ns), str(name)) if name and ns else None


def release_of(configured: str, chart_path: str) -> str:
    """The release name: as configured, else the chart folder's (as ``fracctl render``)."""
    return configured or PurePosixPath(chart_path.rstrip("/") or ".").name or "release"


class NotARelease(ValueError):
    """A Secret's payload is not a Helm release record."""


@dataclass(frozen=True)
class Hook:
    """One hook of a release: the object it creates, and when."""

    kind: str
    name: str
    path: str  # the template, "<chart>/templates/…"
    events: tuple[str, ...]
    delete_policies: tuple[str, ...]
    manifest: str

    @property
    def recreated_on(self) -> tuple[str, ...]:
        """The events that delete and recreate it (none if a policy removes it after)."""
        policies = self.delete_policies or (BEFORE_HOOK_CREATION,)
        return self.events if BEFORE_HOOK_CREATION in policies else ()


@dataclass(frozen=True)
class Release:
    """One revision of a release, as its Secret records it."""

    name: str
    namespace: str
    version: int
    status: str
    chart: str  # "<name>-<version>"
    manifest: str
    hooks: tuple[Hook, ...] = ()
    values: Mapping[str, Any] = field(default_factory=dict)
    description: str = ""

    @property
    def pending(self) -> bool:
        """Whether Helm counts this revision as an operation still in progress."""
        return self.status in PENDING

    def hook_for(self, kind: str, name: str) -> Hook | None:
        """The hook that creates ``kind``/``name``, if this revision has one."""
        return next((h for h in self.hooks if h.kind == kind and h.name == name), None)


def decode(secret: Obj) -> Release:
    """The release a ``sh.helm.release.v1.*`` Secret (as the API returns it) records.

    Raises:
        NotARelease: the Secret holds no readable release.
    """
    data = (secret.get("data") or {}).get("release")
    if not isinstance(data, str):
        raise NotARelease("no data.release")
    try:
        payload = base64.b64decode(base64.b64decode(data, validate=True), validate=True)
        if payload[:3] == b"\x1f\x8b\x08":  # gzip's magic, as decodeRelease checks it
            payload = gzip.decompress(payload)
        raw = json.loads(payload)
    except (binascii.Error, OSError, EOFError, ValueError) as e:
        raise NotARelease(f"data.release does not decode: {e}") from e
    if not isinstance(raw, dict):
        raise NotARelease("data.release is not an object")
    return from_json(raw)


def from_json(raw: Obj) -> Release:
    """A release from its JSON (a record's payload, or ``helm … -o json`` output)."""
    meta = (raw.get("chart") or {}).get("metadata") or {}
    hooks = tuple(
        Hook(
            kind=str(h.get("kind") or ""),
            name=str(h.get("name") or ""),
            path=str(h.get("path") or ""),
            events=tuple(str(e) for e in h.get("events") or ()),
            delete_policies=tuple(str(p) for p in h.get("delete_policies") or ()),
            manifest=str(h.get("manifest") or ""),
        )
        for h in raw.get("hooks") or ()
        if isinstance(h, dict)
    )
    info = raw.get("info") or {}
    return Release(
        name=str(raw.get("name") or ""),
        namespace=str(raw.get("namespace") or ""),
        version=int(raw.get("version") or 0),
        status=str(info.get("status") or ""),
        chart=f"{meta.get('name', '')}-{meta.get('version', '')}",
        manifest=str(raw.get("manifest") or ""),
        hooks=hooks,
        values=raw.get("config") or {},
        description=str(info.get("description") or ""),
    )


def payload(secret: Obj) -> Obj:
    """The release JSON a record holds, as Helm wrote it (every field kept)."""
    data = str((secret.get("data") or {}).get("release") or "")
    raw = base64.b64decode(base64.b64decode(data))
    if raw[:3] == b"\x1f\x8b\x08":
        raw = gzip.decompress(raw)
    found = json.loads(raw)
    if not isinstance(found, dict):
        raise NotARelease("data.release is not an object")
    return found


def with_status(secret: Obj, status: str, description: str) -> Obj:
    """The record Secret with its revision's status changed, as Helm writes one.

    The payload keeps every other field; it is written back as Helm encodes it
    (``encodeRelease``: JSON, gzip, base64) under the Secret's own base64, and the
    ``status`` label (``newSecretsObject``) follows. ``resourceVersion`` is kept, so a
    replace fails rather than overwrite a record that changed since it was read.
    """
    raw = payload(secret)
    raw["info"] = {**(raw.get("info") or {}), "status": status, "description": description}
    packed = base64.b64encode(gzip.compress(json.dumps(raw).encode(), compresslevel=9))
    meta = dict(secret.get("metadata") or {})
    meta["labels"] = {**(meta.get("labels") or {}), "status": status}
    meta.pop("managedFields", None)
    return {
        **secret,
        "metadata": meta,
        "data": {**(secret.get("data") or {}), "release": base64.b64encode(packed).decode()},
    }


def latest(secrets: Iterable[Obj]) -> dict[tuple[str, str], Release]:
    """The newest readable revision of each release, by (namespace, name).

    Secrets that are not release records (or do not decode) are skipped: a reader of
    many namespaces must not fail on one foreign Secret that happens to match.
    """
    newest: dict[tuple[str, str], Release] = {}
    for s in secrets:
        if not str((s.get("metadata") or {}).get("name", "")).startswith(SECRET_PREFIX):
            continue
        try:
            r = decode(s)
        except NotARelease:
            continue
        key = (r.namespace, r.name)
        if key not in newest or r.version > newest[key].version:
            newest[key] = r
    return newest


def hook_events(obj: Mapping[str, Any]) -> tuple[str, ...]:
    """The Helm hook events an object's annotations declare (empty: not a Helm hook)."""
    ann = (obj.get("metadata") or {}).get("annotations") or {}
    return tuple(e.strip() for e in str(ann.get(HOOK, "")).split(",") if e.strip())


def argocd_hook(obj: Mapping[str, Any]) -> str:
    """The Argo CD hook phase an object declares itself, if any."""
    ann = (obj.get("metadata") or {}).get("annotations") or {}
    return str(ann.get(ARGOCD_HOOK, ""))


def recreated_by_hook(obj: Mapping[str, Any]) -> tuple[str, ...]:
    """The Helm events on which this object, a hook, is deleted and created again.

    Empty when it is not a Helm hook or its delete policy removes it after it ran (then
    it is not kept at all).
    """
    events = hook_events(obj)
    ann = (obj.get("metadata") or {}).get("annotations") or {}
    policies = tuple(
        p.strip() for p in str(ann.get(HOOK_DELETE_POLICY, "")).split(",") if p.strip()
    )
    return Hook("", "", "", events, policies, "").recreated_on


def argocd_app(obj: Mapping[str, Any]) -> str:
    """The Argo CD application that tracks ``obj`` (its tracking-id annotation), or ""."""
    ann = (obj.get("metadata") or {}).get("annotations") or {}
    return str(ann.get(ARGOCD_TRACKING, "")).partition(":")[0]


def argocd_made_hook(obj: Mapping[str, Any]) -> bool:
    """Whether Argo CD created ``obj`` as a hook (its hook finalizer is on it)."""
    return ARGOCD_HOOK_FINALIZER in ((obj.get("metadata") or {}).get("finalizers") or ())


@dataclass(frozen=True)
class HookUse:
    """How an object is a hook: Helm's events and policies, Argo CD's phase."""

    events: tuple[str, ...]  # helm.sh/hook
    delete_policies: tuple[str, ...]  # helm.sh/hook-delete-policy, as written
    argocd_phase: str  # argocd.argoproj.io/hook
    recreated_on: tuple[str, ...]  # the Helm events that delete and create it again

    @property
    def annotations(self) -> str:
        """The hook annotations as written: ``helm.sh/hook=post-install,post-upgrade, …``."""
        parts = []
        if self.events:
            parts.append(f"{HOOK}={','.join(self.events)}")
        parts.append(
            f"{HOOK_DELETE_POLICY}={','.join(self.delete_policies)}"
            if self.delete_policies
            else f"no {HOOK_DELETE_POLICY} (Helm and Argo CD then use {BEFORE_HOOK_CREATION})"
        )
        if self.argocd_phase:
            parts.append(f"{ARGOCD_HOOK}={self.argocd_phase}")
        return "; ".join(parts)


def hook_use(obj: Mapping[str, Any]) -> HookUse | None:
    """How ``obj`` is a hook (Helm's or Argo CD's annotations), or None when it is not."""
    events = hook_events(obj)
    phase = argocd_hook(obj)
    if not events and not phase:
        return None
    ann = (obj.get("metadata") or {}).get("annotations") or {}
    policies = tuple(
        p.strip() for p in str(ann.get(HOOK_DELETE_POLICY, "")).split(",") if p.strip()
    )
    return HookUse(events, policies, phase, recreated_by_hook(obj))


# What deletes and recreates a hook when nothing more is known of who runs the chart.
HOOK_RECREATORS = (
    "every helm upgrade of the release that installs the chart (by hand or by a Flux "
    "HelmRelease without disableHooks), every Argo CD sync of an application rendering it"
)


def hook_of(
    live: Mapping[str, Any] | None,
    desired: Mapping[str, Any] | None,
    recreated_by: str = HOOK_RECREATORS,
) -> dict[str, Any] | None:
    """How an object is a chart's hook, from git's (or the engine's) rendering or the live one.

    The rendering is asked first: ``helm template`` keeps the hook annotations (Argo CD
    renders charts that way, argo-cd ``docs/user-guide/helm.md``). None when neither
    says hook.
    """
    for source, obj in (("in the rendering", desired), ("on the live object", live)):
        use = hook_use(obj) if obj is not None else None
        if use is not None:
            return {
                "annotations": use.annotations,
                "events": list(use.events),
                "argocd_phase": use.argocd_phase,
                "recreated_on": list(use.recreated_on),
                "source": source,
                "recreated_by": recreated_by,
            }
    return None
