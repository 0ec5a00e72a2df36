"""KWOK's own stages at a test's pace: the same stages, shorter delays.

KWOK's ``pod-general`` stages (``kustomize/stage/pod/general`` in its module) start, ready
and complete a pod 1 s after the step before plus up to 5 s of jitter, and delete a
terminating pod at a random moment up to its ``deletionTimestamp`` (a grace period of
30 s by default). Those delays stand in for an image pull and a container's start; no
test here is about them, and in the serial suite they were minutes of waiting. So the
tests run KWOK with the stages its module ships, rewritten only in their delays
(:func:`paced`): a tenth of each duration and jitter, and a delete that comes at once
unless the pod asks for a delay with KWOK's own annotation
(``pod-delete.stage.kwok.x-k8s.io/delay``,
:data:`fracctl.sandbox.controllers.SLOW_DELETE`), which keeps the module's rule (the
later of that delay and the ``deletionTimestamp``). The node stages are kept as they are,
and so are the sandbox and the benchmarks: they run the module's stages unchanged, but for
the one selector every run adds to leave pods of fracctl's image to the pod runner
(:func:`fracctl.sandbox.controllers.stage_files`).
"""

from __future__ import annotations

import copy
import os
from pathlib import Path
from typing import Any

import yaml

from fracctl.sandbox.controllers import STAGES

#: The factor on every delay of the pod stages.
PACE = 0.1
#: KWOK's annotation that asks for a pod's delete to wait (``SLOW_DELETE``).
DELETE_DELAY = 'metadata.annotations["pod-delete.stage.kwok.x-k8s.io/delay"]'


def paced(kwok: Path, into: Path) -> Path:
    """A folder like ``kwok`` (the binary, linked, and ``stages/``) with paced pod stages."""
    (into / "stages").mkdir(parents=True, exist_ok=True)
    link = into / "kwok"
    if not link.exists():
        os.symlink(kwok / "kwok", link)
    for name in STAGES:
        docs = list(yaml.safe_load_all((kwok / "stages" / name).read_text()))
        if name.startswith("pod-"):
            docs = [out for doc in docs if doc for out in _pace(doc)]
        (into / "stages" / name).write_text(yaml.safe_dump_all(docs, sort_keys=False))
    return into


def _pace(stage: dict[str, Any]) -> list[dict[str, Any]]:
    delay = stage["spec"].get("delay") or {}
    for key in ("durationMilliseconds", "jitterDurationMilliseconds"):
        if key in delay:
            delay[key] = int(delay[key] * PACE)
    if stage["metadata"]["name"] != "pod-delete":
        return [stage]
    # Two stages where the module has one: a pod that asks for a delete delay keeps the
    # module's rule; every other pod is deleted after the (paced) duration.
    asked = copy.deepcopy(stage)
    asked["metadata"]["name"] = "pod-delete-delayed"
    _select(asked, "Exists")
    prompt = stage
    _select(prompt, "DoesNotExist")
    prompt["spec"]["delay"].pop("jitterDurationFrom", None)
    return [prompt, asked]


def _select(stage: dict[str, Any], operator: str) -> None:
    selector = stage["spec"].setdefault("selector", {})
    selector.setdefault("matchExpressions", []).append(
        {"key": "." + DELETE_DELAY, "operator": operator}
    )
