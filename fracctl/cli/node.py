"""``fracctl node``: on a GPU host, or as a DaemonSet container's entry point."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

from fracctl.cli import _app
from fracctl.errors import ExitCode, UsageError

if TYPE_CHECKING:
    from fracctl.flows.context import Context
    from fracctl.flows.guards.node_checks import MemoryProbeReport
    from fracctl.flows.node_agent import InstallResult, MPSStatus

app = typer.Typer(
    help="On a GPU host: preflight, the MPS control daemon, the memory probe.",
    no_args_is_help=True,
)
mps_app = typer.Typer(
    help="Install, supervise, inspect and remove the NVIDIA MPS control daemon.",
    no_args_is_help=True,
)
app.add_typer(mps_app, name="mps")


def _mib(value: str) -> int:
    from fracctl.core.mps import parse_mib

    return parse_mib(value)


@app.command()
def preflight(
    ctx: typer.Context,
    output: _app.Output = "table",
    host_root: Annotated[
        str | None,
        typer.Option(
            help="Where the host's files are (e.g. /host in a container).", show_default=False
        ),
    ] = None,
) -> None:
    """Check the host for MPS and fractional GPUs; exit 1 on any failure.

    Checks the driver (r615+ for protocol 3), nvidia-cuda-mps-control
    and its -p 3 support, the NRI socket, containerd 2.0+, host memory
    (about 50 MiB per GPU) and the GPUs' compute mode. Every failure
    says what to do.

    Examples:
        fracctl node preflight
        fracctl node preflight --host-root /host -o json
    """
    from fracctl.flows.guards import node_checks

    c = _app.context(ctx, mps__host_root=host_root)
    checks = node_checks.preflight(c)
    failed = [ch for ch in checks if ch.status == "fail"]
    if output == "json":
        _app.emit_json(
            {
                "ok": not failed,
                "checks": [
                    {"name": ch.name, "status": ch.status, "detail": ch.detail, "fix": ch.fix}
                    for ch in checks
                ],
            }
        )
    else:
        from rich.table import Table

        table = Table("check", "status", "found", "what to do")
        for ch in checks:
            table.add_row(ch.name, ch.status, ch.detail, ch.fix or "-")
        c.out.print(table)
        summary = f"{len(failed)} of {len(checks)} checks failed" if failed else "all checks ok"
        c.out.print(f"preflight: {summary}", markup=False, soft_wrap=True)
    raise typer.Exit(ExitCode.FINDING if failed else ExitCode.OK)


# The options of `install`, named here so that its signature stays short.
_Systemd = Annotated[
    bool, typer.Option("--systemd", help="Install a systemd unit that runs the supervisor.")
]
_Foreground = Annotated[
    bool,
    typer.Option("--foreground", help="Run and supervise the daemon here (container entry)."),
]
_DryRun = Annotated[
    bool, typer.Option("--dry-run", help="With --systemd: print the files, change nothing.")
]
_PipeDir = Annotated[str | None, typer.Option(help="CUDA_MPS_PIPE_DIRECTORY.", show_default=False)]
_LogDir = Annotated[str | None, typer.Option(help="CUDA_MPS_LOG_DIRECTORY.", show_default=False)]
_Protocol = Annotated[
    int | None,
    typer.Option(
        help="MPS protocol: 3 (namespaces, r615+) or 2.",
        show_default=False,
        callback=_app.setting("mps.protocol"),
    ),
]
_MultiUser = Annotated[
    bool | None,
    typer.Option(
        "--multi-user/--single-user",
        help="Multi-user mode (-m, protocol 3).",
        show_default=False,
    ),
]
_ActiveThreadPercentage = Annotated[
    int | None,
    typer.Option(
        help="Default active thread percentage.",
        show_default=False,
        callback=_app.setting("mps.default_active_thread_percentage"),
    ),
]
_PinnedMemLimit = Annotated[
    list[str] | None,
    typer.Option(
        help="Default pinned memory limit, <device>=<size>; repeatable.",
        show_default=False,
        callback=_app.setting("mps.pinned_mem_limits"),
    ),
]


@mps_app.command()
def install(
    ctx: typer.Context,
    systemd: _Systemd = False,
    foreground: _Foreground = False,
    dry_run: _DryRun = False,
    pipe_dir: _PipeDir = None,
    log_dir: _LogDir = None,
    protocol: _Protocol = None,
    multi_user: _MultiUser = None,
    active_thread_percentage: _ActiveThreadPercentage = None,
    pinned_mem_limit: _PinnedMemLimit = None,
) -> None:
    """Install the MPS control daemon: a systemd unit, or a supervisor.

    --foreground starts nvidia-cuda-mps-control -f, waits for its
    control socket, applies the default active-thread percentage and
    pinned-memory limits, health-checks it, restarts it with exponential
    backoff after a crash, and on SIGTERM sends quit, waits
    mps.graceful_stop, then kills. Exit 0: stopped cleanly; 3: kept
    failing or refused the defaults; 4: quit hung and the daemon was
    killed; 5: a daemon already runs.

    --systemd writes a unit and an environment file that run the same
    supervisor, then reloads, enables and starts it. A second identical
    install changes nothing.

    Examples:
        fracctl node mps install --systemd --pinned-mem-limit 0=4096M --dry-run
        fracctl node mps install --foreground --pipe-dir /run/nvidia-mps
    """
    if systemd == foreground:
        raise UsageError("give exactly one of --systemd or --foreground")
    if dry_run and foreground:
        raise UsageError("--dry-run goes with --systemd")
    c = _app.context(
        ctx,
        mps__pipe_dir=pipe_dir,
        mps__log_dir=log_dir,
        mps__protocol=protocol,
        mps__multi_user=multi_user,
        mps__default_active_thread_percentage=active_thread_percentage,
        mps__pinned_mem_limits=pinned_mem_limit or None,
    )
    from fracctl.flows import node_agent

    if foreground:
        node_agent.supervise(c)
        return
    _print_install(c, node_agent.install_systemd(c, dry_run=dry_run))


def _print_install(c: Context, res: InstallResult) -> None:
    """What ``install --systemd`` wrote and ran, or with ``--dry-run`` would."""
    if res.dry_run:
        for path, text in res.files.items():
            c.out.print(f"--- {path}", markup=False, soft_wrap=True)
            c.out.print(text.rstrip("\n"), markup=False, highlight=False, soft_wrap=True)
        c.out.print("--- would run:", markup=False, soft_wrap=True)
    for line in res.actions:
        c.out.print(f"  {line}" if res.dry_run else line, markup=False, soft_wrap=True)
    for note in res.notes:
        c.out.print(note, markup=False, soft_wrap=True)


@mps_app.command()
def status(ctx: typer.Context, output: _app.Output = "table") -> None:
    """Show the daemon: PID, socket, servers, defaults, namespaces, clients.

    Exits 0 when the daemon answers, 1 when it does not.

    Examples:
        fracctl node mps status
        fracctl node mps status -o json
    """
    from fracctl.flows import node_agent

    c = _app.context(ctx)
    st = node_agent.status(c)
    if output == "json":
        _app.emit_json(st.to_dict())
    else:
        _render_status(c, st)
    raise typer.Exit(ExitCode.OK if st.running else ExitCode.FINDING)


def _render_status(c: Context, st: MPSStatus) -> None:
    p = c.out.print
    state = "running" if st.running else "not running"
    p(f"MPS control daemon: {state}", markup=False)
    p(f"  pid:            {st.daemon_pid or '-'}", markup=False)
    sock = "present" if st.socket_present else "absent"
    p(f"  control socket: {st.control_socket} ({sock})", markup=False)
    p(f"  log dir:        {st.log_dir}", markup=False)
    p(f"  protocol:       {st.protocol}", markup=False)
    if st.install and st.install.unit:
        active = st.install.active
        p(f"  installed unit: {st.install.unit}{f' ({active})' if active else ''}", markup=False)
    if st.error:
        p(f"  error:          {st.error}", markup=False)
    if not st.running:
        return
    p(f"  servers:        {', '.join(map(str, st.servers)) or 'none'}", markup=False)
    for key, value in st.defaults.items():
        p(f"  default {key}: {value if value is not None else '?'}", markup=False)
    if st.namespaces_error is not None:
        p(f"  namespaces:     unavailable ({st.namespaces_error})", markup=False)
    elif st.namespaces is not None:
        names = ", ".join(row.get("name") or row.get("namespace") or "?" for row in st.namespaces)
        p(f"  namespaces:     {names or 'none'}", markup=False)
    p(f"  clients:        {len(st.clients)}", markup=False)
    for cl in st.clients:
        p(f"    pid {cl.pid} ({cl.name}) on server {cl.server}", markup=False)


@mps_app.command()
def uninstall(
    ctx: typer.Context,
    force: Annotated[
        bool, typer.Option("--force", help="Proceed although MPS clients are connected.")
    ] = False,
) -> None:
    """Stop the installed unit and remove what install created, nothing else.

    Refuses (exit 5, naming them) while MPS clients are connected:
    stopping the daemon ends their CUDA contexts. --force proceeds.

    Examples:
        fracctl node mps uninstall
        fracctl node mps uninstall --force
    """
    from fracctl.flows import node_agent

    c = _app.context(ctx)
    res = node_agent.uninstall(c, force=force)
    if not res.found:
        c.out.print(
            f"nothing to uninstall: no install manifest at {res.manifest}",
            markup=False,
            soft_wrap=True,
        )
        return
    if res.forced_clients:
        c.warn(f"--force: {len(res.forced_clients)} client(s) were connected")
    for line in res.actions:
        c.out.print(line, markup=False, soft_wrap=True)
    for path in res.removed:
        c.out.print(f"removed {path}", markup=False, soft_wrap=True)
    for path in res.kept:
        c.out.print(f"kept {path}", markup=False, soft_wrap=True)


LimitOption = Annotated[
    str | None,
    typer.Option(
        help="Pinned limit, e.g. 4096M (default: the configured one).",
        show_default=False,
        callback=_app.checked(_mib),
    ),
]
StepOption = Annotated[str, typer.Option(help="Allocation step.", callback=_app.checked(_mib))]
DeviceOption = Annotated[int, typer.Option(help="CUDA device ordinal.")]


@app.command("probe-memory")
def probe_memory(
    ctx: typer.Context,
    limit: LimitOption = None,
    step: StepOption = "256M",
    device: DeviceOption = 0,
    output: _app.Output = "table",
) -> None:
    """Allocate device memory in steps under a pinned limit; report what fits.

    Runs as an MPS client through the CUDA driver API (ctypes on
    libcuda). Reports the last successful total, the failing step, and
    the context overhead (limit minus usable): with a 4096 MiB limit,
    3328 MiB usable is typical. Exit 1 when the limit is not enforced;
    exit 3 with no driver or GPU.

    Examples:
        fracctl node probe-memory --limit 4096M --step 256M
        CUDA_MPS_PIPE_DIRECTORY=/run/nvidia-mps fracctl node probe-memory -o json
    """
    from fracctl.flows.guards import node_checks

    limit_mib = _mib(limit) if limit is not None else None  # checked by the callbacks
    step_mib = _mib(step)
    c = _app.context(ctx)
    res = node_checks.probe_memory(c, limit_mib=limit_mib, step_mib=step_mib, device=device)
    if output == "json":
        _app.emit_json(
            {
                **res.result.to_dict(),
                "device_name": res.device.name,
                "driver_version": res.device.driver_version,
                "free_mib_at_start": res.device.free_mib,
                "total_mib": res.device.total_mib,
                "mps_client": res.mps_client,
            }
        )
    else:
        _show_probe(c, res)
    raise typer.Exit(ExitCode.OK if res.result.enforced else ExitCode.FINDING)


def _show_probe(c: Context, res: MemoryProbeReport) -> None:
    """The memory probe's report, one line each: the device, the limit, what fit."""
    r, info = res.result, res.device
    p = c.out.print
    p(f"device {r.device}: {info.name} (CUDA driver {info.driver_version})", markup=False)
    p(f"  driver reports:   {info.free_mib} MiB free of {info.total_mib} MiB", markup=False)
    p(f"  MPS client:       {'yes' if res.mps_client else 'no'}", markup=False)
    p(f"  limit:            {r.limit_mib} MiB in steps of {r.step_mib} MiB", markup=False)
    p(f"  usable:           {r.usable_mib} MiB (last successful total)", markup=False)
    if r.failed_step is not None:
        p(
            f"  failing step:     #{r.failed_step}, to {r.failed_at_mib} MiB ({r.error})",
            markup=False,
            soft_wrap=True,
        )
    if r.enforced:
        p(f"  context overhead: {r.overhead_mib} MiB (limit minus usable)", markup=False)
    else:
        p(
            f"  limit NOT enforced: {r.usable_mib} MiB allocated under a {r.limit_mib} MiB "
            "limit (is this process an MPS client of a daemon with that limit?)",
            markup=False,
            soft_wrap=True,
        )


def register(root: typer.Typer) -> None:
    """Attach to the root app."""
    root.add_typer(app, name="node")
