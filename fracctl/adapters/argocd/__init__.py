"""The Argo CD adapter: a small client for the documented REST API (over httpx).

The package holds one concern a module: :mod:`.errors` (the mapping from an error answer
to the generic error of its status, with Argo CD's details, and Argo CD's own errors),
:mod:`.auth` (the server address and the bearer token), :mod:`.shapes` (what each answer
must look like, and :func:`checked`) and :mod:`.client` (:class:`ArgoCD` and its plain
calls). Waiting for an operation and judging how it ended
is policy, kept in :mod:`fracctl.flows.engines.argocd.sync`.

The bearer token is registered with :mod:`fracctl.redact`, so it is kept out of every
message, log line and repr in any form a server could echo it in: error bodies are
redacted before they are truncated, then reach an exception.

A sync that Argo CD reports as ``Succeeded`` has only had every apply call return OK; it
does not mean the live object converged. Callers must read the live object afterwards.
"""

from fracctl.adapters.argocd.auth import check_token, read_token, server_url
from fracctl.adapters.argocd.client import TERMINAL_PHASES, ArgoCD, Obj
from fracctl.adapters.argocd.errors import (
    GRPC_NOT_FOUND,
    GRPC_PERMISSION_DENIED,
    GRPC_UNAUTHENTICATED,
    IN_PROGRESS_MESSAGE,
    ArgoCDStatus,
    OperationInProgress,
    SyncFailed,
    UnexpectedAnswer,
    clip,
    error_for,
)
from fracctl.adapters.argocd.shapes import (
    APPLICATION_SHAPE,
    MANAGED_RESOURCES_SHAPE,
    MANIFESTS_SHAPE,
    SYNC_WINDOWS_SHAPE,
    checked,
)

__all__ = [
    "APPLICATION_SHAPE",
    "GRPC_NOT_FOUND",
    "GRPC_PERMISSION_DENIED",
    "GRPC_UNAUTHENTICATED",
    "IN_PROGRESS_MESSAGE",
    "MANAGED_RESOURCES_SHAPE",
    "MANIFESTS_SHAPE",
    "SYNC_WINDOWS_SHAPE",
    "TERMINAL_PHASES",
    "ArgoCD",
    "ArgoCDStatus",
    "Obj",
    "OperationInProgress",
    "SyncFailed",
    "UnexpectedAnswer",
    "check_token",
    "checked",
    "clip",
    "error_for",
    "read_token",
    "server_url",
]
