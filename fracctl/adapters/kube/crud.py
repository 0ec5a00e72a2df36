"""Reading and writing single objects and lists: the Kubernetes adapter's typed helpers.

GET (one object, or a list followed through its ``continue`` tokens, optionally as
metadata only), POST, PUT, PATCH (merge, JSON or server-side apply) and DELETE with
preconditions, each one request on :class:`~fracctl.adapters.kube.transport.Transport`.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from fracctl.adapters.kube.transport import (
    APPLY_PATCH,
    JSON,
    MERGE_PATCH,
    METADATA_LIST,
    Obj,
    Transport,
)
from fracctl.core.kube.resources import NAMESPACES, ResourceRef
from fracctl.errors import Conflict, NotFound


class Crud(Transport):
    """GET, list, create, replace, patch, apply and delete, returning plain dicts."""

    def get(self, ref: ResourceRef, name: str, namespace: str | None = None) -> Obj:
        """GET one object; raises NotFound."""
        return self.request("GET", ref.path(namespace=namespace, name=name))

    def get_or_none(self, ref: ResourceRef, name: str, namespace: str | None = None) -> Obj | None:
        """GET one object, or None when it does not exist."""
        try:
            return self.get(ref, name, namespace)
        except NotFound:
            return None

    def ensure_namespace(self, name: str) -> None:
        """Create the namespace ``name`` unless it exists (a racing creator is fine)."""
        if self.get_or_none(NAMESPACES, name) is None:
            try:
                self.create(NAMESPACES, {"apiVersion": "v1", "kind": "Namespace",
                                         "metadata": {"name": name}})  # fmt: skip
            except Conflict:
                pass

    def list_pages(
        self,
        ref: ResourceRef,
        *,
        namespace: str | None = None,
        label_selector: str | None = None,
        field_selector: str | None = None,
        limit: int | None = 500,
        metadata_only: bool = False,
    ) -> Iterator[Obj]:
        """Yield list pages (each a List object), following ``continue`` tokens."""
        token: str | None = None
        while True:
            page = self.request(
                "GET",
                ref.path(namespace=namespace),
                query={
                    "labelSelector": label_selector,
                    "fieldSelector": field_selector,
                    "limit": limit,
                    "continue": token,
                },
                accept=METADATA_LIST if metadata_only else JSON,
            )
            yield page
            token = (page.get("metadata") or {}).get("continue")
            if not token:
                return

    def list(self, ref: ResourceRef, **kwargs: Any) -> list[Obj]:
        """Every item of a (paged) list."""
        return [item for page in self.list_pages(ref, **kwargs) for item in page.get("items") or []]

    def create(
        self, ref: ResourceRef, body: Obj, *, namespace: str | None = None, dry_run: bool = False
    ) -> Obj:
        """POST a new object."""
        return self.request(
            "POST",
            ref.path(namespace=namespace or _ns(body)),
            body=body,
            query={"dryRun": "All" if dry_run else None, "fieldManager": "fracctl"},
        )

    def replace(self, ref: ResourceRef, body: Obj, *, dry_run: bool = False) -> Obj:
        """PUT an object (needs ``metadata.resourceVersion`` for optimistic locking)."""
        return self.request(
            "PUT",
            ref.path(namespace=_ns(body), name=body["metadata"]["name"]),
            body=body,
            query={"dryRun": "All" if dry_run else None, "fieldManager": "fracctl"},
        )

    def patch(
        self,
        ref: ResourceRef,
        name: str,
        patch: Any,
        *,
        namespace: str | None = None,
        content_type: str = MERGE_PATCH,
        subresource: str = "",
        dry_run: bool = False,
        field_manager: str = "fracctl",
        force: bool = False,
    ) -> Obj:
        """PATCH an object or a subresource (merge, JSON or server-side apply)."""
        return self.request(
            "PATCH",
            ref.path(namespace=namespace, name=name, subresource=subresource),
            body=patch,
            content_type=content_type,
            query={
                "dryRun": "All" if dry_run else None,
                "fieldManager": field_manager,
                "force": "true" if force else None,
            },
        )

    def apply(
        self,
        ref: ResourceRef,
        body: Obj,
        *,
        dry_run: bool = False,
        force: bool = True,
        field_manager: str = "fracctl",
    ) -> Obj:
        """Server-side apply ``body`` with field manager ``fracctl`` (or ``field_manager``)."""
        return self.patch(
            ref,
            body["metadata"]["name"],
            body,
            namespace=_ns(body),
            content_type=APPLY_PATCH,
            dry_run=dry_run,
            force=force,
            field_manager=field_manager,
        )

    def delete(
        self,
        ref: ResourceRef,
        name: str,
        namespace: str | None = None,
        *,
        uid: str | None = None,
        propagation: str = "Background",
        grace_period: int | None = None,
        resource_version: str | None = None,
        dry_run: bool = False,
    ) -> Obj:
        """DELETE an object; with ``uid`` only that incarnation of it.

        ``grace_period=0`` removes a pod bound to a node at once (no kubelet confirms).
        ``dry_run`` runs authorization, the preconditions and admission (policies and
        webhooks) and changes nothing.
        """
        body: Obj = {"kind": "DeleteOptions", "apiVersion": "v1", "propagationPolicy": propagation}
        preconditions = {"uid": uid, "resourceVersion": resource_version}
        if any(preconditions.values()):
            body["preconditions"] = {k: v for k, v in preconditions.items() if v}
        if grace_period is not None:
            body["gracePeriodSeconds"] = grace_period
        label = ""
        if dry_run:
            body["dryRun"] = ["All"]
            label = f"DELETE {ref.plural} (dry run)"
        path = ref.path(namespace=namespace, name=name)
        return self.request("DELETE", path, body=body, label=label)

    def service_account_token(self, namespace: str, account: str, seconds: int) -> str:
        """A token of ``namespace/account``, valid ``seconds``, from a TokenRequest.

        The API server's own service-account authenticator then names its holder
        ``system:serviceaccount:<namespace>:<account>``, as in a cluster.
        """
        request = {
            "apiVersion": "authentication.k8s.io/v1",
            "kind": "TokenRequest",
            "spec": {"expirationSeconds": seconds},
        }
        path = f"/api/v1/namespaces/{namespace}/serviceaccounts/{account}/token"
        return str(self.request("POST", path, body=request)["status"]["token"])


def _ns(body: Obj) -> str | None:
    return (body.get("metadata") or {}).get("namespace")
