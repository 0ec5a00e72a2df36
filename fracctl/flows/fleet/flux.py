"""``fracctl fleet status --flux``: where a fleet's rollout on a Flux hub stands, read-only.

Read from the hub's API (``--kubeconfig``/``--context``): the Kustomizations labelled
``fracctl.io/fleet=<fleet>`` (``fracctl fleet render --flux`` writes them) and the
GitRepository they share; :mod:`fracctl.core.flux_rollout` says what they mean.
"""

from __future__ import annotations

import re
from typing import Any

from fracctl.core.flux_fleet import LABEL_FLEET
from fracctl.core.flux_rollout import GITREPOSITORIES, KUSTOMIZATIONS, FluxRollout, rollout
from fracctl.errors import UsageError
from fracctl.flows.context import Context

_COMMIT = re.compile(r"^[0-9a-f]{7,64}$")


def status(ctx: Context, *, fleet: str, namespace: str, revision: str | None) -> FluxRollout:
    """The rollout of ``fleet``'s Kustomizations in the hub's ``namespace``.

    Judged against ``revision`` (a commit, or a Flux revision), else the revision the
    GitRepository they share has fetched (``status.artifact.revision``); when there is none
    (no such source, several sources, nothing fetched yet) the rollout says why and is
    never done.

    Raises:
        UsageError: ``revision`` is not a commit; no Kustomization of ``fleet`` in
            ``namespace``.
    """
    if revision is not None and not _COMMIT.match(revision.rsplit(":", 1)[-1]):
        raise UsageError(
            f"--revision {revision!r} is not a commit",
            hint="with --flux: a commit (7 hex digits or more) or a Flux revision "
            "(main@sha1:<commit>)",
        )
    found = ctx.kube.list(
        KUSTOMIZATIONS, namespace=namespace, label_selector=f"{LABEL_FLEET}={fleet}"
    )
    if not found:
        raise UsageError(
            f"no Kustomization labelled {LABEL_FLEET}={fleet} in namespace {namespace} "
            "of this cluster",
            hint="point --kubeconfig/--context at the hub, -n at the Kustomizations' namespace "
            "(fracctl fleet render --flux writes them)",
        )
    refs = {_source_of(k, namespace) for k in found}
    source, unknown = "", ""
    if len(refs) != 1:
        unknown = f"the Kustomizations read {len(refs)} sources (the revision check needs one)"
    else:
        ((kind, source_ns, source),) = refs
        if revision is None:
            revision, unknown = _fetched(ctx, kind, source_ns, source)
    contexts = {m.name: m.context for m in ctx.config.fleet.clusters}
    return rollout(
        fleet,
        namespace,
        found,
        source=source,
        revision=revision,
        unknown="" if revision else unknown,
        contexts=contexts,
    )


def _source_of(kustomization: dict[str, Any], namespace: str) -> tuple[str, str, str]:
    ref = (kustomization.get("spec") or {}).get("sourceRef") or {}
    return (ref.get("kind", ""), ref.get("namespace") or namespace, ref.get("name", ""))


def _fetched(ctx: Context, kind: str, namespace: str, name: str) -> tuple[str | None, str]:
    """The revision the source has fetched, or None and why not."""
    if kind != GITREPOSITORIES.kind:
        return None, f"the source is a {kind}: give --revision"
    repo = ctx.kube.get_or_none(GITREPOSITORIES, name, namespace)
    if repo is None:
        return None, f"no GitRepository {namespace}/{name}: give --revision"
    artifact = (repo.get("status") or {}).get("artifact") or {}
    if not artifact.get("revision"):
        return None, f"the GitRepository {namespace}/{name} has fetched nothing yet"
    return str(artifact["revision"]), ""
