"""A host's rails made with their (SU, rail) block, gateway and subnet text kept per (SU, rail), the PCI
address read once per netdev name and the constants of the loop read once equal the rails of the code as it read
before (kept below, verbatim) on every example and fixture inventory (svi and p2p31, explicit hosts, VLANs, VFs,
PCI addresses, cables of links[]) and a generated fabric: the same intents, field for field."""

from __future__ import annotations

from pathlib import Path

import pytest

from fabric.design.derive import Deriver
from fabric.design.intent import DcqcnIntent, GidIntent, HostIntent, RailIntent
from fabric.design.pci import pci_from_netdev
from fabric.design.topology import Host
from fabric.generate import GpuRailSpec
from fabric.generate import write as write_inventory
from fabric.model.load import load
from tests.support.paths import ROOT

INVENTORIES = sorted([*ROOT.glob("inventories/*/fabric.yaml"), *ROOT.glob("tests/fixtures/inventories/*/fabric.yaml")])


# -- the code as it read before -----------------------------------------------------------------------------------
def _host_before(self: Deriver, host: Host, i: int) -> HostIntent:
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


# -- the tests ----------------------------------------------------------------------------------------------------
def _same(inv: Path) -> int:
    loaded = load(inv)
    new, old = Deriver(loaded), Deriver(loaded)  # each its own shapes validated once
    n = 0
    for i, h in enumerate(new.topo.hosts.values()):
        a, b = new.host(h, i), _host_before(old, old.topo.hosts[h.name], i)
        assert a == b
        assert a.model_dump_json() == b.model_dump_json()
        assert a.model_fields_set == b.model_fields_set
        for r, s in zip(a.rails, b.rails, strict=True):
            assert list(r.__dict__) == list(s.__dict__) and r.model_fields_set == s.model_fields_set
        n += 1
    return n


@pytest.mark.parametrize("inv", [p.parent for p in INVENTORIES], ids=lambda p: p.name)
def test_host_equals_before(inv: Path) -> None:
    assert _same(inv) == len(Deriver(load(inv)).topo.hosts)


def test_host_equals_before_generated(tmp_path: Path) -> None:
    out = tmp_path / "g1k"
    write_inventory(GpuRailSpec(gpus=1024, hosts_per_su=16), out)
    assert _same(out) == 128


SETTINGS = """
    dcqcn: {enabled: true, priorities: [3], cc_params: {rp_ai_rate: 5}}
    gid: {policy: auto, index: 1}
    sysctls: {net.core.rmem_max: 268435456, "net.ipv4.conf.{if}.rp_filter": 2}
    nccl_env: {NCCL_IB_QPS_PER_CONNECTION: 4, NCCL_NET_GDR_LEVEL: PHB}
"""


def test_host_equals_before_with_settings(tmp_path: Path) -> None:
    """DCQCN, GID, sysctls and NCCL settings in hosts.defaults (one object each, shared by the generated hosts) and
    in explicit hosts (equal values in other objects, and other values): each host as the code before made it."""
    import shutil

    inv = tmp_path / "inv"
    shutil.copytree(ROOT / "inventories" / "example", inv)
    hosts = inv / "hosts.yaml"
    text = hosts.read_text().replace("  defaults:\n", "  defaults:" + SETTINGS, 1)
    names = [h for h in Deriver(load(ROOT / "inventories" / "example")).topo.hosts][:3]
    text += "  list:\n"
    text += f"    - name: {names[0]}" + SETTINGS.replace("\n    ", "\n      ")  # the defaults' values again
    text += f"    - name: {names[1]}\n      dcqcn: {{enabled: false}}\n      gid: {{index: 2}}\n"
    text += f"    - name: {names[2]}\n      nccl_env: {{NCCL_DEBUG: INFO}}\n      sysctls: {{net.core.wmem_max: 1}}\n"
    hosts.write_text(text)
    d = Deriver(load(inv))
    assert len(d.inv.hosts.entries) == 3 and d.inv.hosts.defaults.nccl_env
    assert _same(inv) == len(d.topo.hosts)
    intents = {n: d.host(d.topo.hosts[n], i) for i, n in enumerate(d.topo.hosts)}
    assert intents[names[1]].gid.index == 2 and not intents[names[1]].dcqcn.np_priorities
    assert intents[names[2]].nccl_env["NCCL_DEBUG"] == "INFO"


def test_p2p31_and_svi_both_seen() -> None:
    """The inventories above hold both addressing modes (the two branches of the address)."""
    modes = {load(p.parent).inv.addressing.mode for p in INVENTORIES}
    assert modes == {"svi", "p2p31"}
