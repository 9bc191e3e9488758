"""Readers of what switches and hosts answer: bounded, and every malformed reply one located `ReplyError`.

A reader is a pure function from a reply's text (or its decoded JSON) to data, marked `@reader(command)`: it is
registered in `READERS` (the fuzzer feeds every one of them: tests/fuzz/test_fuzz.py), a reply longer than
MAX_REPLY is refused before it is read, and what a malformed reply makes the reader raise past its own checks (a
ValueError, a TypeError of a value of another type, a RecursionError) reaches its caller as a ReplyError naming
the command. JSON replies go through `json_reply`/`json_replies`: nesting deeper than MAX_DEPTH is refused before
the decoder runs (Python's decoder recurses once per level), a syntax error is located by line and column. A
reply checked as a saved config is (fabric.model.running) carries that check's located problem (`from_input`).
"""

from __future__ import annotations

import functools
import json
import re
import sys
from collections.abc import Callable
from typing import Any, TypeVar, cast

from fabric.errors import InputError, ReplyError, one_line

F = TypeVar("F", bound=Callable[..., Any])

MAX_REPLY = 64 * 2**20  # characters of one reply: a SONiC CONFIG_DB of a 512-port switch is a few MiB
MAX_DEPTH = 64  # JSON nesting: iproute2, vtysh, NVUE, EOS and CONFIG_DB replies stay under 12 levels
READERS: dict[str, str] = {}  # "module.function" → the command whose reply it reads
MALFORMED = (ValueError, TypeError, KeyError, IndexError, AttributeError, RecursionError, UnicodeError)


def malformed() -> tuple[type[BaseException], ...]:
    """MALFORMED, and PyYAML's errors where a reader has imported it (the host agent's run never does: PyYAML
    costs every host 10-60 ms to import)."""
    yaml = sys.modules.get("yaml")
    return (*MALFORMED, yaml.YAMLError) if yaml is not None else MALFORMED


def _within_size(text: str, command: str) -> None:
    """A ReplyError where `text` is longer than MAX_REPLY."""
    if len(text) > MAX_REPLY:
        raise ReplyError(command, f"at most {MAX_REPLY // 2**20} MiB", f"{len(text) // 2**20} MiB")


def reader(command: str) -> Callable[[F], F]:
    """Mark `fn` as the reader of `command`'s reply (module docstring)."""
    def mark(fn: F) -> F:
        READERS[f"{fn.__module__}.{fn.__qualname__}"] = command

        @functools.wraps(fn)
        def read(*args: Any, **kwargs: Any) -> Any:
            for text in (*args, *kwargs.values()):
                if isinstance(text, str):
                    _within_size(text, command)
            try:
                return fn(*args, **kwargs)
            except ReplyError:
                raise
            except malformed() as exc:  # what the reader does not check itself (the fuzzer reports each one)
                err = ReplyError(command, "the form the command prints", one_line(exc))
                err.unchecked = True
                raise err from None
        return cast(F, read)
    return mark


_STRING = re.compile(r'"(?:[^"\\]|\\.)*"')
_NOT_BRACKET = re.compile(r"[^\[\]{}]+")
_PAIR = re.compile(r"\[\]|\{\}")
_TOKEN = re.compile(r'"(?:[^"\\]|\\.)*"|[\[\]{}]')


def nesting_past(text: str, limit: int = MAX_DEPTH) -> int | None:
    """Where JSON `text` first nests arrays and objects deeper than `limit` (strings left out): the offset of that
    bracket, or None. Innermost pairs are removed level by level, each pass in the regex engine, so the usual
    shallow text costs a few passes and a deep one no Python recursion; only a text too deep, or with brackets
    left unpaired (`[[[[…` never closed still makes the decoder recurse), is walked token by token."""
    brackets = _NOT_BRACKET.sub("", _STRING.sub("", text))
    for _ in range(limit):
        brackets, n = _PAIR.subn("", brackets)
        if not n:
            break
    if not brackets:  # every bracket paired within `limit` levels; brackets left unpaired (no JSON) are walked
        return None
    depth = 0
    for m in _TOKEN.finditer(text):
        depth += {"[": 1, "{": 1, "]": -1, "}": -1}.get(m.group(), 0)
        if depth > limit:
            return m.start()
    return None


def _decode_error(exc: json.JSONDecodeError, command: str) -> ReplyError:
    return ReplyError(command, "JSON", f"{exc.msg}: {exc.doc[exc.pos:exc.pos + 24]!r}",
                      where=f"line {exc.lineno} column {exc.colno}")


def bounded(text: str, command: str) -> str:
    """`text`, unless it is longer than MAX_REPLY or nests brackets deeper than MAX_DEPTH (then a ReplyError)."""
    _within_size(text, command)
    if (pos := nesting_past(text)) is not None:
        raise ReplyError(command, f"JSON nested at most {MAX_DEPTH} levels", "deeper nesting",
                         where=f"line {text.count(chr(10), 0, pos) + 1}")
    return text


def from_input(command: str, exc: InputError) -> ReplyError:
    """The first problem a check of files found in a reply (its file: the command), as the reply's ReplyError."""
    p = exc.problems[0]
    where = ", ".join(x for x in (f"line {p.line}" if p.line else "", p.path) if x)
    return ReplyError(command, p.expected, p.found, where=where)


def json_reply(text: str, command: str, empty: str = "{}") -> Any:
    """The one JSON document of a reply (`empty` where it printed nothing)."""
    text = bounded(text, command).strip() or empty
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise _decode_error(exc, command) from None
    except (ValueError, RecursionError) as exc:
        raise ReplyError(command, "JSON", one_line(exc)) from None


def json_replies(text: str, command: str) -> list[Any]:
    """Concatenated JSON documents (vtysh prints one per `-c`)."""
    bounded(text, command)
    dec, docs, i = json.JSONDecoder(), [], 0
    try:
        while True:
            while i < len(text) and text[i].isspace():
                i += 1
            if i >= len(text):
                return docs
            doc, i = dec.raw_decode(text, i)
            docs.append(doc)
    except json.JSONDecodeError as exc:
        raise _decode_error(exc, command) from None
