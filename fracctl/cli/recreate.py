"""``fracctl recreate``."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

from fracctl.cli import _app
from fracctl.cli.recreate_request import Request
from fracctl.cli.recreate_show import print_result, show_plan
from fracctl.cli.render import (
    PathOption,
    RendererOption,
    RepoOption,
    RevisionOption,
    source_context,
    source_overrides,
)
from fracctl.core.gitops.backends import DIRECT, NAMES, REGISTRY, names
from fracctl.core.outcome import Outcome
from fracctl.errors import UsageError

if TYPE_CHECKING:
    from fracctl.flows.context import Context
    from fracctl.flows.fleet import Member
    from fracctl.flows.recreate import RecreateResult

    BackendName = str
else:  # the registry's names, so that typer lists them in --help
    BackendName = _app.literal(NAMES)

Output = _app.Output
BACKEND_HELP = (
    "How to recreate (default recreate.backend): "
    + ", ".join(f"{e.name} ({e.summary})" for e in REGISTRY)
    + "."
)


YesOption = Annotated[bool, typer.Option("--yes", "-y", help="Do not ask for confirmation.")]
DryRunOption = Annotated[bool, typer.Option("--dry-run", help="Print the plan and change nothing.")]
BackendOption = Annotated[
    BackendName | None,
    typer.Option(
        help=BACKEND_HELP,
        show_default=False,
        parser=_app.one_of(names),
        callback=_app.setting("recreate.backend"),
    ),
]
RestoreOption = Annotated[
    str | None,
    typer.Option(
        "--restore-from",
        help="Create the object again from this backup (written by an earlier run) "
        "when it is missing; never deletes.",
        show_default=False,
    ),
]


DrainOption = Annotated[
    bool,
    typer.Option(
        "--drain",
        help="Evict the fractional pods first: fence fractional scheduling (the readiness "
        "condition set False), evict every fractional pod PodGroup by PodGroup through the "
        "Eviction API, recreate, let the operator reopen scheduling. Resumes a journaled "
        "drain.",
    ),
]
ForceOption = Annotated[
    bool, typer.Option("--force", help="With --drain: evict bare pods too (they are lost).")
]
AbortOption = Annotated[
    bool,
    typer.Option(
        "--abort",
        help="Undo a journaled drain that has not reached the delete: lift its fence.",
    ),
]


def _at_least_one(value: int) -> None:
    if value < 1:
        raise ValueError(f"must be 1 or more, got {value}")


ParallelOption = Annotated[
    int,
    typer.Option(
        "--parallel",
        metavar="N",
        help="With a fleet: clusters at a time within a wave (default one at a time).",
        callback=_app.checked(_at_least_one),
    ),
]
ContinueOption = Annotated[
    bool,
    typer.Option(
        "--continue-on-failure",
        help="With a fleet: go on with the other clusters and waves after one fails.",
    ),
]


ObjectArgument = Annotated[
    str | None,
    typer.Argument(
        metavar="[KIND/NAME]",
        help="A built-in object to recreate by its kind's safe procedure (StatefulSet, "
        "Deployment, DaemonSet, Job, RoleBinding, ClusterRoleBinding, Service); default "
        "the fractioning config.",
        show_default=False,
    ),
]
NamespaceOption = Annotated[
    str | None,
    typer.Option("--namespace", "-n", help="The object's namespace.", show_default=False),
]
AllObjectsOption = Annotated[
    bool,
    typer.Option(
        "--all",
        help="Every object drift --all finds needs recreating (and any whose procedure "
        "began here and has not ended), each by its kind's procedure.",
    ),
]
AllowActiveOption = Annotated[
    bool, typer.Option("--allow-active", help="Recreate a running Job (its pods are killed).")
]
AllowNewIpOption = Annotated[
    bool, typer.Option("--allow-new-ip", help="Let a recreated Service get a new cluster IP.")
]


#: ``fracctl recreate --help``, given to typer at :func:`register` (the command takes many
#: options: its signature and this text are kept apart).
HELP = """Delete and recreate the fractioning config (or a built-in object) from git, guarded.

Takes a Lease lock, runs every preflight guard, renders git, backs up the live
object, deletes it and waits until it is really gone, recreates it through the
backend (--backend, else recreate.backend: Argo CD, Flux, the chart's own helm
upgrade, or a server-side apply), verifies the live object equals git (whatever the
backend reported), waits until every selected node reports ready, and records an
Event and an audit line. A rerun after any failure resumes from what the cluster
shows. Before anything changes it rehearses, read-only, what follows (a dry-run
delete, the operator that releases the finalizer, the backend's own rendering and
dry run); --dry-run runs the same rehearsal.

