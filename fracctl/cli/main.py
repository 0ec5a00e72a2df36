"""The ``fracctl`` entry point: global options, command registration, one error boundary."""

from __future__ import annotations

import contextlib
import os
import sys
from types import TracebackType
from typing import Annotated

import typer

from fracctl import __version__
from fracctl.cli import _app, drift, node, nodes, preflight, probe, rbac, recreate, render, sandbox
from fracctl.cli import doctor as doctor_cmd
from fracctl.cli import lint as lint_cmd
from fracctl.errors import ExitCode, FracctlError
from fracctl.redact import RedactingWriter, redact

app = typer.Typer(
    name="fracctl",
    help=(
        "GitOps safety for immutable-field changes and fractional GPU rollouts.\n\n"
        "Renders what git wants, compares it with what the cluster really has, refuses "
        "when it is unsafe, and performs delete -> recreate -> wait as one guarded, "
        "resumable operation."
    ),
    no_args_is_help=True,
    add_completion=True,
    pretty_exceptions_enable=False,
    pretty_exceptions_show_locals=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)


def _version(value: bool) -> None:
    if value:
        print(f"fracctl {__version__}")
        raise typer.Exit()


@app.callback()
def _globals(
    ctx: typer.Context,
    config: Annotated[
        str | None, typer.Option("--config", "-c", help="Path to fracctl.yaml.", show_default=False)
    ] = None,
    kubeconfig: Annotated[
        str | None, typer.Option(help="Kubeconfig file (else $KUBECONFIG).", show_default=False)
    ] = None,
    context: Annotated[
        list[str] | None,
        typer.Option(
            "--context",
            metavar="NAME",
            help="Kubeconfig context; repeat it to address a fleet (drift, preflight, recreate).",
            show_default=False,
        ),
    ] = None,
    all_contexts: Annotated[
        bool,
        typer.Option(
            "--all-contexts",
            help="Address every context of the kubeconfig as a fleet (drift, preflight, recreate).",
        ),
    ] = False,
    debug: Annotated[
        bool, typer.Option("--debug", help="Show tracebacks of unexpected errors.")
    ] = False,
    version: Annotated[
        bool,
        typer.Option("--version", callback=_version, is_eager=True, help="Print the version."),
    ] = False,
) -> None:
    """Global options."""
    contexts = list(context or [])
    ctx.obj = _app.Globals(
        config=config,
        kubeconfig=kubeconfig,
        context=contexts[0] if len(contexts) == 1 else None,
        contexts=contexts,
        all_contexts=all_contexts,
        debug=debug,
    )


# The one place commands are listed. Command modules import _app, never this module,
# so registering here keeps the CLI free of import circles.
for _module in (
    render,
    drift,
    preflight,
    recreate,
    nodes,
    node,
    probe,
    sandbox,
    rbac,
    doctor_cmd,
    lint_cmd,
):
    _module.register(app)


def _err(message: str) -> None:
    # Plain text on purpose: API messages contain brackets that markup would eat.
    with contextlib.suppress(OSError, ValueError):
        sys.stdout.flush()  # what was printed before the error comes before it
    sys.stderr.write(redact(message.rstrip("\n")) + "\n")
    sys.stderr.flush()


def _redacted_traceback(
    kind: type[BaseException], exc: BaseException, tb: TracebackType | None
) -> None:
    """``sys.excepthook`` for ``--debug``: the traceback, with known secrets masked."""
    import traceback

    sys.stderr.write(redact("".join(traceback.format_exception(kind, exc, tb))))
    sys.stderr.flush()


def _click_usage(e: Exception) -> str | None:
    """The message of a command-line usage error raised by typer's click layer, if it is one."""
    fmt = getattr(e, "format_message", None)
    if fmt is None or not hasattr(e, "exit_code"):
        return None
    message = str(fmt())
    ctx = getattr(e, "ctx", None)
    if ctx is not None and type(e).__name__ != "ClickException":
        message += f" (see '{ctx.command_path} --help')"
    return message


def main(argv: list[str] | None = None) -> None:
    """Run fracctl; the only place exceptions become exit codes.

    Everything written to stdout and stderr while it runs goes through
    :func:`fracctl.redact.redact`, so no registered secret leaves in any form.
    """
    args = sys.argv[1:] if argv is None else argv
    debug = "--debug" in args or os.environ.get("FRACCTL_DEBUG") == "1"
    streams = sys.stdout, sys.stderr
    out, err = RedactingWriter(streams[0]), RedactingWriter(streams[1])
    sys.stdout, sys.stderr = out, err
    try:
        code = _run(args, debug)
    except Exception:  # --debug: unexpected errors go on to the interpreter's traceback
        if argv is None:
            sys.excepthook = _redacted_traceback
        raise
    finally:
        for wrapper in (out, err):
            with contextlib.suppress(OSError, ValueError):
                wrapper.flush()
        sys.stdout, sys.stderr = streams
    sys.exit(code)


def _run(args: list[str], debug: bool) -> int:
    """Run the command; its exit code. Only unexpected errors under ``--debug`` escape."""
    try:
        rc = app(args=args, prog_name="fracctl", standalone_mode=False)
        code = int(rc) if isinstance(rc, int) else 0
        if code == ExitCode.INTERRUPTED:  # typer turns Ctrl-C into a returned 130
            _err("Interrupted.")
    except FracctlError as e:
        _err(f"Error: {e}")
        code = int(e.exit_code)
    except typer.Exit as e:
        code = int(e.exit_code)
    except (KeyboardInterrupt, typer.Abort):
        _err("Interrupted.")
        code = int(ExitCode.INTERRUPTED)
    except BrokenPipeError:
        code = 0
    except Exception as e:  # the error boundary: anything unplanned
        usage = _click_usage(e)
        if usage is not None:
            _err(f"Error: {usage}")
            code = int(ExitCode.USAGE)
        elif debug:
            raise
        else:
            _err(f"Unexpected error: {type(e).__name__}: {e}. Rerun with --debug for a traceback.")
            code = int(ExitCode.EXTERNAL)
    return code
