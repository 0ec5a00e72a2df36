"""The Argo CD adapter: a small client for the documented REST API (over httpx).

Only the calls fracctl needs: read an application (optionally refreshing it), read its
managed resources and rendered manifests, sync selected resources, follow the sync
operation to its end, and terminate it. Every failure becomes a fracctl error with advice.

The bearer token comes from ``ARGOCD_AUTH_TOKEN`` or a file, never from a command-line
value (which would show in ``ps``). It is checked when loaded (one line a header can
carry) and registered with :mod:`fracctl.redact`, so it is kept out of every message, log
line and repr in any form a server could echo it in: error bodies are redacted before they
are truncated, then reach an exception.

A sync that Argo CD reports as ``Succeeded`` has only had every apply call return OK; it
does not mean the live object converged. Callers must read the live object afterwards.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import quote, urlsplit

from fracctl.core.clock import Backoff, Clock, SystemClock
from fracctl.errors import ConfigError, ExternalError, TimedOut, Unreachable, UsageError
from fracctl.redact import header_problem, redact, register

if TYPE_CHECKING:
    import httpx

    from fracctl.config import ArgoCDConfig

Obj = dict[str, Any]

#: Operation phases after which nothing more happens.
TERMINAL_PHASES = frozenset({"Succeeded", "Failed", "Error"})
#: gRPC status codes as they appear in the grpc-gateway error body's ``code``.
GRPC_NOT_FOUND = 5
GRPC_PERMISSION_DENIED = 7
GRPC_UNAUTHENTICATED = 16
IN_PROGRESS_MESSAGE = "another operation is already in progress"
_NO_OPERATION_MESSAGE = "no operation is in progress"
_BODY_LIMIT = 300

# What fracctl reads from each answer, and the JSON type each part must have when it is
# there (absent and null are fine): ``a.b`` is a key path, ``[]`` every item of a list.
# Parents come before their children.
_RESOURCE_STATUS: dict[str, type | tuple[type, ...]] = {
    "[]": dict,
    "[].group": str,
    "[].version": str,
    "[].kind": str,
    "[].namespace": str,
    "[].name": str,
    "[].status": str,
    "[].message": str,
    "[].health": dict,
}
APPLICATION_SHAPE: dict[str, type | tuple[type, ...]] = {
    "": dict,
    "metadata": dict,
    "spec": dict,
    "spec.destination": dict,
    "operation": dict,
    "operation.initiatedBy": dict,
    "status": dict,
    "status.sync": dict,
    "status.health": dict,
    "status.resources": list,
    **{f"status.resources{k}": t for k, t in _RESOURCE_STATUS.items()},
    "status.operationState": dict,
    "status.operationState.phase": str,
    "status.operationState.message": str,
    "status.operationState.startedAt": str,
    "status.operationState.operation": dict,
    "status.operationState.operation.initiatedBy": dict,
    "status.operationState.syncResult": dict,
    "status.operationState.syncResult.resources": list,
    **{f"status.operationState.syncResult.resources{k}": t for k, t in _RESOURCE_STATUS.items()},
}
MANAGED_RESOURCES_SHAPE: dict[str, type | tuple[type, ...]] = {
    "": dict,
    "items": list,
    "items[]": dict,
    "items[].name": str,
}
MANIFESTS_SHAPE: dict[str, type | tuple[type, ...]] = {
    "": dict,
    "manifests": list,
    "manifests[]": (str, dict),
    "revision": str,
}
SYNC_WINDOWS_SHAPE: dict[str, type | tuple[type, ...]] = {
    "": dict,
    "activeWindows": list,
    "activeWindows[]": dict,
    "assignedWindows": list,
    "assignedWindows[]": dict,
    "canSync": bool,
}


# --- errors ---------------------------------------------------------------------------


class ArgoCDError(ExternalError):
    """Argo CD answered with an error (or with something that is not its API)."""

    def __init__(
        self,
        message: str,
        *,
        status: int | None = None,
        code: int | None = None,
        hint: str | None = None,
    ) -> None:
        super().__init__(message, hint=hint)
        self.status = status  # HTTP status
        self.code = code  # gRPC code from the error body


class ArgoCDUnauthorized(ArgoCDError):
    """HTTP 401: the token is missing, expired, revoked or for another server."""


class ArgoCDForbidden(ArgoCDError):
    """HTTP 403: the token's account lacks an RBAC permission."""


class ApplicationNotFound(ArgoCDError):
    """HTTP 404: no application of that name."""


