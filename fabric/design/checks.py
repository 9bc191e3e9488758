"""Checks that need the expanded topology: pools and ASN ranges large enough for what they number."""

from __future__ import annotations

from ipaddress import IPv4Network

from fabric.design.topology import Topo
from fabric.errors import Problem
from fabric.model.checks import private_asn
from fabric.model.load import Loaded


def capacity_problems(loaded: Loaded, topo: Topo) -> list[Problem]:
    """Loopback, management and rail pools, per-block sizes, and the leaf ASN range."""
    inv, smap = loaded.inv, loaded.smap
    a = inv.addressing
    out: list[Problem] = []
    # Pools large enough for what they must number.
    nsw = len(topo.switches)
    room = a.loopbacks.num_addresses - 2 if a.loopbacks.prefixlen < 31 else a.loopbacks.num_addresses - 1
    if room < nsw:  # loopbacks are network address + 1, + 2, …
        out.append(smap.problem(("addressing", "loopbacks"), f"room for {nsw} switch loopbacks",
                                f"{a.loopbacks} with {room} addresses"))
    ndev = nsw + len(topo.hosts)
    if a.management.num_addresses - 2 < ndev:
        out.append(smap.problem(("addressing", "management"), f"room for {ndev} management addresses",
                                f"{a.management} with {a.management.num_addresses - 2}"))
    sus = {h.su for h in topo.hosts.values()} | {s.su for s in topo.switches.values() if s.su}
    blocks = (max(sus) if sus else 0) * inv.topology.rails
    have = 2 ** (a.rail_prefix_length - a.rails.prefixlen)
    if blocks > have:
        out.append(smap.problem(("addressing", "rails"), f"room for {blocks} /{a.rail_prefix_length} blocks "
                                f"(SUs × rails)", f"{a.rails} holds {have}"))
    block = IPv4Network(f"0.0.0.0/{a.rail_prefix_length}").num_addresses
    per_block: dict[tuple[int, int], int] = {}
    max_h: dict[tuple[int, int], int] = {}
    for h in topo.hosts.values():
        for n in h.nics:
            k = (h.su, n.rail)
            per_block[k] = per_block.get(k, 0) + 1 + n.vfs
            max_h[k] = max(max_h.get(k, 0), h.h)
    for (su, rail), count in sorted(per_block.items()):
        # svi: hosts × (1+VFs) + network, gateway, broadcast; p2p31: a /31 per host
        need = 3 + max(count, max_h[(su, rail)]) if a.mode == "svi" else 2 * max_h[(su, rail)]
        if need > block:
            out.append(smap.problem(("addressing", "rail_prefix_length"),
                                    f"a /{a.rail_prefix_length} block holding {need} addresses for SU {su} rail "
                                    f"{rail} (hosts × (1+VFs) + gateway, network, broadcast)",
                                    f"{block} addresses"))
            break
    # ASN plan: spines share, leaves unique, all private.
    leaves = [s for s in topo.switches.values() if s.role == "leaf"]
    top = a.asn.leaves + len(leaves) - 1
    if leaves and not private_asn(top):
        out.append(smap.problem(("addressing", "asn", "leaves"),
                                f"room for {len(leaves)} private leaf ASNs from {a.asn.leaves}",
                                f"the last would be {top}; use a 4-byte base such as 4200000000"))
    out += kubernetes_problems(loaded, topo)
    spine_asns = {a.asn.spines + p for p in range(inv.topology.pods if inv.topology.pods > 1 else 1)}
    if leaves and any(a.asn.leaves <= x <= top for x in (*spine_asns, a.asn.super_spines)):
        out.append(smap.problem(("addressing", "asn", "leaves"), "leaf ASNs apart from spine and super-spine ASNs",
                                f"{a.asn.leaves}-{top} overlapping {sorted(spine_asns)} or {a.asn.super_spines}"))
    return out


def kubernetes_problems(loaded: Loaded, topo: Topo) -> list[Problem]:
    """A pooled resource only where a host has one rail NIC.

    Per-rail networks give each rail its own subnet, so a device must reach the network of its own rail.
    With one resource for every rail the device plugin hands out any VFs (sriov-network-device-plugin
    pkg/resources/server.go: GetPreferredAllocation returns nothing, so kubelet picks) and multus gives the
    resource's device IDs to the pod's networks in order (multus pkg/k8sclient/k8sclient.go
    getKubernetesDelegate: `entry.Index++`): a rail-3 VF can land on the rail-1 network, with a rail-1
    address on the rail-3 leaf, or two VFs of one PF and none of another.
    """
    k = loaded.inv.kubernetes
    if k.resources != "pooled":
        return []
    most = max((len(h.nics) for h in topo.hosts.values()), default=0)
    if most <= 1:
        return []
    return [loaded.smap.problem(("kubernetes", "resources"), "per-rail (a pooled resource needs hosts with one rail "
                                "NIC: its VFs cannot be matched to their rail's network)",
                                f"pooled with {most} rail NICs per host")]
