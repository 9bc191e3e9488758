"""Semantic checks of a validated inventory that pydantic alone cannot see and that need no topology."""

from __future__ import annotations

from fabric.errors import Problem
from fabric.model.loaded import Loaded

PRIVATE_ASN = ((64512, 65534), (4200000000, 4294967294))


def private_asn(asn: int) -> bool:
    return any(lo <= asn <= hi for lo, hi in PRIVATE_ASN)


def model_problems(loaded: Loaded) -> list[Problem]:
    """Overlapping pools, public ASNs, a rail block larger than its pool (fabric.design.checks sizes them)."""
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
    return out