class ArgoCDServerError(ArgoCDError):
    """HTTP 5xx: the Argo CD server (or a component behind it) failed."""


class OperationInProgress(ArgoCDError):
    """Another operation runs on the application, so a sync was not accepted."""


class SyncFailed(ArgoCDError):
    """The sync operation ended ``Failed`` or ``Error``, or a resource failed to sync."""

    def __init__(self, message: str, *, operation_state: Obj, hint: str | None = None) -> None:
        super().__init__(message, hint=hint)
        self.operation_state = operation_state


class _Secret:
    """A string that shows as ``***`` in every repr (locals dumps, debuggers, vars())."""

    __slots__ = ("_value",)

    def __init__(self, value: str) -> None:
        self._value = value

    def reveal(self) -> str:
        return self._value

    def __repr__(self) -> str:
        return "<secret>"

    __str__ = __repr__


# --- server and token -----------------------------------------------------------------


def server_url(server: str, *, plaintext: bool = False) -> str:
    """Normalise ``host:port`` or a URL into the API's base URL.

    Args:
        server: ``argocd.example.org``, ``argocd.example.org:8443`` or
            ``https://argocd.example.org/argocd`` (a path prefix is kept).
        plaintext: use ``http://`` for a server given without a scheme.

    Returns:
        The base URL, without a trailing slash.

    Raises:
        ConfigError: the value is empty, has another scheme, or asks for TLS and
            plaintext at once.
    """
    value = server.strip().rstrip("/")
    if not value:
        raise ConfigError("argocd.server is empty")
    if "://" not in value:
        value = ("http://" if plaintext else "https://") + value
    parts = urlsplit(value)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ConfigError(f"argocd.server: not a host[:port] or http(s) URL: {server!r}")
    if plaintext and parts.scheme == "https":
        raise ConfigError(
            f"argocd.server is an https:// URL but plaintext is set: {server!r}",
            hint="drop plaintext, or give the server as host:port or http://…",
        )
    if parts.username or parts.password:
        raise ConfigError("argocd.server must not carry credentials; use ARGOCD_AUTH_TOKEN")
    return value


def read_token(config: ArgoCDConfig, env: Mapping[str, str]) -> str:
    """The bearer token: ``argocd.token_file`` if set, else ``$ARGOCD_AUTH_TOKEN``.

    Raises:
        ConfigError: no token anywhere, the file is unreadable or empty, or the token
            is not one line a header can carry (the message names the source, never
            the contents).
    """
    from_env = env.get("ARGOCD_AUTH_TOKEN") or ""
    register(from_env)  # a secret in the environment, used or not
    if config.token_file:
        path = Path(config.token_file).expanduser()
        try:
            token = path.read_text(encoding="utf-8").strip()
        except OSError as e:
            raise ConfigError(f"argocd.token_file {path}: cannot read: {e.strerror}") from None
        if not token:
            raise ConfigError(f"argocd.token_file {path} is empty")
        return check_token(token, f"argocd.token_file {path}")
    token = from_env.strip()
    if not token:
        raise ConfigError(
            "no Argo CD token: set ARGOCD_AUTH_TOKEN or argocd.token_file",
            hint="create one with `argocd account generate-token`",
        )
    return check_token(token, "ARGOCD_AUTH_TOKEN")


def check_token(token: str, source: str) -> str:
    """Register ``token`` for redaction and make sure it can go in a header.

    Args:
        token: the bearer token.
        source: where it came from, for the message (never the token itself).

    Returns:
        The token.

    Raises:
        ConfigError: it is not one line of the characters a bearer token may have (the
            message says what is wrong without quoting it).
    """
    register(token)
    problem = header_problem(token, bearer_token=True)
    if problem:
        raise ConfigError(
            f"{source}: expected one line (a token) that can go in an HTTP header, but {problem}",
            hint="a bearer token is letters, digits and -._~+/ with optional trailing =, "
            "as `argocd account generate-token` prints it; the value is not shown",
        )
    return token


