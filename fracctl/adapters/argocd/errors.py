"""Argo CD's errors: the error classes, and the mapping from an error answer to one of them.

An answer with an HTTP error status (or a grpc-gateway error body) becomes an
:class:`ArgoCDError` subclass with advice in its hint, the body redacted before it is
truncated. The 401, 403 and 404 classes are also the generic :class:`fracctl.errors`
``Unauthorized``, ``Forbidden`` and ``NotFound``, so one ``except`` catches the
Kubernetes and the Argo CD kind alike.
"""

from __future__ import annotations

import json
from typing import Any, ClassVar

from fracctl.errors import ApiStatus, ExternalError, Forbidden, NotFound, Unauthorized
from fracctl.redact import redact

Obj = dict[str, Any]

#: gRPC status codes as they appear in the grpc-gateway error body's ``code``.
GRPC_NOT_FOUND = 5
GRPC_PERMISSION_DENIED = 7
GRPC_UNAUTHENTICATED = 16
IN_PROGRESS_MESSAGE = "another operation is already in progress"
_BODY_LIMIT = 300


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
        # Not super(): for the subclasses that are also an ApiError, the next __init__
        # in line would build a Kubernetes-style message from a Status instead.
        ExternalError.__init__(self, message, hint=hint)
        self.status = status  # HTTP status
        self.code = code  # gRPC code from the error body


class ArgoCDStatus(int, ApiStatus):
    """An Argo CD HTTP status that is also the :class:`ApiStatus` generic handlers read.

    It compares, formats and serialises as the status number (``e.status == 404``), and
    has the ``code``, ``reason`` and ``message`` that handlers of the generic
    ``NotFound``, ``Unauthorized`` and ``Forbidden`` read from ``e.status``.
    """

    def __new__(cls, code: int, reason: str = "", message: str = "") -> ArgoCDStatus:
        """The number; the dataclass ``__init__`` then sets the ApiStatus fields."""
        return super().__new__(cls, code)


class _GenericError(ArgoCDError):
    """An Argo CD error that is also the generic fracctl error of its HTTP status."""

    #: The HTTP status and the Kubernetes-style reason of the generic counterpart.
    generic: ClassVar[tuple[int, str]]
    status: ArgoCDStatus

    def __init__(
        self,
        message: str,
        *,
        status: int | None = None,
        code: int | None = None,
        hint: str | None = None,
    ) -> None:
        super().__init__(message, code=code, hint=hint)
        number, reason = self.generic
        self.status = ArgoCDStatus(number if status is None else status, reason, message)


class ArgoCDUnauthorized(_GenericError, Unauthorized):
    """HTTP 401: the token is missing, expired, revoked or for another server."""

    generic = (401, "Unauthorized")
    status: ArgoCDStatus  # both bases' status (an int and an ApiStatus)


class ArgoCDForbidden(_GenericError, Forbidden):
    """HTTP 403: the token's account lacks an RBAC permission."""

    generic = (403, "Forbidden")
    status: ArgoCDStatus  # both bases' status (an int and an ApiStatus)


class ApplicationNotFound(_GenericError, NotFound):
    """HTTP 404: no application of that name."""

    generic = (404, "NotFound")
    status: ArgoCDStatus  # both bases' status (an int and an ApiStatus)


class ArgoCDServerError(ArgoCDError):
    """HTTP 5xx: the Argo CD server (or a component behind it) failed."""


class OperationInProgress(ArgoCDError):
    """Another operation runs on the application, so a sync was not accepted."""


class SyncFailed(ArgoCDError):
    """The sync operation ended ``Failed`` or ``Error``, or a resource failed to sync."""

    def __init__(self, message: str, *, operation_state: Obj, hint: str | None = None) -> None:
        super().__init__(message, hint=hint)
        self.operation_state = operation_state


def clip(text: str, limit: int = _BODY_LIMIT) -> str:
    """``text`` redacted, stripped and cut to ``limit`` characters (``…`` marks a cut)."""
    text = redact(text).strip()  # redact first: a secret cut in half is not recognised whole
    return text if len(text) <= limit else text[: limit - 1] + "…"


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
    message = clip(" ".join(message.split())) or "no message"
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
