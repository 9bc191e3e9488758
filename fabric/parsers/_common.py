"""Shared pieces of the output parsers: base model, number parsing, located errors."""

from __future__ import annotations

import functools
import io
import json
import math
import os
import re
import stat
from collections.abc import Callable, Iterable, Iterator
from typing import IO, Any, TypeVar

from pydantic import BaseModel, ConfigDict

from fabric.errors import InputError, Problem

T = TypeVar("T")
_NUM = re.compile(r"^[-+]?(\d+(?:\.\d*)?|\.\d+)([eE][-+]?\d+)?$")  # one way to split a number: linear
_INT = re.compile(r"^[-+]?\d+$")


class Model(BaseModel):
    """Base of every result model: unknown fields are an error."""

    model_config = ConfigDict(extra="forbid")


class Skipped(Model):
    """A line that looked like a data row but could not be read; it contributed no numbers."""

    line: int
    reason: str
    text: str


def show(text: str, limit: int = 80) -> str:
    """A line as it appears in error messages: stripped, shortened, quoted."""
    text = text.strip()
    if len(text) > limit:
        text = text[: limit - 1] + "…"
    return repr(text)


def fail(file: str, line: int | None, path: str, expected: str, found: str = "") -> InputError:
    """Build (not raise) an InputError for one located problem."""
    return InputError(Problem(file=file, line=line, path=path, expected=expected, found=found))


def num(token: str) -> float | None:
    """A finite decimal number, or None (never guesses: 'nan', '1.2.3', '12abc', '1e999' are None)."""
    if not _NUM.match(token):
        return None
    value = float(token)
    return value if math.isfinite(value) else None


def integer(token: str) -> int | None:
    """A decimal integer, or None."""
    return int(token) if _INT.match(token) else None


def require_text(text: str, file: str, what: str) -> list[str]:
    """Split input into lines; empty or blank input is an error naming what was expected."""
    if not text.strip():
        raise fail(file, None, "", what, "empty input")
    return text.splitlines()


CUT = "no newline at end of input (truncated?)"
MAX_LINE = 64 * 1024  # characters of one line that are kept; the rest of a longer line is dropped unread
MAX_ROWS = 10_000  # result rows in one output (perftest writes ~23 sizes, nccl-tests ~30)
MAX_SKIPPED = 100  # skipped lines listed; the rest are counted
MAX_DATA_LINE = 4096  # no tool writes a longer line of data: a longer one is noise, and never reaches a regex


def capped_lines(fh: IO[str], total: int | None = None, name: str = "") -> Iterator[str]:
    """The lines of `fh` with their endings, each cut at MAX_LINE characters (the rest read in pieces and
    dropped, so memory stays flat whatever the input); with `total`, an InputError once more characters than
    that were read (a gzip bomb)."""
    seen = 0
    while line := fh.readline(MAX_LINE):
        seen += len(line)
        if len(line) == MAX_LINE and not line.endswith(("\n", "\r")):
            while (rest := fh.readline(MAX_LINE)) and not rest.endswith(("\n", "\r")):
                seen += len(rest)
                if total is not None and seen > total:
                    break
            seen += len(rest)
            line += rest[-1:] if rest else ""
        if total is not None and seen > total:
            raise fail(name, None, "", f"input of at most {total // 2**30} GiB decompressed", "more (a gzip bomb?)")
        yield line


def regular_file(path: str, what: str = "a readable file") -> None:
    """Refuse, before opening, what is no regular file: a FIFO blocks, /dev/zero never ends."""
    try:
        mode = os.stat(path).st_mode
    except OSError as exc:
        raise fail(path, None, "", what, exc.strerror or str(exc)) from None
    if not stat.S_ISREG(mode):
        raise fail(path, None, "", f"{what} (a regular file)",
                   "a directory" if stat.S_ISDIR(mode) else "a FIFO or device")