# --- the client -----------------------------------------------------------------------


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
        self.__token = _Secret(token)
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
            ArgoCDError: a subclass chosen by the status (see :func:`error_for`).
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
                f"cannot reach Argo CD at {self.url}: {self._scrub(_transport_reason(e))}",
                hint=_transport_hint(e),
            ) from e
        if resp.status_code >= 400:
            raise error_for(resp.status_code, self._scrub(resp.text), app=app, url=self.url)
        if not resp.content:
            return {}
        try:
            return resp.json()
        except ValueError as e:
            kind = resp.headers.get("content-type", "unknown content type")
            raise ArgoCDError(
                f"{method} {path}: the answer is not JSON ({kind})",
                status=resp.status_code,
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
        path, params = _app_path(name)
        doc = self.request(
            "GET",
            path,
            params={**params, "refresh": refresh},
            app=name,
            timeout=max(self.timeout, 120.0) if refresh else None,
        )
        return checked(doc, APPLICATION_SHAPE, f"GET application {name}", url=self.url)

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
            raise ArgoCDError(
                f"Argo CD answered can-i {resource} {action} {subresource} with "
                f"{_clip(repr(doc), 120)}, not yes or no",
                status=200,
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
        path, params = _app_path(name)
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
                    item[key] = _decode_state(item[key], f"{key} of {item.get('name', '?')}")
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
        path, params = _app_path(name)
        doc = self.request(
            "GET", f"{path}/manifests", params={**params, "revision": revision}, app=name
        )
        what = f"GET manifests of {name}"
        body = checked(doc, MANIFESTS_SHAPE, what, url=self.url)
        out: list[Obj] = []
        for m in body.get("manifests") or []:
            decoded = _decode_state(m, "manifest")
            if decoded is not None:
                out.append(decoded)
        return out, str(body.get("revision") or "")

    def sync_windows(self, name: str) -> Obj:
        """``GET …/{name}/syncwindows``: the windows that apply now, and ``canSync``.

        ``canSync`` is Argo CD's own answer for a manual sync started now (a deny window,
        or an allow window that is not open, with ``manualSync: false``, makes it false).
        """
        path, params = _app_path(name)
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
        path, params = _app_path(name)
        body: Obj = {"prune": prune, "dryRun": dry_run}
        if params:
            body["appNamespace"] = params["appNamespace"]
        if revision:
            body["revision"] = revision
        if resources is not None:
            body["resources"] = [_sync_resource(r) for r in resources]
        if sync_options is not None:
            body["syncOptions"] = {"items": list(sync_options)}
        doc = self.request("POST", f"{path}/sync", body=body, app=name)
        return checked(doc, APPLICATION_SHAPE, f"POST sync of {name}", url=self.url)

    def terminate_operation(self, name: str) -> bool:
        """``DELETE …/{name}/operation``: ask Argo CD to stop the running operation.

        Returns:
            True when an operation was asked to terminate, False when none was running.
        """
        path, params = _app_path(name)
        try:
            self.request("DELETE", f"{path}/operation", params=params, app=name)
        except ArgoCDError as e:
            if e.status == 400 and _NO_OPERATION_MESSAGE in e.message.lower():
                return False
            raise
        return True

    def wait_operation(
        self,
        name: str,
        *,
        timeout: float,
        clock: Clock | None = None,
        backoff: Backoff | None = None,
    ) -> Obj:
        """Poll the application until its operation reaches a terminal phase.

        Terminal means ``status.operationState.phase`` is Succeeded, Failed or Error and
        no ``operation`` is pending any more (Argo CD clears both together when it
        finishes, so a previous operation's result is never mistaken for this one's).

        Args:
            name: the application.
            timeout: seconds to wait.
            clock: ``monotonic``/``sleep`` provider (tests pass a fake).
            backoff: delays between polls (default 0.25 s growing to 5 s).

        Returns:
            The final ``operationState`` (with ``syncResult.resources[]``).

        Raises:
            TimedOut: still running after ``timeout``; the message has the last phase.
        """
        clock = clock or SystemClock()
        backoff = backoff or Backoff()
        deadline = clock.monotonic() + timeout
        state: Obj = {}
        while True:
            app = self.get_application(name)
            state = (app.get("status") or {}).get("operationState") or {}
            if state.get("phase") in TERMINAL_PHASES and not app.get("operation"):
                return state
            left = deadline - clock.monotonic()
            if left <= 0:
                phase = state.get("phase") or "Pending"
                message = state.get("message") or "not started by the controller yet"
                raise TimedOut(
                    f"Argo CD operation on {name} still {phase} after {timeout:.0f}s: "
                    f"{_clip(self._scrub(str(message)))}",
                    hint=f"it keeps running in Argo CD; watch it with `argocd app get {name}` "
                    f"or stop it with `argocd app terminate-op {name}`",
                )
            clock.sleep(min(backoff.next(), left))

    def sync_resource_and_wait(
        self,
        name: str,
        *,
        resource: Mapping[str, str],
        revision: str | None = None,
        timeout: float,
        busy_timeout: float | None = None,
        clock: Clock | None = None,
        check: bool = True,
        sync_options: list[str] | None = None,
        notify: Callable[[str], None] | None = None,
    ) -> Obj:
        """Sync one resource and wait for the operation to end.

        A sync refused because another operation runs is retried with backoff for up to
        ``busy_timeout`` seconds (default: ``timeout``), then reported.

        Args:
            name: the application.
            resource: ``{group, kind, name, namespace}`` (namespace empty when
                cluster-scoped).
            revision: a git revision (default: the application's target revision).
            timeout: seconds to wait for this sync's operation.
            busy_timeout: seconds to wait for another operation to finish first.
            clock: ``monotonic``/``sleep`` provider.
            check: raise :class:`SyncFailed` when the operation or the resource failed.
            sync_options: per-sync options (replace the application's own).
            notify: called with a one-line progress note (never holds the token).

        Returns:
            The final ``operationState``. ``Succeeded`` means Argo CD's apply calls
            returned OK, not that the live object matches git: read it back.

        Raises:
            OperationInProgress: another operation was still running after
                ``busy_timeout``.
            SyncFailed: with ``check``, the operation or the resource failed.
            TimedOut: this sync's operation did not end within ``timeout``.
        """
        clock = clock or SystemClock()
        busy_bound = timeout if busy_timeout is None else busy_timeout
        busy_deadline = clock.monotonic() + busy_bound
        backoff = Backoff()
        told = False
        while True:
            try:
                self.sync(
                    name,
                    resources=[resource],
                    revision=revision,
                    sync_options=sync_options,
                )
                break
            except OperationInProgress as e:
                left = busy_deadline - clock.monotonic()
                if left <= 0:
                    raise OperationInProgress(
                        f"Argo CD application {name}: another operation is still in progress "
                        f"after waiting {busy_bound:.0f}s{self._describe_operation(name)}",
                        status=e.status,
                        code=e.code,
                        hint=f"wait for it (`argocd app wait {name} --operation`) or stop it "
                        f"(`argocd app terminate-op {name}`), then run again",
                    ) from e
                if notify and not told:
                    notify(f"Argo CD: another operation runs on {name}; waiting for it to end")
                    told = True
                clock.sleep(min(backoff.next(), left))
        if notify:
            notify(f"Argo CD: syncing {_resource_id(resource)} in {name}")
        state = self.wait_operation(name, timeout=timeout, clock=clock)
        if check:
            check_operation(name, state, resource)
        return state

    def _describe_operation(self, name: str) -> str:
        """`` (phase, started …, by …)`` for the running operation; best effort."""
        try:
            app = self.get_application(name)
        except ExternalError:
            return ""
        op = app.get("operation") or {}
        state = (app.get("status") or {}).get("operationState") or {}
        who = (op.get("initiatedBy") or {}) or (
            (state.get("operation") or {}).get("initiatedBy") or {}
        )
        by = "automated sync" if who.get("automated") else (who.get("username") or "")
        parts = [
            p
            for p in (
                state.get("phase"),
                f"started {state['startedAt']}" if state.get("startedAt") else "",
                f"by {by}" if by else "",
            )
            if p
        ]
        return f" ({', '.join(parts)})" if parts else ""


# --- results --------------------------------------------------------------------------


def resource_result(state: Mapping[str, Any], resource: Mapping[str, str]) -> Obj | None:
    """The ``syncResult.resources[]`` entry for ``resource``, if Argo CD reported one.

    For a cluster-scoped resource (no namespace) Argo CD v3.2 reports the application's
    destination namespace, so the namespace is then not compared.
    """
    want = _resource_key(resource)
    for r in ((state.get("syncResult") or {}).get("resources")) or []:
        got = _resource_key(r)
        if got == want or (not want[2] and got[:2] + got[3:] == want[:2] + want[3:]):
            return dict(r)
    return None


def check_operation(name: str, state: Mapping[str, Any], resource: Mapping[str, str]) -> None:
    """Raise :class:`SyncFailed` when the operation or ``resource``'s sync failed.

    A missing entry for the resource is not an error here: Argo CD omits resources it
    skipped, and the caller verifies the live object anyway.
    """
    phase = state.get("phase")
    result = resource_result(state, resource)
    failed = result is not None and result.get("status") == "SyncFailed"
    if phase == "Succeeded" and not failed:
        return
    detail = (result or {}).get("message") or state.get("message") or "no message"
    raise SyncFailed(
        f"Argo CD sync of {_resource_id(resource)} in {name} ended {phase}: {_clip(str(detail))}",
        operation_state=dict(state),
        hint=f"see `argocd app get {name}`; the live object was not changed by this sync",
    )


# --- error mapping --------------------------------------------------------------------


def error_for(status: int, text: str, *, app: str | None = None, url: str = "") -> ArgoCDError:
    """Pick the fracctl error for an Argo CD error response (a pure mapping).

    Args:
        status: the HTTP status.
        text: the response body (already scrubbed of the token).
        app: the application the request was about.
        url: the server, for messages.
    """
    code: int | None = None
    message = ""
    try:
        body = json.loads(text) if text else None
    except ValueError:
        body = None
    if isinstance(body, dict):
        raw_code = body.get("code")
        code = raw_code if isinstance(raw_code, int) and not isinstance(raw_code, bool) else None
        message = str(body.get("message") or body.get("error") or "")
    if not message:
        message = text.strip()
    message = _clip(" ".join(message.split())) or "no message"
    what = f"application {app}" if app else "request"
    if status == 401 or code == GRPC_UNAUTHENTICATED:
        return ArgoCDUnauthorized(
            f"Argo CD at {url} rejected the token (401): {message}",
            status=status,
            code=code,
            hint="the token may have expired or been revoked; put a fresh one in "
            "ARGOCD_AUTH_TOKEN or argocd.token_file",
        )
    if status == 403 or code == GRPC_PERMISSION_DENIED:
        return ArgoCDForbidden(
            f"Argo CD denied access to {what} (403): {message}",
            status=status,
            code=code,
            hint=_forbidden_hint(message, app),
        )
    if status == 404 or code == GRPC_NOT_FOUND:
        return ApplicationNotFound(
            f"Argo CD {what} not found (404): {message}",
            status=status,
            code=code,
            hint="check argocd.app and the server; apps outside Argo CD's namespace are "
            "named namespace/name",
        )
    if IN_PROGRESS_MESSAGE in message.lower():
        # gRPC FailedPrecondition (code 9), which grpc-gateway sends as HTTP 400; other
        # FailedPrecondition answers are not worth waiting for.
        return OperationInProgress(
            f"Argo CD {what}: {message}",
            status=status,
            code=code,
            hint="wait for the running operation to end, or terminate it",
        )
    if status >= 500:
        return ArgoCDServerError(
            f"Argo CD server error ({status}) on {what}: {message}",
            status=status,
            code=code,
            hint="retry later; if it persists, read the argocd-server and repo-server logs",
        )
    return ArgoCDError(f"Argo CD refused {what} ({status}): {message}", status=status, code=code)


# --- answer shapes --------------------------------------------------------------------


def checked(
    doc: Any, shape: Mapping[str, type | tuple[type, ...]], what: str, url: str = ""
) -> Obj:
    """``doc`` when every part ``shape`` names has the JSON type it should.

    The one place answers are checked before anything indexes into them, so an answer of
    the wrong shape (a list, a string, ``{"status": "x"}``) is a clear error, not a crash.

    Args:
        doc: the decoded JSON answer.
        shape: ``{path: type}`` (see :data:`APPLICATION_SHAPE`); absent or null is fine.
        what: the request, for the message.
        url: the server, for the hint.

    Raises:
        ArgoCDError: a part has another type; the message names the part and the type
            found, not the value.
    """
    for path, expected in shape.items():
        for where, value in _values_at(doc, path):
            kinds = expected if isinstance(expected, tuple) else (expected,)
            if value is None or (
                isinstance(value, expected) and (bool in kinds or not isinstance(value, bool))
            ):
                continue
            part = f"`{where}`" if where else "the answer"
            raise ArgoCDError(
                f"Argo CD sent an unexpected answer to {what}: {part} is "
                f"{_json_type(value)}, expected {_expected_type(expected)}",
                status=200,
                hint=f"is {url or 'the server'} the Argo CD API server, of a version fracctl "
                "supports (v2.x or v3.x)?",
            )
    return doc  # type: ignore[no-any-return]


def _values_at(doc: Any, path: str) -> list[tuple[str, Any]]:
    """``(where, value)`` for each value at ``path``; stops at parts of another type."""
    found: list[tuple[str, Any]] = [("", doc)]
    for step in path.replace("[]", ".[]").split(".") if path else []:
        if not step:
            continue
        nxt: list[tuple[str, Any]] = []
        for where, value in found:
            if step == "[]":
                if isinstance(value, list):
                    nxt.extend((f"{where}[{i}]", v) for i, v in enumerate(value))
            elif isinstance(value, dict) and step in value:
                nxt.append((f"{where}.{step}" if where else step, value[step]))
        found = nxt
    return found


def _json_type(value: Any) -> str:
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, dict):
        return "an object"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, (int, float)):
        return "a number"
    return f"a {type(value).__name__}"  # pragma: no cover - json.loads makes no other types


