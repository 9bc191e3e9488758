"""Derivation, switches: ports (speed, lanes, MTU, headroom, breakout), SVIs or /31s, BGP and the neighbour table of
one switch."""

from __future__ import annotations

from dataclasses import dataclass, field
from operator import itemgetter

from fabric.design.derive.addressing import Addressing, dotted
from fabric.design.derive.qos import port_headroom
from fabric.design.derive.shapes import Shapes
from fabric.design.headroom import Headroom
from fabric.design.intent import (
    BgpIntent,
    BgpNeighbor,
    NeighborIntent,
    PortIntent,
    QosFacts,
    Svi,
    SwitchIntent,
)
from fabric.design.topology import Nic, Switch, Topo
from fabric.model.inventory import Inventory
from fabric.model.load import Loaded
from fabric.model.ports import PortMap, sonic_port_map
from fabric.model.qos import QosPolicy
from fabric.nos import NOS
from fabric.order import natural

_Port = tuple[str, str, str, int, int, str]  # port, peer, peer port, speed, cable (m), link kind
# BgpIntent's BFD timers at their defaults, written out: every field given, a BGP intent can be trusted
_BFD_TIMERS = {k: BgpIntent.model_fields[k].default for k in ("bfd_detect_multiplier", "bfd_interval_ms")}
_UNSEEN = object()  # a key not in a dict whose values may be None


def _by_port(p: tuple[str, ...]) -> tuple[str | int, ...]:
    return natural(p[0])


def in_port_order(ports: list[_Port], orders: dict[tuple[str, ...], tuple[int, ...]]) -> list[_Port]:
    """`sorted(ports, key=_by_port)` through `orders`: the permutation that sorts a sequence of port names, made
    once per sequence (the switches of one shape list the same names in the same order: 1,792 sorts of 91 ports
    at 32k GPUs become a few). A stable sort's result depends on the names alone, so it is the same list."""
    names = tuple(map(itemgetter(0), ports))
    order = orders.get(names)
    if order is None:
        order = orders[names] = tuple(sorted(range(len(names)), key=lambda i: natural(names[i])))
    return [ports[i] for i in order]


@dataclass(slots=True)
class _SwitchPorts:
    """What `Switches._ports` gathers of one switch."""

    ports: list[PortIntent] = field(default_factory=list)
    neighbors: list[BgpNeighbor] = field(default_factory=list)
    # (SU, rail) → its host ports, the tagged ones
    on: dict[tuple[int, int], tuple[list[str], list[str]]] = field(default_factory=dict)
    breakout: dict[str, str] = field(default_factory=dict)  # parent port → breakout mode
    host_ports: int = 0
    vfs: int = 0
    any_ar: bool = False


def _pow2(n: int) -> int:
    return 1 << max(0, n - 1).bit_length()


