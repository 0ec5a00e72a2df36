"""The Helm renderer: ``helm template`` of a chart, each object traced to its template."""

from __future__ import annotations

import re
import shutil
from collections.abc import Sequence
from pathlib import Path, PurePosixPath

from fracctl.adapters.render.documents import Document, manifests_of, parse_documents
from fracctl.adapters.render.tool import run_tool
from fracctl.errors import ExternalError, UsageError

_HELM_SOURCE = re.compile(r"^# Source: (\S+)")


def render_helm(
    export: Path,
    rel: str,
    timeout: float,
    *,
    release: str = "",
    namespace: str = "",
    values: Sequence[str] = (),
    binary: str = "helm",
) -> list[Document]:
    """``helm template`` of the chart at ``rel``, with ``binary`` (a name on PATH or a path)."""
    helm = shutil.which(binary)
    if helm is None:
        raise UsageError(
            f"{rel or '.'} is a Helm chart: rendering it needs helm, but {binary!r} is not "
            + ("on PATH" if "/" not in binary else "an executable"),
            hint="install helm, or name the one to use: helm.binary in fracctl.yaml "
            "(or FRACCTL_HELM_BINARY)",
        )
    chart = export / rel if rel else export
    argv = [helm, "template", release or chart.name or "release", str(chart)]
    if namespace:
        argv += ["--namespace", namespace]
    for v in values:
        vf = chart / v
        if not vf.is_file():
            raise ExternalError(
                f"helm values file {(Path(rel) / v).as_posix()} not in the revision"
            )
        argv += ["--values", str(vf)]
    text = run_tool(argv, export, f"helm template of {rel or '.'}", timeout)
    out: list[Document] = []
    for doc in parse_documents(text, "helm output", stream=True):
        m = next(filter(None, (_HELM_SOURCE.match(ln) for ln in doc.text.splitlines())), None)
        file = ""
        if m:
            # "# Source: <chart>/templates/x.yaml": make it repository-relative.
            inner = m.group(1).split("/", 1)[1] if "/" in m.group(1) else m.group(1)
            file = (PurePosixPath(rel) / inner).as_posix() if rel else inner
        origin = f"{doc.origin}, from {file}" if file else doc.origin
        for d in manifests_of([Document(doc.obj, file, 1 if file else 0, "", origin)]):
            out.append(d)
    return out
