"""The model stage of the one loader (`fabric.design.load.load_fabric`, what every command and the lab call): an
inventory directory → YAML with lines → pydantic → model checks. Tests call this stage alone to look at the model.

Structural problems (YAML, types, unknown keys) raise at once; the model's semantic problems are kept
in `Loaded.problems` and raised by derivation together with the topology's own (fabric.design), so a
run reports every problem it can find.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import ValidationError

from fabric.errors import InputError, Problem
from fabric.model.checks import model_problems
from fabric.model.inventory import Inventory
from fabric.model.loaded import Loaded
from fabric.model.qos import PRESETS, QosPolicy, merge
from fabric.model.source import SourceMap, copy_tree, describe, load_yaml, pydantic_problems


def read_sections(directory: Path, smap: SourceMap) -> dict[str, Any]:
    """Merge the top-level sections of every *.yaml file; a section may be defined once. Top-level keys that
    start with `x-` are skipped: they hold YAML anchors for the sections to alias."""
    if not directory.is_dir():
        raise InputError(Problem(str(directory), None, "", "an inventory directory of YAML files",
                                 "a file" if directory.exists() else "a symlink that leads nowhere (a loop or a "
                                 "missing target)" if directory.is_symlink() else "no such directory"))
    smap.root = str(directory)
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
            if isinstance(key, str) and key.startswith("x-"):  # a place for anchors only (as in Compose files)
                continue
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
        raise InputError(smap.problem(("qos",), "a mapping with preset and overrides", describe(raw)))
    overrides = {k: v for k, v in raw.items() if k != "preset"}
    preset = raw.get("preset", "nvidia-roce")
    if not isinstance(preset, str) or preset not in PRESETS:
        raise InputError(smap.problem(("qos", "preset"), f"one of {', '.join(PRESETS)}", describe(preset)))
    try:
        return QosPolicy.model_validate(merge(PRESETS[preset], overrides)), overrides
    except ValidationError as exc:
        raise InputError(pydantic_problems(exc, smap, QosPolicy, ("qos",))) from None


class IncompleteInput(InputError):
    """Structural problems, plus — where the inventory still validates without the offending keys — that
    remainder (`partial`), so the semantic checks can run on it and one run reports both kinds."""

    def __init__(self, problems: list[Problem], partial: Loaded | None):
        super().__init__(problems)
        self.partial = partial


def _drop(data: Any, loc: tuple[Any, ...]) -> bool:
    """Remove the key a pydantic error points at (the deepest mapping key on its path, so a bad list item
    drops its list: indexes elsewhere stay true); False when nothing on the path exists."""
    path: list[tuple[dict[str, Any], str]] = []
    node = data
    for part in loc:
        if isinstance(node, dict) and part in node:
            path.append((node, part))
            node = node[part]
        elif isinstance(node, list) and isinstance(part, int) and 0 <= part < len(node):
            node = node[part]
        elif isinstance(part, str) and "[" in part:  # a validator's tag in the location, not a key
            continue
        else:
            break
    if not path:
        return False
    parent, key = path[-1]
    del parent[key]
    return True


def _remainder(data: dict[str, Any], exc: ValidationError) -> Inventory | None:
    """The inventory without the keys pydantic refused (defaults in their place), if that validates."""
    pruned = copy_tree(data)  # nothing shared: dropping a key under one alias's use leaves the others
    for _ in range(3):  # a dropped key may uncover another problem (a required key): a few rounds at most
        if not all(_drop(pruned, tuple(e["loc"])) for e in exc.errors()):
            return None
        try:
            return Inventory.model_validate(pruned)
        except ValidationError as again:
            exc = again
    return None


def _missing_section(problem: Problem, smap: SourceMap, data: dict[Any, Any]) -> Problem:
    """A required section that no file has, located where it belongs: at a top-level key the inventory does not
    know (the section misspelt or mangled); else in the file named after it (`addressing.yaml` without an
    `addressing:`); else in the one file that holds nothing; else between the sections written before and after
    it (in the inventory's order) where one file holds both; else at the inventory directory (no file to name)."""
    if problem.line is not None or problem.file != smap.root or "." in problem.path or "[" in problem.path:
        return problem
    order = [f.alias or n for n, f in Inventory.model_fields.items()]
    stray = next((k for k in data if k not in order and smap.where((k,))[1]), None)
    if stray is not None:
        file, line = smap.where((stray,))
        return Problem(file, line, problem.path, "this required section", f"nothing (an unknown section "
                       f"{describe(stray)} here instead)")
    section = problem.path
    holding = {smap.lines[loc][0] for loc in smap.lines if len(loc) == 1}  # files with a top-level key
    named = [f for f in smap.files if Path(f).stem == section]
    empty = [f for f in smap.files if f not in holding]
    where: tuple[str, int | None, str] | None = None
    if named:
        where = (named[0], 1, f"this file holds no {section}: section")
    elif len(empty) == 1:
        where = (empty[0], 1, "this file holds no section")
    elif section in order:
        i = order.index(section)
        before = next((smap.where((s,)) for s in reversed(order[:i]) if s in data), None)
        after = next(((s, smap.where((s,))) for s in order[i + 1:] if s in data), None)
        if before and after and before[0] == after[1][0]:
            where = (after[1][0], after[1][1], f"it belongs before {after[0]}:")
    if where is None:
        return problem
    return Problem(where[0], where[1], section, "this required section", f"nothing ({where[2]})")


def load(directory: str | Path) -> Loaded:
    """Load and validate an inventory directory; raise InputError listing every structural problem
    (IncompleteInput with the remainder that validates, for the semantic checks)."""
    smap = SourceMap()
    data = read_sections(Path(directory), smap)
    problems: list[Problem] = []
    inv = partial = None
    try:
        inv = Inventory.model_validate(data)
    except ValidationError as exc:
        problems += [_missing_section(p, smap, data) for p in pydantic_problems(exc, smap, Inventory)]
        partial = _remainder(data, exc)
    qos = overrides = None
    try:
        qos, overrides = expand_qos(data.get("qos", {"preset": "nvidia-roce"}), smap)
    except InputError as exc:
        problems += exc.problems
    if problems or inv is None or qos is None:
        rest = inv or partial
        if rest is None or qos is None:
            raise IncompleteInput(problems, None)
        loaded = Loaded(rest, smap, qos, overrides or {})
        loaded.problems = model_problems(loaded)
        raise IncompleteInput(problems, loaded)
    loaded = Loaded(inv, smap, qos, overrides or {})
    loaded.problems = model_problems(loaded)
    return loaded
