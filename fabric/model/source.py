"""User input with line numbers: YAML (and JSON) where every mapping key and sequence item remembers file and
line, and the one conversion of pydantic errors into located problems (`pydantic_problems`) that every loader
of user files uses: inventories, the acceptance and diagnose catalogs, host intents."""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path
from typing import Any, get_args, get_origin

import yaml
from pydantic import BaseModel, ValidationError

from fabric.errors import InputError, Problem
from fabric.fast.blockyaml import load_block
from fabric.model.limits import MAX_BYTES
from fabric.model.userfile import read_user_file

try:  # libyaml is several times faster on large inventories
    _Loader: type = yaml.CSafeLoader
except AttributeError:  # pragma: no cover
    _Loader = yaml.SafeLoader

Loc = tuple[str | int, ...]
_TAG = re.compile(r"^(?:constrained-)?(?:str|int|float|bool|list|dict|none)$|\[|^function-|^literal|^lax-|^json-")


class SourceMap:
    """Maps a data path (('hosts', 3, 'name')) to the file and line it came from."""

    def __init__(self) -> None:
        self.lines = Lines()
        self.files: list[str] = []
        self.root: str | None = None  # a directory of files (an inventory): where a missing section belongs
        self.one_pass = False  # the last text was read by the one-pass block reader: every key a str or an int

    def where(self, loc: Loc) -> tuple[str, int | None]:
        """The file and line of `loc`, or of its nearest ancestor that has one (the document itself, `()`,
        where one file holds all of it, e.g. a JSON document)."""
        loc = tuple(loc)
        while True:
            hit = self.lines.get(loc)
            if hit:
                return hit
            if not loc:
                return (self.root or (self.files[0] if self.files else ""), None)
            loc = loc[:-1]

    def problem(self, loc: Loc, expected: str, found: str = "") -> Problem:
        file, line = self.where(loc)
        return Problem(file=file, line=line, path=dotted(loc), expected=expected, found=found)


class Lines(dict[Loc, tuple[str, int]]):
    """Data path → (file, line) of what the user wrote there. A path reached through a YAML alias or merge key
    (`aliases`: the path of the use → the path of the anchor's text) resolves to the anchor's text, so `in` and
    `get` answer for every value the user wrote, directly or through an anchor, at no cost per expanded node."""

    def __init__(self) -> None:
        super().__init__()
        self.aliases: dict[Loc, Loc] = {}

    def resolve(self, loc: Loc) -> tuple[str, int] | None:
        for _ in range(1000):  # alias chains point backwards in a file: a bound, not a cycle guard
            hit = dict.get(self, loc)
            if hit is not None or not self.aliases:
                return hit
            target = next(((self.aliases[loc[:i]], i) for i in range(len(loc), 0, -1) if loc[:i] in self.aliases),
                          None)
            if target is None:
                return None
            loc = (*target[0], *loc[target[1]:])
        return None

    def __contains__(self, loc: object) -> bool:
        return isinstance(loc, tuple) and self.resolve(loc) is not None

    def get(self, loc: Loc, default: Any = None) -> Any:  # type: ignore[override]
        hit = self.resolve(loc)
        return default if hit is None else hit


def dotted(loc: Loc) -> str:
    """('hosts', 3, 'nics', 0, 'rail') → 'hosts[3].nics[0].rail'."""
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


MAX_DEPTH = 64  # nesting of mappings and sequences
ALIAS_NODES = 200_000  # nodes aliases may build beyond ALIAS_RATIO × the nodes the file itself writes
ALIAS_RATIO = 10
ALIAS_BYTES = MAX_BYTES  # scalar characters aliases may repeat
class _Frame:
    """A mapping or sequence being built: its value, data path, the key waiting for its value (mappings), its
    anchor, and what it costs (nodes, scalar characters, levels below it)."""

    __slots__ = ("anchor", "bytes", "height", "key", "loc", "mapping", "merges", "nodes", "value")

    def __init__(self, value: Any, loc: Loc, anchor: str | None):
        self.value, self.loc, self.key, self.mapping = value, loc, _NO_KEY, isinstance(value, dict)
        self.anchor, self.nodes, self.bytes, self.height = anchor, 1, 0, 0
        self.merges: list[tuple[Any, Loc]] = []


_NO_KEY = object()
_MERGE = object()  # the key `<<`: its value is merged into the mapping when the mapping ends