def _expected_type(expected: type | tuple[type, ...]) -> str:
    names = {dict: "an object", list: "a list", str: "a string", int: "a number", bool: "a boolean"}
    kinds = expected if isinstance(expected, tuple) else (expected,)
    return " or ".join(names.get(k, k.__name__) for k in kinds)


# --- helpers --------------------------------------------------------------------------


def _app_path(name: str) -> tuple[str, dict[str, str]]:
    """``/api/v1/applications/{name}`` and the ``appNamespace`` query for ``ns/name``."""
    if not name or name.count("/") > 1 or name.startswith("/") or name.endswith("/"):
        raise UsageError(f"not an Argo CD application name: {name!r}")
    params: dict[str, str] = {}
    if "/" in name:
        namespace, name = name.split("/", 1)
        params["appNamespace"] = namespace
    return f"/api/v1/applications/{quote(name, safe='')}", params


def _sync_resource(r: Mapping[str, str]) -> dict[str, str]:
    if not r.get("kind") or not r.get("name"):
        raise UsageError(f"a sync resource needs kind and name, got {dict(r)!r}")
    return {
        "group": r.get("group") or "",
        "kind": r["kind"],
        "name": r["name"],
        "namespace": r.get("namespace") or "",
    }


def _forbidden_hint(message: str, app: str | None) -> str:
    """Advice for a 403: a bare "permission denied" is what a missing app gets."""
    rbac = (
        "the token's account needs RBAC permission 'applications, get' and "
        "'applications, sync' on the app's project"
    )
    if app and message.strip().lower() == "permission denied":
        # Argo CD v3.2 answers a missing application exactly like one the account may
        # not see, so as not to reveal which names exist; a denied action on an app it
        # can see names the action ("permission denied: applications, sync, …").
        return (
            f"the application {app} does not exist, or the account may not see it "
            "(Argo CD does not say which): check argocd.app (apps outside Argo CD's "
            f"namespace are named namespace/name) and the server, then RBAC: {rbac}"
        )
    return f"{rbac}; Argo CD also answers 403 for an application that does not exist"