class Switches(Addressing, Shapes):
    """One switch's intent (a part of `Deriver`)."""

    loaded: Loaded
    inv: Inventory
    qos: QosPolicy
    facts: QosFacts
    topo: Topo
    asn: dict[str, int]
    ports: dict[str, list[_Port]]
    _port_orders: dict[tuple[str, ...], tuple[int, ...]]  # in_port_order's
    nic_at: dict[tuple[str, str], Nic]  # (host, netdev) → its first NIC of that name

    def switch(self, sw: Switch) -> SwitchIntent:
        inv = self.inv
        nos = NOS[sw.target]
        mtu = min(inv.switching.mtu, nos.mtu_max)  # a longer MTU line is refused by the NOS (and the commit with it)
        pm = sonic_port_map(sw.platform.name) if nos.platform_ports else None
        lo = self.loopback(sw.name)
        sp = self._ports(sw, mtu, pm)
        svis, networks, blackholes = self._networks(lo, sp.on)
        needed = sp.host_ports + sp.vfs + 2 * len(sp.neighbors)
        t3 = inv.switching.neighbor.table_size or max(4096, _pow2(2 * needed))
        b = inv.switching.bgp
        # Validated once per shape (its role, NOS, platform, release and MTU, and which of SU, rail and pod it has);
        # the same shape again is trusted (fabric.design.intent.trusted): the rest are names of the checked topology,
        # addresses and numbers computed here, and parts validated once per fabric (BGP, the neighbour table, SVIs).
        shape = ("switch", sw.role, sw.target, sw.platform.name, sw.release, mtu, sw.su is None, sw.rail is None,
                 sw.pod is None)
        return self._once(SwitchIntent, shape, {
            "name": sw.name, "role": sw.role, "target": sw.target, "platform": sw.platform.name,
            "asic": sw.platform.asic, "release": sw.release, "su": sw.su, "rail": sw.rail, "pod": sw.pod,
            "loopback": f"{lo}/32", "management": self.management(self.index[sw.name]), "mtu": mtu,
            "adaptive_routing": sp.any_ar, "ports": sp.ports, "svis": svis,
            "breakout": dict(sorted(sp.breakout.items(), key=lambda kv: natural(kv[0]))),
            "bgp": self._once(BgpIntent, ("bgp",), {
                "asn": self.asn[sw.name], "router_id": str(lo), "neighbors": sp.neighbors, "networks": networks,
                "blackholes": blackholes, "max_paths": b.max_paths, "keepalive": b.keepalive, "hold": b.hold,
                "graceful_shutdown": b.graceful_shutdown, "bfd": b.bfd, "maximum_routes": b.maximum_routes,
                **_BFD_TIMERS}),
            "neighbor": self._once(NeighborIntent, ("neighbor",), {
                "aging_s": inv.switching.neighbor.aging, "gc_thresh1": t3 // 4, "gc_thresh2": t3 // 2,
                "gc_thresh3": t3, "needed": needed}),
            "qos": self.facts, "buffer_bytes": sw.platform.buffer_bytes,
            "origins": self._switch_origins(sw, mtu, needed, pm)})

    def _ports(self, sw: Switch, mtu: int, pm: PortMap | None) -> _SwitchPorts:
        """The switch's ports in port order, its BGP neighbours (one per fabric port), and per (SU, rail) its host
        ports (`on`: for the SVIs and rail subnets)."""
        inv, hr_policy = self.inv, self.qos.headroom
        hw_ports = pm.layout(sw.ways, sw.port_speed) if pm else None
        ar_on = sw.adaptive_routing if sw.adaptive_routing is not None else inv.switching.adaptive_routing.enabled
        out = _SwitchPorts()
        ports, neighbors, on, breakout = out.ports, out.neighbors, out.on, out.breakout
        lossless = bool(self.qos.lossless_priorities)
        pfc = tuple(self.facts.lossless_priorities)
        watchdog = self.facts.watchdog is not None
        sw_lanes, sw_speed = sw.lanes_of(), sw.port_speed
        # by (speed, cable, lanes): PFC headroom. A port's lanes are its platform port's where the NOS writes them
        # (SONiC PORT `lanes`: an unsplit 8-lane cage at 100G keeps 8, and SONiC's lua computes from those), else a
        # slower link uses fewer
        specs: dict[tuple[int, int, int], Headroom | None] = {}
        hosts, nic_at, ar_speeds, asn = self.topo.hosts, self.nic_at, sw.platform.adaptive_routing_speeds, self.asn
        svi, vlan_base, broken_out = self.addr.mode == "svi", self.addr.vlan_base, pm is not None and sw.ways > 1
        any_ar = False
        lanes_at: dict[int, int] = {}  # speed → lanes of a port without a platform port
        for port, peer, peer_port, speed, cable, kind in in_port_order(self.ports[sw.name], self._port_orders):
            hw = hw_ports.get(port) if hw_ports is not None else None
            lanes = hw.lane_count if hw is not None else lanes_at.get(speed) or lanes_at.setdefault(
                speed, max(1, sw_lanes * speed // sw_speed))
            key = (speed, cable, lanes)
            hr = specs.get(key, _UNSEEN)
            if hr is _UNSEEN:
                hr = specs[key] = port_headroom(
                    sw.platform.asic, speed, cable, mtu, lanes, hr_policy.lossless_mtu,
                    hr_policy.small_packet_percentage, hr_policy.shared_headroom_pool) if lossless else None
            if hw is not None and broken_out:
                breakout[pm.parent(hw)] = hw.mode  # type: ignore[union-attr]
            if kind == "host-leaf":
                host = hosts[peer]
                nic = nic_at.get((peer, peer_port))
                if nic is None:  # the first NIC of that name, as a search of the host's NICs finds it
                    nic = next(n for n in host.nics if n.netdev == peer_port)
                key = (host.su, nic.rail)
                members = on.get(key)
                if members is None:
                    members = on[key] = ([], [])
                vlan = address = None
                if svi:
                    vlan = vlan_base + nic.rail
                    members[0].append(port)
                    if nic.vlan is not None:
                        members[1].append(port)
                else:
                    address = f"{self.host_address(host, nic.rail)[1]}/31"
                out.host_ports += 1
                out.vfs += nic.vfs
                # PortIntent's fields in order (positional: 160k ports at 32k GPUs): name, speed, lanes, mtu, cable_m,
                # kind, peer, peer_port, description, vlan, tagged, address, unnumbered, adaptive_routing, lossless,
                # pfc, watchdog, headroom, hw
                ports.append(PortIntent(
                    port, speed, lanes, mtu, cable, "host", peer, peer_port, f"{peer}:{peer_port} rail{nic.rail}",
                    vlan, vlan is not None and nic.vlan is not None, address, False, False, lossless, pfc, watchdog,
                    hr, hw))
            else:
                ar = ar_on and speed in ar_speeds
                any_ar = any_ar or ar
                ports.append(PortIntent(
                    port, speed, lanes, mtu, cable, "fabric", peer, peer_port, f"{peer}:{peer_port}", None, False,
                    None, True, ar, lossless, pfc, watchdog, hr, hw))
                neighbors.append(BgpNeighbor(port, peer, peer_port, asn[peer]))  # port, peer, peer_port, remote_asn
        out.any_ar = any_ar
        return out

    def _networks(self, lo: str, on: dict[tuple[int, int], tuple[list[str], list[str]]]
                  ) -> tuple[list[Svi], list[str], list[str]]:
        """The SVIs (svi mode: one per (SU, rail) with host ports), the networks BGP announces (the loopback and
        each rail subnet) and the blackholes (p2p31: each rail block, whose /31s are connected routes)."""
        svis, networks, blackholes = [], [f"{lo}/32"], []
        for (su, rail), (names, tagged) in sorted(on.items()) if self.addr.mode == "svi" else ():
            vid = self.addr.vlan_base + rail
            net = self.subnet(su, rail)
            gateway = f"{dotted(self.block_base(su, rail) + 1)}/{self.addr.rail_prefix_length}"
            svis.append(self._once(Svi, ("svi",), {"vlan": vid, "name": f"Vlan{vid}", "address": gateway, "subnet": net,
                                                   "members": names, "tagged": tagged, "su": su, "rail": rail}))
            networks.append(net)
        if self.addr.mode == "p2p31":
            for su, rail in sorted(on):
                networks.append(self.subnet(su, rail))
                blackholes.append(self.subnet(su, rail))
        return svis, networks, blackholes

    def _switch_origins(self, sw: Switch, mtu: int, needed: int, pm: PortMap | None) -> dict[str, str]:
        """Where each of the switch's derived values comes from (`fabric explain`): the texts of its kind (role,
        NOS, platform, MTU) made once (`_kind_origins`), then its own numbers."""
        key = ("switch-origins", sw.role, sw.target, sw.platform.name, mtu)
        kind: dict[str, str] | None = self._parts.get(key)  # type: ignore[assignment]
        if kind is None:
            kind = self._parts[key] = self._kind_origins(sw, mtu, pm)
        n = self.index[sw.name] + 1
        origins = dict(kind)  # the same keys in the same order
        origins["loopback"] += str(n)
        origins["management"] += str(n)
        origins["neighbor.gc_thresh3"] = (f"formula: max(4096, next power of 2 ≥ 2 × {needed} neighbors)"
                                          " (hosts × (1+VFs) + 2 per BGP peer)")
        origins["release"] = sw.release_origin
        return origins

    def _kind_origins(self, sw: Switch, mtu: int, pm: PortMap | None) -> dict[str, str]:
        """`_switch_origins` of the switches of `sw`'s kind: the loopback and management texts end before the
        switch's number, its neighbour table and release are set per switch."""
        inv, loaded, nos, hr_policy = self.inv, self.loaded, NOS[sw.target], self.qos.headroom
        origins = {
            "asn": f"derived: RFC 7938 plan addressing.asn ({loaded.where('addressing')}), role {sw.role}",
            "loopback": f"derived: addressing.loopbacks {self.addr.loopbacks} + ",
            "management": f"derived: addressing.management {self.addr.management} + ",
            "neighbor.gc_thresh3": "",
            "ports.headroom": "formula: sonic-swss buffer_headroom_mellanox.lua with "
                              f"{sw.platform.asic} cell {sw.platform.buffer.cell_size} B, port MTU {mtu}, "
                              f"lossless MTU {hr_policy.lossless_mtu}, "
                              f"small packets {hr_policy.small_packet_percentage}%",
            "mtu": (f"inventory: switching.mtu ({loaded.where('switching', 'mtu')})"
                    if ("switching", "mtu") in loaded.smap.lines else "default: 9216")
            + (f", capped to {mtu}: the largest MTU {nos.title} takes (fabric.nos: {sw.target} mtu_max)"
               if mtu < inv.switching.mtu else ""),
            "release": "",
            "bgp.bfd_detect_multiplier": "default: FRR bfdd's (detect-multiplier 3, 300 ms receive/transmit), what "
                                         "`bfd` runs with where the timers are not spelled out",
            "bgp.bfd_interval_ms": "default: FRR bfdd's receive and transmit interval",
            "bgp.maximum_routes": f"inventory: switching.bgp.maximum_routes ({loaded.where('switching', 'bgp')})"
            if ("switching", "bgp", "maximum_routes") in loaded.smap.lines
            else "default: 256000, AVD's underlay peer-group value (aristanetworks/avd#4824); rendered where the "
                 "NOS limits routes per neighbour by default (EOS)",
        }
        if pm is not None:
            origins["ports.hw"] = (f"platform: SONiC port map of {sw.platform.name} ({pm.hwsku}, "
                                   "fabric/data/sonic/SOURCE.md)")
            origins["breakout"] = origins["ports.hw"]
        origins["ports.mtu"] = origins["mtu"]
        return origins
