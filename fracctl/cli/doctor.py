"""``fracctl doctor``: known failure signatures of fractional GPUs, in the live cluster."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Annotated, Literal

import typer

from fracctl.cli import _app
from fracctl.errors import ExitCode

if TYPE_CHECKING:
    from rich.console import Console

    from fracctl.core.doctor import DoctorReport, Finding

DoctorFormat = Literal["table", "json", "github", "prometheus"]

#: Evidence lines a finding shows on the terminal; -o json has the first LISTED.
SHOWN = 20


def command(
    ctx: typer.Context,
    output: Annotated[
        DoctorFormat,
        typer.Option("-o", "--output", help=_app.OUTPUT_HELP, parser=_app.one_of(DoctorFormat)),
    ] = "table",
) -> None:
    """Look for the known ways fractional GPUs fail, read-only.

    Checks, in the install guide's troubleshooting order: KAI's
    reservation pods, the nvidia RuntimeClass, unpinned node-agent and
    scheduler images, node-agent DaemonSets not ready (naming the
    nodes), GPU nodes without nvidia.com/gpu.memory or
    nvidia.com/gpu.present, KAI's Config not in NvFractions mode, the
    fractioning config missing or not Ready, selected nodes without the
    readiness condition, nodes opted in for fractions that the config
    does not select, fractional pods Pending (scheduler and binder
    messages, grouped), fractional pods that may run as root, GPU nodes
    without the GPU taint, and pods that request no GPU on GPU nodes.
    Each finding comes with its symptom, likely cause and fix
    (runbooks/doctor.md).

    Only reads (GET); never changes the cluster. Exits 0 when healthy,
    1 on any finding, 3 when the cluster cannot be read. -o prometheus
    prints each check's status and findings as Prometheus metrics.

    Examples:
        fracctl doctor
        fracctl doctor -o json | jq '.findings[].fix'
        fracctl doctor -o github
        fracctl doctor -o prometheus > fracctl_doctor.prom
    """
    from fracctl.flows.doctor import doctor

    c = _app.context(ctx)
    start = c.clock.monotonic()
    report = doctor(c)
    if output == "prometheus":
        from fracctl.core.prometheus import doctor_metrics
        from fracctl.redact import redact

        took = c.clock.monotonic() - start
        sys.stdout.write(redact(doctor_metrics(report, now=c.clock.now(), seconds=took)))
    elif output == "json":
        _app.emit_json(report.to_dict())
    elif output == "github":
        sys.stdout.write(github(report))
    else:
        render(c.out, report)
    raise typer.Exit(ExitCode.OK if report.ok else ExitCode.FINDING)


def github(report: DoctorReport) -> str:
    """An ``::error`` per finding and a closing notice, as GitHub workflow commands."""
    from fracctl.core.drift.report import annotation

    lines = [
        annotation(
            "error",
            f"{f.symptom}\nCause: {f.cause}\nFix: {f.fix}",
            title=f"fracctl doctor: {f.check}",
        )
        for f in report.findings
    ]
    lines.append(annotation("notice", verdict(report), title="fracctl doctor"))
    return "\n".join(lines) + "\n"


def verdict(report: DoctorReport) -> str:
    """One line: healthy, or how many findings."""
    ran = sum(1 for r in report.results if r.status != "skipped")
    if report.ok:
        return f"doctor: healthy ({ran} checks passed)"
    failed = sum(1 for r in report.results if r.status == "finding")
    return f"doctor: {len(report.findings)} finding(s) from {failed} of {ran} checks"


def render(out: Console, report: DoctorReport) -> None:
    """The checks as a table, then each finding with its symptom, cause and fix."""
    from rich.text import Text

    from fracctl.cli import _table

    styles = {
        "ok": ("ok", "green"),
        "finding": ("FINDING", "bold red"),
        "skipped": ("skipped", "dim"),
    }
    rows = []
    for r in report.results:
        word, style = styles[r.status]
        rows.append((Text(r.check.id), Text(word, style=style), Text(r.note)))
    _table.show(out, ("check", "result", "note"), rows)
    for f in report.findings:
        out.print(f"\n{f.check}: {f.symptom}", markup=False, soft_wrap=True)
        for line in f.evidence[:SHOWN]:
            out.print(f"  - {line}", markup=False, soft_wrap=True)
        for line in _more(f):
            out.print(f"  … {line}", markup=False, soft_wrap=True)
        out.print(f"  cause: {f.cause}", markup=False, soft_wrap=True)
        # Unwrapped, so the command can be copied.
        out.print(f"  fix:   {f.fix}", markup=False, soft_wrap=True)
    out.print(("\n" if report.findings else "") + verdict(report), markup=False, soft_wrap=True)


def register(root: typer.Typer) -> None:
    """Attach to the root app."""
    root.command("doctor")(command)


def _more(f: Finding) -> list[str]:
    """What a finding's terminal lines leave out: evidence beyond SHOWN, subjects not listed."""
    from fracctl.core.doctor.model import LISTED

    out = []
    hidden = len(f.evidence) - SHOWN
    if hidden > 0:
        out.append(f"{hidden:,} more line(s): fracctl doctor -o json lists them")
    if f.unlisted:
        out.append(f"{f.unlisted:,} more counted, not listed (a finding lists {LISTED:,})")
    return out
