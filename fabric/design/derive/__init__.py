"""Derivation: inventory → per-device intent. Pure functions, no I/O, deterministic.

One module per concern: `qos` (the policy's facts, PFC headroom), `addressing` (loopbacks, rail blocks, host
addresses), `switch` (one switch's intent), `host` (one host's); `Deriver` holds the loaded inventory and the
expanded topology they read, and puts them together (`fabric()`, or one `device()`)."""

from __future__ import annotations

from collections.abc import Callable, Mapping

from fabric.design.checks import capacity_problems
from fabric.design.derive.addressing import dotted
from fabric.design.derive.host import Hosts
from fabric.design.derive.qos import qos_facts
from fabric.design.derive.switch import Switches
from fabric.design.intent import (
    FabricIntent,
    HostIntent,
    K8sFacts,
    Model,
    NicQos,
    PodRail,
    SwitchIntent,
    trusted,
)
from fabric.design.topology import Nic, Topo, build
from fabric.errors import InputError, Problem
from fabric.fast.batch import gc_paused
from fabric.model.load import Loaded

__all__ = ["Deriver", "checked_topology", "derive", "dotted", "qos_facts", "semantic_problems"]


def checked_topology(loaded: Loaded, target: str | None = None) -> Topo:
    """The expanded topology of `loaded`, every check passed (the inventory's, the topology's, the pools'):
    InputError with every problem otherwise. Deriving the devices from it adds no check (`validate` stops here)."""
    topo = build(loaded.inv, loaded.smap, target, tuple(loaded.qos.lossless_priorities))
    problems = loaded.problems + topo.problems
    if not problems:
        problems = capacity_problems(loaded, topo)
    if problems:
        raise InputError(problems)
    return topo


