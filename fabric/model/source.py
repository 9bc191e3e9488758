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

try:  # libyaml is several times faster on large inventories
    _Loader: type = yaml.CSafeLoader
except AttributeError:  # pragma: no cover
    _Loader = yaml.SafeLoader

Loc = tuple[str | int, ...]
_TAG = re.compile(r"^(?:constrained-)?(?:str|int|float|bool|list|dict|none)$|\[|^function-|^literal|^lax-|^json-")


class SourceMap:
    """Maps a data path (('hosts', 3, 'name')) to the file and line it came from."""

    def __init__(self) -> None:
        self.lines: dict[Loc, tuple[str, int]] = {}
        self.files: list[str] = []

    def where(self, loc: Loc) -> tuple[str, int | None]:
        """The file and line of `loc`, or of its nearest ancestor that has one (the document itself, `()`,
        where one file holds all of it, e.g. a JSON document)."""
        loc = tuple(loc)
        while True:
            hit = self.lines.get(loc)
            if hit:
                return hit
            if not loc:
                return (self.files[0] if self.files else "", None)
            loc = loc[:-1]

    def problem(self, loc: Loc, expected: str, found: str = "") -> Problem:
        file, line = self.where(loc)
        return Problem(file=file, line=line, path=dotted(loc), expected=expected, found=found)


def dotted(loc: Loc) -> str:
    """('hosts', 3, 'nics', 0, 'rail') → 'hosts[3].nics[0].rail'."""
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def _build(node: yaml.Node, loader: yaml.SafeLoader, file: str, loc: Loc, smap: SourceMap,
           problems: list[Problem]) -> Any:
    if isinstance(node, yaml.MappingNode):
        out: dict[Any, Any] = {}
        for key_node, value_node in node.value:
            key = loader.construct_object(key_node)
            line = key_node.start_mark.line + 1
            if key in out:
                first = smap.lines.get((*loc, key), (file, 0))[1]
                problems.append(Problem(file, line, dotted((*loc, key)),
                                        f"each key once (first defined on line {first})", "a duplicate key"))
                continue
            smap.lines[(*loc, key)] = (file, line)
            out[key] = _build(value_node, loader, file, (*loc, key), smap, problems)
        return out
    if isinstance(node, yaml.SequenceNode):
        items = []
        for i, item in enumerate(node.value):
            smap.lines[(*loc, i)] = (file, item.start_mark.line + 1)
            items.append(_build(item, loader, file, (*loc, i), smap, problems))
        return items
    return loader.construct_object(node)


def load_yaml(path: Path, smap: SourceMap, base: Loc = ()) -> Any:
    """Load one YAML file, recording key lines in `smap`; YAML errors raise InputError with the line."""
    file = str(path)
    smap.files.append(file)
    problems: list[Problem] = []
    try:
        text = path.read_text()
        loader = _Loader(text)
        try:
            node = loader.get_single_node()
            data = _build(node, loader, file, base, smap, problems) if node is not None else None
        finally:
            loader.dispose()
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark else None
        raise InputError(Problem(file, line, "", "valid YAML", str(exc.problem or exc).strip())) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(Problem(file, None, "", "a readable UTF-8 YAML file", str(exc))) from None
    if problems:
        raise InputError(problems)
    return data


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
            if "[key]" in e["loc"]:
                msg = "a key: " + msg
            problem = smap.problem(loc, msg, describe(e.get("input")))
        at = (loc, "[key]" in e["loc"])
        if at in out:  # the members of a union: one problem, every alternative
            problem = replace(out[at], expected=f"{out[at].expected} or {problem.expected}")
        out[at] = problem
    return list(out.values())
