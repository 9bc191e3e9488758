"""YAML with line numbers: every mapping key and sequence item remembers file and line."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from fabric.errors import InputError, Problem

try:  # libyaml is several times faster on large inventories
    _Loader: type = yaml.CSafeLoader
except AttributeError:  # pragma: no cover
    _Loader = yaml.SafeLoader

Loc = tuple[str | int, ...]


class SourceMap:
    """Maps a data path (('hosts', 3, 'name')) to the file and line it came from."""

    def __init__(self) -> None:
        self.lines: dict[Loc, tuple[str, int]] = {}
        self.files: list[str] = []

    def where(self, loc: Loc) -> tuple[str, int | None]:
        """The file and line of `loc`, or of its nearest ancestor that has one."""
        loc = tuple(loc)
        while loc:
            hit = self.lines.get(loc)
            if hit:
                return hit
            loc = loc[:-1]
        return (self.files[0] if self.files else "", None)

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
