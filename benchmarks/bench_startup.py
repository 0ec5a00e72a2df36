"""Start-up time of `fracctl --version`, `--help` and `drift --help`, beside kubectl's.

Heavy libraries (kubernetes, httpx, ruamel) must not load on these paths; this measures
what a user waits for before anything happens. Every command is run in the same loop,
interleaved, so a change in machine load affects them all alike; `kubectl version
--client` is the yardstick the target is stated in (`--help` at most 3.5x of it).
Beside them run two floors: typer alone printing the same help the plain way, and the
lean floor, typer printing it the way fracctl does (commands listed from their summaries,
its rich renderer without what the help never uses) with no fracctl code at all: what no
change to fracctl's own code can beat.

fracctl is invoked as a user would: the console script next to the interpreter
(`.venv/bin/fracctl`) when it exists, else `python -m fracctl`.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import textwrap
import time
from pathlib import Path

DEFAULT_OUT = Path(__file__).resolve().parent / "out" / "startup.json"
#: `fracctl --help` may take at most this many times `kubectl version --client`.
RATIO_LIMIT = 3.5
#: The root callback both floors register: fracctl's global options, as typer declares them.
ROOT = """\
@app.callback()
def root(
    config: Annotated[str | None, typer.Option("--config", "-c", help="Path to fracctl.yaml.",
                                               show_default=False)] = None,
    kubeconfig: Annotated[str | None, typer.Option(help="Kubeconfig file (else $KUBECONFIG).",
                                                   show_default=False)] = None,
    context: Annotated[list[str] | None, typer.Option("--context", metavar="NAME",
                                                      help={context!r},
                                                      show_default=False)] = None,
    all_contexts: Annotated[bool, typer.Option("--all-contexts", help={all_contexts!r})] = False,
    debug: Annotated[bool, typer.Option("--debug", help={debug!r})] = False,
    version: Annotated[bool, typer.Option("--version", is_eager=True,
                                          help="Print the version.")] = False,
) -> None:
    \"\"\"Global options.\"\"\"
"""
#: The floor: typer alone printing the same help (fracctl's root options, its command
#: names and summaries), with no fracctl module, no lazy loading and no redaction.
FLOOR = """\
from typing import Annotated

import typer

app = typer.Typer(name="fracctl", help={help!r}, no_args_is_help=True,
                  context_settings={{"help_option_names": ["-h", "--help"]}},
                  pretty_exceptions_enable=False)


{root}

def command() -> None:
    pass


for name, summary in {commands!r}.items():
    app.command(name, help=summary)(command)
app()
"""


def fracctl_command() -> tuple[list[str], str]:
    """How to run fracctl as a user would, and a description of it."""
    script = Path(sys.executable).with_name("fracctl")
    if script.is_file():
        return [str(script)], f"console script {script}"
    return [sys.executable, "-m", "fracctl"], f"{sys.executable} -m fracctl"


#: The lean floor: typer printing the same help the way fracctl does (the command list from
#: summaries, no command built; typer's rich renderer without the Markdown and traceback
#: renderers the help never uses), with no fracctl code. What no change to fracctl beats.
LEAN = """\
import sys
import types
from typing import Annotated

import typer
from typer.core import TyperCommand, TyperGroup

UNUSED = ("rich.markdown", "rich.traceback")
for name in UNUSED:
    stand_in = types.ModuleType(name)
    stand_in.__getattr__ = lambda attr: type(attr, (), {{}})
    sys.modules[name] = stand_in
import typer.rich_utils  # noqa: E402

for name in UNUSED:
    del sys.modules[name]
SUMMARIES = {commands!r}


class Group(TyperGroup):
    def list_commands(self, ctx):
        return list(SUMMARIES)

    def get_command(self, ctx, name):
        return TyperCommand(name, help=SUMMARIES[name]) if name in SUMMARIES else None


app = typer.Typer(name="fracctl", help={help!r}, cls=Group, no_args_is_help=True,
                  context_settings={{"help_option_names": ["-h", "--help"]}},
                  pretty_exceptions_enable=False)


{root}

app(prog_name="fracctl")
"""

#: Where `fracctl --help`'s time goes, measured inside one fresh process, in the order the
#: run imports: typer, fracctl's own modules, typer's rich help renderer as fracctl imports
#: it (without the Markdown and traceback renderers it never uses), then the run itself.
PARTS = """\
import contextlib, io, time
t0 = time.perf_counter()
import typer
t1 = time.perf_counter()
from fracctl.cli import _root, main
t2 = time.perf_counter()
_root.import_rich_help()
t3 = time.perf_counter()
with contextlib.redirect_stdout(io.StringIO()), contextlib.suppress(SystemExit):
    main.main(["--help"])
