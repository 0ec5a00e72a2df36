"""The rule on node-agent images: each is pinned to the release you built and tested.

Read in the fractioning config's spec (``image: ref``, or ``{repository, tag}``) and
in the containers of the node agents' own workloads. An empty tag makes a chart
fall back to its default build (``0.0.0``, or ``latest``), which is not yours.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from fracctl.core.kube.podspec import containers, path_string, unpinned
from fracctl.core.lint.base import ERROR, Hit, Manifest
from fracctl.core.lint.registry import rule

_IMAGE_FIX = (
    "a forgotten tag override deploys the chart's default build, not yours; pin the tag "
    "(or a digest) of the build you tested"
)


def _image_message(image: str) -> str:
    return f"image {image!r} is not pinned to a release: {_IMAGE_FIX}"


def _images_in(value: Any, path: tuple[str | int, ...]) -> Iterator[Hit]:
    """Every ``image: ref`` and ``{repository, tag}`` below ``value`` (a config's spec)."""
    if isinstance(value, Mapping):
        image = value.get("image")
        if isinstance(image, str) and unpinned(image):
            yield _image_message(image), path_string((*path, "image"))
        if isinstance(value.get("repository"), str) and "tag" in value:
            tag = str(value.get("tag") or "").strip()
            if tag in ("", "latest", "0.0.0", "v0.0.0"):
                yield (
                    f"image {value['repository']} has tag {tag!r}: " + _IMAGE_FIX,
                    path_string((*path, "tag")),
                )
        for k, v in value.items():
            if k != "image":
                yield from _images_in(v, (*path, str(k)))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from _images_in(v, (*path, i))


@rule(
    "FL012",
    "agent-image-tag",
    ERROR,
    "a node-agent image with an empty, latest or chart-default (0.0.0) tag",
)
def agent_image_tag(m: Manifest) -> Iterator[Hit]:
    """Unpinned images in the config's spec, then in a node-agent workload's containers."""
    if m.is_config:
        yield from _images_in(m.obj.get("spec"), ("spec",))
    t = m.template
    if t is None or not m.is_agent:
        return
    for c in containers(t.spec):
        image = c.container.get("image")
        if isinstance(image, str) and unpinned(image):
            yield (
                f"container {c.name or c.index}: " + _image_message(image),
                path_string(t.at("spec", c.field, c.index, "image")),
            )
