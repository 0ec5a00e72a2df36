"""The Argo CD client: one plain call per REST endpoint fracctl uses, over httpx.

Only the calls fracctl needs: read an application (optionally refreshing it), ask what
the token's account may do, read its managed resources, rendered manifests and sync
windows, start a sync of selected resources, and terminate the running operation. Each
returns the decoded answer, checked against its shape; every failure becomes a fracctl
error with advice. httpx is imported only when a client is built or a request is sent.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from fracctl.adapters.argocd.auth import Secret, check_token, read_token, server_url
from fracctl.adapters.argocd.errors import (
    UnexpectedAnswer,
    clip,
    error_for,
    transport_hint,
    transport_reason,
)
from fracctl.adapters.argocd.shapes import (
    APPLICATION_SHAPE,
    MANAGED_RESOURCES_SHAPE,
    MANIFESTS_SHAPE,
    SYNC_WINDOWS_SHAPE,
    app_path,
    checked,
    decode_state,
    resource_body,
)
from fracctl.errors import ApiError, ConfigError, Unreachable, UsageError
from fracctl.redact import redact

if TYPE_CHECKING:
    import httpx

    from fracctl.config import ArgoCDConfig

Obj = dict[str, Any]

#: Operation phases after which nothing more happens.
TERMINAL_PHASES = frozenset({"Succeeded", "Failed", "Error"})
_NO_OPERATION_MESSAGE = "no operation is in progress"


class ArgoCD:
    """A client for the Argo CD REST API that returns plain dicts.

    Args:
        server: base URL or ``host[:port]`` (see :func:`server_url`).
        token: the bearer token.
        insecure: skip TLS certificate verification.
        plaintext: talk plain HTTP to a server given without a scheme.
        timeout: seconds for each request.
        transport: an httpx transport (tests: ``httpx.MockTransport``).
    """

    def __init__(
        self,
        server: str,
        token: str,
        *,
        insecure: bool = False,
        plaintext: bool = False,
        timeout: float = 30.0,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        import httpx

        if not token:
            raise ConfigError("no Argo CD token: set ARGOCD_AUTH_TOKEN or argocd.token_file")
        check_token(token, "the Argo CD token")
        self.url = server_url(server, plaintext=plaintext)
        self.insecure = insecure
        self.timeout = timeout
        self.__token = Secret(token)
        self._client = httpx.Client(
            base_url=self.url,
            verify=not insecure,
            timeout=timeout,
            transport=transport,
            headers={"Accept": "application/json", "User-Agent": "fracctl"},
            follow_redirects=False,
        )

    @classmethod
    def from_config(
        cls,
        config: ArgoCDConfig,
        env: Mapping[str, str],
        *,
        timeout: float = 30.0,
        transport: httpx.BaseTransport | None = None,
    ) -> ArgoCD:
        """Build the client from ``argocd:`` settings and the environment.

        The server comes from ``argocd.server``, else ``$ARGOCD_SERVER``; the token from
        ``argocd.token_file``, else ``$ARGOCD_AUTH_TOKEN``.

        Raises:
            ConfigError: the server or the token is missing or malformed.
        """
        server = config.server or env.get("ARGOCD_SERVER") or ""
        if not server.strip():
            raise ConfigError(
                "no Argo CD server: set argocd.server in fracctl.yaml or ARGOCD_SERVER"
            )
        token = read_token(config, env)
        return cls(
            server,
            token,
            insecure=config.insecure,
            plaintext=config.plaintext,
            timeout=timeout,
            transport=transport,
        )

    def __repr__(self) -> str:
        return f"ArgoCD(url={self.url!r}, insecure={self.insecure})"

    def close(self) -> None:
        """Close the connection pool (also done when the client is garbage collected)."""
        client = getattr(self, "_client", None)
        if client is not None:
            client.close()

    def __del__(self) -> None:
        self.close()

    def __enter__(self) -> ArgoCD:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- raw requests -----------------------------------------------------------------

    @staticmethod
    def _scrub(text: str) -> str:
        # Before any truncation: a secret cut in half would no longer be recognised whole.
        return redact(text)

    def request(
        self,
        method: str,
        path: str,
        *,
        params: Mapping[str, Any] | None = None,
        body: Any = None,
        app: str | None = None,
        timeout: float | None = None,
    ) -> Any:
        """One request to the API; the decoded JSON body.

        Args:
            method: HTTP method.
            path: path below the base URL, starting with ``/api/v1``.
            params: query parameters; ``None`` values are left out.
            body: a JSON body.
            app: the application the request is about (for messages).
            timeout: read timeout for this request (default: the client's).

        Raises:
            ApiError: the generic error of the status (see :func:`error_for`).
            UnexpectedAnswer: the answer is not JSON.
            Unreachable: the server could not be reached.
        """
        import httpx

        query = {k: v for k, v in (params or {}).items() if v is not None}
        try:
            resp = self._client.request(
                method,
                path,
                params=query,
                json=body,
                headers={
                    "Authorization": f"Bearer {self.__token.reveal()}",
                    # Argo CD answers 415 "Invalid content type" to a POST or a DELETE
                    # without it, even when there is no body.
                    **({} if method in ("GET", "HEAD") else {"Content-Type": "application/json"}),
                },
                timeout=self.timeout if timeout is None else timeout,
            )
        except httpx.TimeoutException as e:
            raise Unreachable(
                f"Argo CD at {self.url} did not answer {method} {path} in time "
                f"({type(e).__name__})",
                hint="the server is slow or unreachable; check the network and retry",
            ) from e
        except httpx.TransportError as e:
            raise Unreachable(
                f"cannot reach Argo CD at {self.url}: {self._scrub(transport_reason(e))}",
                hint=transport_hint(e),
            ) from e
        return self._decoded(resp, f"{method} {path}", app)

    def _decoded(self, resp: httpx.Response, what: str, app: str | None) -> Any:
        """An answer's JSON body ({} when empty); its status's error from 400 on."""
        if resp.status_code >= 400:
            raise error_for(resp.status_code, self._scrub(resp.text), app=app, url=self.url)
        if not resp.content:
            return {}
        try:
            return resp.json()
        except ValueError as e:
            kind = resp.headers.get("content-type", "unknown content type")
            raise UnexpectedAnswer(
                f"{what}: the answer is not JSON ({kind})",
                http_status=resp.status_code,
                hint=f"is {self.url} the Argo CD API server (not the UI or a proxy page)?",
            ) from e

    # --- calls ------------------------------------------------------------------------

    def get_application(self, name: str, refresh: str | None = None) -> Obj:
        """``GET /api/v1/applications/{name}``.

        Args:
            name: the application (``namespace/name`` for apps outside Argo CD's namespace).
            refresh: ``normal`` or ``hard`` to make Argo CD compare again first; the call
                then blocks until the refresh is done.
        """
        if refresh not in (None, "normal", "hard"):
            raise UsageError(f"refresh must be normal or hard, got {refresh!r}")
        path, params = app_path(name)
        doc = self.request(
            "GET",
            path,
            params={**params, "refresh": refresh},
            app=name,
            timeout=max(self.timeout, 120.0) if refresh else None,
        )
        return checked(doc, APPLICATION_SHAPE, f"GET application {name}", url=self.url)

    def patch_application(self, name: str, patch: Obj) -> Obj:
        """``PATCH /api/v1/applications/{name}``: a JSON merge patch of the application.

        Argo CD's ``ApplicationPatchRequest`` carries the patch as a string, with its
        ``patchType`` (``argocd app patch --type merge``); it needs the ``update`` action
        on the application.
        """
        path, params = app_path(name)
        body: Obj = {"name": path.rsplit("/", 1)[-1], "patch": json.dumps(patch),
                     "patchType": "merge", **params}  # fmt: skip
        doc = self.request("PATCH", path, body=body, app=name)
        return checked(doc, APPLICATION_SHAPE, f"PATCH application {name}", url=self.url)

    def can_i(self, resource: str, action: str, subresource: str) -> bool:
        """``GET /api/v1/account/can-i/{resource}/{action}/{subresource}``.

        Argo CD answers ``{"value": "yes"}`` or ``{"value": "no"}`` for the token's own
        account; it needs no permission beyond a valid token.

        Args:
            resource: an RBAC resource, e.g. ``applications``.
            action: an RBAC action, e.g. ``sync``.
            subresource: the object, ``project/name`` (``project/namespace/name`` for an
                application outside Argo CD's namespace).
        """
        parts = "/".join(quote(p, safe="") for p in (resource, action, *subresource.split("/")))
        doc = self.request("GET", f"/api/v1/account/can-i/{parts}")
        value = doc.get("value") if isinstance(doc, dict) else None
        if value not in ("yes", "no"):
            raise UnexpectedAnswer(
                f"Argo CD answered can-i {resource} {action} {subresource} with "
                f"{clip(repr(doc), 120)}, not yes or no",
                http_status=200,
                hint=f"is {self.url} an Argo CD API server?",
            )
        return bool(value == "yes")

    def managed_resources(self, name: str, **filters: str) -> list[Obj]:
        """``GET …/{name}/managed-resources``, with the JSON-string states decoded.

        ``liveState``, ``targetState``, ``normalizedLiveState`` and ``predictedLiveState``
        arrive as JSON strings (``"null"`` when absent) and are returned as dicts or
        ``None``. Argo CD serves these from its cache: they may be stale.

        Args:
            name: the application.
            **filters: ``group``, ``kind``, ``namespace``, ``name``, ``version``.
        """
        path, params = app_path(name)
        doc = self.request(
            "GET", f"{path}/managed-resources", params={**params, **filters}, app=name
        )
        what = f"GET managed resources of {name}"
        items = checked(doc, MANAGED_RESOURCES_SHAPE, what, url=self.url).get("items") or []
        out: list[Obj] = []
        for item in items:
            item = dict(item)
            for key in ("liveState", "targetState", "normalizedLiveState", "predictedLiveState"):
                if key in item:
                    item[key] = decode_state(item[key], f"{key} of {item.get('name', '?')}")
            out.append(item)
        return out

    def manifests(self, name: str, revision: str | None = None) -> list[Obj]:
        """``GET …/{name}/manifests``: the manifests Argo CD renders, decoded.

        Args:
            name: the application.
            revision: a git revision (default: the application's target revision).
        """
        return self.rendering(name, revision)[0]

    def rendering(self, name: str, revision: str | None = None) -> tuple[list[Obj], str]:
        """The manifests Argo CD's repo server renders now, and the commit it rendered.

        The repo server resolves ``revision`` (default: the application's
        ``targetRevision``) itself, so this is what a sync started now would apply.
        """
        path, params = app_path(name)
        doc = self.request(
            "GET", f"{path}/manifests", params={**params, "revision": revision}, app=name
        )
        what = f"GET manifests of {name}"
        body = checked(doc, MANIFESTS_SHAPE, what, url=self.url)
        out: list[Obj] = []
        for m in body.get("manifests") or []:
            decoded = decode_state(m, "manifest")
            if decoded is not None:
                out.append(decoded)
        return out, str(body.get("revision") or "")

    def sync_windows(self, name: str) -> Obj:
        """``GET …/{name}/syncwindows``: the windows that apply now, and ``canSync``.

        ``canSync`` is Argo CD's own answer for a manual sync started now (a deny window,
        or an allow window that is not open, with ``manualSync: false``, makes it false).
        """
        path, params = app_path(name)
        doc = self.request("GET", f"{path}/syncwindows", params=params, app=name)
        return checked(doc, SYNC_WINDOWS_SHAPE, f"GET sync windows of {name}", url=self.url)

    def sync(
        self,
        name: str,
        *,
        resources: list[Mapping[str, str]] | None,
        revision: str | None = None,
        prune: bool = False,
        dry_run: bool = False,
        sync_options: list[str] | None = None,
    ) -> Obj:
        """``POST …/{name}/sync``: start a sync operation; returns the application.

        Args:
            name: the application.
            resources: ``{group, kind, name, namespace}`` of each resource to sync;
                ``None`` syncs the whole application.
            revision: a git revision (default: the application's target revision).
            prune: delete resources no longer in git (only those selected).
            dry_run: ask Argo CD for a dry run.
            sync_options: replaces (does not extend) the application's sync options.

        Raises:
            OperationInProgress: another operation runs on the application.
        """
        path, params = app_path(name)
        body: Obj = {"prune": prune, "dryRun": dry_run}
        if params:
            body["appNamespace"] = params["appNamespace"]
        if revision:
            body["revision"] = revision
        if resources is not None:
            body["resources"] = [resource_body(r) for r in resources]
        if sync_options is not None:
            body["syncOptions"] = {"items": list(sync_options)}
        doc = self.request("POST", f"{path}/sync", body=body, app=name)
        return checked(doc, APPLICATION_SHAPE, f"POST sync of {name}", url=self.url)

    def terminate_operation(self, name: str) -> bool:
        """``DELETE …/{name}/operation``: ask Argo CD to stop the running operation.

        Returns:
            True when an operation was asked to terminate, False when none was running.
        """
        path, params = app_path(name)
        try:
            self.request("DELETE", f"{path}/operation", params=params, app=name)
        except ApiError as e:
            if e.status.code == 400 and _NO_OPERATION_MESSAGE in e.message.lower():
                return False
            raise
        return True