t4 = time.perf_counter()
print(t1 - t0, t2 - t1, t3 - t2, t4 - t3)
"""
PART_NAMES = (
    "typer imported",
    "fracctl's modules imported",
    "typer's rich help renderer imported",
    "the help rendered",
)


def parts(runs: int) -> dict[str, float]:
    """The median of each part of `fracctl --help` (:data:`PARTS`) over ``runs`` processes."""
    seen: list[list[float]] = [[] for _ in PART_NAMES]
    for _ in range(runs):
        out = subprocess.run([sys.executable, "-c", PARTS], capture_output=True, text=True,
                             check=True).stdout.split()  # fmt: skip
        for i, value in enumerate(out):
            seen[i].append(float(value))
    return {name: statistics.median(t) for name, t in zip(PART_NAMES, seen, strict=True)}


def floor_script(where: Path) -> Path:
    """Write both floors' scripts (:data:`FLOOR`, :data:`LEAN`) from fracctl's own table;
    the first one's path."""
    from fracctl.cli import _root
    from fracctl.cli.main import COMMANDS

    app = _root.new_app()
    params = {p.name: p for p in typer_params(app)}
    root = ROOT.format(context=params["context"].help, all_contexts=params["all_contexts"].help,
                       debug=params["debug"].help)  # fmt: skip
    summaries = {name: summary for name, (_module, summary) in COMMANDS.items()}
    script = FLOOR.format(help=app.info.help, root=root, commands=summaries)
    where.mkdir(parents=True, exist_ok=True)
    path = where / "floor_help.py"
    path.write_text(textwrap.dedent(script), encoding="utf-8")
    lean = LEAN.format(help=app.info.help, root=root, commands=summaries)
    (where / "floor_lean_help.py").write_text(lean, encoding="utf-8")
    return path


def typer_params(app: object) -> list:  # type: ignore[type-arg]
    """The root callback's parameters as click builds them."""
    import typer.main

    return list(typer.main.get_group(app).params)  # type: ignore[arg-type]


def commands(floor_dir: Path | None = None) -> tuple[dict[str, list[str]], list[str]]:
    """The commands to time, by label, and notes about what was left out."""
    fracctl, _ = fracctl_command()
    found: dict[str, list[str]] = {}
    notes = []
    kubectl = shutil.which("kubectl")
    if kubectl:
        found["kubectl version --client"] = [kubectl, "version", "--client"]
    else:
        notes.append("kubectl not found on PATH: its yardstick and the ratio are skipped")
    found["python -c pass"] = [sys.executable, "-c", "pass"]
    found["fracctl --version"] = [*fracctl, "--version"]
    found["fracctl --help"] = [*fracctl, "--help"]
    found["fracctl drift --help"] = [*fracctl, "drift", "--help"]
    if floor_dir is not None:
        floor = floor_script(floor_dir)
        found["floor: typer, same --help"] = [sys.executable, str(floor), "--help"]
        lean = str(floor.with_name("floor_lean_help.py"))
        found["floor: typer as fracctl uses it"] = [sys.executable, lean, "--help"]
    return found, notes


def run_once(cmd: list[str]) -> float:
    t0 = time.perf_counter()
    subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    return time.perf_counter() - t0


def measure(cmds: dict[str, list[str]], runs: int) -> dict[str, list[float]]:
    """Run each command ``runs`` times, interleaved (one of each per round)."""
    for cmd in cmds.values():  # warm the file cache and byte-code; not counted
        run_once(cmd)
    times: dict[str, list[float]] = {label: [] for label in cmds}
    for _ in range(runs):
        for label, cmd in cmds.items():
            times[label].append(run_once(cmd))
    return times


def summary(times: list[float]) -> dict[str, float]:
    return {"median": statistics.median(times), "min": min(times), "max": max(times)}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--quick", action="store_true", help="5 runs")
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT, help="JSON result file")
    args, _ = ap.parse_known_args(argv)  # run.py passes every bench the same arguments
    runs = 5 if args.quick else args.runs
    cmds, notes = commands(args.out.parent)
    _, how = fracctl_command()
    print(f"fracctl run as: {how}")
    for note in notes:
        print(f"note: {note}")
    times = measure(cmds, runs)
    result: dict[str, object] = {"runs": runs, "fracctl": how, "notes": notes, "commands": {}}
    per_command: dict[str, object] = {}
    for label, t in times.items():
        s = summary(t)
        per_command[label] = {"argv": cmds[label], "times_s": t, **s}
        print(
            f"{label:<32} median {s['median'] * 1000:6.1f} ms   min {s['min'] * 1000:6.1f} ms"
            f"   max {s['max'] * 1000:6.1f} ms   ({runs} runs)"
        )
    result["commands"] = per_command
    kubectl = times.get("kubectl version --client")
    if kubectl:
        ratio = statistics.median(times["fracctl --help"]) / statistics.median(kubectl)
        result["help_to_kubectl_ratio"] = ratio
        print(f"fracctl --help / kubectl version --client: {ratio:.2f}x (at most {RATIO_LIMIT}x)")
        floor = statistics.median(times["floor: typer, same --help"]) / statistics.median(kubectl)
        result["floor_to_kubectl_ratio"] = floor
        print(f"the floor (typer alone, the same help) / kubectl version --client: {floor:.2f}x")
        lean = statistics.median(times["floor: typer as fracctl uses it"])
        result["lean_floor_to_kubectl_ratio"] = lean / statistics.median(kubectl)
        print(
            "the lean floor (typer as fracctl uses it, no fracctl code) / kubectl version "
            f"--client: {result['lean_floor_to_kubectl_ratio']:.2f}x"
        )
    split = parts(runs)
    result["help_parts_s"] = split
    print("where `fracctl --help` goes, inside the process (medians):")
    for name, t in split.items():
        print(f"  {name:<36} {t * 1000:6.1f} ms")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
