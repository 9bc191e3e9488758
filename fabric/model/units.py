"""Quantities with units as users write them: 400G, 5m, 150KB, 200ms. Each parses to one integer."""

from __future__ import annotations

import re
from typing import Annotated

from pydantic import BeforeValidator, PlainSerializer, WithJsonSchema

_SPEED = re.compile(r"^(\d+)\s*G(?:bps|b/s)?$", re.I)
_LEN = re.compile(r"^(\d+)\s*m$")
_BYTES = re.compile(r"^(\d+(?:\.\d+)?)\s*(B|KB|MB|KiB|MiB)?$")
_MS = re.compile(r"^(\d+)\s*(ms|s)$")
_S = re.compile(r"^(\d+)\s*(s|min)$")
_BYTE_UNITS = {None: 1, "B": 1, "KB": 1000, "MB": 1_000_000, "KiB": 1024, "MiB": 1024 * 1024}


def _speed(v: object) -> int:
    if isinstance(v, str) and (m := _SPEED.match(v.strip())):
        return int(m.group(1))
    raise ValueError("a speed like 100G, 400G or 800G")


def _length(v: object) -> int:
    if isinstance(v, str) and (m := _LEN.match(v.strip())):
        return int(m.group(1))
    raise ValueError("a cable length in metres like 5m or 40m")


def _bytes(v: object) -> int:
    if isinstance(v, int) and not isinstance(v, bool) and v >= 0:
        return v
    if isinstance(v, str) and (m := _BYTES.match(v.strip())):
        return int(float(m.group(1)) * _BYTE_UNITS[m.group(2)])
    raise ValueError("a size in bytes like 150000, 150KB or 1.5MB")


def _ms(v: object) -> int:
    if isinstance(v, str) and (m := _MS.match(v.strip())):
        return int(m.group(1)) * (1000 if m.group(2) == "s" else 1)
    raise ValueError("a time like 200ms or 2s")


def _seconds(v: object) -> int:
    if isinstance(v, str) and (m := _S.match(v.strip())):
        return int(m.group(1)) * (60 if m.group(2) == "min" else 1)
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
