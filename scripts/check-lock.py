"""Check that requirements/dev.lock still answers pyproject.toml.

Every requirement of the project (its dependencies, the ``dev`` extra and the build
system's) must be pinned in the lock (``name==version``) to a version the requirement
allows, and every pin must carry hashes. Offline, standard library and the lock's own
``packaging``. Exit 1 with one line per problem; update the lock with ``make lock``.

Usage: python scripts/check-lock.py [pyproject.toml] [requirements/dev.lock]
"""

from __future__ import annotations

import re
import sys
import tomllib
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

PIN = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==([^\s\\;]+)", re.M)


def pins(lock: str) -> dict[str, tuple[str, bool]]:
    """Each pinned name: its version, and whether hashes follow it."""
    out = {}
    blocks = re.split(r"\n(?=[A-Za-z0-9])", lock)
    for block in blocks:
        m = PIN.match(block)
        if m:
            out[canonicalize_name(m[1])] = (m[2], "--hash=sha256:" in block)
    return out


def wanted(pyproject: dict) -> list[str]:
    project = pyproject["project"]
    return [
        *project.get("dependencies", []),
        *project.get("optional-dependencies", {}).get("dev", []),
        *pyproject.get("build-system", {}).get("requires", []),
    ]


def problems(pyproject_path: Path, lock_path: Path) -> list[str]:
    pinned = pins(lock_path.read_text())
    found = []
    for text in wanted(tomllib.loads(pyproject_path.read_text())):
        req = Requirement(text.split("#")[0].strip())
        if req.marker is not None and not req.marker.evaluate():
            continue
        name = canonicalize_name(req.name)
        if name not in pinned:
            found.append(f"{req} is not in {lock_path}")
        elif not req.specifier.contains(pinned[name][0], prereleases=True):
            found.append(f"{req} does not allow the locked {name}=={pinned[name][0]}")
    found += [f"{n}=={v} has no hashes" for n, (v, hashed) in pinned.items() if not hashed]
    return found


def main(argv: list[str]) -> int:
    pyproject = Path(argv[1] if len(argv) > 1 else "pyproject.toml")
    lock = Path(argv[2] if len(argv) > 2 else "requirements/dev.lock")
    found = problems(pyproject, lock)
    for p in found:
        print(f"check-lock: {p}", file=sys.stderr)
    if found:
        print("check-lock: update the lock with `make lock`", file=sys.stderr)
        return 1
    print(f"check-lock: {lock} pins every requirement of {pyproject}, with hashes")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
