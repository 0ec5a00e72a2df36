"""The install manifest: what ``install`` created, so ``uninstall`` removes only that.

It lists the host files with their digests, the host folders and the pipe and log
folders created, and lives in ``mps.state_dir`` under ``mps.host_root``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from fracctl.adapters.host import Host
from fracctl.config import MPSConfig
from fracctl.errors import ExternalError
from fracctl.flows.context import Context

MANIFEST = "mps-install.json"


@dataclass
class Manifest:
    """What ``install`` created: host files with their digests, and folders."""

    unit: str | None = None
    files: dict[str, str] = field(default_factory=dict)  # host path -> sha256
    dirs: list[str] = field(default_factory=list)  # host folders, outermost first
    runtime_dirs: list[str] = field(default_factory=list)  # pipe/log folders

    @classmethod
    def load(cls, host: Host, path: str) -> Manifest | None:
        """The manifest at ``path`` on ``host``, if any."""
        text = host.read_text(path)
        if text is None:
            return None
        try:
            data = json.loads(text)
            return cls(
                unit=data.get("unit"),
                files=dict(data.get("files") or {}),
                dirs=list(data.get("dirs") or []),
                runtime_dirs=list(data.get("runtime_dirs") or []),
            )
        except (ValueError, TypeError, AttributeError):
            raise ExternalError(f"{host.path(path)}: the install manifest is not valid") from None

    def save(self, host: Host, path: str) -> None:
        """Write it (recording the state folder too, when this creates it)."""
        body = {
            "version": 1,
            "unit": self.unit,
            "files": self.files,
            "dirs": self.dirs,
            "runtime_dirs": self.runtime_dirs,
        }
        for d in host.make_dirs(Path(path).parent):
            if d not in self.dirs:
                self.dirs.append(d)
                body["dirs"] = self.dirs
        host.write_text(path, json.dumps(body, indent=2) + "\n")


def manifest_path(cfg: MPSConfig) -> str:
    """Where the manifest lives, as a host path."""
    return str(Path(cfg.state_dir) / MANIFEST)


def host_files(ctx: Context) -> Host:
    """The host's files, seen through ``mps.host_root`` (``/host`` in a container)."""
    return Host(ctx.config.mps.host_root, env=ctx.env)