def without_long_lines(text: str) -> str:
    """`text` with every line longer than MAX_DATA_LINE emptied (the line numbers stay)."""
    if all(len(line) <= MAX_DATA_LINE for line in text.split("\n")):
        return text
    return "\n".join(line if len(line) <= MAX_DATA_LINE else "" for line in text.split("\n"))


def text_lines(text: str) -> Iterator[str]:
    """`text` as the lines a file would give (endings kept), for the parsers that stream."""
    return iter(io.StringIO(text, newline=""))


class Lines:
    """Numbered lines of a stream for the parsers: the text without its ending, whether it is the last line cut
    short (no newline at the end of input), and how many there were."""

    def __init__(self, lines: Iterable[str]):
        self._lines = lines
        self.count = 0
        self.blank = True

    def __iter__(self) -> Iterator[tuple[int, str, bool]]:
        for self.count, raw in enumerate(self._lines, 1):  # noqa: B020 - the count is kept on purpose
            if self.blank and raw.strip():
                self.blank = False
            cut = not raw.endswith(("\n", "\r"))
            yield self.count, raw.rstrip("\r\n") if len(raw) <= MAX_DATA_LINE else "", cut


class SkipList(list[Skipped]):
    """Skipped lines, the first MAX_SKIPPED kept; `more` counts the rest."""

    more = 0

    def append(self, item: Skipped) -> None:
        if len(self) < MAX_SKIPPED:
            super().append(item)
        else:
            self.more += 1


def unterminated(text: str, lines: list[str]) -> int:
    """Line number of a last line without its newline (it may be cut short, so its numbers are not
    used: '9182' could be the start of '918273645'), or 0 if the input ends with a newline."""
    return 0 if text.endswith(("\n", "\r")) else len(lines)


def json_shaped(what: str) -> Callable[[Callable[..., T]], Callable[..., T]]:
    """For a parser `fn(text, file, …)` of a JSON document: a document of another shape than `what` (a wrong type or
    an absurd value anywhere in it) is one InputError at `file`, never a traceback."""
    def wrap(fn: Callable[..., T]) -> Callable[..., T]:
        @functools.wraps(fn)
        def parse(text: str, file: str = "-", *args: Any, **kwargs: Any) -> T:
            try:
                return fn(text, file, *args, **kwargs)
            except InputError:
                raise
            except (ValueError, TypeError, AttributeError, KeyError, IndexError, OverflowError, RecursionError) as exc:
                found = " ".join(str(exc).split())[:120]
                raise fail(file, None, "json", what, f"{type(exc).__name__}: {found}") from None
        return parse
    return wrap


def load_json(text: str, file: str) -> Any:
    """json.loads; on failure retry without trailing commas and with bare words quoted (perftest
    quirks), else raise an InputError at the line of the original syntax error."""
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        error = exc
    except RecursionError:  # no tool nests JSON hundreds deep
        raise fail(file, None, "json", "JSON nested at most a few hundred levels", "deeper") from None
    except ValueError as exc:  # an integer past Python's 4,300-digit limit
        raise fail(file, None, "json", "numbers a tool prints", str(exc)[:80]) from None
    repaired = re.sub(r",(\s*[}\]])", r"\1", text)
    repaired = re.sub(
        r"(:\s*)(?!true\b|false\b|null\b)([A-Za-z_][\w.\-/]*)(\s*[,}\n])", r'\1"\2"\3', repaired
    )
    try:
        return json.loads(repaired)
    except (ValueError, RecursionError):
        lines = text.splitlines()
        bad = lines[error.lineno - 1] if error.lineno <= len(lines) else ""
        found = show(bad) if bad.strip() else "nothing"
        if error.pos >= len(text.rstrip()):
            found = f"end of input after {found} (truncated?)"
        raise fail(
            file,
            error.lineno,
            "json",
            f"valid JSON ({error.msg} at column {error.colno})",
            found,
        ) from None


def json_line(text: str, key: str) -> int | None:
    """Line number of the first occurrence of `"key"` in JSON text (for error messages)."""
    for lineno, line in enumerate(text.splitlines(), 1):
        if f'"{key}"' in line:
            return lineno
    return None
