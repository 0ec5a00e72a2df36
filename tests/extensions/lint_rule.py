"""A lint rule: a fractional pod should say how much GPU memory it expects."""

from __future__ import annotations

from collections.abc import Iterator

from fracctl.core.lint.base import WARNING, Hit, Manifest
from fracctl.core.lint.registry import rule


@rule("FL901", "fraction-without-memory-note", WARNING, "a fractional pod without gpu-memory")
def fraction_without_memory_note(m: Manifest) -> Iterator[Hit]:
    """A pod template asking for a fraction, with no ``gpu-memory`` annotation beside it."""
    t = m.template
    if t is None:
        return
    notes = t.annotations
    if "gpu-fraction" in notes and "gpu-memory" not in notes:
        yield "a gpu-fraction without gpu-memory: say what it expects", "metadata.annotations"
