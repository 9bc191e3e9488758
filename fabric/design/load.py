"""`load_fabric`: an inventory directory → its loaded inventory, topology and derived intent, the one call every
command that loads and derives makes — through a content-addressed cache for large fabrics.

The cache key is a SHA-256 over the tool's code (every file of the `fabric` package, the Python, PyYAML and
pydantic versions) and the inventory's bytes (the name and content of every file of the directory that the loader
reads, plus its path and the forced target), so any changed byte of either is a miss: the cache is correct by
construction and never needs invalidating. Entries live in `$ROCE_FABRIC_CACHE` (`off` turns the cache off), else
`$XDG_CACHE_HOME/roce-fabric/derived` (`~/.cache/…`), written private (0700 directory, 0600 files, renamed
into place); an entry that is not a regular file of this user, mode 0600, is ignored, never unpickled. Only
fabrics of at least CACHE_MIN_DEVICES devices are cached (below that, deriving is faster than reading it back),
and only inventories that derive without a problem.
"""

from __future__ import annotations

import contextlib
import gc
import json
import pickle
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fabric.batch import gc_paused
from fabric.design.cachekey import answer_path, cache_dir, code_digest, inventory_key  # noqa: F401 (the API)
from fabric.design.cachekey import entry_path as _entry
from fabric.design.cachekey import read_entry as _read
from fabric.design.cachekey import write_entry as _write
from fabric.design.derive import Deriver, checked_topology
from fabric.design.intent import FabricIntent, HostIntent, SwitchIntent
from fabric.design.topology import Topo
from fabric.model.load import load
from fabric.model.loaded import Loaded

CACHE_MIN_DEVICES = 2000


@dataclass
class Fabric:
    """A loaded and derived inventory: what `validate`, `render`, `plan`, `lint` … start from."""

    loaded: Loaded
    deriver: Deriver
    intent: FabricIntent


@dataclass
class Summary:
    """What `validate` prints: read from the cache alone on a hit, without the intent."""

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
        link, one rail per NIC (tests/test_derive_trusted.py holds it to `of` on every inventory)."""
        return cls(name=loaded.inv.fabric.name, switches=len(topo.switches), hosts=len(topo.hosts),
                   links=len(topo.links), rail_nics=sum(len(h.nics) for h in topo.hosts.values()),
                   files=len(loaded.smap.files))


def summary(directory: Path) -> Summary:
    """`validate`'s figures: from the cache where the same inventory was derived by the same code, else derived."""
    entry = _entry(directory, None)
    raw = _read(entry.with_suffix(".json")) if entry is not None else None
    if raw is not None:
        try:
            return Summary(**json.loads(raw))
        except (ValueError, TypeError):
            pass
    # Every check is done once the topology is built and checked: deriving each device's intent adds none, so
    # validate stops there (the intent of 32k GPUs took two thirds of its time).
    with gc_paused():
        loaded = load(directory)
        topo = checked_topology(loaded)
        result = Summary.of_topology(loaded, topo)
        large = len(topo.switches) + len(topo.hosts) >= CACHE_MIN_DEVICES
        if large:
            gc.freeze()  # no collection, nor the one at exit, walks the topology again
    if entry is not None and large:
        _write(entry.with_suffix(".json"), json.dumps(result.__dict__).encode())
    return result


def _devices(deriver: Deriver) -> int:
    return len(deriver.topo.switches) + len(deriver.topo.hosts)


_HELD: list[Any] = []  # the command's large fabric (`_keep`)


def _keep(deriver: Deriver, value: Any = None) -> None:
    """A large fabric's objects live as long as the command: move them out of the cyclic collector's reach
    (`gc.freeze`), so that no later collection — nor the one at exit — walks them again (about 0.5 CPU-s each at
    32k GPUs), and forked render workers do not touch (and so copy) their pages. Called while the collector is
    paused: the first collection after it would otherwise walk every object built meanwhile. `value` (the fabric
    or deriver the command holds) is referenced here to the end of the process: frozen objects still referenced
    at exit are left to the operating system, not freed one by one (about 0.1 CPU-s at 32k GPUs where a command,
    `lint`, was done with them before it exited); a later large fabric takes its place."""
    if _devices(deriver) >= CACHE_MIN_DEVICES:
        gc.freeze()
        _HELD[:] = [deriver if value is None else value]


def _unpickle(raw: bytes) -> Any:
    gc.disable()  # millions of objects that all stay: no collection while they are built, none afterwards (_keep)
    try:
        value = pickle.loads(raw)  # our own private file, checked by _read
        if isinstance(value, (Fabric, Deriver)):
            _keep(value.deriver if isinstance(value, Fabric) else value, value)
        return value
    except Exception:  # a damaged entry is a miss
        return None
    finally:
        gc.enable()