If a step fails after the delete, the error names the backup; --restore-from puts it
back (server-side apply) when the object is missing.

On a busy cluster, --drain first fences fractional scheduling on every node where
KAI would place a fraction, evicts every fractional pod (whole PodGroups, within
their PodDisruptionBudgets), and waits until none is on a node; the plan refuses,
before any change, where the drain could not finish. A failure or Ctrl-C before
the delete lifts the fence; a rerun resumes a drain the cluster journaled;
--abort undoes one that has not reached the delete (runbooks/drain.md).

Over a fleet (--context more than once, --all-contexts, or fleet: in fracctl.yaml)
clusters go wave by wave, lowest first (wave 0 is the canary), one at a time within
a wave (--parallel N), each with its own lock, guards, backup and audit line. The
first cluster refused or failed stops the rollout (--continue-on-failure goes on);
the summary names the clusters done, those not started, and the command that
resumes. Clusters already done plan nothing-to-do on the rerun.

KIND/NAME (or --all: each object drift --all finds) recreates a built-in object by its
kind's safe procedure instead, or refuses with the fix (runbooks/recreate-kinds.md).
KIND is spelled as kubectl takes it (sts, statefulsets.apps); --path,
--revision, --repo and --renderer say where git's objects are, as for
render and drift.

Examples:
    fracctl recreate --dry-run
    fracctl recreate StatefulSet/db -n shop --backend apply --dry-run
    fracctl recreate sts/db -n shop --path shop --backend apply --dry-run
    fracctl recreate --all --backend apply --dry-run
    fracctl recreate --yes --backend argocd
    fracctl recreate --restore-from ~/.local/state/fracctl/backups/FILE --yes
    fracctl --context eu-1 --context us-1 recreate --dry-run
    fracctl recreate --drain --yes
    fracctl recreate --abort
