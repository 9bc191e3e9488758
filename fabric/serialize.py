"""Deterministic text serializations shared by every layer: block YAML and stable JSON."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from functools import cache
from json.encoder import encode_basestring_ascii as _quoted  # type: ignore[attr-defined]
from typing import Any

_PLAIN = re.compile(r"^[A-Za-z_][A-Za-z0-9_./-]*$")
_RESERVED = {"y", "n", "yes", "no", "on", "off", "true", "false", "null", "~"}


def _text(s: str) -> str:
    """A string as YAML reads it back as that string: plain where it can be, else JSON's double quotes."""
    return s if _PLAIN.match(s) and s.lower() not in _RESERVED else _quoted(s)  # json.dumps(s), without its wrapper


_string = cache(_text)  # keys, names and values that recur; a value of one place only (a port's description): _text


def _scalar(v: Any) -> str:
    t = type(v)
    if t is str:
        return _string(v)
    if t is int or t is float:
        return repr(v)
    if v is None:
        return "null"
    if t is bool:
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        return repr(v)
    if isinstance(v, str):
        return _string(v)
    return _string(str(v))


class Shared(dict[Any, Any]):
    """A subtree that many documents hold unchanged (one switch's QoS in every switch's patch): built once
    and emitted once per indentation (or other form: `memo`). Treat it as read-only."""

    __slots__ = ("_text",)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._text: dict[Any, Any] = {}

    def memo(self, form: Any, make: Callable[[Shared, Any], Any]) -> Any:
        """`make(self, form)`, computed once per `form` (a writer's hashable key) for this subtree."""
        value = self._text.get(form)
        if value is None:
            value = self._text[form] = make(self, form)
        return value


class Fields(dict[Any, Any]):
    """A mapping whose entries are those of a `Shared` (`common`, many mappings have it) plus a few of its own
    (`own`, keys not in `common`): one port's description beside the link, QoS and type its neighbours share. The
    block YAML cuts the common entries' text once per indentation into the runs between the own keys, so only the
    own entries are emitted each time. It is a plain dict of all entries to every other reader; read-only."""

    __slots__ = ("_common", "_own")

    def __init__(self, common: Shared, own: dict[Any, Any], keys: tuple[Any, ...] | None = None) -> None:
        """`keys`: `tuple(own)`, where the caller has it already."""
        super().__init__(common)
        self.update(own)
        self._common = common
        self._own = tuple(own) if keys is None else keys


_STR = {str}


def _emit(data: Any, indent: str, out: list[str]) -> None:
    if isinstance(data, dict):
        # YAML order: keys sorted as text; `sorted(data)` gives that order without a str() per key where every
        # key is a str
        _entries(data, data if len(data) < 2 else sorted(data) if set(map(type, data)) == _STR
                 else sorted(data, key=str), indent, out)
    else:
        deeper = indent + "  "
        append = out.append
        cut = len(indent) + 2
        for item in data:
            if isinstance(item, (dict, list)) and item:
                inner: list[str] = []
                _emit(item, deeper, inner)
                append(f"{indent}- {inner[0][cut:]}")
                out.extend(inner[1:])
            else:
                append(f"{indent}- {_scalar(item)}\n")


def _entries(data: dict[Any, Any], keys: Any, indent: str, out: list[str]) -> None:
    """The entries `keys` of `data`, in that order."""
    append = out.append
    deeper = indent + "  "
    for key in keys:
        value = data[key]
        k = _string(key) if type(key) is str else _scalar(key)
        t = type(value)
        if t is str:  # the common cases first: a string, a shared subtree, a nested mapping, another scalar
            append(f"{indent}{k}: {_string(value)}\n")
        elif t is Shared:
            text = value._text.get(deeper)
            if text is None:
                text = value._text[deeper] = _shared(value, deeper)
            append(f"{indent}{k}:{text}")
        elif t is Fields:
            form = (deeper, value._own)
            cut = value._common._text.get(form)
            if cut is None:
                cut = value._common._text[form] = _runs(value._common, form)
            runs, own, heads = cut
            # the most common: one own text (a port's description)
            if len(own) == 1 and heads[0] is not None and type(v := value[own[0]]) is str:
                append(f"{indent}{k}:\n{runs[0]}{heads[0]}{_text(v)}\n{runs[1]}")
                continue
            append(f"{indent}{k}:\n")
            append(runs[0])
            for i, key2 in enumerate(own, 1):
                v = value[key2]
                if type(v) is str and heads[i - 1] is not None:
                    append(f"{heads[i - 1]}{_text(v)}\n")
                else:
                    _entries(value, (key2,), deeper, out)
                append(runs[i])
        elif t is dict and value:
            append(f"{indent}{k}:\n")
            _emit(value, deeper, out)
        elif t is int or t is bool or value is None or not isinstance(value, (dict, list)):
            append(f"{indent}{k}: {_scalar(value)}\n")
        elif not value:
            append(f"{indent}{k}: {'{}' if isinstance(value, dict) else '[]'}\n")
        else:
            append(f"{indent}{k}:\n")
            _emit(value, deeper, out)


