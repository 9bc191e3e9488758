"""A fast reader for the plain block YAML that tools write (`fabric render`, `nv config show -o yaml`,
`yaml.safe_dump`): one key or item per line, plain or simply quoted scalars, `{}` and `[]`.

It reads a strict subset of YAML and answers None for anything outside it (anchors, aliases, tags, merge keys,
flow collections, block scalars, multi-line or escaped scalars, comments after values, tabs, duplicate keys,
nesting deeper than the full loader takes, unusual characters …); the caller then reads the text with the full hardened
loader (`fabric.model.source.load_yaml`), which says exactly what is wrong and where. Where it answers, the value
and every key's and item's line equal the full loader's (tests/fast/test_blockyaml.py compares both on rendered,
saved and mutated files). Plain scalars are resolved by PyYAML's own resolver and constructor, once per distinct
text; one pass over the lines, no event objects: about 15× the event-driven loader on a 32k-GPU render.
"""

from __future__ import annotations

import re
from typing import Any

import yaml

Loc = tuple[str | int, ...]

# what YAML allows in a stream, less tabs and carriage returns (where the subset is not sure, it says no)
_ODD = re.compile("[^\n\x20-\x7e\xa0-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]|\ufeff")
_ODD_ASCII = re.compile("[\x00-\x09\x0b-\x1f\x7f]")
_KEYTEXT = re.compile(r'"([^"\\]*)"|\'([^\']*)\'|([A-Za-z0-9_][A-Za-z0-9_./-]*)')
_PLAIN = re.compile(r"(?:[A-Za-z0-9_./+]|-(?=[0-9.]))[A-Za-z0-9_./+()-]*(?: [A-Za-z0-9_./+()-]+)*")
_QUOTED = re.compile(r'"([^"\\]*)"|\'([^\']*)\'')
_NO = object()  # a plain scalar the subset does not take


class _Outside(Exception):
    """The text leaves the subset: read it with the full loader."""


def _plain(text: str, key: bool = False) -> Any:
    """A plain scalar as PyYAML reads it in the same place (a key, or a value after `k: `)."""
    try:
        doc = yaml.load(f"{text}: 0" if key else f"k: {text}", Loader=yaml.CSafeLoader)
    except (yaml.YAMLError, ValueError, OverflowError):  # int('9' * 5000): Python's digit limit
        raise _Outside from None
    if not isinstance(doc, dict) or len(doc) != 1:
        raise _Outside
    value = next(iter(doc)) if key else doc["k"]
    if isinstance(value, dict | list) or (isinstance(value, int) and abs(value).bit_length() > 64):
        raise _Outside
    return value


def _new_value(text: str) -> Any:
    if text == "{}":
        return {}
    if text == "[]":
        return []
    m = _QUOTED.fullmatch(text)
    if m:
        return m[1] if m[1] is not None else m[2]
    if _PLAIN.fullmatch(text):
        return _plain(text)
    raise _Outside


def _new_key(text: str) -> str | int:
    m = _KEYTEXT.fullmatch(text)
    if m is None or len(text) > 1000:  # libyaml takes implicit keys of at most 1,024 characters
        raise _Outside
    if m[3] is None:
        return m[1] if m[1] is not None else m[2]
    key = _plain(m[3], key=True)
    if type(key) not in (str, int):  # bool, float, null or date keys: the full loader's rules
        raise _Outside
    return key


def _cached(cache: dict[str, Any], text: str, new: Any) -> Any:
    """The (immutable) value of `text`, computed once: the same words recur on every port of every file."""
    value = new(text)
    if len(cache) < 100_000 and not isinstance(value, dict | list):
        cache[text] = value
    return value


_KEYS: dict[str, Any] = {}
_VALUES: dict[str, Any] = {}


_PRINTABLE = bytes(range(0x20, 0x7F)) + b"\n"  # an ASCII text of these only has none of _ODD_ASCII


