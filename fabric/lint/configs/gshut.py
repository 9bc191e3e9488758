"""Graceful shutdown (RFC 8326) as a config says it, whatever the NOS: what RF405 reads in `--configs` mode.

The tool's meaning of `switching.bgp.graceful_shutdown: true` on every target:
- honour: a route that a fabric neighbour sends with GRACEFUL_SHUTDOWN (65535:0) gets LOCAL_PREF 0, through an
  inbound policy on every fabric neighbour (a community list matching 65535:0 and a route-map entry that
  matches it and sets local-preference 0). FRR, and so SONiC and NVUE, also do this by themselves for eBGP
  peers (bgpd, since 2017); the explicit policy keeps it visible and independent of the build.
- send: communities reach the neighbours, so the switch can announce 65535:0 when it is drained (FRR sends
  them unless `no neighbor … send-community`; EOS only with `neighbor … send-community`). The drain itself
  (`bgp graceful-shutdown`, BGP_GLOBALS graceful_shutdown, `nv set router bgp graceful-shutdown`, EOS
  maintenance mode) is an operation, never part of the rendered steady state.
"""

from __future__ import annotations

from dataclasses import dataclass, field

GSHUT_VALUES = {"65535:0", "graceful-shutdown", "gshut"}  # lower-cased: FRR keyword, EOS `GSHUT`


@dataclass
class GshutConfig:
    lists: set[str] = field(default_factory=set)  # community lists that match GRACEFUL_SHUTDOWN
    maps: dict[str, list[tuple[set[str], int | None]]] = field(default_factory=dict)  # entries: (lists, local pref)
    inbound: dict[str, str] = field(default_factory=dict)  # neighbour or peer group → inbound route map
    groups: dict[str, str] = field(default_factory=dict)  # neighbour → peer group
    sends: set[str] = field(default_factory=set)  # neighbours/groups configured to send communities
    no_send: set[str] = field(default_factory=set)  # … configured not to

    def entry(self, route_map: str) -> list[tuple[set[str], int | None]]:
        return self.maps.setdefault(route_map, [])

    def verdict(self, neighbours: list[str], sends_by_default: bool) -> tuple[bool, str]:
        """(honoured and sendable on every neighbour, what is missing)."""
        honouring = {m for m, entries in self.maps.items()
                     if any(lists & self.lists and lp == 0 for lists, lp in entries)}

        def of(n: str, table: dict[str, str]) -> str | None:
            return table.get(n) or table.get(self.groups.get(n, ""))

        def sends(n: str) -> bool:
            keys = {n, self.groups.get(n, "")}
            return not (keys & self.no_send) and (sends_by_default or bool(keys & self.sends))

        deaf = [n for n in neighbours if of(n, self.inbound) not in honouring]
        mute = [n for n in neighbours if not sends(n)]
        why = []
        if deaf:
            why.append(f"no inbound policy setting local-preference 0 on 65535:0 for {len(deaf)} of "
                       f"{len(neighbours)} neighbours (e.g. {', '.join(deaf[:3])})")
        if mute:
            why.append(f"communities not sent to {len(mute)} of {len(neighbours)} neighbours "
                       f"(e.g. {', '.join(mute[:3])}), so a drain cannot announce 65535:0")
        return not why, "; ".join(why)
