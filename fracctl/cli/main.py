"""The ``fracctl`` entry point: the command list, one error boundary.

Start-up is kept short: this module imports neither typer nor any command, so
``fracctl --version`` is answered with the standard library alone, and a run imports the
module of the command it runs and no other (:mod:`fracctl.cli._root`).
"""

from __future__ import annotations

import contextlib
import os
import sys
from types import TracebackType
from typing import TYPE_CHECKING, Any, NoReturn

from fracctl import __version__
from fracctl.redact import RedactingWriter, redact

if TYPE_CHECKING:
    import typer

# The one place commands are listed: each command's name, the module under fracctl.cli
# that registers it (``register(root)``), and its summary in ``fracctl --help``, in the
# order ``--help`` lists them (typer's: commands, then groups). Command modules import
# _app, never this module, so the CLI stays free of import circles. tests/cli/test_cli.py
# holds each summary equal to the command's own help, and the list to the modules.
COMMANDS: dict[str, tuple[str, str]] = {
    "render": (
        "render",
        "Render the desired manifests of a git revision, without touching any checkout.",
    ),
    "drift": (
        "drift",
        "Compare the live cluster with git on immutable fields; ask the API server to judge.",
    ),
    "preflight": ("preflight", "Run every guard a recreate must pass, and show the blast radius."),
    "recreate": (
        "recreate",
        "Delete and recreate the fractioning config (or a built-in object) from git, guarded.",
    ),
    "wait": (
        "wait",
        "Wait until every node the live config selects reports the readiness condition.",
    ),
    "probe": ("probe", "Send a fractional probe pod at a pool; report what KAI did with it."),
    "doctor": ("doctor", "Look for the known ways fractional GPUs fail, read-only."),
    "lint": ("lint", "Check rendered manifests for GPU scheduling mistakes, offline."),
    "fleet": (
        "fleet_status",
        "Fleet rollouts: an ApplicationSet's progress; the Flux hub's objects.",
    ),
    "gate": (
        "gate",
        "Recreate as Argo CD's PreSync and PostSync hooks: the gate of a progressive sync.",
    ),
    "nodes": (
        "nodes",
        "Check and label GPU nodes for fractions (opt-in label; denied classes such as H200).",
    ),
    "node": ("node", "On a GPU host: preflight, the MPS control daemon, the memory probe."),
    "sandbox": ("sandbox", "A local real control plane seeded with a scenario (demo, rehearsal)."),
    "policy": ("policy", "The admission policy that lets only fracctl recreate delete the config."),
    "rbac": ("rbac", "The least-privilege RBAC of each fracctl role, to review and apply."),
    "config": (
        "config",
        "The effective configuration, where each value came from, and the file's schema.",
    ),
}


def complete_app() -> typer.Typer:
    """The CLI with every command imported and registered (for introspection and tests).

    ``main`` runs the same root and commands, importing a command only when it is used.
    """
    import importlib

    # Imported here so that the import graph shows main registering every command
    # (tests/project/test_import_graph.py); which module registers what is read from COMMANDS.
    from fracctl.cli import (  # noqa: F401
        _root,
        config,
        doctor,
        drift,
        fleet_status,
        gate,
        lint,
        node,
        nodes,
        policy,
        preflight,
        probe,
        rbac,
        recreate,
        render,
        sandbox,
    )

    root = _root.new_app()
    for name in dict.fromkeys(module for module, _ in COMMANDS.values()):
        importlib.import_module(_root.module_path(name)).register(root)
    _root.reflow_help(root)
    return root


def __getattr__(name: str) -> Any:
    """``app``: the complete CLI (:func:`complete_app`), built on first use."""
    if name == "app":
        globals()["app"] = built = complete_app()
        return built
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


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
    if not message.strip():  # a bare group: click printed its help, there is nothing to say
        return ""
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
    if argv is None:  # the process's own entry: end it now, the interpreter left standing
        _exit(code)
    sys.exit(code)


def _exit(code: int) -> NoReturn:
    """End the process with ``code``: exit handlers run and streams flushed, nothing else.

    The interpreter's own shutdown frees every object of every imported module one by
    one; with the Kubernetes client loaded that took 0.3 to 0.9 s on the benchmarks'
    2-CPU host after the command had finished and said so, which a recreate's caller
    waits out (``benchmarks/bench_window.py``: last node ready to fracctl's return).
    ``atexit`` handlers (``weakref.finalize``, logging's shutdown) still run first; no
    thread is left that must finish (the lock's renewal is a daemon and stopped).
    """
    import atexit

    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError, AttributeError):
            stream.flush()
    os._exit(code)


def _run(args: list[str], debug: bool) -> int:
    """Run the command; its exit code. Only unexpected errors under ``--debug`` escape."""
    if args == ["--version"]:  # the common case, answered with the standard library alone
        print(f"fracctl {__version__}")
        return 0
    import typer

    from fracctl.cli import _root
    from fracctl.errors import ExitCode, FracctlError

    if _root.wants_help(args):
        _root.import_rich_help()
    try:
        rc = _root.lazy_app(COMMANDS)(args=args, prog_name="fracctl", standalone_mode=False)
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
            if usage:
                _err(f"Error: {usage}")
            code = int(ExitCode.USAGE)
        elif debug:
            raise
        else:
            _err(f"Unexpected error: {type(e).__name__}: {e}. Rerun with --debug for a traceback.")
            code = int(ExitCode.EXTERNAL)
    return code
