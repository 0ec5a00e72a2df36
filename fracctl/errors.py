"""One exception root for fracctl, and the exit codes it maps to.

Every error a user can meet is a :class:`FracctlError` carrying an :class:`ExitCode`.
Adapters translate library exceptions (Kubernetes ``ApiException``, ``httpx`` errors,
``subprocess`` failures) into these, always with ``raise ... from e``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import IntEnum


class ExitCode(IntEnum):
    """Process exit codes, like ``kubectl diff``: 0 clean, 1 a finding."""

    OK = 0
    FINDING = 1  # drift found, or a guard refused
    USAGE = 2  # bad flags, bad config, bad input
    EXTERNAL = 3  # cluster, Argo CD, git or host could not be reached or read
    TIMEOUT = 4
    LOCKED = 5  # another run holds the lock, or unsafe to proceed
    INTERRUPTED = 130


class FracctlError(Exception):
    """Root of every error fracctl raises on purpose."""

    exit_code: ExitCode = ExitCode.EXTERNAL

    def __init__(self, message: str, *, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint

    def __str__(self) -> str:
        return self.message if not self.hint else f"{self.message} ({self.hint})"

    def add_context(self, more: str) -> None:
        """Say ``more`` after the message, in place: the class and exit code stay."""
        self.message = f"{self.message}. {more}"
        self.args = (self.message,)


class UsageError(FracctlError):
    """Bad flags or arguments."""

    exit_code = ExitCode.USAGE


class ConfigError(UsageError):
    """A malformed or invalid configuration file or value."""


class Refused(FracctlError):
    """A guard refused to proceed; the message says what was found and what to do."""

    exit_code = ExitCode.FINDING


class Unsafe(FracctlError):
    """Locked by another run, or otherwise unsafe to proceed."""

    exit_code = ExitCode.LOCKED


class TimedOut(FracctlError):
    """A bounded wait ran out."""

    exit_code = ExitCode.TIMEOUT


class ExternalError(FracctlError):
    """Something outside fracctl failed: cluster, Argo CD, git, a host tool."""

    exit_code = ExitCode.EXTERNAL


class Unreachable(ExternalError):
    """A server could not be reached at all."""


@dataclass(frozen=True)
class Cause:
    """One entry of a Kubernetes ``Status.details.causes``."""

    reason: str = ""
    message: str = ""
    field: str = ""


@dataclass
class ApiStatus:
    """The parts of a Kubernetes ``Status`` body fracctl uses."""

    code: int
    reason: str = ""
    message: str = ""
    causes: list[Cause] = field(default_factory=list)
    retry_after: int = 0  # details.retryAfterSeconds: when to ask again (429)


class ApiError(ExternalError):
    """A server answered with an error status.

    The message defaults to the Kubernetes API server's; another server (Argo CD) passes
    its own, and may put its own details in a subclass of :class:`ApiStatus`.
    """

    def __init__(
        self, status: ApiStatus, *, hint: str | None = None, message: str | None = None
    ) -> None:
        if message is None:
            message = f"API server: {status.code} {status.reason}: {status.message}"
        super().__init__(message, hint=hint)
        self.status = status


class NotFound(ApiError):
    """HTTP 404."""


class Conflict(ApiError):
    """HTTP 409: already exists, or a resourceVersion conflict."""


class Invalid(ApiError):
    """HTTP 422: the object was rejected by validation (including CEL rules)."""

    @property
    def causes(self) -> list[Cause]:
        """The validation causes, CEL messages verbatim."""
        return self.status.causes


class Unauthorized(ApiError):
    """HTTP 401."""


class Forbidden(ApiError):
    """HTTP 403."""


class ServerError(ApiError):
    """HTTP 5xx: the server failed."""


def api_error_for(status: ApiStatus) -> ApiError:
    """Pick the ApiError subclass for an HTTP status code (a pure mapping)."""
    cls: type[ApiError] = {
        401: Unauthorized,
        403: Forbidden,
        404: NotFound,
        409: Conflict,
        422: Invalid,
    }.get(status.code, ServerError if status.code >= 500 else ApiError)
    hint = {
        401: "check the kubeconfig credentials",
        403: "the identity lacks RBAC permission for this request",
    }.get(status.code)
    return cls(status, hint=hint)