def _resource_key(r: Mapping[str, Any]) -> tuple[str, str, str, str]:
    return (
        str(r.get("group") or ""),
        str(r.get("kind") or ""),
        str(r.get("namespace") or ""),
        str(r.get("name") or ""),
    )


def _resource_id(r: Mapping[str, Any]) -> str:
    group, kind, namespace, name = _resource_key(r)
    kind_group = f"{kind}.{group}" if group else kind
    return f"{kind_group} {namespace}/{name}" if namespace else f"{kind_group} {name}"


def _decode_state(value: Any, what: str) -> Obj | None:
    if value is None or isinstance(value, dict):
        return value
    try:
        decoded = json.loads(value)
    except (TypeError, ValueError) as e:
        raise ArgoCDError(f"Argo CD sent an undecodable {what}") from e
    if decoded is not None and not isinstance(decoded, dict):
        raise ArgoCDError(f"Argo CD sent a {what} that is not an object")
    return decoded


def _clip(text: str, limit: int = _BODY_LIMIT) -> str:
    text = redact(text).strip()  # redact first: a secret cut in half is not recognised whole
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _transport_reason(e: Exception) -> str:
    text = redact(str(e)) or type(e).__name__
    return _clip(text.splitlines()[0], 200)


def _transport_hint(e: Exception) -> str:
    text = str(e)
    if "CERTIFICATE_VERIFY_FAILED" in text or "certificate verify failed" in text:
        return (
            "the server's TLS certificate is not trusted: add its CA to SSL_CERT_FILE, "
            "or set argocd.insecure only for a test server"
        )
    if "WRONG_VERSION_NUMBER" in text or "wrong version number" in text:
        return "the server speaks plain HTTP: set argocd.plaintext or use an http:// URL"
    return "check argocd.server / ARGOCD_SERVER and that the server is up"
