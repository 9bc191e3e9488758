"""Expand the inventory into switches, links and hosts: rail-optimized generation plus explicit parts."""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from functools import lru_cache
from typing import Any

from fabric.design.intent import Link
from fabric.errors import Problem
from fabric.model.inventory import NAME, NEUTRAL_PORT, HostSettings, Inventory, NicDef
from fabric.model.patterns import sysctl_interface
from fabric.model.platforms import PLATFORMS, Platform
from fabric.model.ports import sonic_port_map
from fabric.model.source import SourceMap, dotted
from fabric.nos import NOS


def sonic_platforms() -> list[str]:
    """The platforms with a SONiC port map (read on demand: parsing every map costs each command 20 ms)."""
    return [p for p in PLATFORMS if sonic_port_map(p) is not None]


HOST_DEFAULTS: dict[str, Any] = {
    "gpus": 8, "management_interface": "eth0", "mtu": 9000, "roce_mtu": 4096, "roce_tos": None,
    "dcqcn": None, "gid": None, "sysctls": {}, "nccl_env": {},
}


@dataclass
class Switch:
    name: str
    role: str
    platform: Platform
    target: str
    ways: int  # breakout sub-ports per physical port
    port_speed: int  # Gb/s of one logical port
    su: int | None = None
    rail: int | None = None
    pod: int | None = None
    plane: int | None = None
    asn: int | None = None
    adaptive_routing: bool | None = None
    release: str = ""  # the NOS release its configs are written for
    release_origin: str = ""  # where the release comes from (explain)
    loc: tuple[Any, ...] = ()
    used: dict[str, Link] = field(default_factory=dict)  # port → the link on it (`far_end` names its other end)
    next_port: int = 0

    @property
    def capacity(self) -> int:
        return self.platform.ports * self.ways

    def port_name(self, index: int) -> str:
        """Logical port `index` (0-based) named the way the target's NOS names it."""
        return _port_name(self.target, self.ways, self.platform.lanes, index)

    def port_names(self) -> tuple[str, ...]:
        """Every logical port's name in order (one tuple shared by the switches of a platform and target)."""
        return _port_names(self.target, self.ways, self.platform.lanes, self.capacity)

    def port_indexes(self) -> dict[str, int]:
        """Port name → logical index (0-based); one dict shared by the switches of a platform, breakout and target."""
        return port_indexes(self.target, self.ways, self.platform.lanes, self.capacity)

    def lanes_of(self) -> int:
        return self.platform.lanes // self.ways


@lru_cache(maxsize=8192)
def _port_name(target: str, ways: int, lanes: int, index: int) -> str:
    return NOS[target].port_name(ways, lanes, index)


@lru_cache(maxsize=256)
def _port_names(target: str, ways: int, lanes: int, count: int) -> tuple[str, ...]:
    return tuple(_port_name(target, ways, lanes, i) for i in range(count))


@lru_cache(maxsize=256)
def port_indexes(target: str, ways: int, lanes: int, count: int) -> dict[str, int]:
    """Port name → logical port index (0-based), as `target`'s NOS names the ports of such a switch."""
    return {name: i for i, name in enumerate(_port_names(target, ways, lanes, count))}


def _neutral(ways: int, index: int) -> str:
    """The NOS-neutral name of logical port `index`: `12/2` (front-panel port / sub-port of its breakout), `12`."""
    n, k = divmod(index, ways)
    return f"{n + 1}/{k + 1}" if ways > 1 else f"{n + 1}"


@dataclass(slots=True)
class Nic:
    rail: int
    rdma: str
    netdev: str
    vlan: int | None
    vfs: int
    leaf: str = ""
    leaf_port: str = ""
    pci: str | None = None


@dataclass
class Host:
    name: str
    su: int
    h: int  # index in its SU, 1-based
    settings: dict[str, Any]
    nics: list[Nic]
    management: str | None = None
    loc: tuple[Any, ...] = ()


