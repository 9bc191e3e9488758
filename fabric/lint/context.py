"""What rules read: the derived intent, the raw inventory, and where each object came from."""

from __future__ import annotations

from functools import cached_property
from typing import Any

from fabric.design.derive import Deriver
from fabric.design.intent import FabricIntent, HostIntent, PortIntent, SwitchIntent
from fabric.model.inventory import Inventory
from fabric.model.load import Loaded
from fabric.model.qos import QosPolicy

Where = tuple[str, int | None]


class Context:
    """The fabric as lint sees it. Locations resolve to the most specific inventory line that set a value."""

    def __init__(self, loaded: Loaded, intent: FabricIntent | None = None, deriver: Deriver | None = None):
        self.loaded = loaded
        self.inv: Inventory = loaded.inv
        self.deriver = deriver or Deriver(loaded)
        self.intent: FabricIntent = intent or self.deriver.fabric()
        self.topo = self.deriver.topo
        self.memo: dict[str, Any] = {}  # what several rules compute from the intent, once per run (`reset`)

    # -- locations --------------------------------------------------------------------------------
    def at(self, *loc: str | int) -> Where:
        return self.loaded.smap.where(loc)

    def has(self, *loc: str | int) -> bool:
        return tuple(loc) in self.loaded.smap.lines

    def first(self, *locs: tuple[str | int, ...]) -> Where:
        """The first of `locs` the user wrote, else the last one's nearest ancestor."""
        for loc in locs:
            if self.has(*loc):
                return self.at(*loc)
        return self.at(*locs[-1])

    def qos_at(self, *key: str | int) -> Where:
        return self.first(("qos", *key), ("qos", "preset"), ("qos",))

    def switch_at(self, name: str, *key: str) -> Where:
        sw = self.topo.switches.get(name)
        loc: tuple[Any, ...] = sw.loc if sw else ("topology",)
        if key and loc and loc[0] == "switches" and self.has(*loc, *key):
            return self.at(*loc, *key)
        return self.at(*loc) if loc else self.at("topology")

    def host_at(self, name: str, *key: str | int) -> Where:
        host = self.topo.hosts.get(name)
        loc: tuple[Any, ...] = host.loc if host else ("topology",)
        if key:
            if loc[0] == "hosts" and self.has(*loc, *key):
                return self.at(*loc, *key)
            if self.has("hosts", "defaults", *key):
                return self.at("hosts", "defaults", *key)
        return self.at(*loc)

    def host_sets(self, name: str, *key: str | int) -> bool:
        """Whether the inventory sets `key` for this host (its own entry or hosts.defaults)."""
        host = self.topo.hosts.get(name)
        own = host is not None and host.loc[:1] == ("hosts",) and self.has(*host.loc, *key)
        return own or self.has("hosts", "defaults", *key)

    def link_at(self, a: str, a_port: str) -> Where:
        for ln in self.links_by_end.get((a, a_port), ()):
            return self.at(*ln) if ln else self.at("topology")
        return self.at("topology")

    @cached_property
    def links_by_end(self) -> dict[tuple[str, str], list[tuple[Any, ...]]]:
        out: dict[tuple[str, str], list[tuple[Any, ...]]] = {}
        for ln in self.topo.links:
            out.setdefault((ln.a, ln.a_port), []).append(ln.loc)
            out.setdefault((ln.b, ln.b_port), []).append(ln.loc)
        return out

    # -- lookups ----------------------------------------------------------------------------------
    @property
    def switches(self) -> list[SwitchIntent]:
        return list(self.intent.switches.values())

    @property
    def hosts(self) -> list[HostIntent]:
        return list(self.intent.hosts.values())

    @cached_property
    def port(self) -> dict[tuple[str, str], PortIntent]:
        return {(sw.name, p.name): p for sw in self.switches for p in sw.ports}

    @cached_property
    def ports_of(self) -> dict[str, dict[str, PortIntent]]:
        """Each switch's ports by name (as `port`, the last of a name wins), looked up without a tuple per port."""
        return {sw.name: {p.name: p for p in sw.ports} for sw in self.switches}

    def reset(self) -> None:
        """Forget the lookups built from the intent (a run after the intent changed builds them again)."""
        for key in ("port", "ports_of"):
            self.__dict__.pop(key, None)
        self.memo.clear()

    @property
    def qos(self) -> QosPolicy:
        return self.loaded.qos
