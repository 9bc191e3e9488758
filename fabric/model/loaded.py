"""A validated inventory with its source map and expanded QoS policy: what `load` returns and the checks read."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from fabric.errors import Problem
from fabric.model.inventory import Inventory
from fabric.model.qos import QosPolicy
from fabric.model.source import SourceMap


class Loaded:
    """A validated inventory with its source map and its expanded QoS policy."""

    def __init__(self, inv: Inventory, smap: SourceMap, qos: QosPolicy, qos_overrides: dict[str, Any]):
        self.inv = inv
        self.smap = smap
        self.qos = qos
        self.qos_overrides = qos_overrides
        self.root = Path(smap.files[0]).parent if smap.files else Path(".")
        self.problems: list[Problem] = []  # semantic problems, raised by derivation with the topology's

    def where(self, *loc: str | int) -> str:
        file, line = self.smap.where(loc)
        return f"{file}:{line}" if line else file
