"""The Kubernetes adapter's wire: requests over the pooled connection, and their errors.

Requests go out as raw JSON (or protobuf, for pod lists) through the client library's
connection pool, with the kubeconfig user's credentials refreshed and checked before
each one. An unreachable server becomes :class:`~fracctl.errors.Unreachable`; an HTTP
error status, or a watch's ``ERROR`` event, becomes the matching
:class:`~fracctl.errors.ApiError`, its message redacted.
"""

from __future__ import annotations

import json
import threading
from collections import Counter
from collections.abc import Mapping
from typing import Any

from fracctl.adapters.kube import wire
from fracctl.adapters.kube.kubeconfig import credential_parts, first_line, register_credentials
from fracctl.errors import (
    ApiError,
    ApiStatus,
    Cause,
    ConfigError,
    ExternalError,
    Unreachable,
    api_error_for,
)
from fracctl.redact import header_problem, redact, register_many

JSON = "application/json"
MERGE_PATCH = "application/merge-patch+json"
JSON_PATCH = "application/json-patch+json"
APPLY_PATCH = "application/apply-patch+yaml"
METADATA_LIST = "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1," + JSON
POD_LIST = f"{wire.PROTOBUF}, {JSON}"

Obj = dict[str, Any]


class Transport:
    """The connection to one API server: raw requests, counted, their errors mapped."""

    def __init__(self, configuration: Any, *, timeout: float = 30.0) -> None:
        from kubernetes.client import ApiClient

        register_credentials(configuration)
        self._api = ApiClient(configuration)
        self._pool = self._api.rest_client.pool_manager
        self.host = str(configuration.host).rstrip("/")
        self.timeout = timeout
        self.calls: Counter[str] = Counter()  # "VERB plural" -> count, for tests and benchmarks
        self._calls_lock = threading.Lock()  # requests may come from several threads

    def _count(self, call: str) -> None:
        with self._calls_lock:
            self.calls[call] += 1

    def close(self) -> None:
        """Close pooled connections (also done when the client is garbage collected)."""
        pool = getattr(self, "_pool", None)
        if pool is not None:
            pool.clear()

    def __del__(self) -> None:
        self.close()

    def _headers(self, content_type: str | None, accept: str) -> dict[str, str]:
        headers = {"Accept": accept, "User-Agent": "fracctl"}
        if content_type:
            headers["Content-Type"] = content_type
        cfg = self._api.configuration
        if cfg.refresh_api_key_hook is not None:
            try:
                cfg.refresh_api_key_hook(cfg)
            except Exception as e:  # noqa: BLE001 - exec/OIDC plugins raise anything
                raise ConfigError(
                    f"kubeconfig: refreshing the credentials failed ({type(e).__name__})"
                ) from None
        auth = cfg.auth_settings().get("BearerToken")
        if auth and auth.get("value"):
            value = str(auth["value"]).strip()  # a tokenFile often ends with a newline
            register_many(credential_parts(value))  # refreshed credentials are new ones
            problem = header_problem(value)
            if problem:
                # Refused here: the HTTP library's own error would quote the header.
                raise ConfigError(
                    f"kubeconfig: the user's credentials cannot go in an HTTP header: {problem}",
                    hint="check the token or tokenFile of the kubeconfig user; the value is "
                    "not shown",
                )
            headers[auth["key"]] = value
        return headers

    def _send(
        self,
        method: str,
        path: str,
        *,
        query: Mapping[str, Any] | None = None,
        body: Any = None,
        content_type: str | None = None,
        accept: str = JSON,
        stream: bool = False,
        timeout: float | None = None,
    ) -> Any:
        from urllib.parse import urlencode

        import urllib3

        params = {k: v for k, v in (query or {}).items() if v is not None and v != ""}
        url = self.host + path + (("?" + urlencode(params, doseq=True)) if params else "")
        data: bytes | None = None
        if body is not None:
            data = body if isinstance(body, bytes) else json.dumps(body).encode()
            content_type = content_type or JSON
        read = self.timeout if timeout is None else timeout
        try:
            resp = self._pool.request(
                method,
                url,
                body=data,
                headers=self._headers(content_type, accept),
                preload_content=not stream,
                timeout=urllib3.Timeout(connect=min(10.0, self.timeout), read=read),
                retries=False,
            )
        except urllib3.exceptions.HTTPError as e:
            raise Unreachable(
                f"cannot reach the API server at {self.host}: {connection_reason(e)}",
                hint="is the cluster up and the kubeconfig right?",
            ) from None
        if resp.status >= 400:
            raw = resp.data if not stream else resp.read()
            if stream:
                resp.release_conn()
            raise _api_error(resp.status, raw)
        return resp

    def request(self, method: str, path: str, *, label: str = "", **kwargs: Any) -> Obj:
        """One request; the decoded JSON body. ``label`` names it in :attr:`calls`."""
        plural = _plural_of(path)
        self._count(label or f"{method} {plural}")
        resp = self._send(method, path, **kwargs)
        if not resp.data:
            return {}
        try:
            return json.loads(resp.data)  # type: ignore[no-any-return]
        except ValueError:
            raise ExternalError(
                f"the API server at {self.host} sent a response that is not JSON "
                f"({method} {_plural_of(path)})",
                hint="is a proxy in the way?",
            ) from None

    def _unreadable(self, call: str, why: str) -> ExternalError:
        return ExternalError(
            f"the API server at {self.host} sent a response fracctl cannot read ({call}: {why})",
            hint="is a proxy in the way?",
        )


def _plural_of(path: str) -> str:
    parts = [p for p in path.split("?")[0].split("/") if p]
    if "namespaces" in parts:
        i = parts.index("namespaces")
        parts = parts[:i] + parts[i + 2 :] if len(parts) > i + 2 else parts
    start = 2 if parts[:1] == ["api"] else 3
    return parts[start] if len(parts) > start else "/".join(parts)


def connection_reason(e: BaseException) -> str:
    """Why a connection failed, in a line (without urllib3's object reprs)."""
    reason = getattr(e, "reason", None) or e
    text = str(reason)
    # urllib3 embeds the connection object's repr; keep the part after the colon.
    if "Failed to establish a new connection:" in text:
        text = text.split("Failed to establish a new connection:", 1)[1]
    return first_line(text).strip().rstrip("'\")")


def protocol_errors() -> tuple[type[BaseException], ...]:
    """The exceptions a broken connection raises (urllib3 is imported only here)."""
    import urllib3

    return (urllib3.exceptions.HTTPError, ConnectionError)


def _api_error(code: int, raw: bytes) -> ApiError:
    try:
        body = wire.status(raw) if raw.startswith(wire.MAGIC) else json.loads(raw)
    except (ValueError, TypeError):  # ProtoError is a ValueError
        body = None
    if isinstance(body, dict) and body.get("kind") == "Status":
        return status_error(body, code)
    text = redact(raw.decode(errors="replace"))[:300] if raw else ""
    return api_error_for(ApiStatus(code, "", text.strip()))


def status_error(body: Obj, code: int | None = None) -> ApiError:
    """The :class:`ApiError` for an API server ``Status`` body, secrets redacted."""
    details = body.get("details") or {}
    causes = [
        Cause(str(c.get("reason", "")), str(c.get("message", "")), str(c.get("field", "")))
        for c in details.get("causes") or []
    ]
    message = redact(str(body.get("message", "")))[:2000]
    return api_error_for(
        ApiStatus(
            int(code or body.get("code") or 500),
            str(body.get("reason", "")),
            message,
            causes,
            int(details.get("retryAfterSeconds") or 0),
        )
    )
