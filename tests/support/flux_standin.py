"""STAND-IN for Flux's kustomize-controller, for tests only. It is not Flux.

It installs a minimal ``Kustomization`` CRD (``kustomize.toolkit.fluxcd.io/v1``,
namespaced, status subresource, open schema) on the real API server, creates one
Kustomization, and runs a controller simulation in a thread that does what the real
controller visibly does when ``reconcile.fluxcd.io/requestedAt`` changes:

1. sets ``Reconciling=True`` and ``Ready=Unknown`` (reason ``Progressing``);
2. server-side applies the desired manifests (field manager ``kustomize-controller``,
   no force-recreate: an immutable-field rejection fails the reconcile, as Flux's
   default ``spec.force: false`` does);
3. writes ``status.lastHandledReconcileAt`` = the annotation and
   ``lastAttemptedRevision``; on success ``lastAppliedRevision``,
   ``status.observedGeneration`` and ``Ready=True`` (``ReconciliationSucceeded``,
   ``Applied revision: …``); on failure ``Ready=False`` (``ReconciliationFailed``,
   ``<Kind>/<name> dry-run failed (<reason>): <the API's message>``) with
   ``Reconciling=True`` (``ProgressingWithRetry``), and ``status.observedGeneration``
   stays where it was (-1 before a first success). Every condition carries the
   generation it judged.

Its objects carry :data:`STANDIN_LABEL`, which the session's real Flux is told to ignore.
tests/flux/test_flux_contract.py holds this to the real kustomize-controller.

``stuck=True`` makes it ignore requests (a controller that is down): the one fault the
real controllers cannot be made to show while they run for the whole session.
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
from datetime import datetime, timezone
from typing import Any

from fracctl.adapters.flux import API_VERSION, KIND, REQUESTED_AT
from fracctl.adapters.kube import APPLY_PATCH, Kube
from fracctl.core.fractions.crd import open_crd
from fracctl.core.kube.resources import CRDS, NAMESPACES
from fracctl.errors import ApiError, Conflict, NotFound

GROUP = "kustomize.toolkit.fluxcd.io"
SOURCE_GROUP = "source.toolkit.fluxcd.io"
PLURAL = "kustomizations"
FIELD_MANAGER = "kustomize-controller"
STANDIN_LABEL = "fracctl.io/flux-standin"

Obj = dict[str, Any]


def kustomization_crd() -> Obj:
    """A minimal Kustomization CRD: the real names, an open schema."""
    return open_crd(GROUP, KIND, PLURAL, scope="Namespaced", short_names=("ks",))


def install_crd(kube: Kube, crd: Obj | None = None, *, timeout: float = 30.0) -> None:
    """Create the CRD (default: the Kustomization's), or keep it; wait until it is served."""
    crd = crd or kustomization_crd()
    group, names = crd["spec"]["group"], crd["spec"]["names"]
    api_version = f"{group}/v1"
    try:
        kube.create(CRDS, crd)
    except Conflict:
        pass
    deadline = time.monotonic() + timeout
    while True:
        try:
            kube.request("GET", f"/apis/{api_version}/{names['plural']}")
            kube.resolve(api_version, names["kind"])
            return
        except ApiError:
            # Discovery lags behind Established, and a new resource's storage answers
            # 429 "storage is (re)initializing" for a moment.
            kube._discovered.discard(api_version)
            if time.monotonic() > deadline:
                raise
            time.sleep(0.1)


def _now() -> str:
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def _revision(manifests: list[Obj]) -> str:
    digest = hashlib.sha1(json.dumps(manifests, sort_keys=True).encode()).hexdigest()
    return f"main@sha1:{digest}"


class FluxStandIn:
    """One Kustomization and a simulated kustomize-controller reconciling it.

    Args:
        kubeconfig: the control plane.
        manifests: the desired objects the source currently holds.
        namespace, name: the Kustomization.
        stuck: never handle a request.
        suspend: create the Kustomization with ``spec.suspend: true``.
        interval: seconds between the controller's polls.
    """

    def __init__(
        self,
        *,
        kubeconfig: str,
        manifests: list[Obj],
        namespace: str = "flux-system",
        name: str = "gpu-fractioning",
        stuck: bool = False,
        suspend: bool = False,
        interval: float = 0.05,
    ) -> None:
        self.kube = Kube.connect(kubeconfig=kubeconfig)
        self.namespace = namespace
        self.name = name
        self.stuck = stuck
        self.suspend = suspend
        self.interval = interval
        self._lock = threading.Lock()
        self._manifests = [json.loads(json.dumps(m)) for m in manifests]
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.reconciles = 0
        self.errors: list[str] = []

    def __enter__(self) -> FluxStandIn:
        install_crd(self.kube)
        try:
            self.kube.create(
                NAMESPACES,
                {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": self.namespace}},
            )
        except Conflict:
            pass
        self._delete_kustomization()
        self._source()
        self.kube.create(
            self.ref,
            {
                "apiVersion": API_VERSION,
                "kind": KIND,
                "metadata": {
                    "name": self.name,
                    "namespace": self.namespace,
                    "labels": {STANDIN_LABEL: "true"},
                },
                "spec": {
                    "interval": "10m",
                    "path": "./",
                    "prune": False,
                    "suspend": self.suspend,
                    "sourceRef": {"kind": "GitRepository", "name": "flux-system"},
                },
            },
        )
        self._thread = threading.Thread(target=self._loop, daemon=True)
        self._thread.start()
        return self

    def _source(self) -> None:
        """The GitRepository the Kustomization reads, Ready with an artifact.

        Stands in for source-controller: an open-schema CRD with the real names, and
        the status the real one writes once it fetched a revision.
        """
        crd = open_crd(SOURCE_GROUP, "GitRepository", "gitrepositories", scope="Namespaced")
        install_crd(self.kube, crd)
        ref = self.kube.resolve(f"{SOURCE_GROUP}/v1", "GitRepository")
        body = {
            "apiVersion": f"{SOURCE_GROUP}/v1",
            "kind": "GitRepository",
            "metadata": {
                "name": "flux-system",
                "namespace": self.namespace,
                "labels": {STANDIN_LABEL: "true"},
            },
            "spec": {"interval": "1m", "url": "http://127.0.0.1/gitops.git"},
        }
        try:
            self.kube.create(ref, body, namespace=self.namespace)
        except Conflict:
            pass
        # The artifact as source-controller writes it (every field its CRD requires), so
        # that the status is valid where a session's real Flux installed the real CRD.
        digest = self.revision.rsplit(":", 1)[-1]
        path = f"gitrepository/{self.namespace}/flux-system/{digest}.tar.gz"
        status = {
            "artifact": {
                "revision": self.revision,
                "digest": "sha256:" + hashlib.sha256(self.revision.encode()).hexdigest(),
                "lastUpdateTime": _now(),
                "path": path,
                "url": f"http://source-controller.flux-system.svc.cluster.local./{path}",
            },
            "conditions": [_cond("Ready", "True", "Succeeded", "stored artifact for revision")],
        }
        self.kube.patch(
            ref,
            "flux-system",
            {"status": status},
            namespace=self.namespace,
            subresource="status",
        )

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=10)
        self._delete_kustomization()

    @property
    def ref(self) -> Any:
        """The Kustomization resource."""
        return self.kube.resolve(API_VERSION, KIND)

    @property
    def revision(self) -> str:
        """The source's current revision, as Flux writes it."""
        with self._lock:
            return _revision(self._manifests)

    def set_manifests(self, manifests: list[Obj]) -> str:
        """A new commit in the source; returns its revision."""
        with self._lock:
            self._manifests = [json.loads(json.dumps(m)) for m in manifests]
        return self.revision

    def _delete_kustomization(self) -> None:
        try:
            self.kube.delete(self.ref, self.name, self.namespace)
        except NotFound:
            pass

    # --- the controller ---------------------------------------------------------------

    def _loop(self) -> None:
        while not self._stop.is_set():
            try:
                self.reconcile_once()
            except ApiError as e:  # raced with a writer; try again next round
                self.errors.append(e.message)
            self._stop.wait(self.interval)

    def reconcile_once(self) -> bool:
        """Handle a pending request, if any; True when one was handled."""
        if self.stuck:
            return False
        obj = self.kube.get_or_none(self.ref, self.name, self.namespace)
        if obj is None:
            return False
        requested = (obj["metadata"].get("annotations") or {}).get(REQUESTED_AT)
        status = obj.get("status") or {}
        if not requested or requested == status.get("lastHandledReconcileAt"):
            return False
        if (obj.get("spec") or {}).get("suspend"):
            return False
        generation = obj["metadata"].get("generation")
        with self._lock:
            manifests = list(self._manifests)
            revision = _revision(manifests)
        progressing = "Reconciliation in progress"
        self._status(
            {
                **status,
                "observedGeneration": status.get("observedGeneration", -1),
                "conditions": [
                    _cond("Reconciling", "True", "Progressing", progressing, generation),
                    _cond("Ready", "Unknown", "Progressing", progressing, generation),
                ],
            }
        )
        failure = None
        for manifest in manifests:
            failure = self._apply(manifest)
            if failure:
                break
        self.reconciles += 1
        new = {
            **status,
            "observedGeneration": status.get("observedGeneration", -1),
            "lastHandledReconcileAt": requested,
            "lastAttemptedRevision": revision,
        }
        if failure:
            retry = f"Detecting drift for revision {revision} with a timeout of 30s"
            new["conditions"] = [
                _cond("Reconciling", "True", "ProgressingWithRetry", retry, generation),
                _cond("Ready", "False", "ReconciliationFailed", failure, generation),
            ]
        else:
            new["lastAppliedRevision"] = revision
            new["observedGeneration"] = generation
            applied = f"Applied revision: {revision}"
            new["conditions"] = [
                _cond("Ready", "True", "ReconciliationSucceeded", applied, generation)
            ]
        self._status(new)
        return True

    def _apply(self, manifest: Obj) -> str | None:
        meta = manifest.get("metadata") or {}
        where = f"{meta['namespace']}/" if meta.get("namespace") else ""
        ident = f"{manifest['kind']}/{where}{meta.get('name')}"
        try:
            ref = self.kube.resolve(manifest["apiVersion"], manifest["kind"])
            self.kube.patch(
                ref,
                meta["name"],
                manifest,
                namespace=meta.get("namespace"),
                content_type=APPLY_PATCH,
                field_manager=FIELD_MANAGER,
                force=True,
            )
        except ApiError as e:
            reason = e.status.reason or e.status.code
            return f"{ident} dry-run failed ({reason}): {e.status.message}\n"
        return None

    def _status(self, status: Obj) -> None:
        self.kube.patch(
            self.ref,
            self.name,
            {"status": status},
            namespace=self.namespace,
            subresource="status",
        )


def _cond(kind: str, status: str, reason: str, message: str, generation: int = 1) -> Obj:
    return {
        "type": kind,
        "status": status,
        "reason": reason,
        "message": message,
        "lastTransitionTime": _now(),
        "observedGeneration": generation,
    }
