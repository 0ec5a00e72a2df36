"""``fracctl recreate`` and ``fracctl wait``."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any

import typer

from fracctl.cli import _app
from fracctl.errors import UsageError

if TYPE_CHECKING:
    from fracctl.core.recreate import Plan
    from fracctl.flows.context import Context

Output = Annotated[str, typer.Option("-o", "--output", help=_app.OUTPUT_HELP)]


def _show_plan(
    c: Context, plan: Plan, guards: dict[str, Any] | None, *, to_stderr: bool = False
) -> None:
    from fracctl.core.recreate import STEP_TEXT

    t = c.config.target
    console = c.err if to_stderr else c.out
    console.print(f"Plan for {t.kind}/{t.name}: {plan.summary}", markup=False)
    console.print(f"  nodeSelector now: {plan.before}", markup=False)
    console.print(f"  nodeSelector git: {plan.after}", markup=False)
    for i, step in enumerate(plan.steps, 1):
        console.print(f"  {i}. {STEP_TEXT.get(step, step)}", markup=False)
    if guards:
        blast = guards.get("blast_radius") or {}
        nodes = [n for n in blast.get("nodes") or [] if isinstance(n, dict)]
        for effect in ("restart", "stop", "start"):
            names = ", ".join(n["name"] for n in nodes if n.get("effect") == effect)
            if names:
                console.print(f"  MPS daemons {effect} on: {names}", markup=False)
        for check in guards.get("checks") or []:
            mark = "ok " if check["ok"] else "NO "
            console.print(f"  [{mark}] {check['name']}: {check['evidence']}", markup=False)
            if not check["ok"] and check.get("fix"):
                console.print(f"        fix: {check['fix']}", markup=False)


def recreate(
    ctx: typer.Context,
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Do not ask for confirmation.")] = False,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Print the plan and change nothing.")
    ] = False,
    backend: Annotated[
        str | None,
        typer.Option(
            help="How to recreate: argocd, flux or apply.",
            show_default=False,
            callback=_app.setting("recreate.backend"),
        ),
    ] = None,
    revision: Annotated[
        str | None,
        typer.Option(help="Git revision to render.", show_default=False, callback=_app.not_blank),
    ] = None,
    restore_from: Annotated[
        str | None,
        typer.Option(
            "--restore-from",
            help="Create the object again from this backup (written by an earlier run) "
            "when it is missing; never deletes.",
            show_default=False,
        ),
    ] = None,
    output: Output = "table",
) -> None:
    """Delete and recreate the fractioning config from git, guarded and resumable.

    Takes a Lease lock, runs every preflight guard, renders git, backs up the live
    object, deletes it and waits until it is really gone, recreates it through Argo CD,
    Flux or a server-side apply, verifies the live object equals git (whatever the
    backend reported), waits until every selected node reports ready, and records an
    Event and an audit line. A rerun after any failure resumes from what the cluster
    shows. Before anything changes it proves, read-only, that the backend can recreate
    the object (token, application, permissions); --dry-run runs the same proofs.

    If a step fails after the delete, the error names the backup; --restore-from puts
    that backup back (server-side apply) when the object is missing.

    Examples:
        fracctl recreate --dry-run
        fracctl recreate --yes --backend apply
        fracctl recreate --yes --backend argocd
        fracctl recreate --restore-from ~/.local/state/fracctl/backups/FILE.yaml --yes
    """
    from fracctl.flows import recreate as flow

    _app.check_output(output)
    if restore_from is not None and (revision is not None or backend not in (None, "apply")):
        raise UsageError(
            "--restore-from creates the backed-up object directly; it takes neither "
            "--revision nor a --backend other than apply"
        )
    c = _app.context(ctx, git__revision=revision)

    def confirm(plan: Plan, guards: dict[str, Any] | None) -> bool:
        _show_plan(c, plan, guards, to_stderr=True)  # stdout stays clean for -o json
        return typer.confirm("Proceed?", default=False, err=True)

    if restore_from is not None:
        from fracctl.flows.restore import restore

        result = restore(c, restore_from, dry_run=dry_run, yes=yes, confirm=confirm)
    else:
        result = flow.recreate(c, dry_run=dry_run, yes=yes, backend=backend, confirm=confirm)
    if output == "json":
        _app.emit_json(result.to_dict())
    else:
        if dry_run or not result.plan.steps:
            _show_plan(c, result.plan, result.guards)
        if result.backup:
            c.out.print(f"backup: {result.backup}", markup=False)
        if result.ready is not None:
            c.out.print(
                f"ready: {len(result.ready.nodes)} node(s) in {result.ready.seconds:.0f}s",
                markup=False,
            )
        c.out.print(f"outcome: {result.outcome}", markup=False)
    if result.outcome == "refused":
        raise typer.Exit(1)


def wait(
    ctx: typer.Context,
    timeout: Annotated[
        str | None,
        typer.Option(
            help="How long to wait, e.g. 10m (default timeouts.ready).",
            show_default=False,
            callback=_app.setting("timeouts.ready"),
        ),
    ] = None,
    output: Output = "table",
) -> None:
    """Wait until every node the live config selects reports the readiness condition.

    Watches the nodes (no polling); exits 4 on timeout naming each node with its
    condition status, reason and message.

    Examples:
        fracctl wait
        fracctl wait --timeout 15m
    """
    from fracctl.flows.wait import wait_for_target

    _app.check_output(output)
    c = _app.context(ctx, timeouts__ready=timeout)
    result = wait_for_target(c)
    if output == "json":
        _app.emit_json(result.to_dict())
    else:
        c.out.print(
            f"{len(result.nodes)} node(s) ready in {result.seconds:.0f}s: "
            + ", ".join(result.nodes),
            markup=False,
        )


def register(root: typer.Typer) -> None:
    """Attach to the root app."""
    root.command("recreate")(recreate)
    root.command("wait")(wait)
