"""The backends ``recreate`` can use: one registry, read by config, the CLI and the flows.

Each entry names a backend, says in a line what it does (for ``--help``), and where its
implementation lives (``module:Class``, imported only when that backend is used). A new
backend is one package under :mod:`fracctl.flows.engines` plus one entry here. That
module may also declare

- its own fracctl.yaml section (``section="module:Class"``, a frozen dataclass in
  :mod:`fracctl.config`, so that loading the configuration imports no flow): read
  from the file, ``FRACCTL_<NAME>_<KEY>`` and checked like every built-in section, and
  handed to the backend as ``ctx.config.section(name)``. Its checks raise
  ``fracctl.config.InvalidValue`` naming the key at fault, so an error says where that
  value came from; a plain ValueError is reported against the section;
- the RBAC its recreate role needs (``rbac="module:function"``, given the role
  :class:`~fracctl.core.rbac.Params`, whose ``section(name)`` is that same section);
- its other half, for ``recreate KIND/NAME`` (``objects="module:function"``, called as
  ``make(ctx, target, holds=…, suspended=…, live=…)`` and returning the object creator).
  A backend without one recreates the fractioning config only: KIND/NAME refuses it;
- who owns an object by its marks (``owner="module:Class"``, an
  :class:`~fracctl.flows.engines.owners.Ownership`): an engine refuses an object another
  engine's owner marks, naming it and the backend that carries it. A backend without one
  (``apply``) creates the object itself, whoever marks it.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class BackendEntry:
    """One backend: its name, a one-line summary, and its implementation."""

    name: str
    summary: str
    implementation: str  # "module:Class"
    rbac: str = ""  # "module:function(Params) -> {namespace: [RbacRule]}" the role adds
    section: str = ""  # "module:Class": its own fracctl.yaml section, named as the backend
    objects: str = ""  # "module:function": its creator for recreate KIND/NAME ("" none)
    owner: str = ""  # "module:Class": who owns an object, by its marks ("" nobody's)


REGISTRY: tuple[BackendEntry, ...] = (
    BackendEntry(
        "argocd",
        "Argo CD syncs the one resource",
        "fracctl.flows.engines.argocd.backend:ArgoCDBackend",
        objects="fracctl.flows.engines.argocd.objects:argocd_creator",
        owner="fracctl.flows.engines.argocd.owner:ArgoCDOwnership",
    ),
    BackendEntry(
        "flux",
        "Flux reconciles the Kustomization",
        "fracctl.flows.engines.flux.backend:FluxBackend",
        rbac="fracctl.core.rbac.flux:flux_rules",
        objects="fracctl.flows.engines.flux.objects:flux_creator",
        owner="fracctl.flows.engines.flux.owner:FluxOwnership",
    ),
    BackendEntry(
        "helm",
        "the chart's own helm upgrade (its hook deletes and recreates the object)",
        "fracctl.flows.engines.helm.backend:HelmBackend",
        rbac="fracctl.core.rbac.helm:helm_rules",
        section="fracctl.config.helm:HelmSettings",
        objects="fracctl.flows.engines.helm.objects:helm_creator",
        owner="fracctl.flows.engines.helm.owner:HelmOwnership",
    ),
    BackendEntry(
        "apply",
        "fracctl creates it by server-side apply",
        "fracctl.flows.engines.apply.backend:ApplyBackend",
        objects="fracctl.flows.engines.apply.objects:apply_creator",
    ),
)

#: The backend that creates an object itself, whoever marks it: the one ``drift`` names
#: for an object no engine must carry.
DIRECT = "apply"

NAMES: tuple[str, ...] = tuple(e.name for e in REGISTRY)  # as the CLI's choices


def names() -> tuple[str, ...]:
    """Every backend's name, read from the registry now."""
    return tuple(e.name for e in REGISTRY)


def object_names() -> tuple[str, ...]:
    """The backends that recreate an object of any kind (``recreate KIND/NAME``)."""
    return tuple(e.name for e in REGISTRY if e.objects)


def owned() -> tuple[BackendEntry, ...]:
    """The backends that read who owns an object (``owner``), read from the registry now."""
    return tuple(e for e in REGISTRY if e.owner)


def choices() -> str:
    """``argocd, flux, helm or apply``: the names as a sentence, for messages."""
    known = names()
    return ", ".join(known[:-1]) + f" or {known[-1]}" if len(known) > 1 else known[0]


def entry(name: str) -> BackendEntry | None:
    """The registry entry called ``name``, if any."""
    return next((e for e in REGISTRY if e.name == name), None)


def load(ref: str) -> Any:
    """The object a ``module:name`` reference names, imported now."""
    module, _, name = ref.partition(":")
    return getattr(importlib.import_module(module), name)


def section(configured: Mapping[str, Any], name: str) -> Any:
    """A backend's own section: as configured, else its defaults."""
    return configured[name] if name in configured else sections()[name]()


def sections() -> dict[str, type]:
    """The fracctl.yaml sections the backends declare, by backend name (imported now)."""
    return {e.name: load(e.section) for e in REGISTRY if e.section}