def load_block(text: str, lines: dict[Loc, Any] | None = None, file: str = "", base: Loc = (),
               max_depth: int = 64) -> Any:
    """The value of `text`, and into `lines` (file, line) of every key and item, their paths under `base`.
    Raises LookupError when `text` is outside the subset: the caller reads it with the full loader."""
    try:
        return _load(text, lines, file, base, max_depth)
    except _Outside:
        raise LookupError("outside the block-YAML subset") from None


def _load(text: str, lines: dict[Loc, Any] | None, file: str, base: Loc, max_depth: int) -> Any:
    if text.isascii():
        if text.encode().translate(None, _PRINTABLE):  # what _ODD_ASCII finds, several times faster
            raise _Outside
    elif _ODD.search(text):
        raise _Outside
    # the open collections, innermost last: (indent, value, path); the innermost also in tind/top/tloc/tlist
    stack: list[tuple[int, Any, Loc]] = []
    top: Any = None
    tind, tloc, tlist = -1, base, False
    root: Any = _NO
    pending: tuple[dict, str | int, int, Loc] | None = None  # a `key:` waiting for what is below it
    keys, values = _KEYS, _VALUES
    record = lines is not None
    number = 0
    for raw in text.split("\n"):
        number += 1
        content = raw.lstrip(" ")
        if not content:
            continue
        if content[0] == "#" or raw[-1] == " ":
            raise _Outside  # comments and trailing blanks: the full loader
        indent = len(raw) - len(content)
        item = content[0] == "-" and (content == "-" or content[1] == " ")
        if pending is not None:
            parent, key, at, loc = pending
            pending = None
            if indent > at or (item and indent == at):
                top = [] if item else {}
                parent[key] = top
                tind, tloc, tlist = indent, loc, item
                stack.append((indent, top, loc))
                if len(stack) >= max_depth:
                    raise _Outside
        elif top is None:
            if indent or root is not _NO:
                raise _Outside
            root = top = [] if item else {}
            tind, tloc, tlist = 0, base, item
            stack.append((0, top, base))
        if tind != indent or (tlist and not item):
            while stack and (stack[-1][0] > indent
                             or (stack[-1][0] == indent and not item and type(stack[-1][1]) is list)):
                stack.pop()
            if not stack or stack[-1][0] != indent:
                raise _Outside
            tind, top, tloc = stack[-1]
            tlist = type(top) is list
        if item:
            if not tlist:
                raise _Outside
            loc = (*tloc, len(top))
            if record:
                lines[loc] = (file, number)  # type: ignore[index]
            content = content[2:]
            if not content or content[0] == " ":
                raise _Outside  # `-` alone or odd spacing
            if content[-1] != ":" and ": " not in content:
                top.append({} if content == "{}" else [] if content == "[]" else _cached(values, content, _new_value))
                continue
            mapping: dict = {}
            top.append(mapping)
            top = mapping
            indent += 2
            tind, tloc, tlist = indent, loc, False
            stack.append((indent, top, loc))
            if len(stack) >= max_depth:
                raise _Outside
        elif tlist:
            raise _Outside
        if content[-1] == ":":
            key_text, rest = content[:-1], ""
        else:
            key_text, colon, rest = content.partition(": ")
            if not colon:
                raise _Outside  # a scalar where a key belongs
        key = keys.get(key_text, _NO)
        if key is _NO:
            key = _cached(keys, key_text, _new_key)
        if key in top:
            raise _Outside  # a duplicate key: the full loader reports it
        if rest:
            if record:
                lines[(*tloc, key)] = (file, number)  # type: ignore[index]
            value = values.get(rest, _NO)
            if value is _NO:
                value = {} if rest == "{}" else [] if rest == "[]" else _cached(values, rest, _new_value)
            top[key] = value
        else:
            loc = (*tloc, key)
            if record:
                lines[loc] = (file, number)  # type: ignore[index]
            top[key] = None
            pending = (top, key, indent, loc)
    if root is _NO:
        raise _Outside  # an empty document: the full loader's answer
    return root
