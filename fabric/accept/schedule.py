"""Test scheduling: rounds of disjoint host pairs per rail, rails in parallel.

All pairs use the circle method (round-robin tournament): N hosts (one bye added when N is odd) give
N−1 rounds, every unordered pair exactly once, no host twice in a round. Quick mode is one perfect
matching (every host paired once; with an odd N the odd one out is paired with a host of the round
a second time, in a second round). A round runs every rail at once: a host's rail NICs are
independent, so host A may be on rail 1 with B and on rail 2 with B in the same round.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
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


def circle_rounds(hosts: Sequence[str]) -> Iterator[list[Pair]]:
    """Circle-method rounds, one at a time: every unordered pair exactly once over N−1 rounds (N rounds if N is
    odd)."""
    players: list[str | None] = list(hosts)
    if len(players) < 2:
        return
    if len(players) % 2:
        players.append(None)  # bye
    n = len(players)
    fixed, rest = players[0], players[1:]
    for r in range(n - 1):
        line = [fixed, *rest[r:], *rest[:r]]
        yield [(a, b) for a, b in zip(line[:n // 2], reversed(line[n // 2:]), strict=True)
               if a is not None and b is not None]


def quick_rounds(hosts: Sequence[str]) -> list[list[Pair]]:
    """Pair every host once: neighbours in order; an odd host out gets a second round with host 0."""
    hs = list(hosts)
    if len(hs) < 2:
        return []
    first = [(hs[i], hs[i + 1]) for i in range(0, len(hs) - 1, 2)]
    return [first, [(hs[-1], hs[0])]] if len(hs) % 2 else [first]


def rounds_together(per_rail: dict[int, Iterable[list[Pair]]]) -> Iterator[dict[int, list[Pair]]]:
    """Round k of every rail together, one round at a time, until the longest rail's rounds end (a rail whose
    rounds ended, or whose round k is empty, is left out of round k). Rails given the same iterable share it: it is
    advanced once per round."""
    streams = {id(rs): iter(rs) for rs in per_rail.values()}
    while True:
        current = {key: next(it, None) for key, it in streams.items()}
        if all(pairs is None for pairs in current.values()):
            return
        yield {rail: current[id(rs)] for rail, rs in per_rail.items() if current[id(rs)]}  # type: ignore[misc]


def iter_schedule(hosts_per_rail: dict[int, Sequence[str]], *, quick: bool = False) -> Iterator[Round]:
    """Rounds for every rail at once, one at a time: round k of each rail runs together (rails in parallel). A
    4,096-host all-pairs schedule is 67 million pairs: a dry run writes each round as it is made."""
    make = quick_rounds if quick else circle_rounds
    shared: dict[tuple[str, ...], Iterable[list[Pair]]] = {}  # rails with the same hosts share one schedule
    per_rail: dict[int, Iterable[list[Pair]]] = {}
    for rail, hs in sorted(hosts_per_rail.items()):
        per_rail[rail] = shared.setdefault(tuple(hs), make(hs))
    for k, pairs in enumerate(rounds_together(per_rail)):
        yield Round(index=k, pairs=pairs)


def schedule(hosts_per_rail: dict[int, Sequence[str]], *, quick: bool = False) -> list[Round]:
    """Every round of `iter_schedule` (a run measures them one by one and keeps every measurement)."""
    return list(iter_schedule(hosts_per_rail, quick=quick))


def cross_rounds(groups: Sequence[Sequence[str]], *, quick: bool = False) -> Iterator[list[Pair]]:
    """Rounds of pairs whose hosts are in different groups (scalable units), through the spines, one at a time.

    Units are paired by the circle method; within a unit pair host i of one meets host i+shift of the
    other, one round per shift, so no host is used twice in a round. Quick: the first unit round and
    shift 0 only (every host crosses the spines once)."""
    if len(groups) < 2:
        return
    index = {f"su{n}": list(g) for n, g in enumerate(groups)}
    for su_round in circle_rounds(list(index)):
        width = max(max(len(index[a]), len(index[b])) for a, b in su_round)
        for shift in range(1 if quick else width):
            pairs: list[Pair] = []
            for a_su, b_su in su_round:
                a_hosts, b_hosts = index[a_su], index[b_su]
                for i, a in enumerate(a_hosts[: len(b_hosts)] if len(a_hosts) >= len(b_hosts) else a_hosts):
                    pairs.append((a, b_hosts[(i + shift) % len(b_hosts)]))
            if pairs:
                yield pairs
        if quick:
            break
