"""Readers of what switches and hosts answer: bounded, and every malformed reply one located `ReplyError`.

A reader is a pure function from a reply's text to data, marked `@reader(command)`: it is registered in `READERS`
(the fuzzer feeds every one of them: tests/fuzz/test_fuzz.py), a reply longer than MAX_REPLY is refused before it
is read, and whatever a malformed reply makes the reader raise (a ValueError, a TypeError of a value of another
type, a RecursionError) reaches its caller as a ReplyError naming the command. JSON replies go through
`json_reply`/`json_replies`: nesting deeper than MAX_DEPTH is refused before the decoder runs (Python's decoder
recurses once per level), a syntax error is located by line and column.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Callable
from typing import Any, TypeVar, cast

from fabric.errors import ReplyError, one_line

F = TypeVar("F", bound=Callable[..., Any])

MAX_REPLY = 64 * 2**20  # characters of one reply: a SONiC CONFIG_DB of a 512-port switch is a few MiB
MAX_DEPTH = 64  # JSON nesting: iproute2, vtysh, NVUE, EOS and CONFIG_DB replies stay under 12 levels
READERS: dict[str, str] = {}  # "module.function" → the command whose reply it reads
MALFORMED = (ValueError, TypeError, KeyError, IndexError, AttributeError, RecursionError, UnicodeError)


def reader(command: str) -> Callable[[F], F]:
    """Mark `fn` as the reader of `command`'s reply (module docstring)."""
    def mark(fn: F) -> F:
        READERS[f"{fn.__module__}.{fn.__qualname__}"] = command

        @functools.wraps(fn)
        def read(*args: Any, **kwargs: Any) -> Any:
            for text in (*args, *kwargs.values()):
                if isinstance(text, str) and len(text) > MAX_REPLY:
                    raise ReplyError(command, f"at most {MAX_REPLY // 2**20} MiB", f"{len(text) // 2**20} MiB")
            try:
                return fn(*args, **kwargs)
            except ReplyError:
                raise
            except MALFORMED as exc:
                raise ReplyError(command, "the form the command prints", one_line(exc)) from None
        return cast(F, read)
    return mark


_STRING = re.compile(r'"(?:[^"\\]|\\.)*"')
_NOT_BRACKET = re.compile(r"[^\[\]{}]+")
_PAIR = re.compile(r"\[\]|\{\}")


def _too_deep(text: str) -> bool:
    """More than MAX_DEPTH levels of arrays and objects (strings left out): innermost pairs removed level by level,
    each pass in the regex engine, so a deep reply costs no Python recursion."""
    brackets = _NOT_BRACKET.sub("", _STRING.sub("", text))
    for _ in range(MAX_DEPTH):
        brackets, n = _PAIR.subn("", brackets)
        if not n:
            return False
    return bool(_PAIR.search(brackets))


def _decode_error(exc: json.JSONDecodeError, command: str) -> ReplyError:
    return ReplyError(command, "JSON", f"{exc.msg}: {exc.doc[exc.pos:exc.pos + 24]!r}",
                      where=f"line {exc.lineno} column {exc.colno}")


def json_reply(text: str, command: str, empty: str = "{}") -> Any:
    """The one JSON document of a reply (`empty` where it printed nothing)."""
    if len(text) > MAX_REPLY:
        raise ReplyError(command, f"at most {MAX_REPLY // 2**20} MiB", f"{len(text) // 2**20} MiB")
    text = text.strip() or empty
    if _too_deep(text):
        raise ReplyError(command, f"JSON nested at most {MAX_DEPTH} levels", "deeper nesting")
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise _decode_error(exc, command) from None
    except (ValueError, RecursionError) as exc:
        raise ReplyError(command, "JSON", one_line(exc)) from None


def json_replies(text: str, command: str) -> list[Any]:
    """Concatenated JSON documents (vtysh prints one per `-c`)."""
    if len(text) > MAX_REPLY:
        raise ReplyError(command, f"at most {MAX_REPLY // 2**20} MiB", f"{len(text) // 2**20} MiB")
    if _too_deep(text):
        raise ReplyError(command, f"JSON nested at most {MAX_DEPTH} levels", "deeper nesting")
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
