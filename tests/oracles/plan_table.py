"""The diff lines of `fabric plan`/`apply`'s table output (fabric.cli.push `print_results`) as they were printed
before a device's lines became one Text: one print a line. Held against by tests/cli/test_push.py."""

from __future__ import annotations

from rich.console import Console
from rich.text import Text

from fabric.errors import printable


def print_diff_lines(out: Console, sections: dict[str, list[str]]) -> None:
    for section, items in sections.items():
        out.print(f"  {printable(section)}")  # device text: control characters escaped
        for item in items:
            colour = {"+": "green", "~": "yellow"}.get(item[0], "red")
            out.print(Text(f"    {printable(item)}", style=colour))
