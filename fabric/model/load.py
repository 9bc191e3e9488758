"""Load an inventory directory: YAML with lines → pydantic → semantic checks, all problems at once."""

from __future__ import annotations

from pathlib import Path
from typing import Any, get_args, get_origin

from pydantic import BaseModel, ValidationError

from fabric.design.topology import Topo
from fabric.errors import InputError, Problem
from fabric.model.inventory import Inventory
from fabric.model.qos import PRESETS, QosPolicy, merge
from fabric.model.source import Loc, SourceMap, load_yaml


class Loaded:
    """A validated inventory with its source map and its expanded QoS policy."""

    def __init__(self, inv: Inventory, smap: SourceMap, qos: QosPolicy, qos_overrides: dict[str, Any]):
        self.inv = inv
        self.smap = smap
        self.qos = qos
        self.qos_overrides = qos_overrides
        self.root = Path(smap.files[0]).parent if smap.files else Path(".")
        self.topo: Topo | None = None  # the expanded topology, kept by the semantic checks

    def where(self, *loc: str | int) -> str:
        file, line = self.smap.where(loc)
        return f"{file}:{line}" if line else file


def _describe(value: Any) -> str:
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
    out = []
    for e in exc.errors():
        loc = (*base, *(p for p in e["loc"] if not (isinstance(p, str) and "[" in p)))
        kind = e["type"]
        if kind == "extra_forbidden":
            allowed = _fields_at(model, tuple(loc[len(base):-1]))
            expected = f"one of {', '.join(allowed)}" if allowed else "a known key"
            out.append(smap.problem(loc, expected, f"unknown key {loc[-1]!r}"))
        elif kind == "missing":
            out.append(smap.problem(loc, "this required key", "nothing"))
        else:
            msg = e["msg"].removeprefix("Value error, ").removeprefix("Input should be ")
            out.append(smap.problem(loc, msg, _describe(e.get("input"))))
    return out


def read_sections(directory: Path, smap: SourceMap) -> dict[str, Any]:
    """Merge the top-level sections of every *.yaml file; a section may be defined once."""
    if not directory.is_dir():
        raise InputError(Problem(str(directory), None, "", "an inventory directory of YAML files",
                                 "no such directory" if not directory.exists() else "a file"))
    files = sorted([*directory.glob("*.yaml"), *directory.glob("*.yml")])
    if not files:
        raise InputError(Problem(str(directory), None, "", "at least one *.yaml file", "none"))
    data: dict[str, Any] = {}
    first: dict[str, tuple[str, int | None]] = {}
    problems: list[Problem] = []
    for path in files:
        try:
            doc = load_yaml(path, smap)
        except InputError as exc:
            problems += exc.problems
            continue
        if doc is None:
            continue
        if not isinstance(doc, dict):
            problems.append(Problem(str(path), 1, "", "a mapping of sections (fabric:, topology:, …)",
                                    type(doc).__name__))
            continue
        for key, value in doc.items():
            if key in data:
                problems.append(smap.problem((key,), f"section {key!r} in one file only",
                                             f"it again (first in {first[key][0]}:{first[key][1]})"))
                smap.lines[(key,)] = first[key]
                continue
            data[key] = value
            first[key] = smap.where((key,))
    if problems:
        raise InputError(problems)
    return data


def expand_qos(raw: Any, smap: SourceMap) -> tuple[QosPolicy, dict[str, Any]]:
    """`preset` expanded, then the user's overrides merged on top, then validated."""
    if not isinstance(raw, dict):
        raise InputError(smap.problem(("qos",), "a mapping with preset and overrides", _describe(raw)))
    overrides = {k: v for k, v in raw.items() if k != "preset"}
    preset = raw.get("preset", "nvidia-roce")
    if preset not in PRESETS:
        raise InputError(smap.problem(("qos", "preset"), f"one of {', '.join(PRESETS)}", _describe(preset)))
    try:
        return QosPolicy.model_validate(merge(PRESETS[preset], overrides)), overrides
    except ValidationError as exc:
        raise InputError(pydantic_problems(exc, smap, QosPolicy, ("qos",))) from None


def load(directory: str | Path) -> Loaded:
    """Load and validate an inventory directory; raise InputError listing every problem."""
    from fabric.model.checks import semantic_problems

    smap = SourceMap()
    data = read_sections(Path(directory), smap)
    problems: list[Problem] = []
    inv = None
    try:
        inv = Inventory.model_validate(data)
    except ValidationError as exc:
        problems += pydantic_problems(exc, smap, Inventory)
    qos = overrides = None
    try:
        qos, overrides = expand_qos(data.get("qos", {"preset": "nvidia-roce"}), smap)
    except InputError as exc:
        problems += exc.problems
    if problems or inv is None or qos is None:
        raise InputError(problems)
    loaded = Loaded(inv, smap, qos, overrides or {})
    problems = semantic_problems(loaded)
    if problems:
        raise InputError(problems)
    return loaded