@dataclass
class Topo:
    switches: dict[str, Switch] = field(default_factory=dict)
    links: list[Link] = field(default_factory=list)
    hosts: dict[str, Host] = field(default_factory=dict)
    leaf_of: dict[tuple[int, int], str] = field(default_factory=dict)  # (su, rail) → leaf
    problems: list[Problem] = field(default_factory=list)
    _ends: dict[str, dict[str, Link]] | None = field(default=None, repr=False, compare=False)

    def link_at(self, device: str, port: str) -> Link | None:
        """The link on `device`'s `port` (an index of the device's link ends, built on its first use: `explain`
        asks about one device of 100,000 links)."""
        if self._ends is None:
            self._ends = {}
        ends = self._ends.get(device)
        if ends is None:
            ends = self._ends[device] = {}
            for ln in self.links:
                if ln.a == device:
                    ends[ln.a_port] = ln
                if ln.b == device:
                    ends[ln.b_port] = ln
        return ends.get(port)


def far_end(ln: Link, device: str, port: str) -> str:
    """`peer:port`, the other end of `ln` seen from `device`'s `port`."""
    return f"{ln.b}:{ln.b_port}" if (ln.a, ln.a_port) == (device, port) else f"{ln.a}:{ln.a_port}"


def _ways_speed(platform: Platform, breakout: str | None) -> tuple[int, int]:
    if not breakout:
        return 1, platform.max_speed
    ways, speed = breakout.lower().rstrip("g").split("x")
    return int(ways), int(speed)


def _merged_settings(*layers: HostSettings | None) -> dict[str, Any]:
    out = dict(HOST_DEFAULTS)
    for layer in layers:
        if layer is not None:
            out.update({k: v for k, v in layer.model_dump(exclude_none=True, exclude={"name", "su",
                                                                                      "management"}).items()})
            if layer.nics is not None:
                out["nics"] = layer.nics
            for key in ("dcqcn", "gid"):
                if getattr(layer, key) is not None:
                    out[key] = getattr(layer, key)
    return out