def _pickle(value: Any) -> bytes:
    gc.disable()
    try:
        return pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)
    finally:
        gc.enable()


def load_deriver(directory: Path, min_devices: int = CACHE_MIN_DEVICES) -> Deriver:
    """The loaded inventory and its topology, checked, without deriving any device (`explain` derives one):
    from the cache where `load_fabric` or this call put it, else loaded."""
    entry = _entry(directory, None)
    raw = _read(entry.with_suffix(".deriver")) if entry is not None else None
    cached = _unpickle(raw) if raw is not None else None
    if isinstance(cached, Deriver):
        return cached
    with gc_paused():
        deriver = Deriver(load(directory))
        _keep(deriver)
    if entry is not None and _devices(deriver) >= min_devices:
        _write(entry.with_suffix(".deriver"), _pickle(deriver))
    return deriver


@dataclass
class Device:
    """One device's intent and what `explain` reads beside it: the loaded inventory and the device's neighbourhood
    of the topology (its own node and the links at its ports — all that `fabric.explain` asks of a topology).
    `intent` None: the fabric has no such device."""

    loaded: Loaded
    intent: SwitchIntent | HostIntent | None
    topo: Topo
    devices: int  # of the whole fabric


def _device_entry(directory: Path, name: str) -> Path | None:
    return answer_path(directory, "device", name)


def load_device(directory: Path, name: str, min_devices: int = CACHE_MIN_DEVICES) -> Device:
    """`name`'s intent for `explain`: from its own small cache entry (an unchanged inventory and code, the device
    explained before), else from `load_deriver` (the whole fabric's checks, or their cached verdict), then kept in
    that entry."""
    entry = _device_entry(directory, name)
    raw = _read(entry) if entry is not None else None
    cached = _unpickle(raw) if raw is not None else None
    if isinstance(cached, Device):
        return cached
    deriver = load_deriver(directory, min_devices)
    intent = deriver.device(name)
    if intent is None:
        return Device(deriver.loaded, None, Topo(), _devices(deriver))
    t = deriver.topo
    node_of = t.switches if isinstance(intent, SwitchIntent) else t.hosts
    topo = Topo(switches={name: node_of[name]} if node_of is t.switches else {},
                hosts={name: node_of[name]} if node_of is t.hosts else {},
                links=[ln for ln in t.links if name in (ln.a, ln.b)])
    device = Device(deriver.loaded, intent, topo, _devices(deriver))
    if entry is not None and _devices(deriver) >= min_devices:
        _write(entry, _pickle(device))
    return device


def verdict(directory: Path, name: str, variant: str, make: Any, parse: Any, min_devices: int | None = None) -> Any:
    """A command's whole answer about an unchanged inventory (`lint`'s findings for its options `variant`): read
    back by `parse(bytes)` (None: damaged, a miss) from its cache entry beside the inventory's, else `make()` →
    (answer, its bytes, the fabric's devices), kept where the fabric has at least `min_devices` devices. Deriving
    the intent costs about what reading it back does: the answer is what is worth keeping."""
    path = answer_path(directory, name, variant)
    raw = _read(path) if path is not None else None
    if raw is not None:
        with contextlib.suppress(Exception):
            value = parse(raw)
            if value is not None:
                return value
    value, data, devices = make()
    if path is not None and devices >= (CACHE_MIN_DEVICES if min_devices is None else min_devices):
        _write(path, data)
    return value


def load_fabric(directory: Path, target: str | None = None, progress: Any = None,
                min_devices: int = CACHE_MIN_DEVICES, store: bool = True, cached: bool = True) -> Fabric:
    """Load, validate and derive `directory` (`target` forces one NOS, as the lab does); bad input raises
    InputError with every problem. `progress(stage)` hears the stages; `store` False reads the cache but does
    not write it; `cached` False neither reads nor writes it."""
    stage = progress or (lambda _s: None)
    entry = _entry(directory, target) if cached else None
    raw = _read(entry.with_suffix(".pickle")) if entry is not None else None
    if raw is not None:
        stage(f"read the derived {directory} from the cache")
        cached = _unpickle(raw)
        if isinstance(cached, Fabric):
            return cached
    stage(f"load and validate {directory}")
    with gc_paused():  # hundreds of thousands of objects that all stay: no collection while they are built
        loaded = load(directory)
        stage(f"derive {directory}")
        deriver = Deriver(loaded, target)
        fabric = Fabric(loaded, deriver, deriver.fabric())
        _keep(deriver, fabric)
    if store and entry is not None and _devices(deriver) >= min_devices:
        _write(entry.with_suffix(".pickle"), _pickle(fabric))
        _write(entry.with_suffix(".json"), json.dumps(Summary.of(fabric).__dict__).encode())
    return fabric
