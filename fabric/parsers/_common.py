"""Shared pieces of the output parsers: base model, number parsing, located errors."""

from __future__ import annotations

import json
import re
from typing import Any

from pydantic import BaseModel, ConfigDict

from fabric.errors import InputError, Problem

_NUM = re.compile(r"^[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?$")
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
    """A finite decimal number, or None (never guesses: 'nan', '1.2.3', '12abc' are None)."""
    return float(token) if _NUM.match(token) else None


def integer(token: str) -> int | None:
    """A decimal integer, or None."""
    return int(token) if _INT.match(token) else None


def require_text(text: str, file: str, what: str) -> list[str]:
    """Split input into lines; empty or blank input is an error naming what was expected."""
    if not text.strip():
        raise fail(file, None, "", what, "empty input")
    return text.splitlines()


CUT = "no newline at end of input (truncated?)"


def unterminated(text: str, lines: list[str]) -> int:
    """Line number of a last line without its newline (it may be cut short, so its numbers are not
    used: '9182' could be the start of '918273645'), or 0 if the input ends with a newline."""
    return 0 if text.endswith(("\n", "\r")) else len(lines)


def load_json(text: str, file: str) -> Any:
    """json.loads; on failure retry without trailing commas and with bare words quoted (perftest
    quirks), else raise an InputError at the line of the original syntax error."""
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        error = exc
    repaired = re.sub(r",(\s*[}\]])", r"\1", text)
    repaired = re.sub(
        r"(:\s*)(?!true\b|false\b|null\b)([A-Za-z_][\w.\-/]*)(\s*[,}\n])", r'\1"\2"\3', repaired
    )
    try:
        return json.loads(repaired)
    except json.JSONDecodeError:
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