class _Builder:
    def __init__(self, inv: Inventory, smap: SourceMap, target: str | None = None, lossless: tuple[int, ...] = ()):
        self.inv, self.smap, self.t, self.force_target = inv, smap, Topo(), target
        self.lossless = lossless  # the QoS policy's lossless priorities: every switch's NOS must render them
        self.overrides = {s.name: (i, s) for i, s in enumerate(inv.switches)}
        self.reported: set[tuple[Any, ...]] = set()
        self.shared: dict[tuple[Any, ...], list[int]] = {}  # loc → [index in problems, count]
        self.default_settings: dict[str, Any] | None = None
        self.names_of: dict[str, tuple[str, ...]] = {}  # switch → its logical ports' names (`take`)
        self.declared: dict[str, str] = {}  # switch → the NOS the inventory gives it (the lab forces its own)

    def problem(self, loc: tuple[Any, ...], expected: str, found: str = "") -> None:
        """A problem; one from a shared default (hosts.defaults) is reported once, with the count of hosts."""
        if loc[:2] == ("hosts", "defaults"):
            if loc in self.shared:
                self.shared[loc][1] += 1
                return
            self.shared[loc] = [len(self.t.problems), 1]
        self.t.problems.append(self.smap.problem(loc, expected, found))

    def finish(self) -> Topo:
        for i, count in self.shared.values():
            if count > 1:
                p = self.t.problems[i]
                self.t.problems[i] = replace(p, found=f"{p.found} (from the shared default: {count} hosts)")
        return self.t

    def bad_name(self, name: str, role: str) -> bool:
        """A generated name that is no device name (too long, say): one problem per pattern, at the pattern."""
        if re.fullmatch(NAME, name):
            return False
        loc = ("topology", "names", role.replace("-", "_"))
        if loc not in self.reported:
            self.reported.add(loc)
            self.problem(loc, f"names matching {NAME} (at most 63 characters)", repr(name[:80]))
        return True

    def add_switch(self, name: str, role: str, **kw: Any) -> Switch | None:
        if self.bad_name(name, role):
            return None
        loc: tuple[Any, ...] = ("topology",)
        settings = self.inv.roles.get(role)  # type: ignore[call-overload]
        over = self.overrides.get(name)
        platform = target = breakout = release = None
        role_loc: tuple[Any, ...] = ("roles", role)
        breakout_loc = release_loc = platform_loc = target_loc = role_loc
        if settings:
            platform, target, breakout, release = settings.platform, settings.target, settings.breakout, \
                settings.release
        asn = ar = None
        if over:
            i, o = over
            loc = ("switches", i)
            platform, target = o.platform or platform, o.target or target
            if o.platform:
                platform_loc = loc
            target_loc = loc if o.target else role_loc
            if o.breakout:
                breakout, breakout_loc = o.breakout, loc
            if o.release:
                release, release_loc = o.release, loc
            asn, ar = o.asn, o.adaptive_routing
            for key in ("su", "rail", "pod"):
                if getattr(o, key) is not None:
                    kw[key] = getattr(o, key)
        forced = self.force_target is not None
        if target is not None:
            self.declared[name] = target
        target = self.force_target or target
        if platform is None or target is None:
            self.problem(loc, f"roles.{role} (platform and target) or both on the switch", f"none for {name}")
            return None
        if platform not in PLATFORMS:
            self.problem((*loc, "platform"), f"one of {', '.join(sorted(PLATFORMS))}", repr(platform))
            return None
        if name in self.t.switches:
            self.problem(loc, "each switch name once", f"{name} twice")
            return None
        plat = PLATFORMS[platform]
        ways, speed = _ways_speed(plat, breakout)
        nos = NOS[target]
        if release is None or forced:  # the lab realizes any inventory on its own target and release
            release, origin = nos.release_for(platform), f"default: {nos.title} on {platform}"
        else:
            origin = f"inventory: {dotted((*release_loc, 'release'))} ({self.where((*release_loc, 'release'))})"
            if release not in nos.releases:
                self.report((*release_loc, "release"), f"one of the {nos.title} releases the tool renders for: "
                            f"{', '.join(nos.releases)}", repr(release))
                release = nos.release_for(platform)
        if NOS[target].platform_ports and not forced:  # forced: the lab and tests realize any platform on the target
            self.sonic_ports(plat, ways, speed, breakout, breakout_loc, platform_loc)
        self.check_qos(target, (*target_loc, "target"))
        sw = Switch(name, role, plat, target, ways, speed, asn=asn, adaptive_routing=ar, release=release,
                    release_origin=origin, loc=loc, **kw)
        self.t.switches[name] = sw
        return sw

    def check_qos(self, target: str, loc: tuple[Any, ...]) -> None:
        """A lossless policy on a switch whose NOS renders no QoS: a problem at its `target` (`Nos.renders_qos`)."""
        nos = NOS[target]
        if self.lossless and not nos.renders_qos:
            self.report(loc, f"a NOS that renders the lossless QoS policy (PFC on priority "
                        f"{', '.join(map(str, self.lossless))}): "
                        f"{', '.join(n.name for n in NOS.values() if n.renders_qos)}",
                        f"{target}: {nos.title} renders no QoS")

    def where(self, loc: tuple[Any, ...]) -> str:
        file, line = self.smap.where(loc)
        return f"{file}:{line}" if line else file

    def report(self, loc: tuple[Any, ...], expected: str, found: str = "") -> None:
        """A problem of a shared setting (a role's), reported once however many switches it applies to."""
        if (loc, found) not in self.reported:
            self.reported.add((loc, found))
            self.problem(loc, expected, found)

    def sonic_ports(self, plat: Platform, ways: int, speed: int, breakout: str | None, loc: tuple[Any, ...],
                    platform_loc: tuple[Any, ...]) -> None:
        """SONiC renders PORT entries from the platform's port map: refuse a platform without one, or a
        breakout mode the platform does not define (SONiC would refuse the port names and lanes)."""
        pm = sonic_port_map(plat.name)
        if pm is None:
            self.report((*platform_loc, "platform"), "a platform with a SONiC port map (fabric/data/sonic: "
                        f"{', '.join(sorted(sonic_platforms()))}) for SONiC switches", plat.name)
        elif pm.layout(ways, speed) is None:
            modes = ", ".join(pm.modes(ways) or [m for w in range(2, 9) for m in pm.modes(w)])
            self.report((*loc, "breakout"), f"a breakout mode SONiC defines for {plat.name} ({pm.hwsku}: {modes})",
                        breakout or f"1x{speed}G")

    def take(self, sw: Switch, peer: str, speed: int, loc: tuple[Any, ...]) -> str | None:
        """Allocate the next free logical port of `sw` for a link to `peer`."""
        names = self.names_of.get(sw.name)
        if names is None:  # once per switch: its platform, breakout and target are set when it is added
            names = self.names_of[sw.name] = sw.port_names()
        used, i = sw.used, sw.next_port
        n = len(names)
        while i < n and names[i] in used:
            i += 1
        sw.next_port = i
        if i >= n:
            self.problem(loc, f"at most {sw.capacity} ports on {sw.name} ({sw.platform.name}: "
                              f"{sw.platform.ports} × {sw.ways} sub-ports)", f"a link to {peer} beyond that")
            return None
        if speed > sw.port_speed:
            self.problem(loc, f"links at most {sw.port_speed}G on {sw.name}", f"{speed}G")
        sw.next_port = i + 1
        return names[i]

    def link(self, a: Switch | str, b: Switch, speed: int, cable: int, kind: str, loc: tuple[Any, ...],
             a_port: str | None = None) -> Link | None:
        a_name = a if isinstance(a, str) else a.name
        pa = a_port if a_port is not None else self.take(a, b.name, speed, loc)  # type: ignore[arg-type]
        pb = self.take(b, a_name, speed, loc)
        if pa is None or pb is None:
            return None
        ln = Link(a_name, pa, b.name, pb, speed, cable, kind, loc)
        if not isinstance(a, str):
            a.used[pa] = ln
        b.used[pb] = ln
        self.t.links.append(ln)
        return ln

    def generate(self) -> None:
        top = self.inv.topology
        if top.scalable_units == 0:
            return
        if top.scalable_units % top.pods:
            self.problem(("topology", "pods"), f"a divisor of scalable_units ({top.scalable_units})",
                         str(top.pods))
            return
        sus_per_pod = top.scalable_units // top.pods
        if not self.fits(sus_per_pod):
            return
        supers, spines = self.generate_switches(sus_per_pod)
        # Hosts first on every leaf (ports 1..H), then uplinks.
        self.generate_hosts()
        self.generate_uplinks(sus_per_pod, spines, supers)

    def generate_switches(self, sus_per_pod: int) -> tuple[dict[int, list[Switch]], dict[int, list[Switch]]]:
        """Super-spines by plane, spines by pod, then every SU's rail leaves: (super-spines, spines)."""
        top, names = self.inv.topology, self.inv.topology.names
        supers: dict[int, list[Switch]] = {}
        if top.super_spines:
            for plane in range(1, top.spines + 1):
                for n in range(1, top.super_spines + 1):
                    sw = self.add_switch(names.super_spine.format(plane=plane, n=n), "super-spine", plane=plane)
                    if sw:
                        supers.setdefault(plane, []).append(sw)
        spines: dict[int, list[Switch]] = {}
        for pod in range(1, top.pods + 1):
            for k in range(1, top.spines + 1):
                n = (pod - 1) * top.spines + k
                sw = self.add_switch(names.spine.format(n=n, pod=pod, plane=k), "spine", pod=pod, plane=k)
                if sw:
                    spines.setdefault(pod, []).append(sw)
        for su in range(1, top.scalable_units + 1):
            pod = (su - 1) // sus_per_pod + 1
            for rail in range(1, top.rails + 1):
                leaf = self.add_switch(names.leaf.format(su=su, rail=rail, pod=pod), "leaf", su=su, rail=rail,
                                       pod=pod)
                if leaf:
                    self.t.leaf_of[(su, rail)] = leaf.name
                    leaf.next_port = 0
        return supers, spines

    def generate_uplinks(self, sus_per_pod: int, spines: dict[int, list[Switch]],
                         supers: dict[int, list[Switch]]) -> None:
        """Every leaf to every spine of its pod, every spine to every super-spine of its plane."""
        top, cab, loc = self.inv.topology, self.inv.cabling, ("topology",)
        for (su, _rail), leaf_name in sorted(self.t.leaf_of.items()):
            leaf = self.t.switches[leaf_name]
            pod = (su - 1) // sus_per_pod + 1
            for spine in spines.get(pod, []):
                for _ in range(top.uplinks_per_spine):
                    self.link(leaf, spine, cab.leaf_spine.speed, cab.leaf_spine.cable, "leaf-spine", loc)
        for pod_spines in spines.values():
            for spine in pod_spines:
                for sup in supers.get(spine.plane or 0, []):
                    for _ in range(top.uplinks_per_super_spine):
                        self.link(spine, sup, cab.spine_super_spine.speed, cab.spine_super_spine.cable,
                                  "spine-super-spine", loc)

    def fits(self, sus_per_pod: int) -> bool:
        """Refuse, with the arithmetic, a Clos the port counts cannot build."""
        top, roles = self.inv.topology, self.inv.roles
        need = {
            "leaf": (top.hosts_per_su + top.spines * top.uplinks_per_spine,
                     f"{top.hosts_per_su} hosts + {top.spines} spines × {top.uplinks_per_spine} uplinks"),
            "spine": (sus_per_pod * top.rails * top.uplinks_per_spine + top.super_spines * top.uplinks_per_super_spine,
                      f"{sus_per_pod} SUs × {top.rails} rails × {top.uplinks_per_spine} uplinks"
                      + (f" + {top.super_spines} super-spines × {top.uplinks_per_super_spine}" if top.super_spines
                         else "")),
            "super-spine": (top.pods * top.uplinks_per_super_spine,
                            f"{top.pods} pods × {top.uplinks_per_super_spine} uplinks"),
        }
        ok = True
        for role, (ports, why) in need.items():
            rs = roles.get(role)  # type: ignore[call-overload]
            if rs is None or (role == "super-spine" and not top.super_spines) or (role == "spine" and not top.spines):
                continue
            ways, _ = _ways_speed(PLATFORMS[rs.platform], rs.breakout)
            have = PLATFORMS[rs.platform].ports * ways
            if ports > have:
                hint = ("; add a tier (pods and super_spines) or use higher-radix switches or a breakout"
                        if role != "super-spine" else "; use more super-spines per plane or fewer pods")
                self.problem(("roles", role, "platform"), f"at most {have} ports per {role} "
                             f"({rs.platform} {PLATFORMS[rs.platform].ports} ports × {ways})",
                             f"{ports} needed = {why}{hint}")
                ok = False
        return ok

    def generate_hosts(self) -> None:
        top, names = self.inv.topology, self.inv.topology.names
        explicit = {h.name: (i, h) for i, h in enumerate(self.inv.hosts.entries)}
        for su in range(1, top.scalable_units + 1):
            for h in range(1, top.hosts_per_su + 1):
                name = names.host.format(su=su, h=h)
                self.add_host(name, su, h, explicit.pop(name, None))
        for name, (i, hd) in explicit.items():
            if hd.su is None:
                self.problem(("hosts", "list", i), "su: the scalable unit of a host not generated", "none")
                continue
            count = sum(1 for x in self.t.hosts.values() if x.su == hd.su)
            self.add_host(name, hd.su, count + 1, (i, hd))

    def add_host(self, name: str, su: int, h: int, explicit: tuple[int, Any] | None) -> None:
        if self.bad_name(name, "host"):
            return
        loc: tuple[Any, ...] = ("hosts", "list", explicit[0]) if explicit else ("topology",)
        if name in self.t.hosts or name in self.t.switches:
            self.problem(loc, "each device name once", f"{name} twice")
            return
        if explicit:
            settings = _merged_settings(self.inv.hosts.defaults, explicit[1])
        else:  # the defaults' settings, merged once: every generated host holds a copy of the same values
            if self.default_settings is None:
                self.default_settings = _merged_settings(self.inv.hosts.defaults)
            settings = dict(self.default_settings)
        nic_defs: list[NicDef] = settings.pop("nics", None) or [
            NicDef(rail=r, rdma=f"mlx5_{r - 1}", netdev=f"rail{r}") for r in range(1, self.inv.topology.rails + 1)]
        host = Host(name, su, h, settings, [], loc=loc)
        if explicit and explicit[1].management is not None:
            host.management = str(explicit[1].management)
        seen: set[str] = set()
        for j, nd in enumerate(nic_defs):
            nic_loc = (*loc, "nics", j) if explicit and explicit[1].nics else ("hosts", "defaults", "nics", j)
            if nd.netdev in seen:
                self.problem((*nic_loc, "netdev"), "each netdev once per host", f"{nd.netdev} twice")
            seen.add(nd.netdev)
            leaf_name = self.t.leaf_of.get((su, nd.rail))
            if leaf_name is None:
                self.problem((*nic_loc, "rail"), f"a rail with a leaf in SU {su} "
                             f"(rails 1-{self.inv.topology.rails})", f"rail {nd.rail} on {name}")
                continue
            nic = Nic(nd.rail, nd.rdma, nd.netdev, nd.vlan, nd.vfs, pci=nd.pci)
            leaf = self.t.switches[leaf_name]
            ln = self.link(name, leaf, self.inv.cabling.host_leaf.speed, self.inv.cabling.host_leaf.cable,
                           "host-leaf", nic_loc, a_port=nd.netdev)
            if ln:
                nic.leaf, nic.leaf_port = leaf.name, ln.b_port
            host.nics.append(nic)
        self.own_interfaces(host, loc, explicit)
        self.t.hosts[name] = host

    def own_interfaces(self, host: Host, loc: tuple[Any, ...], explicit: tuple[int, Any] | None) -> None:
        """The host agent manages the rail NICs only: never the management interface, nor a sysctl of an
        interface outside the rails (a shared default reported once)."""
        mgmt = host.settings["management_interface"]
        own = {"all", "default", "{if}", *(n.netdev for n in host.nics),
               *(f"{n.netdev}.{n.vlan}" for n in host.nics if n.vlan)}
        layer = loc if explicit and explicit[1].nics is not None else ("hosts", "defaults")
        for j, nic in enumerate(host.nics):
            if nic.netdev == mgmt:
                self.problem((*layer, "nics", j, "netdev"),
                                  f"a rail NIC other than the management interface {mgmt}", nic.netdev)
            elif nic.vlan and f"{nic.netdev}.{nic.vlan}" == mgmt:  # the rail's interface is netdev.vlan
                self.problem((*layer, "nics", j, "vlan"), f"a rail interface other than the management interface "
                             f"{mgmt}", f"{mgmt} (VLAN {nic.vlan})")
        layer = loc if explicit and explicit[1].sysctls is not None else ("hosts", "defaults")
        for key in host.settings.get("sysctls") or {}:
            dev = sysctl_interface(key)
            if dev is not None and dev not in own:
                self.problem((*layer, "sysctls", key), "a sysctl of all, default, {if} or a rail interface "
                                  f"({', '.join(sorted(own - {'all', 'default', '{if}'}))})", dev)
                continue
            # what the host is told: every dot of a dotted key becomes a / (fabric.design.derive.host), so a
            # dotted key cannot name an interface with a dot in it except as {if}
            written = key if "/" in key or "{if}" in key else key.replace(".", "/")
            told = sysctl_interface(written)
            if told is not None and told not in own:
                self.problem((*layer, "sysctls", key), "a sysctl of all, default, {if} or a rail interface "
                             f"({', '.join(sorted(own - {'all', 'default', '{if}'}))})",
                             f"{told} (as the host writes it: {written}; name a dotted interface with / or {{if}})")

    def explicit(self) -> None:
        for i, sd in enumerate(self.inv.switches):
            if sd.name not in self.t.switches:
                if sd.role is None:
                    self.problem(("switches", i, "role"), "a role for a switch the topology does not generate",
                                 "none")
                    continue
                sw = self.add_switch(sd.name, sd.role, su=sd.su, rail=sd.rail, pod=sd.pod)
                if sw and sw.role == "leaf" and sw.su and sw.rail:
                    self.t.leaf_of.setdefault((sw.su, sw.rail), sw.name)
        by_ends = {frozenset({(ln.a, ln.a_port), (ln.b, ln.b_port)}): ln for ln in self.t.links} if self.inv.links \
            else {}
        for i, ld in enumerate(self.inv.links):
            loc = ("links", i)
            (a, pa), (b, pb) = ld.a.split(":", 1), ld.b.split(":", 1)
            if a == b:  # a cable from a switch back to itself: no neighbour, and BGP would peer with itself
                self.problem((*loc, "b"), f"a port of another device than {a}", f"{ld.b} (both ends on {a})")
                continue
            pa, pb = self.nos_port(a, pa, (*loc, "a")), self.nos_port(b, pb, (*loc, "b"))
            if pa is None or pb is None:
                continue
            existing = by_ends.get(frozenset({(a, pa), (b, pb)}))
            if existing:
                existing.speed = ld.speed or existing.speed
                existing.cable_m = ld.cable or existing.cable_m
                existing.loc = loc
                continue
            ends = []
            for dev, port, key in ((a, pa, "a"), (b, pb, "b")):
                sw = self.t.switches.get(dev)
                host = self.t.hosts.get(dev)
                if host is not None:
                    nic = next((n for n in host.nics if n.netdev == port), None)
                    self.problem((*loc, key), "a switch port (a host NIC is cabled by hosts.nics, to its rail's leaf)",
                                 f"{dev}:{port}, " + (f"already cabled to {nic.leaf}:{nic.leaf_port}" if nic
                                                      else f"no NIC of host {dev}"))
                elif sw is None:
                    self.problem((*loc, key), "a switch of this fabric", repr(dev))
                elif port in sw.used:
                    self.problem((*loc, key), f"a free port ({port} is cabled to {far_end(sw.used[port], dev, port)})",
                                 f"{dev}:{port} used twice")
                else:
                    ends.append(sw)
            if len(ends) != 2:
                continue
            kinds = {frozenset({"leaf", "spine"}): "leaf-spine",
                     frozenset({"spine", "super-spine"}): "spine-super-spine"}
            kind = kinds.get(frozenset({ends[0].role, ends[1].role}), "explicit")
            cls = self.inv.cabling.leaf_spine if kind != "spine-super-spine" else self.inv.cabling.spine_super_spine
            ln = Link(a, pa, b, pb, ld.speed or cls.speed, ld.cable or cls.cable, kind, loc)
            ends[0].used[pa] = ends[1].used[pb] = ln
            self.t.links.append(ln)


    def nos_port(self, device: str, port: str, loc: tuple[Any, ...]) -> str | None:
        """A port of a switch, NOS-neutral (`12`, `12/2`: front-panel port, sub-port of its breakout, both from 1)
        or as the NOS the inventory gives the switch names it (swp12s1, Ethernet12/5, Ethernet<lane>), named the
        way the switch's NOS names it; a host's port as written. None (and a problem) for a port the platform
        does not have, or a name of another NOS (with what to write instead)."""
        sw = self.t.switches.get(device)
        if sw is None:
            return port
        index = self.port_index(sw, port)
        if index is not None:
            return sw.port_name(index)
        nos = NOS[self.declared.get(device, sw.target)]
        lanes, count = sw.platform.lanes, sw.capacity
        names = _port_names(nos.name, sw.ways, lanes, count)
        neutral = re.fullmatch(NEUTRAL_PORT, port) is not None
        for other in () if neutral else NOS.values():
            at = port_indexes(other.name, sw.ways, lanes, count).get(port)
            if at is not None and other.port_name is not nos.port_name:
                self.problem(loc, f"{device}'s {nos.short} port name {names[at]!r} or the NOS-neutral "
                             f"{_neutral(sw.ways, at)!r} (its target is {nos.short})",
                             f"{port!r}, {other.short}'s name for that port")
                return None
        self.problem(loc, f"a port of {sw.name}: front-panel 1-{sw.platform.ports}"
                     + (f", each broken out into /1-/{sw.ways} ({sw.platform.name}, {sw.ways} ways)" if sw.ways > 1
                        else f" ({sw.platform.name}, not broken out)")
                     + ("" if neutral else f", or its {nos.short} name, {names[0]} to {names[-1]}"),
                     f"{device}:{port}")
        return None

    def port_index(self, sw: Switch, port: str) -> int | None:
        """The logical index of `port` on `sw`: NOS-neutral, or named as the inventory's NOS for the switch
        names it; None where it is neither."""
        if re.fullmatch(NEUTRAL_PORT, port):
            front, _, sub = port.partition("/")
            n, k = int(front), int(sub or 1)
            ok = n <= sw.platform.ports and k <= sw.ways and (bool(sub) or sw.ways == 1)
            return (n - 1) * sw.ways + k - 1 if ok else None
        target = self.declared.get(sw.name, sw.target)
        return port_indexes(target, sw.ways, sw.platform.lanes, sw.capacity).get(port)


def build(inv: Inventory, smap: SourceMap, target: str | None = None, lossless: tuple[int, ...] = ()) -> Topo:
    """Generate the rail-optimized part, then add or override explicit switches and links.

    `target` forces one NOS on every switch (the lab realizes every switch as Linux/FRR); `lossless`: the QoS
    policy's lossless priorities, refused on a switch whose NOS renders no QoS."""
    b = _Builder(inv, smap, target, lossless)
    b.generate()
    b.explicit()
    if inv.topology.scalable_units == 0:
        b.generate_hosts()
    return b.finish()
