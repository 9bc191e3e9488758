"""Fault location: bisect a failing group of hosts on one rail until a host (or a link) is named.

The probe runs a group test — a ring in which every member sends to the next, all at once, so every
member's send and receive path is exercised — for several disjoint groups in one round, and returns
the slowest link of each ring. Each round halves every suspect set; a half of one host is tested with
a host already known good. A single slow host or cable among N is therefore named in ⌈log2 N⌉ rounds.
When both halves pass although their union failed, the fault lies only between them (a fabric
link or spine path), and the two halves are reported as the endpoints.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from pydantic import BaseModel


class Link(BaseModel):
    """One measured ring link."""

    src: str
    dst: str
    value: float


class GroupOutcome(BaseModel):
    """One probed group: the slowest link decides."""

    hosts: list[str]
    links: list[Link]
    value: float  # the slowest link (0 when a link failed outright)
    ok: bool
    detail: str = ""


# probe(rail, groups) -> one outcome per group, measured concurrently in one round
Probe = Callable[[int, list[list[str]]], list[GroupOutcome]]


class Step(BaseModel):
    round: int
    groups: list[GroupOutcome]


class Location(BaseModel):
    """What fault location concluded for one rail."""

    rail: int
    hosts: list[str] = []  # named hosts (one per independent fault)
    between: list[list[str]] = []  # fault only between these two groups (a fabric link)
    suspects: list[str] = []  # could not be narrowed further (no known-good partner)
    rounds: int = 0
    steps: list[Step] = []

    @property
    def summary(self) -> str:
        parts = [f"host {h} rail {self.rail}" for h in self.hosts]
        parts += [f"rail {self.rail} path between {'+'.join(a)} and {'+'.join(b)}" for a, b in self.between]
        if self.suspects:
            parts.append(f"rail {self.rail}: one of {', '.join(self.suspects)}")
        return "; ".join(parts) or f"rail {self.rail}: not reproduced"


def _halves(hosts: list[str]) -> tuple[list[str], list[str]]:
    mid = len(hosts) // 2
    return hosts[:mid], hosts[mid:]


Plan = tuple[list[str], list[tuple[list[str], int | None]]]  # a candidate set → [(its half, its group's index)]


def locate(rail: int, hosts: Sequence[str], probe: Probe, *, known_good: Sequence[str] = (),
           max_rounds: int = 64) -> Location:
    """Bisect `hosts` (a set known to fail together on `rail`) with `probe` until hosts are named."""
    loc = Location(rail=rail)
    frontier: list[list[str]] = [list(hosts)] if hosts else []
    good: list[str] = [h for h in known_good if h not in hosts]
    presumed: list[str] = []
    while frontier and loc.rounds < max_rounds:
        spare = [g for g in good] + [p for p in presumed if p not in good]
        groups, plans = _plan_round(frontier, spare, loc)
        if not groups:
            for cand, _ in plans:
                loc.suspects.extend(cand)
            frontier = []
            break
        loc.rounds += 1
        outcomes = probe(rail, groups)
        loc.steps.append(Step(round=loc.rounds, groups=outcomes))
        frontier = _judge_round(plans, outcomes, good, presumed, loc)
    for cand in frontier:
        loc.suspects.extend(cand)
    return loc


def _plan_round(frontier: list[list[str]], spare: list[str], loc: Location) -> tuple[list[list[str]], list[Plan]]:
    """The groups of one round: each candidate set split in halves, a single host paired with a spare good one
    (untested where none is left); a candidate of one host is named."""
    groups: list[list[str]] = []
    plans: list[Plan] = []
    for cand in frontier:
        if len(cand) == 1:
            loc.hosts.append(cand[0])
            continue
        halves: list[tuple[list[str], int | None]] = []
        for half in _halves(cand):
            group = list(half)
            if len(group) == 1:
                if not spare:
                    halves.append((half, None))
                    continue
                group.append(spare.pop(0))
            groups.append(group)
            halves.append((half, len(groups) - 1))
        plans.append((cand, halves))
    return groups, plans


def _judge_round(plans: list[Plan], outcomes: list[GroupOutcome], good: list[str], presumed: list[str],
                 loc: Location) -> list[list[str]]:
    """The next frontier from one round's outcomes: failing halves (an untested single host beside one presumed
    good), else the untested half; a candidate whose halves both pass fails only between them."""
    nxt: list[list[str]] = []
    for cand, halves in plans:
        failed = [h for h, i in halves if i is not None and not outcomes[i].ok]
        passed = [h for h, i in halves if i is not None and outcomes[i].ok]
        untested = [h for h, i in halves if i is None]
        for h in passed:
            good.extend(x for x in h if x not in good)
        if failed:
            nxt.extend(failed)
            # an untested single host beside a failing half is presumed good (one fault per
            # suspect set) and used last as a partner; if it is bad too, its own rings fail later
            presumed.extend(x for h in untested for x in h if x not in good)
        elif untested:
            nxt.extend(untested)  # the tested half is fine, so the fault is in the other one
        else:
            a, b = _halves(cand)
            loc.between.append([a, b])
    return nxt


def simulated_probe(speed: Callable[[int, str], float], threshold: float) -> Probe:
    """A probe over simulated per-(rail, host) speeds: a ring link runs at the slower end."""
    def probe(rail: int, groups: list[list[str]]) -> list[GroupOutcome]:
        out = []
        for g in groups:
            links = [Link(src=a, dst=b, value=min(speed(rail, a), speed(rail, b)))
                     for a, b in zip(g, g[1:] + g[:1], strict=True)]
            value = min(lk.value for lk in links)
            out.append(GroupOutcome(hosts=g, links=links, value=value, ok=value >= threshold))
        return out
    return probe
