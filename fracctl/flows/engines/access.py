"""What the Kubernetes identity may do, proven with a SelfSubjectAccessReview."""

from __future__ import annotations

from typing import Any

from fracctl.errors import ExternalError
from fracctl.flows.context import Context


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
