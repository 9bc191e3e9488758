"""Derivation: inventory → per-device intent. Pure functions, no I/O, deterministic."""

from __future__ import annotations

import re
from functools import lru_cache
from ipaddress import IPv4Address, IPv4Network

from fabric.design.headroom import Headroom, headroom
from fabric.design.intent import (
    BgpIntent,
    BgpNeighbor,
    DcqcnIntent,
    FabricIntent,
    GidIntent,
    HostIntent,
    LinkIntent,
    NeighborIntent,
    NicQos,
    PortIntent,
    RailIntent,
    Svi,
    SwitchIntent,
)
from fabric.design.topology import Host, Switch, Topo, build
from fabric.errors import InputError
from fabric.model.load import Loaded
from fabric.model.platforms import ASIC_BUFFER
from fabric.model.qos import QosPolicy

_DIGITS = re.compile(r"(\d+)")


@lru_cache(maxsize=65536)
def natural(name: str) -> tuple[object, ...]:
    """Sort key: swp2 before swp10, Ethernet8 before Ethernet64."""
    return tuple(int(p) if p.isdigit() else p for p in _DIGITS.split(name))


@lru_cache(maxsize=4096)
def _headroom(asic: str, speed: int, cable: int, mtu: int, lanes: int, lossless_mtu: int, spp: int,
              shp: bool) -> Headroom:
    return headroom(ASIC_BUFFER[asic], speed_mbps=speed * 1000, cable_m=cable, port_mtu=mtu, lanes=lanes,
                    lossless_mtu=lossless_mtu, small_packet_percentage=spp, shared_headroom_pool=shp)


def _pow2(n: int) -> int:
    return 1 << max(0, n - 1).bit_length()


