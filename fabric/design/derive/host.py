"""Derivation, hosts: rails (addresses, routing tables, VFs, pod attachment), NIC QoS, DCQCN, GID, sysctls and NCCL
settings of one GPU host."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from fabric.design.checks import pod_device, vf_room
from fabric.design.derive.addressing import Addressing, dotted
from fabric.design.derive.shapes import Shapes
from fabric.design.intent import (
    DcqcnIntent,
    GidIntent,
    HostIntent,
    Model,
    NicQos,
    PodRail,
    QosFacts,
    RailIntent,
)
from fabric.design.pci import pci_from_netdev
from fabric.design.topology import Host, Nic, Topo
from fabric.model.inventory import Inventory
from fabric.model.load import Loaded
from fabric.model.qos import QosPolicy

_M = TypeVar("_M", bound=Model)
_T = TypeVar("_T")


def _by_rail(n: Nic) -> int:
    return n.rail


class Hosts(Addressing, Shapes):
    """One host's intent (a part of `Deriver`), with what thousands of hosts share made once."""

    loaded: Loaded
    inv: Inventory
    qos: QosPolicy
    facts: QosFacts
    topo: Topo
    rails_pool: str
    max_h: dict[tuple[int, int], int]
    host_links: dict[tuple[str, str], tuple[int, tuple[object, ...]]]
    _pod_rails: dict[tuple[int, int, bool, bool], PodRail | None]
    pooled_pods: bool
    _nic_qos: dict[int, NicQos]
    _shared: dict[tuple[type, str], Model]
    _parts: dict[object, object]  # what hosts of the same NICs and settings share (sysctls, NCCL, origins)
    _blocks: dict[tuple[int, int], tuple[int, str, str, str]]  # (SU, rail) → `_block`
    _pcis: dict[str, str | None]  # netdev → pci_from_netdev

    def pod_rail(self, host: Host, nic: Nic) -> PodRail | None:
        """How pods attach `nic` (one object per (SU, rail, kind), shared by the hosts of the SU)."""
        k = self.inv.kubernetes
        pooled = self.pooled_pods  # one NIC per host: nothing to find, the rail's own network as per-rail
        # A pooled VF has an address of its own host (the pod sets it): one object per host there.
        key = (host.su, nic.rail, nic.vfs == 0, nic.vlan is not None, host.h if pooled and nic.vfs else 0)
        if key in self._pod_rails:
            return self._pod_rails[key]
        name = k.network_name if pooled else f"{k.network_name}{nic.rail}"
        res = f"{k.resource_prefix}/{k.resource_name if k.resources == 'pooled' else f'{k.resource_name}{nic.rail}'}"
        room = vf_room(self.block_size, self.max_h[(host.su, nic.rail)])
        device, _ = pod_device(nic.vfs, nic.vlan, self.addr.mode, room)
        pod: PodRail | None = None
        if device == "pf":
            pod = PodRail(network=name, resource=res, device="pf", pooled=pooled)
        elif device == "vf":
            start = self.block_base(host.su, nic.rail) + 2 + self.max_h[(host.su, nic.rail)]
            # pooled: one VF per NIC (fabric.design.checks), the VF of host h at range_start + h - 1
            pod = PodRail(network=name, resource=res, device="vf", range_start=dotted(start),
                          range_end=dotted(start + room - 1), pooled=pooled,
                          address=f"{dotted(start + host.h - 1)}/{self.addr.rail_prefix_length}" if pooled
                          else None)
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

    def _by_source(self, sources: tuple[object, ...], make: Callable[[], _T]) -> _T:
        """`make()` once per identity of the inventory objects it is made from (`sources`: a generated host's
        settings are the defaults' own objects, thousands of times): the same value, without its key (a repr)."""
        key = ("by-source", *map(id, sources))
        hit = self._parts.get(key)
        if hit is None:
            hit = self._parts[key] = (sources, make())  # the sources held: their ids stay theirs
        return hit[1]  # type: ignore[index]

    @staticmethod
    def _sysctls(ifnames: tuple[str, ...], user: dict[str, object]) -> dict[str, str]:
        """The sysctls of a host with these rail interfaces (in rail order) and these inventory sysctls, sorted."""
        sysctls: dict[str, str] = {"net/ipv4/tcp_ecn": "1"}
        for ifname in ifnames:
            conf = f"net/ipv4/conf/{ifname}"
            sysctls.update({f"{conf}/arp_ignore": "1", f"{conf}/arp_announce": "2", f"{conf}/rp_filter": "2",
                            f"{conf}/arp_notify": "1"})
        for key, value in sorted(user.items()):
            for ifname in ifnames if "{if}" in key else [None]:  # type: ignore[list-item]
                k = key.replace("{if}", ifname.replace(".", "\0")) if ifname else key
                k = k.replace(".", "/").replace("\0", ".") if "/" not in key else k
                sysctls[k] = str(value)
        return dict(sorted(sysctls.items()))

    @staticmethod
    def _nccl(rdmas: tuple[str, ...], tos: int, mgmt: str, gid: GidIntent, env: dict[str, object]) -> dict[str, str]:
        """The NCCL environment of a host with these rail NICs (in rail order), ToS, GID and inventory settings."""
        nccl = {"NCCL_IB_HCA": "=" + ",".join(f"{r}:1" for r in rdmas), "NCCL_IB_TC": str(tos),
                "NCCL_SOCKET_IFNAME": "=" + mgmt}
        if gid.policy == "roce-v2-ipv4":
            nccl["NCCL_IB_GID_INDEX"] = str(gid.index)
        else:
            nccl.update(NCCL_IB_ROCE_VERSION_NUM="2", NCCL_IB_ADDR_FAMILY="AF_INET")
        nccl.update({k: str(v) for k, v in env.items()})
        return dict(sorted(nccl.items()))

    def _cable_origin(self, cables: dict[str, str]) -> str:
        return ("derived: the length of the rail's cable to its leaf (the leaf's PFC headroom uses the same); "
                "cabling.host_leaf.cable"
                + (f" except {', '.join(f'{k}: {v}' for k, v in sorted(cables.items()))}" if cables
                   else f" ({self.inv.cabling.host_leaf.cable} m)"))

    def _host_origins(self) -> dict[str, str]:
        """The origins that are the same for every host of the fabric, made once (one string object each)."""
        c = self._parts.get("origins")
        if c is not None:
            return c  # type: ignore[return-value]
        k8s = self.inv.kubernetes
        c = self._parts["origins"] = {
            "rails.table": f"derived: addressing.table_base {self.addr.table_base} + rail",
            "nccl_env.NCCL_IB_TC": "derived: the RoCE ToS",
            "nccl_env.NCCL_IB_HCA": "derived: the rail NICs, exact match (=) so mlx5_1 never matches mlx5_10",
            "sysctls": "default multi-rail set (arp_ignore 1, arp_announce 2, rp_filter 2 loose, arp_notify 1, "
                       "tcp_ecn 1) then hosts sysctls",
            "rails.cable_m": self._cable_origin({}),
            "rails.pci": "inventory: nics pci, else read from the predictable netdev name (fabric.design.pci)",
            "rails.vf_trust": f"kubernetes.vf_trust ({k8s.vf_trust}): set on every VF by the host agent and sriov-cni",
            "rails.vf_spoof_check": f"kubernetes.vf_spoof_check ({k8s.vf_spoof_check}): set on every VF by the host "
                                    "agent and sriov-cni",
            "rails.pod": f"derived: kubernetes.network_name {k8s.network_name!r} + rail, resource "
                         f"{k8s.resource_prefix}/… ({k8s.resources}); VFs take the (SU, rail) subnet after its hosts",
            "rdma_netns": "inventory: kubernetes.rdma_netns" if k8s.rdma_netns
            else "default: exclusive where the NICs have VFs (pods get their RDMA device), else not managed",
        }
        return c

    def _block(self, su: int, rail: int) -> tuple[int, str, str, str]:
        """(SU, rail)'s block base, gateway (svi), `/prefix` and subnet text: what `host_address` and `subnet` make."""
        base = self.block_base(su, rail)
        return base, dotted(base + 1), f"/{self.addr.rail_prefix_length}", self.subnet(su, rail)

    def host(self, host: Host, i: int) -> HostIntent:
        s = host.settings
        tos = s["roce_tos"] if s["roce_tos"] is not None else (self.qos.roce_dscp << 2) | 2
        rails, cables = self._rail_intents(host)
        ifnames = tuple(r.ifname for r in rails)
        sysctls_key, sysctls = self._host_sysctls(s.get("sysctls"), ifnames)
        gid = s.get("gid")
        gid_i = self._by_source(("gid", gid), lambda: self.shared(
            GidIntent, policy=gid.policy if gid else "roce-v2-ipv4", index=gid.index if gid else 3))
        nccl_key, nccl = self._host_nccl(s, rails, tos, gid_i)
        k8s = self.inv.kubernetes
        # Validated once per shape: the name (a checked topology name), the SU, the management address (computed
        # here or the inventory's) and the origins (text) are all a host adds to it.
        shape = ("host", nccl_key, s["gpus"], s["roce_mtu"], tuple(r.netdev for r in rails), ifnames,
                 sysctls_key)
        return self._once(HostIntent, shape, dict(
            name=host.name, su=host.su, gpus=s["gpus"], management_interface=s["management_interface"],
            management_address=host.management or self.management(len(self.topo.switches) + i),
            roce_mtu=s["roce_mtu"], rails=rails, sysctls=sysctls, nic_qos=self.nic_qos(tos),
            dcqcn=self._dcqcn(s.get("dcqcn")), gid=gid_i, nccl_env=nccl,
            rdma_netns=k8s.rdma_netns or ("exclusive" if any(n.vfs for n in host.nics) else None),
            origins=self._origins_of(host, tos, cables)))

    def _rail_intents(self, host: Host) -> tuple[list[RailIntent], dict[str, str]]:
        """The host's rails in rail order, and the origin of each rail cable the inventory's `links` sets."""
        s = host.settings
        rails: list[RailIntent] = []
        k8s = self.inv.kubernetes
        cables: dict[str, str] = {}
        blocks, pcis, svi, h, su = self._blocks, self._pcis, self.addr.mode == "svi", host.h, host.su
        mtu, speed, default_cable = s["mtu"], self.inv.cabling.host_leaf.speed, self.inv.cabling.host_leaf.cable
        table_base, rule_base, routes = self.addr.table_base, self.addr.rule_priority_base, self.rails_pool
        vf_trust, vf_spoof_check = k8s.vf_trust, k8s.vf_spoof_check
        for nic in sorted(host.nics, key=_by_rail):
            cable, link_loc = self.host_links.get((host.name, nic.netdev), (default_cable, ()))
            if link_loc and link_loc[0] == "links":
                cables[nic.netdev] = f"{cable} m from links[{link_loc[1]}] ({self.loaded.where(*link_loc)})"
            rail = nic.rail
            block = blocks.get((su, rail))
            if block is None:
                block = blocks[(su, rail)] = self._block(su, rail)
            # what host_address and subnet give (tests/design/derive/test_host.py holds them equal)
            if svi:
                addr, gw, subnet = f"{dotted(block[0] + 1 + h)}{block[2]}", block[1], block[3]
            else:
                leaf = block[0] + 2 * (h - 1)
                gw = dotted(leaf)
                addr, subnet = f"{dotted(leaf + 1)}/31", f"{gw}/31"
            netdev = nic.netdev
            pci = nic.pci
            if not pci:
                pci = pcis.get(netdev, False)
                if pci is False:
                    pci = pcis[netdev] = pci_from_netdev(netdev)
            # Validated once per shape (every field but the addresses, computed here, and the leaf and its port,
            # the topology's checked names); the same shape again is trusted (fabric.design.intent.trusted).
            shape = ("rail", rail, nic.rdma, netdev, nic.vlan, nic.vfs, nic.pci, mtu, cable)
            rails.append(self._once(RailIntent, shape, {  # a literal: half the cost of dict(**) for 32k rails
                "rail": rail, "rdma": nic.rdma, "netdev": netdev,
                "ifname": f"{netdev}.{nic.vlan}" if nic.vlan else netdev, "vlan": nic.vlan,
                "vfs": nic.vfs, "mtu": mtu, "speed": speed, "address": addr,
                "gateway": gw, "subnet": subnet, "table": table_base + rail,
                "rule_priority": rule_base + rail, "routes": [routes],
                "leaf": nic.leaf, "leaf_port": nic.leaf_port, "cable_m": cable,
                "pci": pci, "vf_trust": vf_trust,
                "vf_spoof_check": vf_spoof_check, "pod": self.pod_rail(host, nic)}))
        return rails, cables

    def _host_sysctls(self, raw: object, ifnames: tuple[str, ...]) -> tuple[tuple[object, ...], dict[str, str]]:
        """The sysctls of a host with these rail interfaces and inventory `sysctls` (`raw`), with their key: made
        once per key."""
        user: dict[str, object] = raw or {}  # type: ignore[assignment]
        key = ("sysctls", ifnames, self._by_source(("sysctls", raw), lambda: repr(sorted(user.items()))))
        sysctls = self._parts.get(key)
        if sysctls is None:
            sysctls = self._parts[key] = self._sysctls(ifnames, user)
        return key, sysctls  # type: ignore[return-value]

    def _host_nccl(self, s: dict[str, Any], rails: list[RailIntent], tos: int,
                   gid: GidIntent) -> tuple[tuple[object, ...], dict[str, str]]:
        """The NCCL environment of a host with these settings, rails, ToS and GID, with its key: made once per key."""
        raw = s.get("nccl_env")
        env = raw or {}
        key = ("nccl", tuple(r.rdma for r in rails), tos, s["management_interface"], gid.policy, gid.index,
               self._by_source(("nccl_env", raw), lambda: repr(list(env.items()))))
        nccl = self._parts.get(key)
        if nccl is None:
            nccl = self._parts[key] = self._nccl(key[1], tos, s["management_interface"], gid, env)
        return key, nccl  # type: ignore[return-value]

    def _dcqcn(self, dq: Any) -> DcqcnIntent:
        """The host's DCQCN settings (`hosts dcqcn`), on the lossless priorities unless it names its own."""
        prios = dq.priorities if dq and dq.priorities is not None else self.qos.lossless_priorities
        enabled = dq.enabled if dq else True
        return self._by_source(("dcqcn", dq, prios), lambda: self.shared(
            DcqcnIntent, np_priorities=sorted(prios) if enabled else [],
            rp_priorities=sorted(prios) if enabled else [],
            cc_params=dict(sorted((dq.cc_params if dq else {}).items()))))

    def _origins_of(self, host: Host, tos: int, cables: dict[str, str]) -> dict[str, str]:
        """Where each of the host's derived values comes from (`fabric explain`): the fabric-wide strings shared."""
        s, q = host.settings, self.qos
        c = self._host_origins()  # strings every host shares: one object each
        tos_key = ("origin-tos", s["roce_tos"] is not None, q.roce_dscp, tos)
        tos_origin = self._parts.get(tos_key)
        if tos_origin is None:
            tos_origin = self._parts[tos_key] = ("inventory: hosts roce_tos" if s["roce_tos"] is not None
                                                 else f"formula: qos.roce_dscp {q.roce_dscp} << 2 | ECT(0) 2 = {tos}")
        return {
            "rails.address": f"derived: addressing.rails {self.rails_pool} /{self.addr.rail_prefix_length} block "
                             f"per (SU, rail), mode {self.addr.mode}, host {host.h} of SU {host.su}",
            "rails.table": c["rails.table"],
            "nic_qos.roce_tos": tos_origin,  # type: ignore[dict-item]
            "nccl_env.NCCL_IB_TC": c["nccl_env.NCCL_IB_TC"],
            "nccl_env.NCCL_IB_HCA": c["nccl_env.NCCL_IB_HCA"],
            "sysctls": c["sysctls"],
            "rails.cable_m": c["rails.cable_m"] if not cables else self._cable_origin(cables),
            "rails.pci": c["rails.pci"],
            "rails.vf_trust": c["rails.vf_trust"],
            "rails.vf_spoof_check": c["rails.vf_spoof_check"],
            "rails.pod": c["rails.pod"],
            "rdma_netns": c["rdma_netns"],
        }