"""


def recreate(
    ctx: typer.Context,
    obj: ObjectArgument = None,
    namespace: NamespaceOption = None,
    all_objects: AllObjectsOption = False,
    allow_active: AllowActiveOption = False,
    allow_new_ip: AllowNewIpOption = False,
    yes: YesOption = False,
    dry_run: DryRunOption = False,
    backend: BackendOption = None,
    repo: RepoOption = None,
    revision: RevisionOption = None,
    path: PathOption = None,
    renderer: RendererOption = None,
    restore_from: RestoreOption = None,
    output: Output = "table",
    parallel: ParallelOption = 1,
    continue_on_failure: ContinueOption = False,
    drain: DrainOption = False,
    force: ForceOption = False,
    abort: AbortOption = False,
) -> None:
    """Delete and recreate the fractioning config or an object, guarded (:data:`HELP`)."""
    req = Request(
        obj=obj,
        namespace=namespace,
        all_objects=all_objects,
        allow_active=allow_active,
        allow_new_ip=allow_new_ip,
        yes=yes,
        dry_run=dry_run,
        backend=backend,
        source={"repo": repo, "revision": revision, "path": path, "renderer": renderer},
        restore_from=restore_from,
        output=output,
        parallel=parallel,
        continue_on_failure=continue_on_failure,
        drain=drain,
        force=force,
        abort=abort,
    )
    if _objects(ctx, req):
        return
    if abort:
        _abort(ctx, others=drain or force or dry_run or bool(restore_from) or req.source_given)
        return
    _config(ctx, req)


def _config(ctx: typer.Context, req: Request) -> None:
    """Recreate (or restore) the fractioning config, on one cluster or over a fleet."""
    _check_flags(req)
    found = _fleet_of(ctx, req)
    if found is not None:
        _fleet(ctx, found, req)
        return
    c = source_context(ctx, **req.source)
    _app.keep_run_flags(c, backend=req.backend, yes=req.yes, drain=req.drain, force=req.force)
    result = _one(c, req)
    print_result(c, result, output=req.output, dry_run=req.dry_run)
    if result.outcome is Outcome.REFUSED:
        raise typer.Exit(result.outcome.exit_code)


def _objects(ctx: typer.Context, req: Request) -> bool:
    """Run ``recreate KIND/NAME`` or ``--all``; whether it was one of them (not the config)."""
    from fracctl.cli import recreate_object as objects

    if req.all_objects:
        if req.namespace is not None:
            raise UsageError("-n goes with KIND/NAME; --all takes every namespace")
        objects.recreate_every(ctx, req)
        return True
    if req.obj is not None and not _is_target(ctx, req.obj, req.source):
        objects.recreate_object(ctx, req.obj, req)
        return True
    if req.namespace is not None or req.allow_active or req.allow_new_ip:
        raise UsageError(
            "-n goes with KIND/NAME; --allow-active and --allow-new-ip with KIND/NAME or --all"
        )
    return False


def _abort(ctx: typer.Context, *, others: bool) -> None:
    """``recreate --abort``: undo a journaled drain."""
    if others:
        raise UsageError(
            "--abort takes none of --drain, --force, --dry-run, --restore-from, and no git "
            "source (--repo, --revision, --path, --renderer)"
        )
    from fracctl.flows.recreate import abort_drain

    c = _app.context(ctx)
    c.out.print(abort_drain(c), markup=False, soft_wrap=True)


def _is_target(ctx: typer.Context, obj: str, source: dict[str, str | None]) -> bool:
    """Whether ``KIND/NAME`` names the fractioning config (its own guarded flow)."""
    t = source_context(ctx, **source).config.target
    kind, _, name = obj.partition("/")
    return kind.lower() in (t.kind.lower(), t.plural.lower()) and name == t.name


def _fleet_of(ctx: typer.Context, req: Request) -> tuple[Context, list[Member]] | None:
    """The fleet this run goes over, or None for one cluster."""
    found = _app.fleet(ctx, **source_overrides(**req.source))
    if found is not None and req.restore_from is not None:
        if len(found[1]) > 1 or ctx.find_root().obj.context is None:
            raise UsageError(
                "--restore-from restores one cluster: give --context once",
                hint="each cluster's backups are under recreate.state_dir/clusters/NAME",
            )
        return None  # one cluster of the fleet: restored as any single cluster
    if found is not None and req.drain:
        raise UsageError("--drain runs on one cluster at a time: give --context once")
    return found


def _check_flags(req: Request) -> None:
    """Flags that do not go together: a usage error before anything is read."""
    if req.force and not req.drain:
        raise UsageError("--force is for --drain: it evicts bare pods too")
    if req.drain and req.restore_from is not None:
        raise UsageError("--drain and --restore-from do not go together")
    if req.restore_from is not None and (req.source_given or req.backend not in (None, DIRECT)):
        raise UsageError(
            "--restore-from creates the backed-up object directly; it takes no git source "
            "(--repo, --revision, --path, --renderer) and no --backend other than apply"
        )


def _one(c: Context, req: Request) -> RecreateResult:
    """Recreate (or restore) on one cluster, asking on a terminal before any change."""
    from fracctl.flows import recreate as flow

    def confirm(planned: RecreateResult) -> bool:
        show_plan(c, planned, to_stderr=True)  # stdout stays clean for -o json
        return typer.confirm("Proceed?", default=False, err=True)

    if req.restore_from is not None:
        from fracctl.flows.recreate.restore import restore

        return restore(c, req.restore_from, dry_run=req.dry_run, yes=req.yes, confirm=confirm)
    return flow.recreate(
        c,
        dry_run=req.dry_run,
        yes=req.yes,
        backend=req.backend,
        confirm=confirm,
        drain=req.drain,
        force=req.force,
    )


def _fleet(ctx: typer.Context, found: tuple[Context, list[Member]], req: Request) -> None:
    """``fracctl recreate`` over a fleet: waves, the summary, the exit code."""
    from fracctl.cli import fleet as fleet_cli
    from fracctl.cli._app import Globals
    from fracctl.flows import fleet

    c, clusters = found
    g: Globals = ctx.find_root().obj

    def confirm(planned: fleet.FleetResult) -> bool:
        for r in planned.results:
            c.err.print(f"== {r.name} (wave {r.member.wave}) ==", markup=False, soft_wrap=True)
            show_plan(c, r.value, to_stderr=True)
        return typer.confirm(
            f"Recreate on {len(planned.results)} clusters?", default=False, err=True
        )

    result = fleet.recreate(
        c,
        clusters,
        dry_run=req.dry_run,
        yes=req.yes,
        backend=req.backend,
        parallel=req.parallel,
        continue_on_failure=req.continue_on_failure,
        confirm=confirm,
        progress=fleet_cli.progress(c),
        resume_args=g.address(),
    )
    fleet_cli.recreate(c, result, req.output, dry_run=req.dry_run, show_plan=show_plan)
    raise typer.Exit(result.exit_code)


def register(root: typer.Typer) -> None:
    """Attach to the root app."""
    root.command("recreate", help=HELP)(recreate)
