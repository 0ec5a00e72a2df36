"""The ``fracctl drift`` flow: which objects to judge, from where, and what it exits with.

``run`` takes the desired state from git (the configured target, or every rendered
object with ``all_objects``) or from an Argo CD application, and adds Argo CD's claims
when an application is configured; ``exit_code`` and ``summary_line`` say how the
report ends the command.
"""

from __future__ import annotations

from fracctl.core import drift as d
from fracctl.errors import ExitCode, UsageError
from fracctl.flows.context import Context
from fracctl.flows.drift.argocd import annotate_with_argocd, check_app
from fracctl.flows.drift.checks import check_objects, target_report
from fracctl.flows.render import Desired


def run(
    ctx: Context,
    *,
    all_objects: bool = False,
    app: str | None = None,
    repo: str | None = None,
    revision: str | None = None,
    path: str | None = None,
    renderer: str | None = None,
    kind: str | None = None,
    name: str | None = None,
    flux: bool = False,
) -> d.DriftReport:
    """What ``fracctl drift`` reports.

    Args:
        ctx: the context.
        all_objects: judge every rendered object, not only the configured target.
        app: judge every resource of this Argo CD application (desired from Argo CD).
        repo: git repository (default ``git.repo``).
        revision: git revision (default ``git.revision``); with ``app``, Argo CD's.
        path: path in the repository (default ``git.path``).
        renderer: ``auto``, ``plain``, ``kustomize`` or ``helm``.
        kind: only objects of this kind (with ``all_objects`` or ``app``).
        name: only objects of this name (with ``all_objects`` or ``app``).
        flux: the desired state from Flux: the commit the configured Kustomization's
            source holds, rendered at the Kustomization's path (what Flux would apply).

    Returns:
        The report; with Argo CD configured, also what Argo CD claims.
    """
    from fracctl.flows.render import render

    if app:
        if any(v is not None for v in (repo, path, renderer)):
            raise UsageError(
                "--app takes the desired state from Argo CD: drop --repo/--path/--renderer"
            )
        return check_app(ctx, app=app, revision=revision, kind=kind, name=name)
    if (kind or name) and not all_objects:
        raise UsageError("--kind and --name select among rendered objects: add --all")
    flux_source: dict[str, str] = {}
    if flux:
        if any(v is not None for v in (repo, revision, path)):
            raise UsageError(
                "--flux takes the revision and path from Flux: drop --repo/--revision/--path"
            )
        revision, path, flux_source = _from_flux(ctx)
    desired = render(ctx, repo=repo, revision=revision, path=path, renderer=renderer)
    if all_objects:
        chosen = _only(desired, kind=kind, name=name)
        report = check_objects(ctx, chosen.objects, desired=chosen)
    else:
        report = target_report(ctx, desired=desired)
    report.source.update(flux_source)
    app_name = ctx.config.argocd.app
    if app_name:
        application = ctx.argocd.get_application(app_name)
        annotate_with_argocd(report, app_name, application)
    return report


def _only(desired: Desired, *, kind: str | None, name: str | None) -> Desired:
    """The rendered objects of ``kind`` and ``name`` (each where given), with their places."""
    from fracctl.flows.render import select

    keep = select(desired.objects, kind=kind, name=name)
    return Desired(
        objects=[desired.objects[i] for i in keep],
        locations=[desired.location_of(i) for i in keep],
        texts=[desired.text_of(i) for i in keep],
        source=desired.source,
    )


def _from_flux(ctx: Context) -> tuple[str, str, dict[str, str]]:
    """The commit and path Flux would apply, and what to say of them in the report."""
    from fracctl.adapters.flux import commit_of
    from fracctl.core.kube.nodes import condition
    from fracctl.flows.engines.flux import backend as flux

    if not ctx.config.flux.kustomization:
        raise UsageError(
            "--flux needs the Kustomization", hint="set flux.namespace and flux.kustomization"
        )
    obj, revision, path = flux.source_state(ctx)
    ready = condition(obj, "Ready") or {}
    meta = obj.get("metadata") or {}
    said = {
        "flux_kustomization": f"{meta.get('namespace')}/{meta.get('name')}",
        "flux_revision": revision,
        "flux_ready": f"{ready.get('status') or 'Unknown'} ({ready.get('reason') or 'no reason'})",
    }
    return commit_of(revision), path, said


def exit_code(report: d.DriftReport) -> ExitCode:
    """0 when everything is in sync, 1 when anything drifted."""
    return ExitCode.FINDING if report.drifted else ExitCode.OK


def summary_line(report: d.DriftReport) -> str:
    """``3 objects: 1 needs-recreate, 2 in-sync``."""
    counts = {k: v for k, v in report.counts().items() if v}
    parts = ", ".join(f"{v} {k}" for k, v in counts.items())
    n = len(report.objects)
    return f"{n} object{'s' if n != 1 else ''}: {parts or 'none'}"
