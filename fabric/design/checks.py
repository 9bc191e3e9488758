"""Checks that need the expanded topology: pools and ASN ranges large enough for what they number."""

from __future__ import annotations

from ipaddress import IPv4Network

from fabric.design.topology import Topo
from fabric.errors import Problem
from fabric.model.checks import private_asn
from fabric.model.load import Loaded
from fabric.nos import NOS


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


def watchdog_problems(loaded: Loaded, topo: Topo) -> list[Problem]:
    """Refuse a `qos.pfc_watchdog` setting the inventory sets that a switch's NOS cannot render.

    NVUE has only a polling interval and a robustness count; EOS has no robustness and no `alert` action;
    SONiC has no robustness (fabric.nos, `watchdog`). Leaving such a value out silently would make `explain`
    report an override that no switch runs. A Linux/FRR white-box has no PFC watchdog at all (nothing is
    rendered or refused there: the lab realizes every inventory on it)."""
    q = loaded.qos
    wd = loaded.qos_overrides.get("pfc_watchdog")
    if not isinstance(wd, dict) or not q.pfc_watchdog.enabled or not q.lossless_priorities:
        return []
    by_target: dict[str, list[str]] = {}
    for sw in topo.switches.values():
        by_target.setdefault(sw.target, []).append(sw.name)
    out: list[Problem] = []
    for key in sorted(k for k in wd if k != "enabled"):
        value = getattr(q.pfc_watchdog, key, None)
        for target, names in sorted(by_target.items()):
            nos, fields = NOS[target], NOS[target].watchdog
            shown = ", ".join(names[:3]) + (", …" if len(names) > 3 else "")
            if fields is None:
                continue
            if key not in fields:
                out.append(loaded.smap.problem(
                    ("qos", "pfc_watchdog", key), f"no {key} override: {nos.title} ({shown}) configures only "
                    f"{', '.join(f'pfc_watchdog.{f}' for f in fields)} of the PFC watchdog", str(wd[key])))
            elif fields[key] is not None and str(value) not in fields[key]:
                out.append(loaded.smap.problem(
                    ("qos", "pfc_watchdog", key), f"one of {', '.join(sorted(fields[key]))} on {nos.title} "
                    f"({shown})", str(wd[key])))
    return out
