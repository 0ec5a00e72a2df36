"""The Containerfile, read as instructions: stages, pinned bases, a non-root runtime."""

from __future__ import annotations

import json
import re
import shlex
from dataclasses import dataclass, field
from pathlib import Path

from fracctl import __version__

REPO = Path(__file__).resolve().parents[2]
CONTAINERFILE = REPO / "Containerfile"


@dataclass
class Stage:
    base: str
    name: str = ""
    instructions: list[tuple[str, str]] = field(default_factory=list)

    def all(self, op: str) -> list[str]:
        return [args for o, args in self.instructions if o == op]


def instructions(text: str) -> list[tuple[str, str]]:
    """``(INSTRUCTION, arguments)``, continuation lines joined, comments dropped."""
    out: list[tuple[str, str]] = []
    pending = ""
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if line.endswith("\\"):
            pending += line[:-1] + " "
            continue
        line, pending = pending + line, ""
        op, _, args = line.partition(" ")
        out.append((op.upper(), args.strip()))
    assert not pending, "a continuation line runs off the end of the file"
    return out


def parse() -> tuple[dict[str, str], list[Stage]]:
    args: dict[str, str] = {}
    stages: list[Stage] = []
    for op, rest in instructions(CONTAINERFILE.read_text()):
        if op == "FROM":
            words = rest.split()
            base = re.sub(r"\$\{(\w+)\}", lambda m: args[m.group(1)], words[0])
            name = words[2] if len(words) == 3 and words[1].upper() == "AS" else ""
            stages.append(Stage(base, name))
        elif not stages and op == "ARG":
            key, _, value = rest.partition("=")
            args[key] = value
        else:
            assert stages, f"{op} before the first FROM"
            stages[-1].instructions.append((op, rest))
    return args, stages


def test_every_base_is_pinned_by_tag_and_named_without_a_registry() -> None:
    _args, stages = parse()
    for stage in stages:
        name, _, tag = stage.base.partition(":")
        assert tag and tag != "latest" and re.search(r"\d+\.\d+", tag), stage.base
        first = name.split("/")[0]
        # A registry host would be the first part, with a dot or a port in it.
        assert "/" not in name or not re.search(r"[.:]", first), stage.base


def test_multi_stage_with_a_slim_python_runtime() -> None:
    _args, stages = parse()
    assert len(stages) >= 2
    final = stages[-1]
    assert final.name == ""
    assert final.base.startswith("python:") and "slim" in final.base
    copies = final.all("COPY")
    assert any(c.startswith("--from=build ") and "/opt/fracctl" in c for c in copies)
    # Everything is built in earlier stages: nothing installs Python packages here,
    # and no compiler or build tool is installed.
    runs = " ".join(final.all("RUN"))
    assert "pip install" not in runs
    assert not re.search(r"\b(gcc|g\+\+|make|build-essential|golang)\b", runs)
    assert "rm -rf /var/lib/apt/lists/*" in runs


def test_the_runtime_runs_as_a_non_root_user_created_for_it() -> None:
    _args, stages = parse()
    final = stages[-1]
    (user,) = final.all("USER")
    uid, _, gid = user.partition(":")
    assert uid.isdigit() and int(uid) != 0, "numeric, so runAsNonRoot can verify it"
    assert gid.isdigit() and int(gid) != 0
    runs = " ".join(final.all("RUN"))
    assert f"--uid {uid}" in runs and f"--gid {gid}" in runs
    # USER comes after every RUN: nothing runs as root after the switch is made.
    ops = [op for op, _ in final.instructions]
    assert ops.index("USER") > max(i for i, op in enumerate(ops) if op == "RUN")


def test_fracctl_is_the_entrypoint() -> None:
    _args, stages = parse()
    final = stages[-1]
    (entrypoint,) = final.all("ENTRYPOINT")
    assert json.loads(entrypoint) == ["fracctl"]
    env = " ".join(final.all("ENV"))
    assert "PATH=/opt/fracctl/bin:$PATH" in env


def test_oci_labels() -> None:
    _args, stages = parse()
    final = stages[-1]
    labels: dict[str, str] = {}
    for line in final.all("LABEL"):
        for word in shlex.split(line):
            key, _, value = word.partition("=")
            labels[key] = value
    args = dict(a.partition("=")[::2] for a in final.all("ARG"))
    for key in ("title", "description", "version", "licenses"):
        assert labels.get(f"org.opencontainers.image.{key}"), key
    assert labels["org.opencontainers.image.version"] == "${VERSION}"
    assert args["VERSION"] == __version__
    assert labels["org.opencontainers.image.licenses"] == "Apache-2.0"


def test_the_build_context_is_only_what_the_image_needs() -> None:
    ignore = (REPO / ".containerignore").read_text().split()
    assert ignore[ignore.index("*") :][:4] == ["*", "!pyproject.toml", "!README.md", "!fracctl/"]
    _args, stages = parse()
    copied = [c for s in stages for c in s.all("COPY") if not c.startswith("--from=")]
    assert copied == ["pyproject.toml README.md ./", "fracctl ./fracctl"]
