"""Quantities with units as users write them: 400G, 5m, 150KB, 200ms. Each parses to one integer."""

from __future__ import annotations

import re
from decimal import Decimal
from typing import Annotated

from pydantic import BeforeValidator, PlainSerializer, WithJsonSchema

_SPEED = re.compile(r"^(\d{1,5})\s*G(?:bps|b/s)?$", re.I)
_LEN = re.compile(r"^(\d{1,6})\s*m$")
_BYTES = re.compile(r"^(\d{1,12}(?:\.\d{1,6})?)\s*(B|KB|MB|KiB|MiB)?$")
_MS = re.compile(r"^(\d{1,8})\s*(ms|s)$")
_S = re.compile(r"^(\d{1,8})\s*(s|min)$")
# Ranges every number of derivation and rendering can hold (kernel ms as int32, buffer sizes in 32 bits).
MAX_SPEED_G, MAX_CABLE_M, MAX_BYTES, MAX_MS, MAX_S = 1600, 10_000, 2**32 - 1, 3_600_000, 2_000_000


def _bounded(value: int, high: int, low: int, what: str) -> int:
    if not low <= value <= high:
        raise ValueError(f"{what} from {low} to {high}")
    return value
_BYTE_UNITS = {None: 1, "B": 1, "KB": 1000, "MB": 1_000_000, "KiB": 1024, "MiB": 1024 * 1024}


def _speed(v: object) -> int:
    if isinstance(v, str) and (m := _SPEED.match(v.strip())):
        return _bounded(int(m.group(1)), MAX_SPEED_G, 1, "a speed in G")
    raise ValueError("a speed like 100G, 400G or 800G")


def _length(v: object) -> int:
    if isinstance(v, str) and (m := _LEN.match(v.strip())):
        return _bounded(int(m.group(1)), MAX_CABLE_M, 0, "a cable length in metres")
    raise ValueError("a cable length in metres like 5m or 40m")


def _bytes(v: object) -> int:
    if isinstance(v, int) and not isinstance(v, bool):
        return _bounded(v, MAX_BYTES, 0, "a size in bytes")
    if isinstance(v, str) and (m := _BYTES.match(v.strip())):
        return _bounded(int(Decimal(m.group(1)) * _BYTE_UNITS[m.group(2)]), MAX_BYTES, 0, "a size in bytes")
    raise ValueError("a size in bytes like 150000, 150KB or 1.5MB")


def _ms(v: object) -> int:
    if isinstance(v, str) and (m := _MS.match(v.strip())):
        return _bounded(int(m.group(1)) * (1000 if m.group(2) == "s" else 1), MAX_MS, 0, "a time in ms")
    raise ValueError("a time like 200ms or 2s")


def _seconds(v: object) -> int:
    if isinstance(v, str) and (m := _S.match(v.strip())):
        return _bounded(int(m.group(1)) * (60 if m.group(2) == "min" else 1), MAX_S, 0, "a time in seconds")
    raise ValueError("a time in seconds like 300s or 5min")


def _text(pattern: str, example: str) -> WithJsonSchema:
    return WithJsonSchema({"type": "string", "pattern": pattern, "examples": [example]})


Gbps = Annotated[int, BeforeValidator(_speed), PlainSerializer(lambda v: f"{v}G", return_type=str),
                 _text(_SPEED.pattern, "400G")]
Metres = Annotated[int, BeforeValidator(_length), PlainSerializer(lambda v: f"{v}m", return_type=str),
                   _text(_LEN.pattern, "5m")]
Bytes = Annotated[int, BeforeValidator(_bytes), WithJsonSchema(
    {"anyOf": [{"type": "integer", "minimum": 0}, {"type": "string", "pattern": _BYTES.pattern}]})]
Millis = Annotated[int, BeforeValidator(_ms), PlainSerializer(lambda v: f"{v}ms", return_type=str),
                   _text(_MS.pattern, "200ms")]
Seconds = Annotated[int, BeforeValidator(_seconds), PlainSerializer(lambda v: f"{v}s", return_type=str),
                    _text(_S.pattern, "300s")]
