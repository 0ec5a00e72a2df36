"""Words of other tools quoted in fracctl's own lines."""

from __future__ import annotations


def clip(text: str, limit: int = 300) -> str:
    """``text`` on one line (runs of whitespace as one space), at most ``limit`` characters.

    A longer text is cut at the last word that fits and ends with ``…``, so that a quoted
    message never stops mid-word and a reader sees that it was cut.
    """
    line = " ".join(text.split())
    if len(line) <= limit:
        return line
    cut = line[: limit - 1]
    space = cut.rfind(" ")
    return (cut[:space] if space > limit // 2 else cut).rstrip(" ,;:") + "…"
