"""Discovery and access checks: which resource serves a kind, and may this identity act.

A kind is resolved to its resource through the API group's discovery document, cached
per client; an access check is a ``SelfSubjectAccessReview``.
"""

from __future__ import annotations

from typing import Any

from fracctl.adapters.kube.crud import Crud
from fracctl.adapters.kube.transport import Obj
from fracctl.core.kube.resources import CRDS, ResourceRef, ServedResource, split_api_version
from fracctl.errors import ApiStatus, NotFound


class Discovery(Crud):
    """:meth:`resolve`, :meth:`crd` and :meth:`can_i`, the discovery cached per client."""

    def __init__(self, configuration: Any, *, timeout: float = 30.0) -> None:
        super().__init__(configuration, timeout=timeout)
        self._discovery: dict[tuple[str, str], ResourceRef] = {}
        self._discovered: set[str] = set()

    def can_i(
        self, verb: str, ref: ResourceRef, name: str | None = None, namespace: str | None = None
    ) -> tuple[bool, str]:
        """Ask the API server whether this identity may ``verb`` the resource.

        A ``SelfSubjectAccessReview``: read-only, and allowed to every authenticated
        identity. Returns whether it is allowed and the authorizer's reason, if any.
        """
        attrs: Obj = {"verb": verb, "group": ref.group, "resource": ref.plural}
        if name:
            attrs["name"] = name
        if namespace and ref.namespaced:
            attrs["namespace"] = namespace
        review = self.request(
            "POST",
            "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews",
            body={
                "apiVersion": "authorization.k8s.io/v1",
                "kind": "SelfSubjectAccessReview",
                "spec": {"resourceAttributes": attrs},
            },
        )
        status = review.get("status") or {}
        return bool(status.get("allowed")), str(status.get("reason") or "")

    def can_they(
        self,
        user: str,
        verb: str,
        ref: ResourceRef,
        name: str | None = None,
        namespace: str | None = None,
        groups: tuple[str, ...] = (),
    ) -> tuple[bool, str]:
        """Ask the API server whether ``user`` may ``verb`` the resource.

        A ``SubjectAccessReview`` (read-only; the asker needs ``create`` on
        ``subjectaccessreviews``): how a controller's identity is proven before it is
        relied on. Returns whether it is allowed and the authorizer's reason, if any.
        """
        attrs: Obj = {"verb": verb, "group": ref.group, "resource": ref.plural}
        if name:
            attrs["name"] = name
        if namespace and ref.namespaced:
            attrs["namespace"] = namespace
        spec: Obj = {"user": user, "resourceAttributes": attrs}
        if groups:
            spec["groups"] = list(groups)
        review = self.request(
            "POST",
            "/apis/authorization.k8s.io/v1/subjectaccessreviews",
            body={
                "apiVersion": "authorization.k8s.io/v1",
                "kind": "SubjectAccessReview",
                "spec": spec,
            },
        )
        status = review.get("status") or {}
        return bool(status.get("allowed")), str(status.get("reason") or "")

    def whoami(self) -> str:
        """The username the API server knows this identity by (a ``SelfSubjectReview``).

        What admission sees as ``request.userInfo.username``; allowed to every
        authenticated identity (Kubernetes 1.28 and later).
        """
        review = self.request(
            "POST",
            "/apis/authentication.k8s.io/v1/selfsubjectreviews",
            body={"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"},
        )
        return str(((review.get("status") or {}).get("userInfo") or {}).get("username") or "")

    def resolve(self, api_version: str, kind: str) -> ResourceRef:
        """Find the resource for ``apiVersion``/``kind`` through discovery (cached)."""
        if (api_version, kind) in self._discovery:
            return self._discovery[(api_version, kind)]
        if api_version not in self._discovered:
            group, version = split_api_version(api_version)
            path = f"/apis/{group}/{version}" if group else f"/api/{version}"
            try:
                doc = self.request("GET", path)
            except NotFound:
                doc = {"resources": []}
            self._discovered.add(api_version)
            for r in doc.get("resources") or []:
                if "/" in r["name"]:
                    continue
                ref = ResourceRef(group, version, r["name"], r["kind"], bool(r["namespaced"]))
                self._discovery[(api_version, r["kind"])] = ref
        try:
            return self._discovery[(api_version, kind)]
        except KeyError:
            raise NotFound(
                ApiStatus(404, "NotFound", f"the server has no resource {kind} in {api_version}"),
                hint="is the CRD installed?",
            ) from None

    def served(self) -> list[ServedResource]:
        """Every resource type served (each group's preferred version), as kubectl sees them.

        Read from discovery: ``/api/v1`` and, for each group ``/apis`` lists, its preferred
        version's document (subresources left out).
        """
        paths = ["/api/v1"]
        for g in self.request("GET", "/apis").get("groups") or []:
            preferred = (g.get("preferredVersion") or {}).get("groupVersion")
            if preferred:
                paths.append(f"/apis/{preferred}")
        out: list[ServedResource] = []
        for path in paths:
            try:
                doc = self.request("GET", path)
            except NotFound:  # a group going away while it is read
                continue
            group = split_api_version(str(doc.get("groupVersion") or "v1"))[0]
            for r in doc.get("resources") or []:
                if "/" in r["name"]:
                    continue
                out.append(ServedResource(group, r["kind"], r["name"],
                                          r.get("singularName") or "",
                                          tuple(r.get("shortNames") or ())))  # fmt: skip
        return out

    def crd(self, group: str, plural: str) -> Obj | None:
        """The CustomResourceDefinition for ``plural.group``, if installed."""
        return self.get_or_none(CRDS, f"{plural}.{group}")
