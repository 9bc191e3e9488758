"""The one natural sort of the tool: swp2 before swp10, gpu-su1-2 before gpu-su1-10, mlx5_2 before mlx5_10."""

from __future__ import annotations

import re
from functools import lru_cache

_DIGITS = re.compile(r"(\d+)")


@lru_cache(maxsize=65536)
def natural(name: str) -> tuple[str | int, ...]:
    """Sort key: the name split into text and numbers, numbers compared as numbers (always text first, so
    two keys compare position by position without mixing str and int)."""
    return tuple(int(p) if p.isdigit() else p for p in _DIGITS.split(name))
