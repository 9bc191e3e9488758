"""Saved running configurations (`fabric plan --running DIR`, `fabric lint --configs DIR`): read with the caps
of inventories.

A saved config is outside input like an inventory: it is read through `fabric.model.source` (a regular file of
at most MAX_BYTES, UTF-8; NVUE YAML through the hardened YAML loader: nesting at most MAX_DEPTH and its alias
policy) and its structure is checked before a driver diffs it, so every malformed file is one located problem
(InputError: file, line, path, expected, found) for its switch, never a traceback, a hang or a blown memory:
- SONiC `config_db.json`: nesting at most MAX_DEPTH (scanned in linear time before parsing), JSON, and CONFIG_DB's
  shape: table → key → field → a string or a list of strings (numbers and booleans as saved by hand pass too);
- NVUE `nv config show -o yaml|json`: a tree of mappings, or a list of documents whose `set` is one;
- EOS and FRR text: indentation nested at most MAX_DEPTH levels.
Each NOS's row names which of these shapes its saved configuration has (`Nos.running_shape`: `config_db`, `nvue`,
`text`).
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from fabric.errors import InputError, Problem
from fabric.fast.blockyaml import load_block
from fabric.model.source import MAX_DEPTH, SourceMap, dotted, yaml_text
from fabric.model.userfile import read_user_file
from fabric.nos import NOS
from fabric.replies import from_input, nesting_past

_SCALAR = (str, int, float, bool)


def _line(text: str, pos: int) -> int:
    return text.count("\n", 0, pos) + 1


def _json_depth(path: Path, text: str) -> None:
    if (pos := nesting_past(text, MAX_DEPTH)) is not None:
        raise InputError(Problem(str(path), _line(text, pos), "", f"at most {MAX_DEPTH} levels of nesting", "deeper"))


def config_db_document(path: Path, text: str) -> dict[str, Any]:
    """The CONFIG_DB document of `text`, checked (module docstring). The C decoder reads it first (bounded: deeper
    than the interpreter's recursion limit is a RecursionError) and the shape check then bounds what it accepts to
    four levels; only a text it refuses is scanned for nesting deeper than MAX_DEPTH, which is then the problem
    reported, as when the scan came first."""
    try:
        doc = json.loads(text)
    except (ValueError, RecursionError) as exc:
        _json_depth(path, text)
        if isinstance(exc, json.JSONDecodeError):
            raise InputError(Problem(str(path), exc.lineno, "", "valid JSON", exc.msg)) from None
        raise InputError(Problem(str(path), None, "", "valid JSON", str(exc)[:120])) from None  # 4,300+ digits
    try:
        _config_db_shape(path, doc)
    except InputError:
        _json_depth(path, text)
        raise
    return doc


def _config_db_shape(path: Path, doc: Any) -> None:
    """Table → key → field → a string or a list of strings (numbers and booleans as saved by hand pass too)."""
    if not isinstance(doc, dict):
        raise InputError(Problem(str(path), None, "", "CONFIG_DB: a mapping of tables", type(doc).__name__))
    for table, entries in doc.items():
        if not isinstance(entries, dict):
            raise InputError(Problem(str(path), None, table, "a mapping of keys to entries", _kind(entries)))
        for key, fields in entries.items():
            if not isinstance(fields, dict):
                raise InputError(Problem(str(path), None, dotted((table, key)), "a mapping of fields", _kind(fields)))
            for name, value in fields.items():
                if not (isinstance(value, _SCALAR) or (isinstance(value, list)
                                                       and all(isinstance(v, _SCALAR) for v in value))):
                    raise InputError(Problem(str(path), None, dotted((table, key, name)),
                                             "a string or a list of strings", _kind(value)))


def _kind(value: Any) -> str:
    return {dict: "a mapping", list: "a list"}.get(type(value), repr(value)[:40])


_LAST: list[tuple[str, str, Any, SourceMap]] = []  # the last NVUE file read: its check and its parser share it


class _LinesOnDemand(SourceMap):
    """The lines of a text the one-pass reader (or, `json`, the JSON reader) read without them, read on the first
    question (a problem to locate): `plan --running` diffs values and needs a line only for a malformed file. Every
    key of such a text is a str or an int (`one_pass`)."""

    def __init__(self, text: str, file: str, *, json: bool = False):
        super().__init__()
        self.files.append(file)
        self.one_pass = True
        self._text: str | None = text
        self._json = json

    def where(self, loc: tuple[str | int, ...]) -> tuple[str, int | None]:
        if self._text is not None:
            text, self._text = self._text, None
            if self._json:
                yaml_text(text, self.files[0], self)
            else:
                load_block(text, self.lines, self.files[0], (), MAX_DEPTH)
        return super().where(loc)


NO_DOC = object()  # no document read (json_document: not such a JSON text)


def _unique(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out = dict(pairs)
    if len(out) != len(pairs):
        raise ValueError("a duplicate key")  # the hardened loader names it, with its line
    return out


def _constant(name: str) -> Any:
    raise ValueError(f"{name} is no JSON")


def json_document(text: str) -> Any:
    """`text` read by the JSON reader (C, ten times the YAML loaders' speed) where it is JSON that the hardened
    loader would read the same: nested at most MAX_DEPTH, each key once, no NaN/Infinity; else NO_DOC (the YAML
    reader then reads it, or locates what is wrong). `nv config show -o json`, what a plan reads of every NVUE
    switch, is such a text. Its nesting is counted on the decoded document (a text the decoder reads is no deeper
    than the recursion limit), not by scanning the text first."""
    if text.lstrip()[:1] not in ("[", "{"):
        return NO_DOC
    try:
        doc = json.loads(text, object_pairs_hook=_unique, parse_constant=_constant)
    except (ValueError, RecursionError):  # the C decoder stops at the interpreter's recursion limit
        return NO_DOC
    return doc if _nested_within(doc, MAX_DEPTH) else NO_DOC


def _nested_within(doc: Any, limit: int) -> bool:
    """Whether a decoded document nests arrays and objects at most `limit` deep (as `nesting_past` counts the
    brackets of its text), level by level."""
    level, depth = [doc], 0
    while level:
        depth += 1
        if depth > limit:
            return False
        level = [v for node in level for v in (node.values() if isinstance(node, dict) else node)
                 if isinstance(v, (dict, list))]
    return True


def nvue_document(path: Path, text: str, located: bool = True) -> tuple[Any, SourceMap]:
    """The YAML document of a saved NVUE config and the lines of its keys, read once for its shape check and its
    parser (`fabric.nos.nvue.configs`), which ask in turn: the second ask takes the first's reading (once).
    `located` False: a text in the one-pass subset is read without lines, which are read when first asked for."""
    if _LAST and _LAST[0][0] == str(path) and _LAST[0][1] == text:
        _, _, doc, smap = _LAST.pop()
        return doc, smap
    doc, smap = NO_DOC, SourceMap()
    if not located and (doc := json_document(text)) is not NO_DOC:
        smap = _LinesOnDemand(text, str(path), json=True)
    elif not located:
        with contextlib.suppress(LookupError):  # outside the one-pass subset: the full loader below
            doc, smap = load_block(text, None, str(path), (), MAX_DEPTH), _LinesOnDemand(text, str(path))
    if doc is NO_DOC:
        doc = yaml_text(text, str(path), smap)
    _LAST[:] = [(str(path), text, doc, smap)]
    return doc, smap


def taken_document(text: str) -> tuple[bool, Any, bool]:
    """(True, the document, whether the one-pass reader read it: every key a str or an int) where `text` is the
    NVUE config just read and checked (`read_running`), for its driver to diff without reading it again;
    (False, None, False) otherwise."""
    if _LAST and _LAST[0][1] == text:
        _, _, doc, smap = _LAST.pop()
        return True, doc, smap.one_pass
    return False, None, False


def _nvue(path: Path, text: str, located: bool = True) -> None:
    doc, smap = nvue_document(path, text, located)
    if isinstance(doc, list):
        for i, item in enumerate(doc):
            if not isinstance(item, dict):
                raise InputError(smap.problem((i,), "a document (`- header:`, `- set:`)", _kind(item)))
            if item.get("set") is not None and not isinstance(item["set"], dict):
                raise InputError(smap.problem((i, "set"), "a mapping (the applied tree)", _kind(item["set"])))
    elif doc is not None and not isinstance(doc, dict):
        raise InputError(smap.problem((), "a mapping (the applied tree) or a list of documents", _kind(doc)))


def _text(path: Path, text: str) -> None:
    """Indentation nests at most MAX_DEPTH levels (the stack `fabric.targets.owned.parse_text` keeps)."""
    stack: list[int] = []
    for n, raw in enumerate(text.splitlines(), 1):
        s = raw.strip()
        if not s or s.startswith("!"):
            continue
        indent = len(raw) - len(raw.lstrip())
        while stack and stack[-1] >= indent:
            stack.pop()
        stack.append(indent)
        if len(stack) > MAX_DEPTH:
            raise InputError(Problem(str(path), n, "", f"at most {MAX_DEPTH} levels of indentation", "deeper"))


def _always_located(check: Callable[[Path, str], object]) -> Callable[[Path, str, bool], None]:
    """A check that reads no lines it could put off (`located` is the NVUE reader's)."""
    return lambda path, text, _located: check(path, text)


# A NOS's row names the shape of its saved running configuration (`Nos.running_shape`)
SHAPES: dict[str, Callable[[Path, str, bool], None]] = {
    "config_db": _always_located(config_db_document), "nvue": _nvue, "text": _always_located(_text)}


def check_running(target: str, path: Path, text: str, located: bool = True) -> None:
    """Raise InputError when `text` (of `path`) is no `target` config of the shape its row names (the module
    docstring). `located` False: an NVUE text is read without the lines of its keys until a problem asks for one."""
    SHAPES[NOS[target].running_shape](path, text, located)


def check_reply(target: str, command: str, text: str) -> str:
    """`text`, a switch's reply to `command` (its running configuration), checked as a saved one is; its first
    problem a ReplyError (fabric.replies)."""
    try:
        check_running(target, Path(command), text, located=False)
    except InputError as exc:
        raise from_input(command, exc) from None
    return text


def config_db_reply(command: str, text: str) -> dict[str, Any]:
    """`check_reply` of a SONiC switch's CONFIG_DB, and the document the check read (`config_db_document`)."""
    try:
        return config_db_document(Path(command), text)
    except InputError as exc:
        raise from_input(command, exc) from None


def read_running(target: str, path: Path, located: bool = True) -> str:
    """The text of a saved running configuration of a `target` switch, checked as the module docstring says."""
    text = read_user_file(path, f"a saved {target} running configuration")
    check_running(target, path, text, located)
    return text
