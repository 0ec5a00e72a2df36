"""Tables: rich's on a terminal, plain aligned columns anywhere else.

On a terminal a table is rich's, boxed and fitted to the window. Written anywhere else
(a pipe, a file, a CI log) rich would fit it to 80 columns, or ``COLUMNS``, and crop or
fold what does not fit; there it is printed instead as ``kubectl get`` prints one: a
header row in capitals, every column as wide as its widest cell and three spaces from
the next, nothing cut. A cell of several lines takes as many rows, the other columns
left blank below their first line. When ``COLUMNS`` is set and a row is wider, only the
last column wraps, at spaces, onto lines indented to it; a word longer than the room
left stays whole, so a line may still be wider: output off a terminal is never cropped.
"""

from __future__ import annotations

import os
import textwrap
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from fracctl.redact import redact

if TYPE_CHECKING:
    from rich.console import Console
    from rich.text import Text

    Cell = str | Text
else:
    Cell = Any

#: Spaces between two columns, as kubectl puts them.
GAP = 3
#: The last column is never wrapped narrower than this, however little room is left.
MIN_LAST = 20
#: Off a terminal with no ``COLUMNS``, a table with ``keys`` is shown as records when a
#: row would be wider than this.
RECORDS_OVER = 160


@dataclass(frozen=True)
class Column:
    """A column: its header and, on a terminal, how rich lays it out."""

    header: str
    overflow: str | None = None  # rich's overflow ("fold"); None: rich's default
    no_wrap: bool = False


def show(
    out: Console,
    columns: Sequence[str | Column],
    rows: Iterable[Sequence[Cell]],
    *,
    env: Mapping[str, str] | None = None,
    keys: int = 0,
) -> None:
    """Print a table to ``out``: rich's on a terminal, :func:`plain` anywhere else.

    ``env`` is where ``COLUMNS`` is read from (default: the process environment). With
    ``keys``, a table wider than ``COLUMNS`` (else :data:`RECORDS_OVER`) off a terminal is
    printed as :func:`records` instead: its first ``keys`` columns as a table, the others
    as one line each under their row.
    """
    cols = [c if isinstance(c, Column) else Column(c) for c in columns]
    body = [list(row) for row in rows]
    if out.is_terminal:
        from rich.table import Table

        table = Table(show_lines=False)
        for c in cols:
            options: dict[str, Any] = {"no_wrap": c.no_wrap}
            if c.overflow:
                options["overflow"] = c.overflow
            table.add_column(c.header, **options)
        for row in body:
            table.add_row(*row)
        out.print(table)
        return
    headers, cells = [c.header for c in cols], [[_text(cell) for cell in row] for row in body]
    width = columns_env(os.environ if env is None else env)
    text = plain(headers, cells)
    if keys and max(map(len, text.splitlines()), default=0) > (width or RECORDS_OVER):
        text = records(headers, cells, keys)
    elif width is not None:
        text = plain(headers, cells, width=width)
    out.print(text, markup=False, highlight=False, emoji=False, soft_wrap=True)


def records(headers: Sequence[str], rows: Sequence[Sequence[str]], keys: int) -> str:
    """A table too wide for its lines, as records.

    The first ``keys`` columns as :func:`plain`'s table; under each row, every other
    non-empty cell on its own line (``    header: value``), whole.
    """
    table = plain(headers[:keys], [row[:keys] for row in rows]).splitlines()
    if len(table) != len(rows) + 1:  # a key cell of several lines: keep the plain table
        return plain(headers, rows)
    out = [table[0]]
    for line, row in zip(table[1:], rows, strict=True):
        out.append(line)
        for header, cell in zip(headers[keys:], row[keys:], strict=False):
            out += [f"    {header}: {part}" for part in _lines(redact(cell)) if part]
    return "\n".join(out)


def columns_env(env: Mapping[str, str]) -> int | None:
    """The width ``COLUMNS`` asks for, or ``None`` when it is unset or not a positive number."""
    try:
        width = int(env.get("COLUMNS", ""))
    except ValueError:
        return None
    return width if width > 0 else None


def plain(headers: Sequence[str], rows: Sequence[Sequence[str]], width: int | None = None) -> str:
    """The table as plain aligned columns (see the module's docstring); no cell is cut.

    Each cell is redacted before it is measured, so a masked secret cannot shift the
    columns after them. ``width`` is the line length to wrap the last column to, if any.
    """
    from rich.cells import cell_len

    head = [[h.upper()] for h in headers]
    if any(len(row) > len(head) for row in rows):
        raise ValueError("a row has more cells than the table has columns")
    cells = [[_lines(redact(c)) for c in row] + [[""]] * (len(headers) - len(row)) for row in rows]
    widths = [
        max(cell_len(line) for row in [head, *cells] for line in row[i]) for i in range(len(head))
    ]
    if width is not None and widths:
        start = sum(widths[:-1]) + GAP * (len(widths) - 1)
        if start + widths[-1] > width:
            room = max(width - start, MIN_LAST)
            for row in cells:
                row[-1] = [part for line in row[-1] for part in _wrap(line, room)]
            widths[-1] = max(cell_len(line) for row in [head, *cells] for line in row[-1])
    out = []
    for row in [head, *cells]:
        for k in range(max(len(cell) for cell in row)):
            parts = [cell[k] if k < len(cell) else "" for cell in row]
            padded = [p + " " * (w - cell_len(p)) for p, w in zip(parts, widths, strict=True)]
            out.append((" " * GAP).join(padded).rstrip())
    return "\n".join(out)


def _text(cell: Cell) -> str:
    return cell if isinstance(cell, str) else cell.plain


def _lines(text: str) -> list[str]:
    return text.expandtabs(4).replace("\r\n", "\n").split("\n")


def _wrap(line: str, room: int) -> list[str]:
    """``line`` over lines of at most ``room`` characters, broken only at spaces."""
    if len(line) <= room:
        return [line]
    return textwrap.wrap(line, room, break_long_words=False, break_on_hyphens=False) or [line]
