"""Nested-dict helpers for NVUE patches (the diffs themselves are `fabric.targets.owned`)."""

from __future__ import annotations

from typing import Any


def nest(path: tuple[str, ...], value: Any) -> dict:
    out: Any = value
    for p in reversed(path):
        out = {p: out}
    return out


def _merge(dst: dict, src: dict) -> None:
    for k, v in src.items():
        if isinstance(v, dict) and v and isinstance(dst.get(k), dict):
            _merge(dst[k], v)
        else:
            dst[k] = v
