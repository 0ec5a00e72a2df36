"""Off a terminal a table loses nothing: the console script, its stdout a pipe, no COLUMNS.

Rich fits a table to 80 columns when it is not writing to a terminal, and crops or
folds what does not fit: make demo's log and every CI job lost the right-hand columns.
Each command here is run as a real process against the real API server, with cells far
wider than 80 columns, and every header and every cell must be in its output whole.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from fracctl.core.drift.report import value_text
from fracctl.errors import ExitCode
from tests.support.helpers import Cluster
from tests.support.recreate_fixtures import Incident, make_incident

# 63 characters: the longest a node name can be while it is its hostname label's value.
LONG_NODE = "b200-rack-17-unit-04-a-long-node-name-that-no-crop-can-hide-01"


@pytest.fixture
def incident(cluster: Cluster, tmp_path: Path) -> Incident:
    inc = make_incident(cluster, tmp_path)
    cluster.node(LONG_NODE, gpu_class="b200")  # opt-in missing: a REFUSED row, long cells
    return inc


def fracctl(incident: Incident, *args: str) -> subprocess.CompletedProcess[str]:
    """The console script as CI runs it: stdout a pipe, no COLUMNS, no terminal."""
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
    done = subprocess.run(
        [sys.executable, "-m", "fracctl", "-c", str(incident.config_file), *args],
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,  # stdout a pipe
        text=True,
        timeout=120,
    )
    assert "Traceback" not in done.stderr, done.stderr
    return done


def assert_whole(out: str, headers: list[str], rows: list[list[str]]) -> None:
    """Every header (in capitals) and every cell's full text, each line of it, in ``out``."""
    header = next(line for line in out.splitlines() if line.startswith(headers[0].upper()))
    assert header.split() == " ".join(h.upper() for h in headers).split(), header
    for row in rows:
        for cell in row:
            for line in cell.splitlines():
                assert line in out, f"{line!r} is not whole in:\n{out}"
    assert not any(ch in out for ch in "┃│━─┏┗…"), out  # plain columns, nothing cut


def assert_records(out: str, headers: list[str], rows: list[list[str]], keys: int) -> None:
    """A table too wide, as records: the key columns as the table, every other cell whole
    on its own line (``    header: value``) under its row."""
    assert_whole(out, headers[:keys], [row[:keys] for row in rows])
    for row in rows:
        for header, cell in zip(headers[keys:], row[keys:], strict=True):
            for line in cell.splitlines():
                if line:
                    assert f"    {header}: {line}\n" in out, f"{line!r} is not whole in:\n{out}"


def preflight_rows(data: dict[str, Any]) -> list[list[str]]:
    return [
        [c["name"], "pass" if c["ok"] else "REFUSED", c["evidence"], c["fix"]]
        for c in data["checks"]
    ]


PREFLIGHT = ["check", "result", "evidence", "what to do"]


def test_preflight_table_in_a_pipe_loses_nothing(incident: Incident) -> None:
    data = json.loads(fracctl(incident, "preflight", "-o", "json").stdout)
    rows = preflight_rows(data)
    assert any(LONG_NODE in cell for row in rows for cell in row)
    assert max(len("   ".join(row)) for row in rows) > 160  # a crop anywhere would show
    r = fracctl(incident, "preflight")
    assert r.returncode == ExitCode.FINDING, r.stderr
    assert_records(r.stdout, PREFLIGHT, rows, keys=2)
    assert f"  opt-in-missing: fracctl nodes label {LONG_NODE}\n" in r.stdout


def test_drift_table_in_a_pipe_loses_nothing(incident: Incident) -> None:
    data = json.loads(fracctl(incident, "drift", "-o", "json").stdout)
    rows = []
    for o in data["objects"]:
        key = f"{o['kind']}/{o['name']}"
        rows += [
            [key, o["verdict"], f["path"], value_text(f["live"], 80), value_text(f["desired"], 80)]
            for f in o["fields"]
        ]
    assert rows and len("   ".join(rows[0])) > 80
    r = fracctl(incident, "drift")
    assert r.returncode == ExitCode.FINDING, r.stderr
    assert_whole(r.stdout, ["OBJECT", "VERDICT", "FIELD", "LIVE", "DESIRED"], rows)
    line = next(ln for ln in r.stdout.splitlines() if ln.startswith(rows[0][0]))
    assert line.split("   ")[-1].strip() == rows[0][-1]  # one row, its last column whole


def test_recreate_dry_run_in_a_pipe_loses_nothing(incident: Incident) -> None:
    data = json.loads(fracctl(incident, "recreate", "--dry-run", "-o", "json").stdout)
    r = fracctl(incident, "recreate", "--dry-run")
    assert r.returncode == ExitCode.FINDING, r.stderr
    assert_records(r.stdout, PREFLIGHT, preflight_rows(data["guards"]), keys=2)
    ago = re.compile(r"[\d.]+s ago")  # the operator's Lease, renewed between the two runs
    text = ago.sub("", r.stdout)
    for proof in data["proofs"]:  # the plan's own lines are not wrapped either (a uid)
        assert f"  proven: {ago.sub('', proof)}\n" in text
    assert incident.cluster.live_target() is not None  # a dry run
