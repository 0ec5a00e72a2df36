"""The backends ``recreate`` can use: one registry, read by config, the CLI and the flows.

Each entry names a backend, says in a line what it does (for ``--help``), and where its
implementation lives (``module:Class``, imported only when that backend is used). A new
backend is one module under :mod:`fracctl.flows.backends` plus one entry here.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class BackendEntry:
    """One backend: its name, a one-line summary, and its implementation."""

    name: str
    summary: str
    implementation: str  # "module:Class"
    rbac: str = ""  # "module:function(Params) -> {namespace: [RbacRule]}" the role adds


REGISTRY: tuple[BackendEntry, ...] = (
    BackendEntry(
        "argocd",
        "Argo CD syncs the one resource",
        "fracctl.flows.backends.argocd:ArgoCDBackend",
    ),
    BackendEntry(
        "flux",
        "Flux reconciles the Kustomization",
        "fracctl.flows.backends.flux:FluxBackend",
        rbac="fracctl.core.rbac:flux_rules",
    ),
    BackendEntry(
        "apply",
        "fracctl creates it by server-side apply",
        "fracctl.flows.backends.apply:ApplyBackend",
    ),
)

NAMES: tuple[str, ...] = tuple(e.name for e in REGISTRY)  # as the CLI's choices


def names() -> tuple[str, ...]:
    """Every backend's name, read from the registry now."""
    return tuple(e.name for e in REGISTRY)


def choices() -> str:
    """``argocd, flux or apply``: the names as a sentence, for messages."""
    known = names()
    return ", ".join(known[:-1]) + f" or {known[-1]}" if len(known) > 1 else known[0]


def entry(name: str) -> BackendEntry | None:
    """The registry entry called ``name``, if any."""
    return next((e for e in REGISTRY if e.name == name), None)
