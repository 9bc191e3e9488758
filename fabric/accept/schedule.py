"""Test scheduling: rounds of disjoint host pairs per rail, rails in parallel.

All pairs use the circle method (round-robin tournament): N hosts (one bye added when N is odd) give
N−1 rounds, every unordered pair exactly once, no host twice in a round. Quick mode is one perfect
matching (every host paired once; with an odd N the odd one out is paired with a host of the round
a second time, in a second round). A round runs every rail at once: a host's rail NICs are
independent, so host A may be on rail 1 with B and on rail 2 with B in the same round.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

Pair = tuple[str, str]


@dataclass(slots=True)
class Round:
    """One round: for each rail the disjoint pairs that run concurrently (a dataclass: a 4,096-host
    all-pairs schedule holds 67 million pairs)."""

    index: int
    pairs: dict[int, list[Pair]]

    @property
    def jobs(self) -> list[tuple[int, str, str]]:
        return [(rail, a, b) for rail, ps in sorted(self.pairs.items()) for a, b in ps]


def circle_rounds(hosts: Sequence[str]) -> list[list[Pair]]:
    """Circle-method rounds: every unordered pair exactly once over N−1 rounds (N rounds if N is odd)."""
    players: list[str | None] = list(hosts)
    if len(players) < 2:
        return []
    if len(players) % 2:
        players.append(None)  # bye
    n = len(players)
    fixed, rest = players[0], players[1:]
    rounds: list[list[Pair]] = []
    for r in range(n - 1):
        rot = rest[r:] + rest[:r]
        line = [fixed, *rot]
        pairs = []
        for i in range(n // 2):
            a, b = line[i], line[n - 1 - i]
            if a is not None and b is not None:
                pairs.append((a, b))
        rounds.append(pairs)
    return rounds


def quick_rounds(hosts: Sequence[str]) -> list[list[Pair]]:
    """Pair every host once: neighbours in order; an odd host out gets a second round with host 0."""
    hs = list(hosts)
    if len(hs) < 2:
        return []
    first = [(hs[i], hs[i + 1]) for i in range(0, len(hs) - 1, 2)]
    return [first, [(hs[-1], hs[0])]] if len(hs) % 2 else [first]


def schedule(hosts_per_rail: dict[int, Sequence[str]], *, quick: bool = False) -> list[Round]:
    """Rounds for every rail at once: round k of each rail runs together (rails in parallel)."""
    make = quick_rounds if quick else circle_rounds
    cache: dict[tuple[str, ...], list[list[Pair]]] = {}  # rails with the same hosts share one schedule
    per_rail: dict[int, list[list[Pair]]] = {}
    for rail, hs in hosts_per_rail.items():
        key = tuple(hs)
        if key not in cache:
            cache[key] = make(hs)
        per_rail[rail] = cache[key]
    depth = max((len(rs) for rs in per_rail.values()), default=0)
    return [Round(index=k, pairs={rail: rs[k] for rail, rs in sorted(per_rail.items()) if k < len(rs) and rs[k]})
            for k in range(depth)]


def cross_rounds(groups: Sequence[Sequence[str]], *, quick: bool = False) -> list[list[Pair]]:
    """Rounds of pairs whose hosts are in different groups (scalable units), through the spines.

    Units are paired by the circle method; within a unit pair host i of one meets host i+shift of the
    other, one round per shift, so no host is used twice in a round. Quick: the first unit round and
    shift 0 only (every host crosses the spines once)."""
    if len(groups) < 2:
        return []
    index = {f"su{n}": list(g) for n, g in enumerate(groups)}
    rounds: list[list[Pair]] = []
    for su_round in circle_rounds(list(index)):
        width = max(max(len(index[a]), len(index[b])) for a, b in su_round)
        for shift in range(1 if quick else width):
            pairs: list[Pair] = []
            for a_su, b_su in su_round:
                a_hosts, b_hosts = index[a_su], index[b_su]
                for i, a in enumerate(a_hosts[: len(b_hosts)] if len(a_hosts) >= len(b_hosts) else a_hosts):
                    pairs.append((a, b_hosts[(i + shift) % len(b_hosts)]))
            if pairs:
                rounds.append(pairs)
        if quick:
            break
    return rounds
