"""`load_fabric`: an inventory directory → its loaded inventory, checked topology and derived intent, the one
loader every command, the lab and the tests start from (`summary` and `load_deriver` stop earlier for `validate`
and `explain`). Every call loads and derives afresh: nothing is kept between commands.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fabric.design.derive import Deriver, checked_topology
from fabric.design.intent import FabricIntent
from fabric.design.topology import Topo
from fabric.fast.batch import gc_paused, hold
from fabric.model.load import load
from fabric.model.loaded import Loaded


@dataclass
class Fabric:
    """A loaded and derived inventory: what `validate`, `render`, `plan`, `lint` … start from."""

    loaded: Loaded
    deriver: Deriver
    intent: FabricIntent


@dataclass
class Summary:
    """What `validate` prints."""

    name: str
    switches: int
    hosts: int
    links: int
    rail_nics: int
    files: int

    @classmethod
    def of(cls, fabric: Fabric) -> Summary:
        f = fabric.intent
        return cls(name=f.name, switches=len(f.switches), hosts=len(f.hosts), links=len(f.links),
                   rail_nics=sum(len(h.rails) for h in f.hosts.values()), files=len(fabric.loaded.smap.files))

    @classmethod
    def of_topology(cls, loaded: Loaded, topo: Topo) -> Summary:
        """The same figures from the checked topology: one switch or host intent per node, one link intent per
        link, one rail per NIC (tests/design/derive/test_shapes.py holds it to `of` on every inventory)."""
        return cls(name=loaded.inv.fabric.name, switches=len(topo.switches), hosts=len(topo.hosts),
                   links=len(topo.links), rail_nics=sum(len(h.nics) for h in topo.hosts.values()),
                   files=len(loaded.smap.files))


def _devices(topo: Topo) -> int:
    return len(topo.switches) + len(topo.hosts)


def summary(directory: Path) -> Summary:
    """`validate`'s figures. Every check is done once the topology is built and checked: deriving each device's
    intent adds none, so validate stops there (the intent of 32k GPUs took two thirds of its time)."""
    with gc_paused():
        loaded = load(directory)
        topo = checked_topology(loaded)
        hold(topo, _devices(topo))
    return Summary.of_topology(loaded, topo)


def load_deriver(directory: Path) -> Deriver:
    """The loaded inventory and its topology, checked, without deriving any device (`explain` derives one)."""
    with gc_paused():
        deriver = Deriver(load(directory))
        hold(deriver, _devices(deriver.topo))
    return deriver


def load_fabric(directory: Path, target: str | None = None, progress: Any = None,
                switches_derived: Any = None) -> Fabric:
    """Load, validate and derive `directory` (`target` forces one NOS, as the lab does); bad input raises
    InputError with every problem. `progress(stage)` hears the stages, `switches_derived` the switches' intents
    before the hosts' are derived (`Deriver.fabric`)."""
    stage = progress or (lambda _s: None)
    stage(f"load and validate {directory}")
    with gc_paused():  # hundreds of thousands of objects that all stay: no collection while they are built
        loaded = load(directory)
        stage(f"derive {directory}")
        deriver = Deriver(loaded, target)
        fabric = Fabric(loaded, deriver, deriver.fabric(switches_derived))
        hold(fabric, _devices(deriver.topo))
    return fabric