class _Anchor:
    """A completed anchored node: its value (shared by every alias: nothing mutates a composed value), its
    path, and its cost."""

    __slots__ = ("bytes", "height", "loc", "nodes", "value")

    def __init__(self, value: Any, loc: Loc, nodes: int, size: int, height: int):
        self.value, self.loc, self.nodes, self.bytes, self.height = value, loc, nodes, size, height


def copy_tree(value: Any) -> Any:
    """A copy of a loaded value (dicts, lists, immutable scalars) that shares nothing — an alias's value appears
    once per use after this — without recursion."""
    if not isinstance(value, dict | list):
        return value
    root: Any = {} if isinstance(value, dict) else []
    todo = [(value, root)]
    while todo:
        src, dst = todo.pop()
        for k, v in (src.items() if isinstance(src, dict) else enumerate(src)):
            if isinstance(v, dict | list):
                v2: Any = {} if isinstance(v, dict) else []
                todo.append((v, v2))
                v = v2
            if isinstance(dst, dict):
                dst[k] = v
            else:
                dst.append(v)
    return root


_Node = tuple[Any, int, int, int]  # a completed node: its value, nodes, scalar characters, levels


class _Composer:
    """`_compose`'s state between events: the open mappings and sequences, the anchors, and what the file wrote
    and its aliases expanded so far."""

    def __init__(self, loader: Any, file: str, base: Loc, smap: SourceMap, problems: list[Problem]) -> None:
        self.loader, self.file, self.base, self.smap, self.problems = loader, file, base, smap, problems
        self.anchors: dict[str, _Anchor] = {}
        self.stack: list[_Frame] = []
        self.written = self.expanded = self.expanded_bytes = 0

    def fail(self, event: Any, expected: str, found: str, loc: Loc | None = None) -> InputError:
        return InputError(Problem(self.file, event.start_mark.line + 1, dotted(self.base if loc is None else loc),
                                  expected, found))

    def document(self) -> Any:
        """The document's value, from the events up to its end."""
        stack = self.stack
        while True:
            event = self.loader.get_event()
            top = stack[-1] if stack else None
            if isinstance(event, (yaml.MappingEndEvent, yaml.SequenceEndEvent)):
                done = self.close()
                if not stack:
                    return done.value
                top, node = stack[-1], (done.value, done.nodes, done.bytes, done.height + 1)
            elif top is not None and top.mapping and top.key is _NO_KEY:
                self.key(event, top)
                continue
            else:
                node = self.node(event, top)
                if node is None:  # a mapping or sequence opened
                    continue
                if top is None:  # a document that is one scalar
                    return node[0]
            self.add(event, top, node)

    def close(self) -> _Frame:
        """The mapping or sequence just ended: its merges done, its anchor kept."""
        done = self.stack.pop()
        if done.merges:
            _merge(done, self.smap)
        if done.anchor is not None:
            self.anchors[done.anchor] = _Anchor(done.value, done.loc, done.nodes, done.bytes, done.height + 1)
        return done

    def key(self, event: Any, top: _Frame) -> None:
        """A key of mapping `top`: a plain scalar, each once (a duplicate is a problem and its value dropped)."""
        if not isinstance(event, yaml.ScalarEvent):
            raise self.fail(event, "a plain key (a name or number)",
                            "an alias as a key" if isinstance(event, yaml.AliasEvent)
                            else "a mapping or sequence as a key", top.loc)
        self.written += 1
        smap, line = self.smap, event.start_mark.line + 1
        if _is_merge(self.loader, event):
            top.key = _MERGE
            smap.lines[(*top.loc, "<<")] = (self.file, line)
            return
        key = _scalar(self.loader, event, self.file, top.loc)
        if key is None:
            raise self.fail(event, "a key", "null", top.loc)
        if not isinstance(key, str | int | float | bool):
            key = str(key)
        loc = (*top.loc, key)
        if key in top.value:
            first = smap.lines.get(loc, (self.file, 0))[1]
            self.problems.append(Problem(self.file, line, dotted(loc),
                                         f"each key once (first defined on line {first})", "a duplicate key"))
            top.key = None  # the value is read and dropped
            return
        smap.lines[loc] = (self.file, line)
        if isinstance(key, float):  # pydantic names a float key by its text ('1.5', 'nan') in errors
            smap.lines[(*top.loc, str(key))] = smap.lines[loc]
        top.key = key

    def node(self, event: Any, top: _Frame | None) -> _Node | None:
        """A value: a scalar or an alias (the node), or the start of a mapping or sequence (None: it is open)."""
        if top is None:
            loc = self.base
        elif top.mapping:
            loc = (*top.loc, "<<" if top.key is _MERGE else top.key)
        else:
            loc = (*top.loc, len(top.value))
            self.smap.lines[loc] = (self.file, event.start_mark.line + 1)
        if isinstance(event, yaml.AliasEvent):
            return self.alias(event, loc)
        if isinstance(event, yaml.ScalarEvent):
            self.written += 1
            value, size = _scalar(self.loader, event, self.file, loc), len(event.value)
            if event.anchor is not None:
                self.anchors[event.anchor] = _Anchor(value, loc, 1, size, 0)
            return value, 1, size, 0
        if isinstance(event, (yaml.MappingStartEvent, yaml.SequenceStartEvent)):
            self.written += 1
            if event.tag not in (None, "!", "tag:yaml.org,2002:map", "tag:yaml.org,2002:seq"):
                raise self.fail(event, "no tags", event.tag, loc)
            if len(self.stack) >= MAX_DEPTH:
                raise self.fail(event, f"at most {MAX_DEPTH} levels of nesting", "deeper", loc)
            self.stack.append(_Frame({} if isinstance(event, yaml.MappingStartEvent) else [], loc, event.anchor))
            return None
        raise self.fail(event, "a YAML node", type(event).__name__, loc)  # pragma: no cover - nothing else comes

    def alias(self, event: Any, loc: Loc) -> _Node:
        """An alias's node: its anchor's value, within the bounds on what aliases may build."""
        anchor = self.anchors.get(event.anchor)
        if anchor is None:
            raise self.fail(event, "an alias to an anchor defined above it (&name)", f"*{event.anchor}", loc)
        self.expanded += anchor.nodes
        self.expanded_bytes += anchor.bytes
        limit = ALIAS_NODES + ALIAS_RATIO * self.written
        if self.expanded > limit or self.expanded_bytes > ALIAS_BYTES:
            raise self.fail(event, f"aliases that build at most {limit:,} nodes "
                            f"and {ALIAS_BYTES // 2**20} MiB of text (an alias bomb?)", f"*{event.anchor}", loc)
        if len(self.stack) + anchor.height > MAX_DEPTH:
            raise self.fail(event, f"at most {MAX_DEPTH} levels of nesting", f"deeper through *{event.anchor}", loc)
        if anchor.height:
            self.smap.lines.aliases[loc] = anchor.loc
        return anchor.value, anchor.nodes, anchor.bytes, anchor.height

    def add(self, event: Any, top: _Frame, node: _Node) -> None:
        """A completed node into the open mapping (under its key, or to merge) or sequence `top`."""
        value, nodes, size, height = node
        top.nodes += nodes
        top.bytes += size
        top.height = max(top.height, height)
        if not top.mapping:
            top.value.append(value)
            return
        if top.key is _MERGE:
            if not (isinstance(value, dict) or (isinstance(value, list) and value
                                                and all(isinstance(v, dict) for v in value))):
                raise self.fail(event, "a mapping or a list of mappings after <<", describe(value), top.loc)
            top.merges.append((value, (*top.loc, "<<")))
        elif top.key is not None:
            top.value[top.key] = value
        top.key = _NO_KEY