def _runs(common: Shared, form: tuple[str, tuple[Any, ...]]) -> tuple[list[str], list[Any], list[str | None]]:
    """The text of `common`'s entries at the indentation `form[0]` cut at the own keys `form[1]` (in YAML order):
    runs[0], own[0], runs[1], …, own[-1], runs[-1]; and each own key's `indent key: ` (None for a key not a str)."""
    indent, keys = form
    runs: list[str] = []
    own: list[Any] = []
    heads: list[str | None] = []
    part: list[str] = []
    for key in sorted({*common, *keys}, key=str):
        if key in keys:
            runs.append("".join(part))
            own.append(key)
            heads.append(f"{indent}{_string(key)}: " if type(key) is str else None)
            part = []
        else:
            _entries(common, (key,), indent, part)
    runs.append("".join(part))
    return runs, own, heads


def _shared(value: Shared, indent: str) -> str:
    """A shared subtree's text at `indent`, with what follows its key (`:` then its lines, or ` {}`)."""
    if not value:
        return " {}\n"
    part: list[str] = []
    _emit(dict(value), indent, part)
    return "\n" + "".join(part)


def dumps_yaml(data: Any) -> str:
    """Block-style YAML with sorted keys for trees of dicts, lists and scalars.

    PyYAML's representer is pure Python and takes ~45 ms for one 128-port NVUE switch, minutes for
    a 32k-GPU fabric; this emitter quotes every string that YAML 1.1 could read as anything but a
    string (JSON double quotes are valid YAML), and tests load its output back with PyYAML.
    """
    out: list[str] = []
    _emit(data, "", out)
    return "".join(out)


def dumps_json(data: Any) -> str:
    """Stable JSON: sorted keys, two-space indent, trailing newline."""
    return indented_json(data, sort_keys=True) + "\n"


def indented_json(data: Any, sort_keys: bool = False) -> str:
    """`json.dumps(data, indent=2, sort_keys=…)`, the same text, about three times faster: with an indent, json
    encodes in Python through a generator per container (the C encoder does compact text only); this writes
    lists of strings, with json's own C string quoting. Anything but dicts, lists, tuples, strings, ints,
    floats, booleans and None, or a key json would convert otherwise, goes to json.dumps itself."""
    out: list[str] = []
    try:
        _json(data, "\n", sort_keys, out)
    except _Other:
        return json.dumps(data, indent=2, sort_keys=sort_keys)
    return "".join(out)


class _Other(Exception):
    """A value `indented_json` leaves to json.dumps."""


def _json_scalar(v: Any) -> str:
    if isinstance(v, str):
        return _quoted(v)
    if v is None:
        return "null"
    if v is True:
        return "true"
    if v is False:
        return "false"
    if isinstance(v, int):
        return int.__repr__(v)
    if isinstance(v, float) and v == v and v not in (float("inf"), float("-inf")):
        return float.__repr__(v)
    raise _Other


def _json(v: Any, newline: str, sort_keys: bool, out: list[str]) -> None:
    """Append `v`'s text; `newline` is a line break and the indentation of `v`'s own line."""
    if isinstance(v, dict):
        if not v:
            out.append("{}")
            return
        inner = newline + "  "
        sep = "{" + inner
        items = sorted(v.items()) if sort_keys else v.items()
        for key, value in items:
            if not isinstance(key, str):
                raise _Other  # json converts int, float, bool and None keys; rare enough to leave to it
            out.append(f"{sep}{_quoted(key)}: ")
            if isinstance(value, (dict, list, tuple)):
                _json(value, inner, sort_keys, out)
            else:
                out.append(_json_scalar(value))
            sep = "," + inner
        out.append(newline + "}")
    elif isinstance(v, (list, tuple)):
        if not v:
            out.append("[]")
            return
        inner = newline + "  "
        sep = "[" + inner
        for item in v:
            out.append(sep)
            if isinstance(item, (dict, list, tuple)):
                _json(item, inner, sort_keys, out)
            else:
                out.append(_json_scalar(item))
            sep = "," + inner
        out.append(newline + "]")
    else:
        out.append(_json_scalar(v))
