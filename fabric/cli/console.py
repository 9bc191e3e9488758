"""The one way the CLI makes a rich console: no markup, no emoji codes, no highlighting, so a message keeps every
character it was given (`file.yaml:100:` stays, `[x]` in a name stays). Styling is explicit, with `styled`."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import IO, Any

from rich.console import Console
from rich.text import Text

from fabric.errors import printable


def console(*, stderr: bool = False, file: IO[str] | None = None, width: int | None = None, **kw: Any) -> Console:
    """A console for output; `width` None: the terminal's, else 160 columns when not a terminal."""
    stream = file if file is not None else (sys.stderr if stderr else sys.stdout)
    if width is None and file is None and not stream.isatty():
        width = 160
    return Console(file=file, stderr=stderr, width=width, markup=False, emoji=False, highlight=False, **kw)


def styled(text: str, style: str | None) -> Text:
    """`text` shown in `style` (red, green, bold …), never parsed as markup."""
    return Text(text, style=style or "")


TABLE_ROWS = 500  # more rows than this: aligned lines (rich lays a table out at about 0.2 ms a row)
FITS = 0.99  # share of a column's cells its width holds: a few longer cells (lists) push the rest of their line


def print_table(out: Console, title: str, columns: Sequence[str], rows: Sequence[Sequence[str | Text]]) -> None:
    """`rows` under `columns` as a rich table (long cells folded) when there are at most TABLE_ROWS, else as
    `aligned` lines: one row a line, as grep, sort and less -S want it, in a fraction of rich's time (a styled
    cell, `styled`, plain there)."""
    if len(rows) > TABLE_ROWS:
        out.file.write(aligned(title, columns, [[c if isinstance(c, str) else c.plain for c in row] for row in rows]))
        return
    from rich.table import Table

    t = Table(title=title)
    for col in columns:
        t.add_column(col, overflow="fold")
    for row in rows:
        t.add_row(*row)
    out.print(t)


def aligned(title: str, columns: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """The title, the column names over a rule, then one line per row: every column but the last padded to the
    width that FITS of its cells hold, the last one whole; control characters escaped, so a row stays one line."""
    cells = [[printable(c) for c in row] for row in rows]
    widths = []
    for i, col in enumerate(columns[:-1]):
        lengths = sorted(len(r[i]) for r in cells) or [0]
        widths.append(max(len(col), lengths[int((len(lengths) - 1) * FITS)]))

    def line(row: Sequence[str]) -> str:
        return ("  ".join(c.ljust(w) for c, w in zip(row, widths, strict=False)) + "  " + row[-1]).rstrip() + "\n"

    rule = ["-" * w for w in widths] + ["-" * len(columns[-1])]
    return "".join([f"{printable(title)} ({len(rows):,} rows)\n", line(columns), line(rule), *map(line, cells)])