def _compose(loader: Any, file: str, base: Loc, smap: SourceMap, problems: list[Problem]) -> Any:
    """Build the one document from parser events with an explicit stack (no recursion, so no RecursionError or
    C stack overflow on deep nesting), refusing non-scalar keys, tags and nesting beyond MAX_DEPTH.

    Anchors, aliases and merge keys (`<<: *defaults`) are expanded with a bound on what expansion may build
    (no billion laughs): at most ALIAS_NODES + ALIAS_RATIO × the nodes written in the file, ALIAS_BYTES scalar
    characters, and MAX_DEPTH levels after expansion; an alias shares its anchor's value, so the bound is
    checked before anything is built. A value reached through an alias is located at the anchor's text (where
    it is written); the alias itself at its use."""
    loader.get_event()  # stream start
    if loader.check_event(yaml.StreamEndEvent):
        return None
    loader.get_event()  # document start
    composer = _Composer(loader, file, base, smap, problems)
    root = composer.document()
    loader.get_event()  # document end
    if not loader.check_event(yaml.StreamEndEvent):
        raise composer.fail(loader.peek_event(), "one YAML document", "another document (---)")
    return root


def _is_merge(loader: Any, event: Any) -> bool:
    tag = event.tag if event.tag not in (None, "!") else loader.resolve(yaml.ScalarNode, event.value, event.implicit)
    return tag == "tag:yaml.org,2002:merge"


