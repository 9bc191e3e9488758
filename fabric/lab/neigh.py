"""The kernel's neighbour tables sized for the lab.

A real switch or host has its own ARP and NDP tables; the lab's nodes share this machine's: the kernel keeps one
`arp_cache` and one `ndisc_cache` for every network namespace, and their limits (`gc_thresh1..3`) exist in the
initial namespace only. With Linux's default gc_thresh3 of 1024, a 48-host × 8-rail lab (about 7,300 entries in
all) ran into "neighbour: arp_cache: neighbor table overflow!": the kernel refused new entries and dropped the
packets that needed them, and `lab status` reported thousands of pairs unreachable that answered one by one.

`raise_limits` lifts the limits to fit the lab before it is built and says what it changed. It never lowers
them, and `lab down` leaves them raised: the tables are the machine's, another lab may be using the room, and
a limit only bounds entries, it reserves no memory.
"""

from __future__ import annotations

from pathlib import Path

from fabric.design.intent import FabricIntent

SYSCTL = Path("/proc/sys/net")
TABLES = ("ipv4", "ipv6")  # ARP; NDP (BGP unnumbered peers by link-local address)
HEADROOM = 2  # gc_thresh3 ≥ 2 × the lab's entries, as the switches' own (fabric.design.derive.switch)


def entries(fabric: FabricIntent) -> int:
    """Neighbour entries the lab's namespaces hold per address family, at most: on every rail subnet each member
    (its hosts and the leaf's SVI) knows every other one; both ends of every cable; each node and the root
    namespace on the management bridge."""
    members: dict[tuple[str, int], int] = {}
    for h in fabric.hosts.values():
        for r in h.rails:
            members[(r.leaf, r.rail)] = members.get((r.leaf, r.rail), 0) + 1
    rails = sum((k + 1) * k for k in members.values())  # k hosts and the leaf, each knowing the k others
    nodes = len(fabric.hosts) + len(fabric.switches)
    return rails + 2 * len(fabric.links) + 2 * nodes


def _path(family: str, key: str) -> Path:
    return SYSCTL / family / "neigh" / "default" / key


def raise_limits(fabric: FabricIntent) -> dict[str, list[int]]:
    """Raise gc_thresh2/3 of both tables to fit the lab (powers of two); returns {sysctl path: [previous, set]}
    for each value changed."""
    need = 1 << (HEADROOM * entries(fabric) - 1).bit_length()
    changed: dict[str, list[int]] = {}
    for family in TABLES:
        for key, value in (("gc_thresh3", need), ("gc_thresh2", need // 2)):
            path = _path(family, key)
            current = int(path.read_text())
            if current < value:
                path.write_text(f"{value}\n")
                changed[str(path)] = [current, value]
    return changed
