"""Installing CRDs from YAML files into the sandbox's control plane, and waiting for them."""

from __future__ import annotations

import time
from collections.abc import Iterable
from pathlib import Path

from fracctl.adapters.kube import Kube
from fracctl.core.kube.resources import CRDS
from fracctl.errors import Conflict, TimedOut


def install_crd_files(
    kube: Kube, files: Iterable[Path], *, timeout: float = 60.0, replace: bool = False
) -> None:
    """Create each file's CRD; wait until every one is Established.

    One that exists is kept as it is, or with ``replace`` given the file's spec.
    """
    from ruamel.yaml import YAML

    names = []
    for path in files:
        crd = YAML(typ="safe").load(path.read_text())
        names.append(crd["metadata"]["name"])
        try:
            kube.create(CRDS, crd)
        except Conflict:
            if replace:
                live = kube.get(CRDS, crd["metadata"]["name"])
                live["spec"] = crd["spec"]
                kube.replace(CRDS, live)
    deadline = time.monotonic() + timeout
    for name in names:
        while True:
            live = kube.get(CRDS, name)
            conds = (live.get("status") or {}).get("conditions") or []
            if any(c.get("type") == "Established" and c.get("status") == "True" for c in conds):
                break
            if time.monotonic() > deadline:
                raise TimedOut(f"CRD {name} not established after {timeout:.0f}s")
            time.sleep(0.2)
