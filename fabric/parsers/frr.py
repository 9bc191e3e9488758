"""FRR's JSON output (vtysh `show … json`): concatenated documents, routes and their ECMP width."""

from __future__ import annotations

from typing import Any

from fabric.replies import json_reply, reader


@reader("vtysh -c 'show bgp summary json'")
def bgp_peers(text: str) -> dict[str, str]:
    """Each BGP peer's state, over every address family (a peer Established in one counts as Established)."""
    return bgp_peers_of(json_reply(text, "vtysh -c 'show bgp summary json'"))


def bgp_peers_of(data: object) -> dict[str, str]:
    """`bgp_peers` of the decoded reply; entries of another shape are left out."""
    peers: dict[str, str] = {}
    for af in data.values() if isinstance(data, dict) else ():
        found = af.get("peers") if isinstance(af, dict) else None
        for name, p in (found.items() if isinstance(found, dict) else ()):
            if peers.get(name) != "Established":
                peers[name] = str(p.get("state", "")) if isinstance(p, dict) else ""
    return peers


def _selected(entries: object) -> dict[str, Any] | None:
    if not isinstance(entries, list):
        return None
    return next((e for e in entries if isinstance(e, dict) and e.get("selected") and e.get("installed", True)), None)


@reader("vtysh -c 'show ip route json'")
def route_widths(routes: object) -> dict[str, int]:
    """`show ip route json` → prefix → number of distinct FIB next hops of its selected, installed route."""
    out: dict[str, int] = {}
    if not isinstance(routes, dict):
        return out
    for prefix, entries in routes.items():
        e = _selected(entries)
        if e is not None:
            hops = e.get("nexthops")
            out[prefix] = len({(str(h.get("interfaceName")), str(h.get("ip"))) for h in
                               (hops if isinstance(hops, list) else []) if isinstance(h, dict) and h.get("fib")})
    return out
