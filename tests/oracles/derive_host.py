"""`Hosts.host` as it read before the (SU, rail) blocks, gateways and PCI addresses were kept per key; verbatim
but for its signature. Held against by tests/design/derive/test_host.py."""

from __future__ import annotations

from fabric.design.derive import Deriver
from fabric.design.intent import DcqcnIntent, GidIntent, HostIntent, RailIntent
from fabric.design.pci import pci_from_netdev
from fabric.design.topology import Host


def host_before(self: Deriver, host: Host, i: int) -> HostIntent:
    """`Hosts.host` as it read before (5588bc8), verbatim but for this signature."""
    s = host.settings
    q = self.qos
    tos = s["roce_tos"] if s["roce_tos"] is not None else (q.roce_dscp << 2) | 2
    rails: list[RailIntent] = []
    k8s = self.inv.kubernetes
    cables: dict[str, str] = {}
    for nic in sorted(host.nics, key=lambda n: n.rail):
        cable, link_loc = self.host_links.get((host.name, nic.netdev), (self.inv.cabling.host_leaf.cable, ()))
        if link_loc and link_loc[0] == "links":
            cables[nic.netdev] = f"{cable} m from links[{link_loc[1]}] ({self.loaded.where(*link_loc)})"
        addr, gw = self.host_address(host, nic.rail)
        ifname = f"{nic.netdev}.{nic.vlan}" if nic.vlan else nic.netdev
        subnet = self.subnet(host.su, nic.rail) if self.addr.mode == "svi" else f"{gw}/31"
        # Validated once per shape (every field but the addresses, computed here, and the leaf and its port,
        # the topology's checked names); the same shape again is trusted (fabric.design.intent.trusted).
        shape = ("rail", nic.rail, nic.rdma, nic.netdev, nic.vlan, nic.vfs, nic.pci, s["mtu"], cable)
        rails.append(self._once(RailIntent, shape, {  # a literal: half the cost of dict(**) for 32k rails
            "rail": nic.rail, "rdma": nic.rdma, "netdev": nic.netdev, "ifname": ifname, "vlan": nic.vlan,
            "vfs": nic.vfs, "mtu": s["mtu"], "speed": self.inv.cabling.host_leaf.speed, "address": addr,
            "gateway": gw, "subnet": subnet, "table": self.addr.table_base + nic.rail,
            "rule_priority": self.addr.rule_priority_base + nic.rail, "routes": [self.rails_pool],
            "leaf": nic.leaf, "leaf_port": nic.leaf_port, "cable_m": cable,
            "pci": nic.pci or pci_from_netdev(nic.netdev), "vf_trust": k8s.vf_trust,
            "vf_spoof_check": k8s.vf_spoof_check, "pod": self.pod_rail(host, nic)}))
    user_sysctls = s.get("sysctls") or {}
    sysctls_key = key = ("sysctls", tuple(r.ifname for r in rails), repr(sorted(user_sysctls.items())))
    sysctls = self._parts.get(key)
    if sysctls is None:
        sysctls = self._parts[key] = self._sysctls(key[1], user_sysctls)
    dq = s.get("dcqcn")
    prios = (dq.priorities if dq and dq.priorities is not None else q.lossless_priorities)
    enabled = dq.enabled if dq else True
    gid = s.get("gid")
    gid_i = self.shared(GidIntent, policy=gid.policy if gid else "roce-v2-ipv4", index=gid.index if gid else 3)
    env = s.get("nccl_env") or {}
    key = ("nccl", tuple(r.rdma for r in rails), tos, s["management_interface"], gid_i.policy, gid_i.index,
           repr(list(env.items())))
    nccl = self._parts.get(key)
    if nccl is None:
        nccl = self._parts[key] = self._nccl(key[1], tos, s["management_interface"], gid_i, env)
    mgmt = host.management or self.management(len(self.topo.switches) + i)
    c = self._host_origins()  # strings every host shares: one object each
    tos_key = ("origin-tos", s["roce_tos"] is not None, q.roce_dscp, tos)
    tos_origin = self._parts.get(tos_key)
    if tos_origin is None:
        tos_origin = self._parts[tos_key] = ("inventory: hosts roce_tos" if s["roce_tos"] is not None
                                             else f"formula: qos.roce_dscp {q.roce_dscp} << 2 | ECT(0) 2 = {tos}")
    origins = {
        "rails.address": f"derived: addressing.rails {self.rails_pool} /{self.addr.rail_prefix_length} block "
                         f"per (SU, rail), mode {self.addr.mode}, host {host.h} of SU {host.su}",
        "rails.table": c["rails.table"],
        "nic_qos.roce_tos": tos_origin,
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
    # Validated once per shape: the name (a checked topology name), the SU, the management address (computed
    # here or the inventory's) and the origins (text) are all a host adds to it.
    shape = ("host", key, s["gpus"], s["roce_mtu"], tuple(r.netdev for r in rails), tuple(r.ifname for r in rails),
             sysctls_key)
    return self._once(HostIntent, shape, dict(
        name=host.name, su=host.su, gpus=s["gpus"], management_interface=s["management_interface"],
        management_address=mgmt, roce_mtu=s["roce_mtu"], rails=rails, sysctls=sysctls,
        nic_qos=self.nic_qos(tos),
        dcqcn=self.shared(DcqcnIntent, np_priorities=sorted(prios) if enabled else [],
                          rp_priorities=sorted(prios) if enabled else [],
                          cc_params=dict(sorted((dq.cc_params if dq else {}).items()))),
        gid=gid_i, nccl_env=nccl,
        rdma_netns=k8s.rdma_netns or ("exclusive" if any(n.vfs for n in host.nics) else None), origins=origins))
