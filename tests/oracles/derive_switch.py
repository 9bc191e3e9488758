"""`Switches.switch` and `Deriver.__init__`'s per-host and per-link tables as they read before the port order,
lanes and headroom were kept per key; verbatim but for their signatures. Held against by
tests/design/derive/test_switch.py."""

from __future__ import annotations

from fabric.design.derive import Deriver
from fabric.design.derive.addressing import dotted
from fabric.design.derive.qos import port_headroom
from fabric.design.derive.switch import _by_port, _pow2
from fabric.design.headroom import Headroom
from fabric.design.intent import BgpIntent, BgpNeighbor, NeighborIntent, PortIntent, Svi, SwitchIntent
from fabric.design.topology import Switch
from fabric.model.ports import sonic_port_map
from fabric.nos import NOS
from fabric.order import natural


def switch_before(self: Deriver, sw: Switch) -> SwitchIntent:
    """`Switches.switch` as it read before (1290a7d), verbatim but for this signature."""
    inv, qos = self.inv, self.qos
    nos = NOS[sw.target]
    mtu = min(inv.switching.mtu, nos.mtu_max)  # a longer MTU line is refused by the NOS (and the commit with it)
    pm = sonic_port_map(sw.platform.name) if nos.platform_ports else None
    hw_ports = pm.layout(sw.ways, sw.port_speed) if pm else None
    breakout: dict[str, str] = {}
    ar_on = sw.adaptive_routing if sw.adaptive_routing is not None else inv.switching.adaptive_routing.enabled
    hr_policy = qos.headroom
    lo = self.loopback(sw.name)
    ports: list[PortIntent] = []
    neighbors: list[BgpNeighbor] = []
    members: dict[tuple[int, int], list[str]] = {}
    tagged: dict[tuple[int, int], list[str]] = {}
    hosts_on: dict[tuple[int, int], int] = {}
    vfs_on: dict[tuple[int, int], int] = {}
    lossless = bool(qos.lossless_priorities)
    pfc = tuple(self.facts.lossless_priorities)
    watchdog = self.facts.watchdog is not None
    sw_lanes, sw_speed = sw.lanes_of(), sw.port_speed
    headrooms: dict[tuple[int, int], Headroom | None] = {}  # by (speed, cable): a speed's lanes are one number
    lanes_at: dict[int, int] = {}
    hosts, nic_at, ar_speeds, asn = self.topo.hosts, self.nic_at, sw.platform.adaptive_routing_speeds, self.asn
    svi, vlan_base, broken_out = self.addr.mode == "svi", self.addr.vlan_base, pm is not None and sw.ways > 1
    for port, peer, peer_port, speed, cable, kind in sorted(self.ports[sw.name], key=_by_port):
        lanes = lanes_at.get(speed)
        if lanes is None:  # a slower link uses fewer lanes
            lanes = lanes_at[speed] = max(1, sw_lanes * speed // sw_speed)
        hr = headrooms.get((speed, cable), False) if lossless else None
        if hr is False:
            hr = headrooms[(speed, cable)] = port_headroom(
                sw.platform.asic, speed, cable, mtu, lanes, hr_policy.lossless_mtu,
                hr_policy.small_packet_percentage, hr_policy.shared_headroom_pool)
        hw = hw_ports.get(port) if hw_ports is not None else None
        if hw is not None and broken_out:
            breakout[pm.parent(hw)] = hw.mode  # type: ignore[union-attr]
        if kind == "host-leaf":
            host = hosts[peer]
            nic = nic_at.get((peer, peer_port))
            if nic is None:  # the first NIC of that name, as a search of the host's NICs finds it
                nic = next(n for n in host.nics if n.netdev == peer_port)
            key = (host.su, nic.rail)
            vlan = address = None
            if svi:
                vlan = vlan_base + nic.rail
                members.setdefault(key, []).append(port)
                if nic.vlan is not None:
                    tagged.setdefault(key, []).append(port)
            else:
                address = f"{self.host_address(host, nic.rail)[1]}/31"
            hosts_on[key] = hosts_on.get(key, 0) + 1
            vfs_on[key] = vfs_on.get(key, 0) + nic.vfs
            # PortIntent's fields in order (positional: 160k ports at 32k GPUs): name, speed, lanes, mtu, cable_m,
            # kind, peer, peer_port, description, vlan, tagged, address, unnumbered, adaptive_routing, lossless,
            # pfc, watchdog, headroom, hw
            ports.append(PortIntent(
                port, speed, lanes, mtu, cable, "host", peer, peer_port, f"{peer}:{peer_port} rail{nic.rail}",
                vlan, vlan is not None and nic.vlan is not None, address, False, False, lossless, pfc, watchdog,
                hr, hw))
        else:
            ports.append(PortIntent(
                port, speed, lanes, mtu, cable, "fabric", peer, peer_port, f"{peer}:{peer_port}", None, False,
                None, True, ar_on and speed in ar_speeds, lossless, pfc, watchdog, hr, hw))
            neighbors.append(BgpNeighbor(port, peer, peer_port, asn[peer]))  # port, peer, peer_port, remote_asn
    svis, networks, blackholes = [], [f"{lo}/32"], []
    for (su, rail), names in sorted(members.items()):
        vid = self.addr.vlan_base + rail
        net = self.subnet(su, rail)
        gateway = f"{dotted(self.block_base(su, rail) + 1)}/{self.addr.rail_prefix_length}"
        svis.append(Svi(vlan=vid, name=f"Vlan{vid}", address=gateway, subnet=net, members=names,
                        tagged=tagged.get((su, rail), []), su=su, rail=rail))
        networks.append(net)
    if self.addr.mode == "p2p31":
        for su, rail in sorted(hosts_on):
            networks.append(self.subnet(su, rail))
            blackholes.append(self.subnet(su, rail))
    needed = sum(hosts_on.values()) + sum(vfs_on.values()) + 2 * len(neighbors)
    t3 = inv.switching.neighbor.table_size or max(4096, _pow2(2 * needed))
    b = inv.switching.bgp
    idx = self.index[sw.name]
    loaded = self.loaded
    origins = {
        "asn": f"derived: RFC 7938 plan addressing.asn ({loaded.where('addressing')}), role {sw.role}",
        "loopback": f"derived: addressing.loopbacks {self.addr.loopbacks} + {idx + 1}",
        "management": f"derived: addressing.management {self.addr.management} + {idx + 1}",
        "neighbor.gc_thresh3": f"formula: max(4096, next power of 2 ≥ 2 × {needed} neighbors)"
                               + " (hosts × (1+VFs) + 2 per BGP peer)",
        "ports.headroom": "formula: sonic-swss buffer_headroom_mellanox.lua with "
                          f"{sw.platform.asic} cell {sw.platform.buffer.cell_size} B, port MTU {mtu}, "
                          f"lossless MTU {hr_policy.lossless_mtu}, "
                          f"small packets {hr_policy.small_packet_percentage}%",
        "mtu": (f"inventory: switching.mtu ({loaded.where('switching', 'mtu')})"
                if ("switching", "mtu") in loaded.smap.lines else "default: 9216")
        + (f", capped to {mtu}: the largest MTU {nos.title} takes (fabric.nos: {sw.target} mtu_max)"
           if mtu < inv.switching.mtu else ""),
        "release": sw.release_origin,
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
    return SwitchIntent(
        name=sw.name, role=sw.role, target=sw.target, platform=sw.platform.name,  # type: ignore[arg-type]
        asic=sw.platform.asic, release=sw.release, su=sw.su, rail=sw.rail, pod=sw.pod, loopback=f"{lo}/32",
        management=self.management(idx), mtu=mtu, adaptive_routing=any(p.adaptive_routing for p in ports),
        ports=ports, svis=svis, breakout=dict(sorted(breakout.items(), key=lambda kv: natural(kv[0]))),
        bgp=BgpIntent(asn=self.asn[sw.name], router_id=str(lo), neighbors=neighbors, networks=networks,
                      blackholes=blackholes, max_paths=b.max_paths, keepalive=b.keepalive, hold=b.hold,
                      graceful_shutdown=b.graceful_shutdown, bfd=b.bfd, maximum_routes=b.maximum_routes),
        neighbor=NeighborIntent(aging_s=inv.switching.neighbor.aging, gc_thresh1=t3 // 4, gc_thresh2=t3 // 2,
                                gc_thresh3=t3, needed=needed),
        qos=self.facts, buffer_bytes=sw.platform.buffer_bytes, origins=origins)


def tables_before(d: Deriver) -> tuple[dict, dict, dict, dict]:  # type: ignore[type-arg]
    """`Deriver.__init__`'s per-host and per-link tables as it made them before (5588bc8), verbatim."""
    max_h: dict[tuple[int, int], int] = {}
    nic_at: dict[tuple[str, str], object] = {}
    for h in d.topo.hosts.values():
        for n in h.nics:
            max_h[(h.su, n.rail)] = max(max_h.get((h.su, n.rail), 0), h.h)
            nic_at.setdefault((h.name, n.netdev), n)
    ports: dict[str, list[tuple[str, str, str, int, int, str]]] = {n: [] for n in d.topo.switches}
    host_links = {(ln.a, ln.a_port): (ln.cable_m, ln.loc) for ln in d.topo.links if ln.kind == "host-leaf"}
    for ln in d.topo.links:
        if ln.a in ports:
            ports[ln.a].append((ln.a_port, ln.b, ln.b_port, ln.speed, ln.cable_m, ln.kind))
        if ln.b in ports:
            ports[ln.b].append((ln.b_port, ln.a, ln.a_port, ln.speed, ln.cable_m, ln.kind))
    return max_h, nic_at, ports, host_links
