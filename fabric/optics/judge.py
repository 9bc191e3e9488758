"""Judging one module: each lit lane's bias and Tx/Rx power and the module's temperature and voltage
against the module's own thresholds (SFF-8636 / CMIS carry them in the module), and its identity against
what the inventory's operator expects for the link class."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, ValidationError

from fabric.errors import InputError, Problem
from fabric.model.source import SourceMap, load_yaml, pydantic_problems
from fabric.parsers.transceiver import METRICS, UNITS, Levels, Module

NEAR = 0.10  # within 10 % of the warning window from a warning threshold: "near"
Level = Literal["alarm", "warning", "near"]
_LABEL = {"temperature": "temperature", "voltage": "voltage", "bias": "Tx bias", "tx_power": "Tx power",
          "rx_power": "Rx power"}


class Issue(BaseModel):
    metric: str
    lane: int | None = None
    level: Level
    value: float | None  # None: no light at all on a lit lane
    limit: float | None
    text: str


def _check(metric: str, lane: int | None, value: float | None, t: Levels) -> Issue | None:
    unit, name = UNITS[metric], _LABEL[metric] + (f" lane {lane}" if lane is not None else "")
    if value is None:  # a lane with bias but no light: below any low threshold
        if metric == "rx_power":
            return Issue(metric=metric, lane=lane, level="alarm", value=None, limit=t.low_alarm,
                         text=f"{name}: no light (low alarm {t.low_alarm} {unit})")
        return None
    for level, bound, limit in (("alarm", "high", t.high_alarm), ("alarm", "low", t.low_alarm),
                                ("warning", "high", t.high_warning), ("warning", "low", t.low_warning)):
        if limit is None:
            continue
        if (bound == "high" and value > limit) or (bound == "low" and value < limit):
            return Issue(metric=metric, lane=lane, level=level, value=value, limit=limit,  # type: ignore[arg-type]
                         text=f"{name} {value:g} {unit} {'above' if bound == 'high' else 'below'} {bound} "
                              f"{level} {limit:g} {unit}")
    if t.high_warning is not None and t.low_warning is not None:
        margin = NEAR * (t.high_warning - t.low_warning)
        for bound, limit in (("high", t.high_warning), ("low", t.low_warning)):
            if abs(value - limit) <= margin:
                return Issue(metric=metric, lane=lane, level="near", value=value, limit=limit,
                             text=f"{name} {value:g} {unit} near the {bound} warning {limit:g} {unit}")
    return None


def judge(mod: Module) -> list[Issue]:
    """Every value outside (or near) the module's thresholds; lanes that are dark everywhere are unused."""
    issues = []
    t = {m: mod.thresholds.get(m) or Levels() for m in METRICS}
    for metric, value in (("temperature", mod.temperature), ("voltage", mod.voltage)):
        if value is not None and (found := _check(metric, None, value, t[metric])):
            issues.append(found)
    for lane in mod.lanes:
        if lane.dark:
            continue
        for metric in ("bias", "tx_power", "rx_power"):
            if found := _check(metric, lane.lane, getattr(lane, metric), t[metric]):
                issues.append(found)
    return issues


class Expected(BaseModel):
    """What a link class's modules should be (each field optional; compared case-insensitively, as a prefix)."""

    model_config = ConfigDict(extra="forbid")

    vendor: str | None = None
    part: str | None = None
    firmware: str | None = None
    revision: str | None = None


class Expectations(BaseModel):
    """`--expect FILE`: per link class, `host` (host NIC ↔ leaf) and `fabric` (leaf ↔ spine)."""

    model_config = ConfigDict(extra="forbid")

    host: Expected | None = None
    fabric: Expected | None = None


def load_expectations(path: Path) -> Expectations:
    smap = SourceMap()
    data = load_yaml(path, smap)
    if not isinstance(data, dict):
        raise InputError(Problem(str(path), 1, "", "a mapping with host: and/or fabric:", type(data).__name__))
    try:
        return Expectations.model_validate(data)
    except ValidationError as exc:
        raise InputError(pydantic_problems(exc, smap, Expectations)) from None


def mismatches(mod: Module, want: Expected | None) -> list[str]:
    if want is None:
        return []
    out = []
    for field in ("vendor", "part", "firmware", "revision"):
        expected = getattr(want, field)
        actual = getattr(mod, field)
        if expected and not actual.strip().lower().startswith(expected.strip().lower()):
            out.append(f"{field}: expected {expected}, actual {actual or 'not reported'}")
    return out
