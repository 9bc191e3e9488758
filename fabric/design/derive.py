"""Derivation: inventory → per-device intent. Pure functions, no I/O, deterministic."""

from __future__ import annotations

from functools import lru_cache
from typing import TypeVar

from fabric.batch import gc_paused
from fabric.design.checks import capacity_problems
from fabric.design.headroom import Headroom, headroom
from fabric.design.intent import (
    BgpIntent,
    BgpNeighbor,
    DcqcnIntent,
    EcnFacts,
    FabricIntent,
    GidIntent,
    HostIntent,
    K8sFacts,
    LinkIntent,
    Model,
    NeighborIntent,
    NicQos,
    PodRail,
    PortIntent,
    QosFacts,
    QueueFacts,
    RailIntent,
    Svi,
    SwitchIntent,
    WatchdogFacts,
)
from fabric.design.pci import pci_from_netdev
from fabric.design.topology import Host, Nic, Switch, Topo, build
from fabric.errors import InputError, Problem
from fabric.model.load import Loaded
from fabric.model.platforms import ASIC_BUFFER
from fabric.model.ports import sonic_port_map
from fabric.model.qos import QosPolicy
from fabric.nos import NOS
from fabric.order import natural

_M = TypeVar("_M", bound=Model)


@lru_cache(maxsize=4096)
def _headroom(asic: str, speed: int, cable: int, mtu: int, lanes: int, lossless_mtu: int, spp: int,
              shp: bool) -> Headroom:
    return headroom(ASIC_BUFFER[asic], speed_mbps=speed * 1000, cable_m=cable, port_mtu=mtu, lanes=lanes,
                    lossless_mtu=lossless_mtu, small_packet_percentage=spp, shared_headroom_pool=shp)


@lru_cache(maxsize=262144)
def dotted(n: int) -> str:
    """An IPv4 address as text (ipaddress's own conversion dominates derivation at cluster scale)."""
    return f"{n >> 24}.{(n >> 16) & 255}.{(n >> 8) & 255}.{n & 255}"


def _pow2(n: int) -> int:
    return 1 << max(0, n - 1).bit_length()


def qos_facts(q: QosPolicy) -> QosFacts:
    """The policy decided into what every NOS configures: full maps, one queue per scheduled or marked TC
    (strict or DWRR weight, lossless, ECN), and the watchdog where something is lossless."""
    prio_tc = [q.tc_of_priority(p) for p in range(8)]
    dscp_prio = [q.priority_of_dscp(d) for d in range(64)]
    lossless_tcs = sorted({prio_tc[p] for p in q.lossless_priorities})
    queues: dict[int, QueueFacts] = {}
    for tc in sorted(set(q.ets_strict) | set(q.ets_dwrr) | set(q.ecn)):
        strict = tc in q.ets_strict
        e = q.ecn.get(tc)
        queues[tc] = QueueFacts(
            tc=tc, priorities=[p for p in range(8) if prio_tc[p] == tc], lossless=tc in lossless_tcs,
            scheduler="strict" if strict else "dwrr" if tc in q.ets_dwrr else None,
            weight=None if strict else q.ets_dwrr.get(tc),
            ecn=EcnFacts(enabled=e.enabled, min_bytes=e.min_bytes, max_bytes=e.max_bytes, probability=e.probability)
            if e else None)
    wd = q.pfc_watchdog
    return QosFacts(
        trust=q.trust, dscp_to_priority=dscp_prio, dscp_explicit=sorted(q.dscp_to_priority),
        default_priority=q.default_priority, dscp_to_tc=[prio_tc[p] for p in dscp_prio], priority_to_tc=prio_tc,
        lossless_priorities=sorted(q.lossless_priorities), lossless_tcs=lossless_tcs, roce_dscp=q.roce_dscp,
        cnp_dscp=q.cnp_dscp, cnp_priority=q.cnp_priority, queues=queues,
        watchdog=WatchdogFacts(detection_ms=wd.detection, restoration_ms=wd.restoration, action=wd.action,
                               poll_interval_ms=wd.poll_interval, robustness=wd.robustness)
        if wd.enabled and q.lossless_priorities else None,
        headroom_mode=q.headroom.mode, lossless_mtu=q.headroom.lossless_mtu,
        small_packet_percentage=q.headroom.small_packet_percentage, lossless_pool_percent=q.lossless_pool_percent)