def _merge(frame: _Frame, smap: SourceMap) -> None:
    """Apply a mapping's `<<` values (YAML merge keys): a key written in the mapping wins, then the first merged
    mapping that has it; a merged key is located at its text in the merged mapping."""
    for value, at in frame.merges:
        sources = [(value, at)] if isinstance(value, dict) else [(v, (*at, i)) for i, v in enumerate(value)]
        for source, prefix in sources:
            for k, v in source.items():
                if k not in frame.value:
                    frame.value[k] = v
                    smap.lines.aliases[(*frame.loc, k)] = (*prefix, k)


_SCALARS: dict[tuple[Any, ...], Any] = {}  # (tag, text, implicit) → its value: the same words recur in every file


def _scalar(loader: Any, event: Any, file: str, loc: Loc) -> Any:
    key = (event.tag, event.value, event.implicit)
    if key in _SCALARS:
        return _SCALARS[key]
    value = _new_scalar(loader, event, file, loc)
    if len(_SCALARS) >= 200_000:
        _SCALARS.clear()
    _SCALARS[key] = value  # a scalar's value depends on these alone, and is immutable (str, int, float, bool, None)
    return value


def _new_scalar(loader: Any, event: Any, file: str, loc: Loc) -> Any:
    tag = event.tag if event.tag not in (None, "!") else loader.resolve(yaml.ScalarNode, event.value, event.implicit)
    constructor = loader.yaml_constructors.get(tag)
    if constructor is None or tag.endswith(("binary", "set", "omap", "pairs")):
        raise InputError(Problem(file, event.start_mark.line + 1, dotted(loc), "no tags", tag))
    node = yaml.ScalarNode(tag, event.value, event.start_mark, event.end_mark, style=event.style)
    try:
        value = constructor(loader, node)
    except ValueError as exc:  # int('9' * 5000): Python's digit limit
        raise InputError(Problem(file, event.start_mark.line + 1, dotted(loc), "a value YAML can read",
                                 " ".join(str(exc).split())[:120])) from None
    if isinstance(value, int) and not isinstance(value, bool) and abs(value).bit_length() > 64:
        # YAML 1.1 hex (0xfff…) and sexagesimal (1:2:3…) integers have no digit limit; such a number could not
        # even be printed in a message (Python refuses to print more than 4,300 digits)
        raise InputError(Problem(file, event.start_mark.line + 1, dotted(loc), "an integer of at most 64 bits",
                                 f"{event.value[:40]}… ({len(event.value)} characters)"))
    return value


def load_yaml(path: Path, smap: SourceMap, base: Loc = ()) -> Any:
    """Load one YAML file, recording key lines in `smap`; every YAML error raises InputError with the line.

    Hardened for hostile input: a regular file of at most MAX_BYTES, nesting at most MAX_DEPTH, aliases and
    merge keys with a bound on what they expand to (no billion laughs), scalar keys only, no tags."""
    return yaml_text(read_user_file(path, "a YAML file"), str(path), smap, base)


def yaml_text(text: str, file: str, smap: SourceMap, base: Loc = (), fast: bool = True) -> Any:
    """`load_yaml` of text read already. Plain block YAML (what tools write) is read in one pass
    (`fabric.fast.blockyaml`); anything else, or with `fast` False, by the event loop below with every check."""
    smap.files.append(file)
    smap.one_pass = False
    if fast:
        lines: dict[Loc, tuple[str, int]] = {}
        try:
            data = load_block(text, lines, file, base, MAX_DEPTH)
        except LookupError:
            pass
        else:
            smap.lines.update(lines)
            smap.one_pass = True
            return data
    problems: list[Problem] = []
    try:
        loader = _Loader(text)
        try:
            data = _compose(loader, file, base, smap, problems)
        finally:
            loader.dispose()
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark else None
        why = _clean(str(exc.problem or exc))
        if "maximum nesting depth" in why:  # libyaml's own cap (1,000 in recent builds) can come before ours
            raise InputError(Problem(file, line, "", f"at most {MAX_DEPTH} levels of nesting", "deeper")) from None
        raise InputError(Problem(file, line, "", "valid YAML", why)) from None
    except yaml.reader.ReaderError as exc:  # NUL and other characters YAML does not allow
        line = text.count("\n", 0, min(exc.position, len(text))) + 1
        raise InputError(Problem(file, line, "", "valid YAML (printable characters)",
                                 f"character {exc.character!r}" if isinstance(exc.character, str)
                                 else _clean(exc.reason))) from None
    except yaml.YAMLError as exc:
        raise InputError(Problem(file, None, "", "valid YAML", _clean(str(exc)))) from None
    if problems:
        raise InputError(problems)
    return data


