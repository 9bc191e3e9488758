"""The signature catalog: the `Signature` model and loading catalog.yaml (package data), extended or
overridden by a user's `--catalog` file. One regex per signature; ids DG9xx are reserved for the rules."""

from __future__ import annotations

import re
from functools import cache, lru_cache
from importlib import resources
from pathlib import Path
from re import _constants as _sre_c  # type: ignore[attr-defined]  # regex parse tree, for needles
from re import _parser as _sre  # type: ignore[attr-defined]
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, ValidationError, field_validator

from fabric.diagnose.regex import Pattern, linear
from fabric.diagnose.report import Severity
from fabric.diagnose.rules import RULE_IDS
from fabric.errors import InputError, Problem
from fabric.model.source import SourceMap, load_yaml, pydantic_problems

SourceKind = Literal["nccl", "kernel", "perftest", "nccl-tests", "any"]


class Signature(BaseModel):
    """One known failure signature: a regex over a log line, and what it means."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str = Field(pattern=r"^[A-Za-z][A-Za-z0-9_.-]*$")
    title: str = Field(min_length=1)
    severity: Severity
    sources: list[SourceKind] = Field(min_length=1)
    regex: str = Field(min_length=1)
    unless: str | None = Field(None, min_length=1, description="a regex that vetoes a hit on the same line (RE2 has "
                               "no lookaround: `unless` says what a negative lookahead would)")
    cause: str = Field(min_length=1)
    next_step: str = Field(min_length=1)
    _pattern: Pattern = PrivateAttr()

    @field_validator("regex", "unless")
    @classmethod
    def _compiles(cls, value: str | None) -> str | None:
        if value is None:
            return value
        try:
            re.compile(value)
        except (re.error, RecursionError, OverflowError) as exc:
            raise ValueError(f"a valid Python regular expression ({exc})") from None
        linear(value)  # raises ValueError: a pattern only a backtracking engine runs
        return value

    _needles: tuple[str, ...] = PrivateAttr()
    _unless: Pattern | None = PrivateAttr()

    def model_post_init(self, context: Any) -> None:
        self._pattern = linear(self.regex)
        self._unless = linear(self.unless) if self.unless else None
        self._needles = required_literals(self.regex)

    @property
    def pattern(self) -> Pattern:
        return self._pattern

    @property
    def unless_pattern(self) -> Pattern | None:
        return self._unless

    @property
    def needles(self) -> tuple[str, ...]:
        """Literals of which every match contains one: lines without any skip the regex."""
        return self._needles


@lru_cache(maxsize=1024)
def required_literals(regex: str) -> tuple[str, ...]:
    """Literal strings of which every match contains at least one; () if none can be derived (cached: re's parser
    is the slow part of loading a catalog)."""
    try:
        tree = _sre.parse(regex)
    except Exception:  # pragma: no cover - the regex compiled, so this is only a guard
        return ()
    if tree.state.flags & re.IGNORECASE:
        return ()
    return tuple(_required(list(tree)) or ())


def _required(items: list[Any]) -> list[str] | None:
    """The most selective required literal (or set of alternatives) in a parsed sequence."""
    best: list[str] | None = None
    run = ""

    def consider(candidates: list[str] | None) -> None:
        nonlocal best
        if candidates and (best is None or min(map(len, candidates)) > min(map(len, best))):
            best = candidates

    for op, arg in items:
        if op is _sre_c.LITERAL:
            run += chr(arg)
            continue
        consider([run] if run else None)
        run = ""
        if op is _sre_c.SUBPATTERN:
            consider(_required(list(arg[-1])))
        elif op is _sre_c.BRANCH:
            alternatives = [_required(list(branch)) for branch in arg[1]]
            if all(alternatives):
                consider([lit for alt in alternatives if alt for lit in alt])
        elif op in (_sre_c.MAX_REPEAT, _sre_c.MIN_REPEAT) and arg[0] >= 1:
            consider(_required(list(arg[2])))
    consider([run] if run else None)
    return best


class CatalogFile(BaseModel):
    """The shape of catalog.yaml and of a user --catalog file."""

    model_config = ConfigDict(extra="forbid")

    version: Literal[1] = 1
    signatures: list[Signature] = Field(default_factory=list)


@cache
def _shipped() -> tuple[Signature, ...]:
    """The shipped catalog, loaded once a process (package data; signatures are frozen)."""
    with resources.as_file(resources.files("fabric.diagnose") / "catalog.yaml") as shipped:
        return tuple(_load_catalog_file(shipped))


def load_catalog(extra: Path | None = None) -> list[Signature]:
    """The shipped catalog; entries in `extra` replace shipped ones with the same id or are added."""
    signatures = list(_shipped())
    if extra is None:
        return signatures
    by_id = {s.id: s for s in signatures}
    for sig in _load_catalog_file(extra, user=True):
        by_id[sig.id] = sig  # dicts keep insertion order: overrides stay in place, new ones go last
    return list(by_id.values())


def _load_catalog_file(path: Path, user: bool = False) -> list[Signature]:
    smap = SourceMap()
    data = load_yaml(path, smap)
    if not isinstance(data, dict):
        raise InputError(Problem(str(path), 1, "", "a mapping with a 'signatures' list",
                                 type(data).__name__))
    try:
        catalog = CatalogFile.model_validate(data)
    except ValidationError as exc:
        raise InputError(pydantic_problems(exc, smap, CatalogFile)) from None
    problems: list[Problem] = []
    seen: dict[str, int] = {}
    for i, sig in enumerate(catalog.signatures):
        loc = ("signatures", i, "id")
        if sig.id in seen:
            problems.append(smap.problem(loc, f"a unique id (signatures[{seen[sig.id]}] has it)", sig.id))
        elif user and sig.id in RULE_IDS:
            problems.append(smap.problem(loc, "an id not reserved for a built-in cross-line rule "
                                              f"({', '.join(sorted(RULE_IDS))})", sig.id))
        seen.setdefault(sig.id, i)
    if problems:
        raise InputError(problems)
    return catalog.signatures
