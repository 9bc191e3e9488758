"""Checks that need the expanded topology: pools and ASN ranges large enough for what they number, and a rail
for pods on every node of a Kubernetes fabric."""

from __future__ import annotations

from ipaddress import IPv4Network
from typing import Any, Literal

from fabric.design.pci import pci_from_netdev
from fabric.design.topology import Host, Topo
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
    out += pod_problems(loaded, topo, {k: vf_room(block, h) for k, h in max_h.items()})
    spine_asns = {a.asn.spines + p for p in range(inv.topology.pods if inv.topology.pods > 1 else 1)}
    if leaves and any(a.asn.leaves <= x <= top for x in (*spine_asns, a.asn.super_spines)):
        out.append(smap.problem(("addressing", "asn", "leaves"), "leaf ASNs apart from spine and super-spine ASNs",
                                f"{a.asn.leaves}-{top} overlapping {sorted(spine_asns)} or {a.asn.super_spines}"))
    return out


def vf_room(block_size: int, max_h: int) -> int:
    """The addresses an svi rail block of `block_size` leaves for VFs after its hosts' (`max_h`: the highest host
    index in it), the network address, the leaf's and broadcast: from its base + 2 + max_h to its broadcast - 1."""
    return block_size - 3 - max_h


def pod_device(vfs: int, vlan: int | None, mode: str, room: int) -> tuple[Literal["pf", "vf"] | None, str]:
    """How pods attach a rail NIC: the NIC itself in PF mode (`vfs: 0`, untagged on the host) or its VFs (svi
    addressing, `room` addresses left in the rail block after the hosts'); else None and why not."""
    if vfs == 0:
        if vlan is None:
            return "pf", ""
        # host-device moves the PF itself, untagged, into the pod, while a host VLAN makes the leaf port a tagged
        # member: the pod's frames would never reach the rail VLAN
        return None, ("vfs: 0 with a host VLAN (host-device would move the untagged PF into the pod while its leaf "
                      "port is a tagged member; give the NIC VFs, which sriov-cni tags)")
    if mode != "svi":
        return None, "VFs in p2p31 addressing (a /31 per host port leaves no address for a VF)"
    if room < 1:
        return None, "VFs with no address left for them in the rail block after the hosts'"
    return "vf", ""


def pod_problems(loaded: Loaded, topo: Topo, room: dict[tuple[int, int], int]) -> list[Problem]:
    """A fabric with a `kubernetes:` section needs, on every node, a rail pods can attach: the device plugin would
    advertise nothing there and every pod sent to it would stay Pending. One problem per NIC list (the shared
    default's, or a host's own), naming the nodes and why. `room`: (SU, rail) → VF addresses left in its block."""
    if ("kubernetes",) not in loaded.smap.lines:
        return []
    mode = loaded.inv.addressing.mode
    bare: dict[tuple[Any, ...], tuple[list[str], set[str]]] = {}
    for h in topo.hosts.values():
        found = [pod_device(n.vfs, n.vlan, mode, room.get((h.su, n.rail), 0)) for n in h.nics]
        if not any(device for device, _ in found):
            names, why = bare.setdefault(_nics_at(loaded, h), ([], set()))
            names.append(h.name)
            why.update([w for _, w in found] or ["no rail NICs"])
    return [loaded.smap.problem(loc, "at least one rail pods can attach (a VF or the NIC in PF mode) on every node",
                                f"none on {', '.join(names[:5])}" + (f" and {len(names) - 5} more" if len(names) > 5
                                                                     else "") + f": {'; '.join(sorted(why))}")
            for loc, (names, why) in bare.items()]


def _nics_at(loaded: Loaded, host: Host) -> tuple[Any, ...]:
    """Where `host`'s rail NICs are written: its own `nics`, else the shared default's."""
    if host.loc[:2] == ("hosts", "list") and loaded.inv.hosts.entries[host.loc[2]].nics is not None:
        return (*host.loc, "nics")
    return ("hosts", "defaults", "nics")


def kubernetes_problems(loaded: Loaded, topo: Topo) -> list[Problem]:
    """Where a pooled resource (one device-plugin resource for every rail NIC) cannot give each pod one device
    per rail with that rail's VLAN and address (docs/kubernetes.md, pooled resources; fabric.render.k8s).

    The pod finds its rails itself (fabric.render.k8s.pod_rail_setup: the granted PCI addresses → each one's
    PF → the node's rail map), so the order multus hands the devices to the networks does not matter
    (pkg/k8sclient/k8sclient.go getKubernetesDelegate takes them in order; sorted only from multus v4.3.0,
    kubelet's own order before). What cannot be fixed in the pod is *which* devices it gets: kubelet picks
    from the free devices of a resource in set order (pkg/kubelet/cm/devicemanager/manager.go
    devicesToAllocate) unless the plugin prefers some, and sriov-network-device-plugin prefers none
    (pkg/resources/server.go GetPreferredAllocation returns an empty answer). So a pooled resource works only
    where the worker takes *every* device of the node and each NIC gives exactly one: the NIC itself
    (`vfs: 0`) or one VF (`vfs: 1`). In the pod, a NIC is known only by its PCI address (the PF's netdev stays
    in the host's namespace), so each needs one.
    """
    k = loaded.inv.kubernetes
    if k.resources != "pooled":
        return []
    most = max((len(h.nics) for h in topo.hosts.values()), default=0)
    if most <= 1:
        return []
    where = ("kubernetes", "resources")
    vfs = sorted({n.vfs for h in topo.hosts.values() for n in h.nics})
    if any(v > 1 for v in vfs):
        v = max(vfs)
        free = v * most
        p = 1.0
        for i in range(most):  # a pod asking for `most` of `free` devices gets one per NIC
            p *= (free - i * v) / (free - i)
        return [loaded.smap.problem(where, "per-rail, or pooled with `vfs: 0` or `vfs: 1` on every rail NIC "
                                    "(a pooled resource is one pool: kubelet picks a pod's devices from it at "
                                    "random — sriov-network-device-plugin prefers none — so some NICs give two "
                                    "VFs and others none)", f"pooled with {most} NICs × {v} VFs per host: a pod "
                                    f"asking for {most} of {free} free VFs gets one per rail {p:.1%} of the time")]
    if len(vfs) > 1:
        return [loaded.smap.problem(where, "pooled with one kind of device per resource (every rail NIC `vfs: 0`, "
                                    "or every one `vfs: 1`): the plugin ANDs a resource's selectors",
                                    f"vfs {' and '.join(map(str, vfs))}")]
    no_pci = sorted({f"{h.name} {n.netdev}" for h in topo.hosts.values() for n in h.nics
                     if not (n.pci or pci_from_netdev(n.netdev))})
    if no_pci:
        return [loaded.smap.problem(("hosts", "nics", "pci"), "a PCI address for every rail NIC with a pooled "
                                    "resource (the pod knows its devices only by PCI address: the granted list "
                                    "and each VF's physfn)", f"none for {', '.join(no_pci[:3])}"
                                    + (f" and {len(no_pci) - 3} more" if len(no_pci) > 3 else ""))]
    a = loaded.inv.addressing
    max_h = max((h.h for h in topo.hosts.values()), default=0)
    block = 2 ** (32 - a.rail_prefix_length)
    if vfs == [1] and a.mode == "svi" and 3 + 2 * max_h > block:  # hosts, then one VF address per host
        return [loaded.smap.problem(("addressing", "rail_prefix_length"), f"a /{a.rail_prefix_length} block "
                                    f"holding {3 + 2 * max_h} addresses (a host's and its pooled VF's, per host)",
                                    f"{block} addresses")]
    return []
