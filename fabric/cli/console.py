"""The one way the CLI makes a rich console: no markup, no emoji codes, no highlighting, so a message keeps every
character it was given (`file.yaml:100:` stays, `[x]` in a name stays). Styling is explicit, with `styled`."""

from __future__ import annotations

import sys
from typing import IO, Any

from rich.console import Console
from rich.text import Text


def console(*, stderr: bool = False, file: IO[str] | None = None, width: int | None = None, **kw: Any) -> Console:
    """A console for output; `width` None: the terminal's, else 160 columns when not a terminal."""
    stream = file if file is not None else (sys.stderr if stderr else sys.stdout)
    if width is None and file is None and not stream.isatty():
        width = 160
    return Console(file=file, stderr=stderr, width=width, markup=False, emoji=False, highlight=False, **kw)


def styled(text: str, style: str | None) -> Text:
    """`text` shown in `style` (red, green, bold …), never parsed as markup."""
    return Text(text, style=style or "")