def _clean(text: str) -> str:
    """One line, control characters escaped, at most 160 characters."""
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in " ".join(text.split()))[:160]


def json_source(text: str, file: str, smap: SourceMap) -> Any:
    """Parse JSON `text` (from `file`), recording the line of every key and item in `smap`."""
    from fabric.model.jsonlines import JsonLines

    smap.files.append(file)
    try:
        doc = JsonLines(text)
    except (ValueError, RecursionError) as exc:
        m = re.fullmatch(r"line (\d+): expected (.*)", str(exc), re.S)
        where, why = (int(m[1]), m[2]) if m else (None, " ".join(str(exc).split()) or "nesting too deep")
        raise InputError(Problem(file, where, "", "valid JSON", why)) from None
    smap.lines[()] = (file, doc.line_of(len(text) - len(text.lstrip())))  # where the document starts
    for loc, line in doc.lines.items():
        smap.lines[loc] = (file, line)
    return doc.value


def describe(value: Any) -> str:
    """A found value for a message: its repr, cut at 60 characters."""
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _is_model(ann: Any) -> bool:
    return isinstance(ann, type) and issubclass(ann, BaseModel)


def _unwrap(ann: Any) -> Any:
    """Optional[X], Annotated[X, …] and unions → the model or container inside."""
    while get_origin(ann) not in (None, list, dict):
        args = [a for a in get_args(ann) if a is not type(None)]
        ann = next((a for a in args if _is_model(a) or get_origin(a) in (list, dict)), args[0])
    return ann


def _fields_at(model: type[BaseModel], loc: Loc) -> list[str] | None:
    """Allowed keys of the mapping at `loc` (for 'unknown key' errors), following the model."""
    ann: Any = model
    for part in loc:
        ann = _unwrap(ann)
        if _is_model(ann):
            field = next((f for n, f in ann.model_fields.items() if (f.alias or n) == part), None)
            if field is None:
                return None
            ann = field.annotation
        elif get_origin(ann) in (list, dict):
            ann = get_args(ann)[-1]
        else:
            return None
    ann = _unwrap(ann)
    return [f.alias or n for n, f in ann.model_fields.items()] if _is_model(ann) else None


def pydantic_problems(exc: ValidationError, smap: SourceMap, model: type[BaseModel],
                      base: Loc = ()) -> list[Problem]:
    """One Problem per pydantic error, with file:line from the source map."""
    out: dict[tuple[Loc, bool], Problem] = {}
    for e in exc.errors():
        loc: Loc = base
        for p in e["loc"]:  # leave out pydantic's union member tags (str, constrained-int, function-after[…])
            if not (isinstance(p, str) and _TAG.match(p) and (*loc, p) not in smap.lines):
                loc = (*loc, p)
        kind = e["type"]
        if kind == "extra_forbidden":
            allowed = _fields_at(model, tuple(loc[len(base):-1]))
            expected = f"one of {', '.join(allowed)}" if allowed else "a known key"
            problem = smap.problem(loc, expected, f"unknown key {describe(loc[-1])}")
        elif kind == "missing":
            problem = smap.problem(loc, "this required key", "nothing")
        else:
            msg = e["msg"].removeprefix("Value error, ").removeprefix("Input should be ")
            msg = msg.replace("String should match pattern", "a string matching")
            msg = msg.replace("Input is not a valid", "a valid")  # ipaddress types: "Input is not a valid IPv4 …"
            msg = msg.replace("Keys should be strings", "a key that is text (a name)")
            if "[key]" in e["loc"]:
                msg = "a key: " + msg
            problem = smap.problem(loc, msg, describe(e.get("input")))
        at = (loc, "[key]" in e["loc"])
        if at in out:  # the members of a union: one problem, every alternative
            problem = replace(out[at], expected=f"{out[at].expected} or {problem.expected}")
        out[at] = problem
    return list(out.values())
