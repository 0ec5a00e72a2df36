"""The ways ``recreate`` can bring the object back, each proven read-only before a delete.

A backend has a name, a :meth:`~Backend.validate` of its configuration, a
:meth:`~Backend.check` that proves with read-only calls that it can recreate the object
(the same credentials, permissions and objects the recreate will use),
:meth:`~Backend.recreate`, and the claim its success makes about the live object (which
:func:`fracctl.flows.recreate.verify` never trusts). Adding a GitOps engine is one module
in this package and one entry in :data:`fracctl.core.backends.REGISTRY`.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any, Protocol

from fracctl.core.backends import NAMES, choices, entry
from fracctl.errors import ExternalError, FracctlError, UsageError
from fracctl.flows.context import Context

Obj = dict[str, Any]


class Backend(Protocol):
    """What ``recreate`` needs from a way of creating the object."""

    name: str
    claim: str  # what the backend's success says, for "… but the live object differs"

    def validate(self, ctx: Context) -> None:
        """Check the configuration alone (no I/O); a usage error when it cannot work."""
        ...

    def check(self, ctx: Context, desired: Obj) -> list[str]:
        """Prove, read-only, that :meth:`recreate` can work; returns the evidence.

        Raises:
            FracctlError: it cannot (wrong token, missing permission, missing object).
        """
        ...

    def recreate(self, ctx: Context, desired: Obj) -> str:
        """Have the object created; returns a one-line account of what was said."""
        ...


class BackendCheckFailed(FracctlError):
    """A backend's read-only proof failed; nothing was changed. Keeps the cause's exit code."""

    def __init__(self, backend: str, cause: FracctlError) -> None:
        super().__init__(
            f"the {backend} backend cannot recreate the object, so nothing was deleted or "
            f"changed: {cause.message}",
            hint=cause.hint,
        )
        self.exit_code = cause.exit_code
        self.cause = cause


def clean_desired(desired: Obj) -> Obj:
    """The desired object without server-set fields, ready to create or apply."""
    body = {k: v for k, v in desired.items() if k != "status"}
    meta = dict(body.get("metadata") or {})
    for key in (
        "resourceVersion",
        "uid",
        "creationTimestamp",
        "managedFields",
        "generation",
        "deletionTimestamp",
        "deletionGracePeriodSeconds",
        "selfLink",
    ):
        meta.pop(key, None)
    body["metadata"] = meta
    return body


def require(ctx: Context, verb: str, *, ref: Any, name: str, namespace: str | None = None) -> str:
    """Raise unless the Kubernetes identity may ``verb`` the object; returns the evidence."""
    allowed, reason = ctx.kube.can_i(verb, ref, name, namespace)
    where = f"{namespace}/{name}" if namespace else name
    if not allowed:
        raise ExternalError(
            f"the Kubernetes identity may not {verb} {ref.plural}.{ref.group or 'core'} "
            f"{where}" + (f" ({reason})" if reason else ""),
            hint=f"grant the RBAC verb {verb!r} on {ref.plural} to the identity of the "
            "kubeconfig, or run as one that has it",
        )
    return f"may {verb} {ref.plural} {where}"


def check_delete(ctx: Context) -> list[str]:
    """Prove the Kubernetes identity may read, watch and delete the target."""
    t = ctx.config.target
    return [require(ctx, verb, ref=t.ref, name=t.name) for verb in ("get", "watch", "delete")]


BACKENDS = NAMES  # every backend's name, in the registry's order


def get(name: str) -> Backend:
    """The backend called ``name`` (its module imported now); a usage error otherwise."""
    found = entry(name)
    if found is None:
        raise UsageError(f"unknown backend {name!r} (use {choices()})")
    module, _, cls = found.implementation.partition(":")
    factory: Callable[[], Backend] = getattr(importlib.import_module(module), cls)
    return factory()


def prove(ctx: Context, backend: Backend, desired: Obj, *, deletes: bool) -> list[str]:
    """Every read-only proof a recreate needs before it changes anything.

    Args:
        ctx: the context.
        backend: the chosen backend.
        desired: git's object.
        deletes: whether the plan deletes the live object (then its RBAC is proven too).

    Raises:
        BackendCheckFailed: a proof failed; the message says nothing was changed.
    """
    try:
        evidence = check_delete(ctx) if deletes else []
        return evidence + backend.check(ctx, desired)
    except UsageError:
        raise
    except FracctlError as e:
        raise BackendCheckFailed(backend.name, e) from e
