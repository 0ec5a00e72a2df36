"""Argo CD's errors: the mapping from an error answer to a generic error, and the rest.

An answer with an HTTP error status (or a grpc-gateway error body) becomes the generic
:mod:`fracctl.errors` error of its status (``Unauthorized``, ``Forbidden``, ``NotFound``,
``ServerError``, else ``ApiError``) with Argo CD's own message and advice in its hint, and
Argo CD's details in its ``status`` (an :class:`ArgoCDStatus`), the body redacted before
it is truncated. So one ``except`` catches the Kubernetes and the Argo CD kind alike.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from fracctl.errors import (
    ApiError,
    ApiStatus,
    ExternalError,
    Forbidden,
    NotFound,
    ServerError,
    Unauthorized,
)
from fracctl.redact import redact

Obj = dict[str, Any]

#: gRPC status codes as they appear in the grpc-gateway error body's ``code``.
GRPC_NOT_FOUND = 5
GRPC_PERMISSION_DENIED = 7
GRPC_UNAUTHENTICATED = 16
IN_PROGRESS_MESSAGE = "another operation is already in progress"
_BODY_LIMIT = 300


@dataclass
class ArgoCDStatus(ApiStatus):
    """An Argo CD error answer as the generic handlers read it, with Argo CD's details.

    ``code`` is the HTTP status, ``reason`` the Kubernetes-style reason of the generic
    error (``NotFound``, ``Forbidden``, …), ``message`` Argo CD's message, clipped.
    """

    grpc_code: int | None = None  # the grpc-gateway error body's ``code``
    server: str = ""  # the server's URL


class OperationInProgress(ApiError):
    """Another operation runs on the application, so a sync was not accepted."""


class UnexpectedAnswer(ExternalError):
    """Argo CD answered with something that is not its API (not JSON, or misshapen)."""

    def __init__(
        self, message: str, *, hint: str | None = None, http_status: int | None = None
    ) -> None:
        super().__init__(message, hint=hint)
        self.http_status = http_status


class SyncFailed(ExternalError):
    """The sync operation ended ``Failed`` or ``Error``, or a resource failed to sync."""

    def __init__(self, message: str, *, operation_state: Obj, hint: str | None = None) -> None:
        super().__init__(message, hint=hint)
        self.operation_state = operation_state


def clip(text: str, limit: int = _BODY_LIMIT) -> str:
    """``text`` redacted, stripped and cut to ``limit`` characters (``…`` marks a cut)."""
    text = redact(text).strip()  # redact first: a secret cut in half is not recognised whole
    return text if len(text) <= limit else text[: limit - 1] + "…"


def error_for(status: int, text: str, *, app: str | None = None, url: str = "") -> ApiError:
    """Pick the fracctl error for an Argo CD error response (a pure mapping).

    Args:
        status: the HTTP status.
        text: the response body (already scrubbed of the token).
        app: the application the request was about.
        url: the server, for messages.
    """
    code, message = _read_body(text)
    what = f"application {app}" if app else "request"

    def details(reason: str) -> ArgoCDStatus:
        return ArgoCDStatus(status, reason, message, grpc_code=code, server=url)

    if status == 401 or code == GRPC_UNAUTHENTICATED:
        return Unauthorized(
            details("Unauthorized"),
            message=f"Argo CD at {url} rejected the token (401): {message}",
            hint="the token may have expired or been revoked; put a fresh one in "
            "ARGOCD_AUTH_TOKEN or argocd.token_file",
        )
    if status == 403 or code == GRPC_PERMISSION_DENIED:
        return Forbidden(
            details("Forbidden"),
            message=f"Argo CD denied access to {what} (403): {message}",
            hint=_forbidden_hint(message, app),
        )
    if status == 404 or code == GRPC_NOT_FOUND:
        return NotFound(
            details("NotFound"),
            message=f"Argo CD {what} not found (404): {message}",
            hint="check argocd.app and the server; apps outside Argo CD's namespace are "
            "named namespace/name",
        )
    if IN_PROGRESS_MESSAGE in message.lower():
        # gRPC FailedPrecondition (code 9), which grpc-gateway sends as HTTP 400; other
        # FailedPrecondition answers are not worth waiting for.
        return OperationInProgress(
            details(""),
            message=f"Argo CD {what}: {message}",
            hint="wait for the running operation to end, or terminate it",
        )
    if status >= 500:
        return ServerError(
            details("InternalError"),
            message=f"Argo CD server error ({status}) on {what}: {message}",
            hint="retry later; if it persists, read the argocd-server and repo-server logs",
        )
    return ApiError(details(""), message=f"Argo CD refused {what} ({status}): {message}")


def _read_body(text: str) -> tuple[int | None, str]:
    """The gRPC code and the clipped message of an error body (JSON or not)."""
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
    return code, clip(" ".join(message.split())) or "no message"


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


def transport_reason(e: Exception) -> str:
    """A transport error's first line, redacted and cut short."""
    text = redact(str(e)) or type(e).__name__
    return clip(text.splitlines()[0], 200)


def transport_hint(e: Exception) -> str:
    """What to check for a transport error: TLS trust, plain HTTP, or the server itself."""
    text = str(e)
    if "CERTIFICATE_VERIFY_FAILED" in text or "certificate verify failed" in text:
        return (
            "the server's TLS certificate is not trusted: add its CA to SSL_CERT_FILE, "
            "or set argocd.insecure only for a test server"
        )
    if "WRONG_VERSION_NUMBER" in text or "wrong version number" in text:
        return "the server speaks plain HTTP: set argocd.plaintext or use an http:// URL"
    return "check argocd.server / ARGOCD_SERVER and that the server is up"
