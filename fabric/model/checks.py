"""Semantic checks of a validated inventory that pydantic alone cannot see, each with its line."""

from __future__ import annotations

from ipaddress import IPv4Network
from typing import TYPE_CHECKING

from fabric.errors import Problem

if TYPE_CHECKING:
    from fabric.model.load import Loaded

PRIVATE_ASN = ((64512, 65534), (4200000000, 4294967294))


def private_asn(asn: int) -> bool:
    return any(lo <= asn <= hi for lo, hi in PRIVATE_ASN)


def semantic_problems(loaded: Loaded) -> list[Problem]:
    """Pools, ASNs, names and cabling problems; the topology build adds its own."""
    from fabric.design.topology import build

    inv, smap = loaded.inv, loaded.smap
    out: list[Problem] = []
    a = inv.addressing
    pools = {"loopbacks": a.loopbacks, "rails": a.rails, "management": a.management}
    names = list(pools)
    for i, x in enumerate(names):
        for y in names[i + 1:]:
            if pools[x].overlaps(pools[y]):
                out.append(smap.problem(("addressing", y), f"a pool that does not overlap addressing.{x} "
                                        f"({pools[x]})", str(pools[y])))
    for i, sd in enumerate(inv.switches):
        if sd.asn is not None and not private_asn(sd.asn):
            out.append(smap.problem(("switches", i, "asn"), "a private ASN (64512-65534 or 4200000000-4294967294)",
                                    str(sd.asn)))
    for key in ("super_spines", "spines", "leaves"):
        asn = getattr(a.asn, key)
        if not private_asn(asn):
            out.append(smap.problem(("addressing", "asn", key),
                                    "a private ASN (64512-65534 or 4200000000-4294967294)", str(asn)))
    if a.rail_prefix_length < a.rails.prefixlen:
        out.append(smap.problem(("addressing", "rail_prefix_length"),
                                f"a block no larger than the rails pool /{a.rails.prefixlen}",
                                f"/{a.rail_prefix_length}"))
    topo = build(inv, smap)
    loaded.topo = topo
    out += topo.problems
    if out:
        return out
    # Pools large enough for what they must number.
    nsw = len(topo.switches)
    if a.loopbacks.num_addresses - 2 < nsw and a.loopbacks.prefixlen < 31:
        out.append(smap.problem(("addressing", "loopbacks"), f"room for {nsw} switch loopbacks",
                                f"{a.loopbacks} with {a.loopbacks.num_addresses - 2} addresses"))
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
    spine_asns = {a.asn.spines + p for p in range(inv.topology.pods if inv.topology.pods > 1 else 1)}
    if leaves and any(a.asn.leaves <= x <= top for x in (*spine_asns, a.asn.super_spines)):
        out.append(smap.problem(("addressing", "asn", "leaves"), "leaf ASNs apart from spine and super-spine ASNs",
                                f"{a.asn.leaves}-{top} overlapping {sorted(spine_asns)} or {a.asn.super_spines}"))
    return out
