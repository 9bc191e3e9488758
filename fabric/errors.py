"""Errors for people: one line per problem, `file:line: field.path: expected …, found …`."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Problem:
    """One problem in user input, located as precisely as we can."""

    file: str
    line: int | None
    path: str
    expected: str
    found: str = ""

    def __str__(self) -> str:
        where = f"{printable(self.file)}:{self.line}" if self.line else printable(self.file)
        field = f" {printable(self.path)}:" if self.path else ""
        found = f", found {printable(self.found)}" if self.found else ""
        return f"{where}:{field} expected {printable(self.expected)}{found}"


def printable(text: str) -> str:
    """`text` on one line: newlines and other control characters escaped (\\n, \\x00), so one problem stays one
    line whatever a name holds."""
    return text if text.isprintable() else "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)


class InputError(Exception):
    """Bad user input: carries every problem found, printed one per line, exit code 2."""

    exit_code = 2

    def __init__(self, problems: list[Problem] | Problem | str):
        if isinstance(problems, str):
            problems = [Problem(file="", line=None, path="", expected=problems)]
        elif isinstance(problems, Problem):
            problems = [problems]
        self.problems = list(dict.fromkeys(problems))  # one line per problem: the same one found twice, once
        super().__init__("\n".join(str(p) for p in problems))


class UsageError(Exception):
    """A command used in a way it cannot work (not root, missing state, …): one line, exit code 2."""

    exit_code = 2


def one_line(exc: BaseException, limit: int = 240) -> str:
    """`Type: message` on one line, whitespace collapsed, at most `limit` characters (for tables and logs)."""
    text = " ".join(str(exc).split())
    return (f"{type(exc).__name__}: {text}" if text else type(exc).__name__)[:limit]


class ReplyError(ValueError):
    """A switch's or host's reply that is not what its command prints: the command, where in the reply (`line 3`,
    `items.0.status`), what was expected and what was found — each bounded, one line. Whoever asked names the
    device (`plan`/`apply`: that switch's result, `error`; the other switches go on)."""

    unchecked = False  # raised by a reader's own code, not by a check of the reply (fabric.replies.reader)

    def __init__(self, command: str, expected: str, found: str = "", where: str = ""):
        self.command, self.expected = _cut(command, 120), _cut(expected, 160)
        self.found, self.where = _cut(found, 120), _cut(where, 80)
        super().__init__(str(self))

    def __str__(self) -> str:
        where = f", {printable(self.where)}" if self.where else ""
        found = f", found {printable(self.found)}" if self.found else ""
        return f"reply of `{printable(self.command)}`{where}: expected {printable(self.expected)}{found}"


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[:limit - 1] + "…"
