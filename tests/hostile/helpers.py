"""Hostile inventories: a shipped example copied to tmp_path with one section edited."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "inventories" / "example"


def edited(tmp_path: Path, file: str, edit: Callable[[dict[str, Any]], None], name: str = "inv") -> Path:
    """A copy of inventories/example with `edit` applied to the data of `file` (re-dumped, block style)."""
    inv = tmp_path / name
    shutil.copytree(EXAMPLE, inv)
    data = yaml.safe_load((inv / file).read_text())
    edit(data)
    (inv / file).write_text(yaml.safe_dump(data, sort_keys=False, default_flow_style=False))
    return inv
