"""What a healthy underlay looks like from one switch: the prefixes it must learn and its ECMP width."""

from __future__ import annotations

from dataclasses import dataclass

from fabric.design.intent import FabricIntent, SwitchIntent


@dataclass(frozen=True)
class BgpExpectation:
    peers: int  # sessions that must be Established
    learned: frozenset[str]  # prefixes of other ASNs this switch must have selected
    leaf_prefixes: frozenset[str]  # of those, the leaves' (ECMP is judged towards them)
    ecmp: int | None  # next hops towards every leaf prefix; None where the design does not fix it


def expectation(sw: SwitchIntent, fabric: FabricIntent) -> BgpExpectation:
    """A switch never accepts its own ASN back (spines share one, RFC 7938), so it learns the others'
    networks; a leaf reaches every other leaf over all its uplinks, a spine over all links to that leaf."""
    others = frozenset(p for s in fabric.switches.values() if s.bgp.asn != sw.bgp.asn for p in s.bgp.networks)
    leaves = frozenset(p for s in fabric.switches.values()
                       if s.bgp.asn != sw.bgp.asn and s.role == "leaf" for p in s.bgp.networks)
    fabric_ports = [p for p in sw.ports if p.kind == "fabric"]
    width: int | None = None
    if sw.role == "leaf":
        width = len(fabric_ports)
    elif sw.role == "spine" and all(fabric.switches[p.peer].role == "leaf" for p in fabric_ports
                                    if p.peer in fabric.switches):
        per_leaf: dict[str, int] = {}
        for p in fabric_ports:
            per_leaf[p.peer] = per_leaf.get(p.peer, 0) + 1
        width = min(per_leaf.values()) if per_leaf else None
    return BgpExpectation(peers=len(sw.bgp.neighbors), learned=others, leaf_prefixes=leaves, ecmp=width)
