"""A fast reader for the plain block YAML that tools write (`fabric render`, `nv config show -o yaml`,
`yaml.safe_dump`): one key or item per line, plain or simply quoted scalars, `{}` and `[]`.

It reads a strict subset of YAML and answers None for anything outside it (anchors, aliases, tags, merge keys,
flow collections, block scalars, multi-line or escaped scalars, comments after values, tabs, duplicate keys,
nesting deeper than the full loader takes, unusual characters …); the caller then reads the text with the full hardened
loader (`fabric.model.source.load_yaml`), which says exactly what is wrong and where. Where it answers, the value
and every key's and item's line equal the full loader's (tests/test_blockyaml.py compares both on rendered,
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


class _Frame:
    __slots__ = ("indent", "loc", "value")

    def __init__(self, indent: int, value: Any, loc: Loc):
        self.indent, self.value, self.loc = indent, value, loc


def load_block(text: str, lines: dict[Loc, Any] | None = None, file: str = "", base: Loc = (),
               max_depth: int = 64) -> Any:
    """The value of `text`, and into `lines` (file, line) of every key and item, their paths under `base`.
    Raises LookupError when `text` is outside the subset: the caller reads it with the full loader."""
    try:
        return _load(text, lines, file, base, max_depth)
    except _Outside:
        raise LookupError("outside the block-YAML subset") from None


def _load(text: str, lines: dict[Loc, Any] | None, file: str, base: Loc, max_depth: int) -> Any:
    if (_ODD_ASCII if text.isascii() else _ODD).search(text):
        raise _Outside
    stack: list[_Frame] = []  # the open collections, innermost last
    top: _Frame | None = None
    root: Any = _NO
    pending: tuple[dict, str | int, int, Loc] | None = None  # a `key:` waiting for what is below it
    keys, values = _KEYS, _VALUES
    for number, raw in enumerate(text.split("\n"), 1):
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
                top = _Frame(indent, [] if item else {}, loc)
                parent[key] = top.value
                stack.append(top)
                if len(stack) >= max_depth:
                    raise _Outside
        elif top is None:
            if indent or root is not _NO:
                raise _Outside
            root = [] if item else {}
            top = _Frame(0, root, base)
            stack.append(top)
        if top.indent != indent or (item is False and type(top.value) is list):
            while stack and (stack[-1].indent > indent
                             or (stack[-1].indent == indent and type(stack[-1].value) is list and not item)):
                stack.pop()
            if not stack or stack[-1].indent != indent:
                raise _Outside
            top = stack[-1]
        if item:
            seq = top.value
            if type(seq) is not list:
                raise _Outside
            loc = (*top.loc, len(seq))
            if lines is not None:
                lines[loc] = (file, number)
            content = content[2:]
            if not content or content[0] == " ":
                raise _Outside  # `-` alone or odd spacing
            if content[-1] != ":" and ": " not in content:
                seq.append({} if content == "{}" else [] if content == "[]" else _cached(values, content, _new_value))
                continue
            top = _Frame(indent + 2, {}, loc)
            seq.append(top.value)
            stack.append(top)
            if len(stack) >= max_depth:
                raise _Outside
            indent += 2
        mapping = top.value
        if type(mapping) is not dict:
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
        if key in mapping:
            raise _Outside  # a duplicate key: the full loader reports it
        loc = (*top.loc, key)
        if lines is not None:
            lines[loc] = (file, number)
        if rest:
            value = values.get(rest, _NO)
            if value is _NO:
                value = {} if rest == "{}" else [] if rest == "[]" else _cached(values, rest, _new_value)
            mapping[key] = value
        else:
            mapping[key] = None
            pending = (mapping, key, indent, loc)
    if root is _NO:
        raise _Outside  # an empty document: the full loader's answer
    return root
