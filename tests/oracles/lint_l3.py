"""RF309 as it read before it looked ports and sessions up per switch: one (switch, port) tuple per lookup.
Held against by tests/lint/rules/test_l3.py."""

from __future__ import annotations

from collections.abc import Iterator

from fabric.lint.context import Context
from fabric.lint.core import Finding
from fabric.lint.rules.l3 import UnnumberedBothEnds


def rf309(rule: UnnumberedBothEnds, ctx: Context) -> Iterator[Finding]:
    """The rule as it read before: one (switch, port) tuple per lookup."""
    nbr = {(sw.name, n.port): n for sw in ctx.switches for n in sw.bgp.neighbors}
    switches, port = ctx.intent.switches, ctx.port
    for sw in ctx.switches:
        for n in sw.bgp.neighbors:
            peer_sw = switches.get(n.peer)
            back = nbr.get((n.peer, n.peer_port))
            p, pp = port.get((sw.name, n.port)), port.get((n.peer, n.peer_port))
            ok = peer_sw is not None and back is not None and back.peer == sw.name
            if ok and p and p.unnumbered and pp and pp.unnumbered and n.remote_asn == peer_sw.bgp.asn:
                continue
            where = ctx.link_at(sw.name, n.port)
            if peer_sw is None or back is None or back.peer != sw.name:
                yield rule.finding(sw.name, f"BGP on {n.port}: expected a session back from {n.peer}:{n.peer_port}, "
                                   "found none", where, n.port)
            elif not (p and p.unnumbered and pp and pp.unnumbered):
                yield rule.finding(sw.name, f"BGP on {n.port}: expected unnumbered on both ends, found "
                                   f"{'numbered' if not (p and p.unnumbered) else 'numbered at ' + n.peer}",
                                   where, n.port)
            elif n.remote_asn != peer_sw.bgp.asn:
                yield rule.finding(sw.name, f"BGP on {n.port}: expected remote-as {peer_sw.bgp.asn} ({n.peer}), "
                                   f"found {n.remote_asn}", where, n.port)