class Deriver:
    """Holds the loaded inventory and the expanded topology while intent is computed."""

    def __init__(self, loaded: Loaded, target: str | None = None):
        self.l, self.inv, self.qos = loaded, loaded.inv, loaded.qos
        self.facts = qos_facts(self.qos)  # one object shared by every switch
        self.topo: Topo = build(self.inv, loaded.smap, target)
        problems = loaded.problems + self.topo.problems
        if not problems:
            problems = capacity_problems(loaded, self.topo)
        if problems:
            raise InputError(problems)
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
        for h in self.topo.hosts.values():
            for n in h.nics:
                self.max_h[(h.su, n.rail)] = max(self.max_h.get((h.su, n.rail), 0), h.h)
        self._pod_rails: dict[tuple[int, int, bool], PodRail | None] = {}
        self._nic_qos: dict[int, NicQos] = {}
        self._shared: dict[tuple[type, str], Model] = {}
        self.ports: dict[str, list[tuple[str, str, str, int, int, str]]] = {n: [] for n in self.topo.switches}
        self.host_links: dict[tuple[str, str], tuple[int, tuple[object, ...]]] = {
            (ln.a, ln.a_port): (ln.cable_m, ln.loc) for ln in self.topo.links if ln.kind == "host-leaf"}
        for ln in self.topo.links:
            if ln.a in self.ports:
                self.ports[ln.a].append((ln.a_port, ln.b, ln.b_port, ln.speed, ln.cable_m, ln.kind))
            if ln.b in self.ports:
                self.ports[ln.b].append((ln.b_port, ln.a, ln.a_port, ln.speed, ln.cable_m, ln.kind))

    # -- addressing -------------------------------------------------------------------------------
    def block_base(self, su: int, rail: int) -> int:
        return self._rails_base + ((su - 1) * self._rails + (rail - 1)) * self.block_size

    def loopback(self, name: str) -> str:
        return dotted(int(self.addr.loopbacks.network_address) + 1 + self.index[name])

    def management(self, i: int) -> str:
        return f"{dotted(int(self.addr.management.network_address) + 1 + i)}/{self.addr.management.prefixlen}"

    def host_address(self, host: Host, rail: int) -> tuple[str, str]:
        """(address/prefix, gateway) of `host` on `rail`."""
        base = self.block_base(host.su, rail)
        if self.addr.mode == "svi":
            return f"{dotted(base + 1 + host.h)}/{self.addr.rail_prefix_length}", dotted(base + 1)
        leaf = base + 2 * (host.h - 1)
        return f"{dotted(leaf + 1)}/31", dotted(leaf)

    def subnet(self, su: int, rail: int) -> str:
        """The rail block of (SU, rail) as text (svi: the hosts' subnet; p2p31: the block of their /31s)."""
        return f"{dotted(self.block_base(su, rail))}/{self.addr.rail_prefix_length}"

    # -- switches ---------------------------------------------------------------------------------
    def switch(self, sw: Switch) -> SwitchIntent:
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
        headrooms: dict[tuple[int, int, int], Headroom] = {}
        for port, peer, peer_port, speed, cable, kind in sorted(self.ports[sw.name], key=lambda p: natural(p[0])):
            lanes = max(1, sw_lanes * speed // sw_speed)  # a slower link uses fewer lanes
            hr = None
            if lossless:
                hr = headrooms.get((speed, cable, lanes))
                if hr is None:
                    hr = headrooms[(speed, cable, lanes)] = _headroom(
                        sw.platform.asic, speed, cable, mtu, lanes, hr_policy.lossless_mtu,
                        hr_policy.small_packet_percentage, hr_policy.shared_headroom_pool)
            hw = hw_ports.get(port) if hw_ports is not None else None
            if hw is not None and pm is not None and sw.ways > 1:
                breakout[pm.parent(hw)] = hw.mode
            if kind == "host-leaf":
                host = self.topo.hosts[peer]
                nic = next(n for n in host.nics if n.netdev == peer_port)
                key = (host.su, nic.rail)
                vlan = address = None
                if self.addr.mode == "svi":
                    vlan = self.addr.vlan_base + nic.rail
                    members.setdefault(key, []).append(port)
                    if nic.vlan is not None:
                        tagged.setdefault(key, []).append(port)
                else:
                    address = f"{self.host_address(host, nic.rail)[1]}/31"
                hosts_on[key] = hosts_on.get(key, 0) + 1
                vfs_on[key] = vfs_on.get(key, 0) + nic.vfs
                ports.append(PortIntent(
                    name=port, speed=speed, lanes=lanes, mtu=mtu, cable_m=cable, kind="host", peer=peer,
                    peer_port=peer_port, description=f"{peer}:{peer_port} rail{nic.rail}", vlan=vlan,
                    tagged=vlan is not None and nic.vlan is not None, address=address, unnumbered=False,
                    adaptive_routing=False, lossless=lossless, pfc=pfc, watchdog=watchdog, headroom=hr, hw=hw))
            else:
                ar = ar_on and speed in sw.platform.adaptive_routing_speeds
                ports.append(PortIntent(
                    name=port, speed=speed, lanes=lanes, mtu=mtu, cable_m=cable, kind="fabric", peer=peer,
                    peer_port=peer_port, description=f"{peer}:{peer_port}", vlan=None, address=None,
                    unnumbered=True, adaptive_routing=ar, lossless=lossless, pfc=pfc, watchdog=watchdog, headroom=hr,
                    hw=hw))
                neighbors.append(BgpNeighbor(port=port, peer=peer, peer_port=peer_port, remote_asn=self.asn[peer]))
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

    # -- hosts ------------------------------------------------------------------------------------
    def pod_rail(self, host: Host, nic: Nic) -> PodRail | None:
        """How pods attach `nic` (one object per (SU, rail, kind), shared by the hosts of the SU)."""
        key = (host.su, nic.rail, nic.vfs == 0, nic.vlan is not None)
        if key in self._pod_rails:
            return self._pod_rails[key]
        k = self.inv.kubernetes
        name = f"{k.network_name}{nic.rail}"
        res = f"{k.resource_prefix}/{k.resource_name if k.resources == 'pooled' else f'{k.resource_name}{nic.rail}'}"
        pod: PodRail | None = None
        if nic.vfs == 0:
            # host-device moves the PF itself, untagged, into the pod, while a host VLAN makes the leaf port a
            # tagged member: the pod's frames would never reach the rail VLAN. No pod attachment (RF205 says why).
            if nic.vlan is None:
                pod = PodRail(network=name, resource=res, device="pf")
        elif self.addr.mode == "svi":  # p2p31: a /31 per host port leaves no address for a VF
            base = self.block_base(host.su, nic.rail)
            start, end = base + 2 + self.max_h[(host.su, nic.rail)], base + self.block_size - 2
            if start <= end:
                pod = PodRail(network=name, resource=res, device="vf", range_start=dotted(start),
                              range_end=dotted(end))
        self._pod_rails[key] = pod
        return pod

    def nic_qos(self, tos: int) -> NicQos:
        """What the rail NICs are told: one object per ToS, shared by every host with that ToS."""
        if tos not in self._nic_qos:
            self._nic_qos[tos] = self._new_nic_qos(tos)
        return self._nic_qos[tos]

    def _new_nic_qos(self, tos: int) -> NicQos:
        f = self.facts
        return NicQos(trust=f.trust, pfc=[1 if p in f.lossless_priorities else 0 for p in range(8)],
                      prio_tc=f.priority_to_tc, tsa=f.tsa, tcbw=f.tcbw,  # type: ignore[arg-type]
                      dscp2prio={d: f.dscp_to_priority[d] for d in f.dscp_explicit}, roce_tos=tos,
                      cnp_dscp=f.cnp_dscp, cnp_priority=f.cnp_priority)

    def shared(self, model: type[_M], **fields: object) -> _M:
        """`model` of these field values, validated once and shared by every host that has them (thousands of
        hosts share their DCQCN and GID settings)."""
        key = (model, repr(fields))
        if key not in self._shared:
            self._shared[key] = model(**fields)
        return self._shared[key]  # type: ignore[return-value]

    def host(self, host: Host, i: int) -> HostIntent:
        s = host.settings
        q = self.qos
        tos = s["roce_tos"] if s["roce_tos"] is not None else (q.roce_dscp << 2) | 2
        rails: list[RailIntent] = []
        k8s = self.inv.kubernetes
        sysctls: dict[str, str] = {"net/ipv4/tcp_ecn": "1"}
        cables: dict[str, str] = {}
        for nic in sorted(host.nics, key=lambda n: n.rail):
            cable, link_loc = self.host_links.get((host.name, nic.netdev), (self.inv.cabling.host_leaf.cable, ()))
            if link_loc and link_loc[0] == "links":
                cables[nic.netdev] = f"{cable} m from links[{link_loc[1]}] ({self.l.where(*link_loc)})"
            addr, gw = self.host_address(host, nic.rail)
            ifname = f"{nic.netdev}.{nic.vlan}" if nic.vlan else nic.netdev
            subnet = self.subnet(host.su, nic.rail) if self.addr.mode == "svi" else f"{gw}/31"
            rails.append(RailIntent(
                rail=nic.rail, rdma=nic.rdma, netdev=nic.netdev, ifname=ifname, vlan=nic.vlan, vfs=nic.vfs,
                mtu=s["mtu"], speed=self.inv.cabling.host_leaf.speed, address=addr, gateway=gw, subnet=subnet,
                table=self.addr.table_base + nic.rail, rule_priority=self.addr.rule_priority_base + nic.rail,
                routes=[self.rails_pool], leaf=nic.leaf, leaf_port=nic.leaf_port, cable_m=cable,
                pci=nic.pci or pci_from_netdev(nic.netdev), vf_trust=k8s.vf_trust, vf_spoof_check=k8s.vf_spoof_check,
                pod=self.pod_rail(host, nic)))
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
        gid_i = self.shared(GidIntent, policy=gid.policy if gid else "roce-v2-ipv4", index=gid.index if gid else 3)
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
            "rails.cable_m": "derived: the length of the rail's cable to its leaf (the leaf's PFC headroom uses the "
                             "same); cabling.host_leaf.cable"
                             + (f" except {', '.join(f'{k}: {v}' for k, v in sorted(cables.items()))}" if cables
                                else f" ({self.inv.cabling.host_leaf.cable} m)"),
            "rails.pci": "inventory: nics pci, else read from the predictable netdev name (fabric.design.pci)",
            "rails.vf_trust": f"kubernetes.vf_trust ({k8s.vf_trust}): set on every VF by the host agent and sriov-cni",
            "rails.vf_spoof_check": f"kubernetes.vf_spoof_check ({k8s.vf_spoof_check}): set on every VF by the host "
                                    "agent and sriov-cni",
            "rails.pod": f"derived: kubernetes.network_name {k8s.network_name!r} + rail, resource "
                         f"{k8s.resource_prefix}/… ({k8s.resources}); VFs take the (SU, rail) subnet after its hosts",
            "rdma_netns": "inventory: kubernetes.rdma_netns" if k8s.rdma_netns
            else "default: exclusive where the NICs have VFs (pods get their RDMA device), else not managed",
        }
        return HostIntent(
            name=host.name, su=host.su, gpus=s["gpus"], management_interface=s["management_interface"],
            management_address=mgmt, roce_mtu=s["roce_mtu"], rails=rails, sysctls=dict(sorted(sysctls.items())),
            nic_qos=self.nic_qos(tos),
            dcqcn=self.shared(DcqcnIntent, np_priorities=sorted(prios) if enabled else [],
                              rp_priorities=sorted(prios) if enabled else [],
                              cc_params=dict(sorted((dq.cc_params if dq else {}).items()))),
            gid=gid_i, nccl_env=dict(sorted(nccl.items())),
            rdma_netns=k8s.rdma_netns or ("exclusive" if any(n.vfs for n in host.nics) else None), origins=origins)

    def device(self, name: str) -> SwitchIntent | HostIntent | None:
        """One device's intent without deriving the others (`explain`); None when the fabric has no such device."""
        if name in self.topo.switches:
            return self.switch(self.topo.switches[name])
        hosts = list(self.topo.hosts)
        return self.host(self.topo.hosts[name], hosts.index(name)) if name in self.topo.hosts else None

    def fabric(self) -> FabricIntent:
        with gc_paused():
            return self._fabric()

    def _fabric(self) -> FabricIntent:
        switches = {n: self.switch(sw) for n, sw in self.topo.switches.items()}
        hosts = {h.name: self.host(h, i) for i, h in enumerate(self.topo.hosts.values())}
        links = [LinkIntent(a=ln.a, a_port=ln.a_port, b=ln.b, b_port=ln.b_port, speed=ln.speed,
                            cable_m=ln.cable_m, kind=ln.kind) for ln in self.topo.links]
        k = self.inv.kubernetes
        k8s = K8sFacts(namespace=k.namespace, device_plugin_namespace=k.device_plugin_namespace,
                       resource_prefix=k.resource_prefix, resources=k.resources, network_name=k.network_name,
                       explicit=("kubernetes",) in self.l.smap.lines)
        return FabricIntent(name=self.inv.fabric.name, addressing_mode=self.addr.mode,
                            rails=self.inv.topology.rails, switches=switches, hosts=hosts, links=links,
                            kubernetes=k8s)


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