class Deriver:
    """Holds the loaded inventory and the expanded topology while intent is computed."""

    def __init__(self, loaded: Loaded, target: str | None = None):
        self.l, self.inv, self.qos = loaded, loaded.inv, loaded.qos
        self.topo: Topo = loaded.topo if target is None and loaded.topo else build(self.inv, loaded.smap, target)
        if self.topo.problems:
            raise InputError(self.topo.problems)
        self.addr = self.inv.addressing
        self.block_size = 2 ** (32 - self.addr.rail_prefix_length)
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
        self.ports: dict[str, list[tuple[str, str, str, int, int, str]]] = {n: [] for n in self.topo.switches}
        for ln in self.topo.links:
            if ln.a in self.ports:
                self.ports[ln.a].append((ln.a_port, ln.b, ln.b_port, ln.speed, ln.cable_m, ln.kind))
            if ln.b in self.ports:
                self.ports[ln.b].append((ln.b_port, ln.a, ln.a_port, ln.speed, ln.cable_m, ln.kind))

    # -- addressing -------------------------------------------------------------------------------
    def block_base(self, su: int, rail: int) -> int:
        idx = (su - 1) * self.inv.topology.rails + (rail - 1)
        return int(self.addr.rails.network_address) + idx * self.block_size

    def block(self, su: int, rail: int) -> IPv4Network:
        return IPv4Network((self.block_base(su, rail), self.addr.rail_prefix_length))

    def loopback(self, name: str) -> IPv4Address:
        return self.addr.loopbacks.network_address + 1 + self.index[name]

    def management(self, i: int) -> str:
        return f"{self.addr.management.network_address + 1 + i}/{self.addr.management.prefixlen}"

    def host_address(self, host: Host, rail: int) -> tuple[str, str]:
        """(address/prefix, gateway) of `host` on `rail`."""
        base = self.block_base(host.su, rail)
        if self.addr.mode == "svi":
            return f"{IPv4Address(base + 1 + host.h)}/{self.addr.rail_prefix_length}", str(IPv4Address(base + 1))
        leaf = base + 2 * (host.h - 1)
        return f"{IPv4Address(leaf + 1)}/31", str(IPv4Address(leaf))

    # -- switches ---------------------------------------------------------------------------------
    def switch(self, sw: Switch) -> SwitchIntent:
        inv, qos = self.inv, self.qos
        mtu = inv.switching.mtu
        ar_on = sw.adaptive_routing if sw.adaptive_routing is not None else inv.switching.adaptive_routing.enabled
        hr_policy = qos.headroom
        lo = self.loopback(sw.name)
        ports: list[PortIntent] = []
        neighbors: list[BgpNeighbor] = []
        members: dict[tuple[int, int], list[str]] = {}
        hosts_on: dict[tuple[int, int], int] = {}
        vfs_on: dict[tuple[int, int], int] = {}
        lossless = bool(qos.lossless_priorities)
        for port, peer, peer_port, speed, cable, kind in sorted(self.ports[sw.name], key=lambda p: natural(p[0])):
            lanes = max(1, sw.lanes_of() * speed // sw.port_speed)  # a slower link uses fewer lanes
            hr = _headroom(sw.platform.asic, speed, cable, mtu, lanes, hr_policy.lossless_mtu,
                           hr_policy.small_packet_percentage, hr_policy.shared_headroom_pool) if lossless else None
            if kind == "host-leaf":
                host = self.topo.hosts[peer]
                nic = next(n for n in host.nics if n.netdev == peer_port)
                key = (host.su, nic.rail)
                vlan = address = None
                if self.addr.mode == "svi":
                    vlan = self.addr.vlan_base + nic.rail
                    members.setdefault(key, []).append(port)
                else:
                    address = f"{self.host_address(host, nic.rail)[1]}/31"
                hosts_on[key] = hosts_on.get(key, 0) + 1
                vfs_on[key] = vfs_on.get(key, 0) + nic.vfs
                ports.append(PortIntent(
                    name=port, speed=speed, lanes=lanes, mtu=mtu, cable_m=cable, kind="host", peer=peer,
                    peer_port=peer_port, description=f"{peer}:{peer_port} rail{nic.rail}", vlan=vlan,
                    address=address, unnumbered=False, adaptive_routing=False, lossless=lossless, headroom=hr))
            else:
                ar = ar_on and speed in sw.platform.adaptive_routing_speeds
                ports.append(PortIntent(
                    name=port, speed=speed, lanes=lanes, mtu=mtu, cable_m=cable, kind="fabric", peer=peer,
                    peer_port=peer_port, description=f"{peer}:{peer_port}", vlan=None, address=None,
                    unnumbered=True, adaptive_routing=ar, lossless=lossless, headroom=hr))
                neighbors.append(BgpNeighbor(port=port, peer=peer, peer_port=peer_port,
                                                             remote_asn=self.asn[peer]))
        svis, networks, blackholes = [], [f"{lo}/32"], []
        for (su, rail), names in sorted(members.items()):
            net = self.block(su, rail)
            vid = self.addr.vlan_base + rail
            svis.append(Svi(vlan=vid, name=f"Vlan{vid}", address=f"{net.network_address + 1}/{net.prefixlen}",
                            subnet=str(net), members=names, su=su, rail=rail))
            networks.append(str(net))
        if self.addr.mode == "p2p31":
            for su, rail in sorted(hosts_on):
                networks.append(str(self.block(su, rail)))
                blackholes.append(str(self.block(su, rail)))
        needed = sum(hosts_on.values()) + sum(vfs_on.values()) + 2 * len(neighbors)
        t3 = inv.switching.neighbor.table_size or max(4096, _pow2(2 * needed))
        b = inv.switching.bgp
        idx = self.index[sw.name]
        loaded = self.l
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
            "mtu": f"inventory: switching.mtu ({loaded.where('switching', 'mtu')})"
            if ("switching", "mtu") in loaded.smap.lines else "default: 9216",
        }
        return SwitchIntent(
            name=sw.name, role=sw.role, target=sw.target, platform=sw.platform.name,  # type: ignore[arg-type]
            asic=sw.platform.asic, su=sw.su, rail=sw.rail, pod=sw.pod, loopback=f"{lo}/32",
            management=self.management(idx), mtu=mtu, adaptive_routing=any(p.adaptive_routing for p in ports),
            ports=ports, svis=svis,
            bgp=BgpIntent(asn=self.asn[sw.name], router_id=str(lo), neighbors=neighbors, networks=networks,
                          blackholes=blackholes, max_paths=b.max_paths, keepalive=b.keepalive, hold=b.hold,
                          graceful_shutdown=b.graceful_shutdown, bfd=b.bfd),
            neighbor=NeighborIntent(aging_s=inv.switching.neighbor.aging, gc_thresh1=t3 // 4, gc_thresh2=t3 // 2,
                                    gc_thresh3=t3, needed=needed),
            qos=qos, buffer_bytes=sw.platform.buffer_bytes, origins=origins)

    # -- hosts ------------------------------------------------------------------------------------
    def nic_qos(self, tos: int) -> NicQos:
        q: QosPolicy = self.qos
        tsa: list = ["strict" if tc in q.ets_strict else "ets" for tc in range(8)]
        return NicQos(trust=q.trust, pfc=[1 if p in q.lossless_priorities else 0 for p in range(8)],
                      prio_tc=[q.tc_of_priority(p) for p in range(8)], tsa=tsa,
                      tcbw=[q.ets_dwrr.get(tc, 0) if tc not in q.ets_strict else 0 for tc in range(8)],
                      dscp2prio=dict(sorted(q.dscp_to_priority.items())), roce_tos=tos, cnp_dscp=q.cnp_dscp,
                      cnp_priority=q.cnp_priority)

    def host(self, host: Host, i: int) -> HostIntent:
        s = host.settings
        q = self.qos
        tos = s["roce_tos"] if s["roce_tos"] is not None else (q.roce_dscp << 2) | 2
        rails: list[RailIntent] = []
        sysctls: dict[str, str] = {"net/ipv4/tcp_ecn": "1"}
        for nic in sorted(host.nics, key=lambda n: n.rail):
            addr, gw = self.host_address(host, nic.rail)
            ifname = f"{nic.netdev}.{nic.vlan}" if nic.vlan else nic.netdev
            subnet = str(IPv4Network(addr, strict=False))
            rails.append(RailIntent(
                rail=nic.rail, rdma=nic.rdma, netdev=nic.netdev, ifname=ifname, vlan=nic.vlan, vfs=nic.vfs,
                mtu=s["mtu"], speed=self.inv.cabling.host_leaf.speed, address=addr, gateway=gw, subnet=subnet,
                table=self.addr.table_base + nic.rail, rule_priority=self.addr.rule_priority_base + nic.rail,
                routes=[str(self.addr.rails)], leaf=nic.leaf, leaf_port=nic.leaf_port,
                cable_m=self.inv.cabling.host_leaf.cable))
            conf = f"net/ipv4/conf/{ifname}"
            sysctls.update({f"{conf}/arp_ignore": "1", f"{conf}/arp_announce": "2", f"{conf}/rp_filter": "2",
                            f"{conf}/arp_notify": "1"})
        for key, value in sorted((s.get("sysctls") or {}).items()):
            for r in rails if "{if}" in key else [None]:
                k = key.replace("{if}", r.ifname.replace(".", "\0")) if r else key
                k = k.replace(".", "/").replace("\0", ".") if "/" not in key else k
                sysctls[k] = str(value)
        dq = s.get("dcqcn")
        prios = (dq.priorities if dq and dq.priorities is not None else q.lossless_priorities)
        enabled = dq.enabled if dq else True
        gid = s.get("gid")
        gid_i = GidIntent(policy=gid.policy if gid else "roce-v2-ipv4", index=gid.index if gid else 3)
        nccl = {"NCCL_IB_HCA": "=" + ",".join(f"{r.rdma}:1" for r in rails), "NCCL_IB_TC": str(tos),
                "NCCL_SOCKET_IFNAME": "=" + s["management_interface"]}
        if gid_i.policy == "roce-v2-ipv4":
            nccl["NCCL_IB_GID_INDEX"] = str(gid_i.index)
        else:
            nccl.update(NCCL_IB_ROCE_VERSION_NUM="2", NCCL_IB_ADDR_FAMILY="AF_INET")
        nccl.update({k: str(v) for k, v in (s.get("nccl_env") or {}).items()})
        mgmt = host.management or self.management(len(self.topo.switches) + i)
        origins = {
            "rails.address": f"derived: addressing.rails {self.addr.rails} /{self.addr.rail_prefix_length} block "
                             f"per (SU, rail), mode {self.addr.mode}, host {host.h} of SU {host.su}",
            "rails.table": f"derived: addressing.table_base {self.addr.table_base} + rail",
            "nic_qos.roce_tos": "inventory: hosts roce_tos" if s["roce_tos"] is not None
            else f"formula: qos.roce_dscp {q.roce_dscp} << 2 | ECT(0) 2 = {tos}",
            "nccl_env.NCCL_IB_TC": "derived: the RoCE ToS",
            "nccl_env.NCCL_IB_HCA": "derived: the rail NICs, exact match (=) so mlx5_1 never matches mlx5_10",
            "sysctls": "default multi-rail set (arp_ignore 1, arp_announce 2, rp_filter 2 loose, arp_notify 1, "
                       "tcp_ecn 1) then hosts sysctls",
        }
        return HostIntent(
            name=host.name, su=host.su, gpus=s["gpus"], management_interface=s["management_interface"],
            management_address=mgmt, roce_mtu=s["roce_mtu"], rails=rails, sysctls=dict(sorted(sysctls.items())),
            nic_qos=self.nic_qos(tos),
            dcqcn=DcqcnIntent(np_priorities=sorted(prios) if enabled else [],
                              rp_priorities=sorted(prios) if enabled else [],
                              cc_params=dict(sorted((dq.cc_params if dq else {}).items()))),
            gid=gid_i, nccl_env=dict(sorted(nccl.items())), origins=origins)

    def fabric(self) -> FabricIntent:
        switches = {n: self.switch(sw) for n, sw in self.topo.switches.items()}
        hosts = {h.name: self.host(h, i) for i, h in enumerate(self.topo.hosts.values())}
        links = [LinkIntent(a=ln.a, a_port=ln.a_port, b=ln.b, b_port=ln.b_port, speed=ln.speed,
                            cable_m=ln.cable_m, kind=ln.kind) for ln in self.topo.links]
        return FabricIntent(name=self.inv.fabric.name, addressing_mode=self.addr.mode,
                            rails=self.inv.topology.rails, switches=switches, hosts=hosts, links=links)


def derive(loaded: Loaded, target: str | None = None) -> FabricIntent:
    """The whole fabric's intent; `target` forces one NOS (the lab uses `frr`)."""
    return Deriver(loaded, target).fabric()
