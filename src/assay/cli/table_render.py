"""How a table is fitted to the terminal before it is printed: its cells made inert, its
ids whole, its words unbroken.

Every plain-string cell is data (a case's subject, a claim's value, a server's note): it
becomes ``assay.safe_text.text``, so nothing in it is read as markup and no control or bidi
character reaches the terminal. A renderable a command built itself (a ``Text`` with styles)
is left as it is.

Then the widths. ``rich`` shrinks a table that does not fit by narrowing its widest columns,
folding words letter by letter (``verify_artif`` / ``act_hash``) even when every word would
fit side by side, and it does not hold a column's ``min_width`` while it does so. So the
widths are chosen here: each column gets at least its longest word (an id column, marked
``no_wrap``, its longest cell), and the room left is shared out in proportion to what each
column still needs to show its cells on one line. Only when the longest words cannot stand
side by side at all does a column fold a word, rather than the table being cut at the
terminal's edge.
"""

from __future__ import annotations

from rich.cells import cell_len
from rich.table import Column, Table
from rich.text import Text

from assay import safe_text


def fit(table: Table, width: int) -> None:
    """Make ``table``'s cells inert and choose its column widths for ``width`` cells."""
    columns = table.columns
    for column in columns:
        # ``add_row`` appends to ``_cells``; swapping strings for Text keeps the rows.
        column._cells = [
            safe_text.text(cell) if isinstance(cell, str) else cell for cell in column._cells
        ]
        if column.overflow == "ellipsis" and not column.no_wrap:
            column.overflow = "fold"
    if not columns:
        return
    natural = [_natural(column) for column in columns]
    least = [max(_least(column), column.min_width or 0) for column in columns]
    # ``rich`` pins its layout arithmetic in these two (rich >=15,<16 in pyproject).
    frame = table._extra_width + sum(table._get_padding_width(i) for i in range(len(columns)))
    room = width - frame
    if sum(natural) <= room:
        return  # fits unwrapped: rich's own layout is the natural one
    if sum(least) > room:
        # The longest words cannot stand side by side: ids stay whole, other words fold.
        for column, need in zip(columns, least, strict=True):
            if column.no_wrap:
                column.min_width = need
        return
    for column, chosen in zip(columns, _share(room, least, natural), strict=True):
        column.width = chosen


def _share(room: int, least: list[int], natural: list[int]) -> list[int]:
    """Widths from ``least`` up to ``natural``, the ``room`` left over shared in proportion
    to what each column still lacks (largest shortfalls first for the remainder)."""
    lacking = [max(n - m, 0) for n, m in zip(natural, least, strict=True)]
    spare = room - sum(least)
    total = sum(lacking)
    extra = [spare * lack // total if total else 0 for lack in lacking]
    left = spare - sum(extra)
    for index in sorted(range(len(lacking)), key=lambda i: lacking[i] - extra[i], reverse=True):
        if left <= 0:
            break
        if extra[index] < lacking[index]:
            extra[index] += 1
            left -= 1
    return [m + e for m, e in zip(least, extra, strict=True)]


def _texts(column: Column) -> list[str]:
    return [_plain(cell) for cell in column.cells] + [_plain(column.header)]


def _natural(column: Column) -> int:
    """The width that shows every cell of ``column`` (and its header) unwrapped."""
    lines = (line for cell in _texts(column) for line in cell.split("\n"))
    return max((cell_len(line) for line in lines), default=0)


def _least(column: Column) -> int:
    """The narrowest ``column`` may be: its longest word, or its longest cell for an id."""
    if column.no_wrap:
        return _natural(column)
    words = (word for cell in _texts(column) for word in cell.split())
    return max((cell_len(word) for word in words), default=0)


def _plain(cell: object) -> str:
    return cell.plain if isinstance(cell, Text) else str(cell)