class Deriver(Switches, Hosts):
    """Holds the loaded inventory and the expanded topology while intent is computed."""

    def __init__(self, loaded: Loaded, target: str | None = None):
        self.loaded, self.inv, self.qos = loaded, loaded.inv, loaded.qos
        self.facts = qos_facts(self.qos)  # one object shared by every switch
        self.topo: Topo = checked_topology(loaded, target)
        self.addr = self.inv.addressing
        self.block_size = 2 ** (32 - self.addr.rail_prefix_length)
        self._rails_base, self._rails = int(self.addr.rails.network_address), self.inv.topology.rails
        self.rails_pool = str(self.addr.rails)
        self.asn: dict[str, int] = {}
        self.index: dict[str, int] = {name: i for i, name in enumerate(self.topo.switches)}
        leaves = [s for s in self.topo.switches.values() if s.role == "leaf"]
        leaf_index = {s.name: i for i, s in enumerate(leaves)}
        for sw in self.topo.switches.values():
            if sw.asn is not None:
                self.asn[sw.name] = sw.asn
            elif sw.role == "super-spine":
                self.asn[sw.name] = self.addr.asn.super_spines
            elif sw.role == "spine":
                self.asn[sw.name] = self.addr.asn.spines + ((sw.pod or 1) - 1 if self.inv.topology.pods > 1 else 0)
            else:
                self.asn[sw.name] = self.addr.asn.leaves + leaf_index[sw.name]
        self.max_h: dict[tuple[int, int], int] = {}  # highest host index per (SU, rail): pods' pool starts after it
        self.nic_at: dict[tuple[str, str], Nic] = {}
        max_h, nic_at = self.max_h, self.nic_at
        for h in self.topo.hosts.values():
            for n in h.nics:
                key = (h.su, n.rail)
                m = max_h.get(key)
                if m is None or h.h > m:
                    max_h[key] = h.h
                nic_at.setdefault((h.name, n.netdev), n)
        self._pod_rails: dict[tuple[int, int, bool], PodRail | None] = {}
        # one resource for several NICs: pods find which device is which rail (fabric.render.k8s.pod_rail_setup)
        self.pooled_pods = (self.inv.kubernetes.resources == "pooled"
                            and max((len(h.nics) for h in self.topo.hosts.values()), default=0) > 1)
        self._nic_qos: dict[int, NicQos] = {}
        self._shared: dict[tuple[type, str], Model] = {}
        self._parts: dict[object, object] = {}
        self._blocks: dict[tuple[int, int], tuple[int, str, str, str]] = {}
        self._pcis: dict[str, str | None] = {}
        self.ports: dict[str, list[tuple[str, str, str, int, int, str]]] = {n: [] for n in self.topo.switches}
        self._port_orders: dict[tuple[str, ...], tuple[int, ...]] = {}
        self.host_links: dict[tuple[str, str], tuple[int, tuple[object, ...]]] = {}
        ports, host_links = self.ports, self.host_links
        for ln in self.topo.links:  # one pass: each switch end's port, each host end's cable
            a, b, kind = ln.a, ln.b, ln.kind
            if kind == "host-leaf":
                host_links[(a, ln.a_port)] = (ln.cable_m, ln.loc)
            at = ports.get(a)
            if at is not None:
                at.append((ln.a_port, b, ln.b_port, ln.speed, ln.cable_m, kind))
            at = ports.get(b)
            if at is not None:
                at.append((ln.b_port, a, ln.a_port, ln.speed, ln.cable_m, kind))

    def device(self, name: str) -> SwitchIntent | HostIntent | None:
        """One device's intent without deriving the others (`explain`); None when the fabric has no such device."""
        if name in self.topo.switches:
            return self.switch(self.topo.switches[name])
        hosts = list(self.topo.hosts)
        return self.host(self.topo.hosts[name], hosts.index(name)) if name in self.topo.hosts else None

    def fabric(self, switches_derived: Callable[[Deriver, dict[str, SwitchIntent]], object] | None = None
               ) -> FabricIntent:
        """The whole fabric's intent; `switches_derived(self, switches)` hears every switch's intent before the
        hosts' are derived (`fabric lint` starts the rules that read the switches alone there)."""
        with gc_paused():
            switches = {n: self.switch(sw) for n, sw in self.topo.switches.items()}
            if switches_derived is not None:
                switches_derived(self, switches)
            hosts = {h.name: self.host(h, i) for i, h in enumerate(self.topo.hosts.values())}
            return self.intent(switches, hosts)

    def intent(self, switches: dict[str, SwitchIntent], hosts: Mapping[str, HostIntent]) -> FabricIntent:
        """The fabric's intent of these switches' and hosts' intents."""
        k = self.inv.kubernetes
        k8s = K8sFacts(namespace=k.namespace, device_plugin_namespace=k.device_plugin_namespace,
                       resource_prefix=k.resource_prefix, resources=k.resources, network_name=k.network_name,
                       explicit=("kubernetes",) in self.loaded.smap.lines)
        # every value validated already (a host intent once per shape, fabric.design.derive.host): validating the
        # whole fabric again would run each host's own checks once more
        return trusted(FabricIntent, dict(name=self.inv.fabric.name, addressing_mode=self.addr.mode,
                                          rails=self.inv.topology.rails, switches=switches, hosts=hosts,
                                          links=list(self.topo.links), kubernetes=k8s))


def derive(loaded: Loaded, target: str | None = None) -> FabricIntent:
    """The whole fabric's intent; `target` forces one NOS (the lab uses `frr`)."""
    return Deriver(loaded, target).fabric()


def semantic_problems(exc: InputError) -> list[Problem]:
    """Every problem of a failed load: its structural ones, then the semantic ones (the model's, the
    topology's) of the remainder that validated without the offending keys — only in sections without a
    structural problem (a dropped key's default must not be blamed elsewhere in its section), and none at a
    place already named."""
    from fabric.model.load import IncompleteInput

    problems = list(exc.problems)
    if not isinstance(exc, IncompleteInput) or exc.partial is None:
        return problems
    try:
        Deriver(exc.partial)
    except InputError as more:
        seen = {(p.file, p.line) for p in problems} | {p.path for p in problems}
        broken = {_section(p.path) for p in problems}
        problems += [p for p in more.problems
                     if (p.file, p.line) not in seen and p.path not in seen and _section(p.path) not in broken]
    return problems


def _section(path: str) -> str:
    """`hosts.defaults.nics[3].rail` → `hosts`."""
    return path.split(".", 1)[0].split("[", 1)[0]
