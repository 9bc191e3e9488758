"""Bandwidth checks: ib_write_bw (lab: iperf3) between scheduled host pairs per rail, within a scalable
unit (rail-bandwidth) and across them through the spines (cross-su-bandwidth); failures are bisected down to
a host and rail (fault location, also used by the NCCL check)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Literal, NamedTuple

from pydantic import Field

from fabric.accept.checks.base import Check, Context, Input, hosts_per_rail, register
from fabric.accept.locate import GroupOutcome, Link, Location, locate
from fabric.accept.results import CheckResult, Measurement, Planned
from fabric.accept.schedule import Pair, cross_rounds, iter_schedule, rounds_together
from fabric.accept.tools import TOOLS, End, Tool, ends, measure_links, missing, planned_links
from fabric.design.intent import FabricIntent


class TrafficInput(Input):
    tool: str = Field("ib_write_bw", description="ib_write_bw (RDMA) or iperf3 (lab stand-in)")
    threshold_gbps: float | None = Field(None, description="absolute minimum; default fraction × link speed")
    fraction_of_link: float = Field(0.9, gt=0, le=1)
    seconds: float = Field(5, gt=0, le=120, description="per test (-D / -t)")
    timeout_s: float = Field(30, gt=0, description="per test, servers included")
    message_size: int = Field(1 << 20, description="ib_write_bw -s (large messages)")
    qps: int = Field(4, ge=1)
    rdma_cm: bool = Field(False, description="perftest -R: connect with rdma_cm, ToS by -T (else --tclass)")
    qp_timeout: int | None = Field(None, ge=0, le=31, description="perftest -u: the QPs' ACK timeout, 4.096 µs × "
                                   "2^value (default perftest's 14, 67 ms)")
    parallel: int = Field(16, ge=1, description="concurrent tests (bounded)")
    quick: bool | None = Field(None, description="pair every host once (default: --quick)")
    locate: bool = Field(True, description="bisect failures down to a host and rail")
    rails: list[int] | None = None


def _tool(inputs: TrafficInput) -> Tool:
    if inputs.tool not in TOOLS:
        raise ValueError(f"tool: expected one of {', '.join(TOOLS)}, found {inputs.tool!r}")
    cls = TOOLS[inputs.tool]
    if inputs.tool == "ib_write_bw":
        return cls(size=inputs.message_size, qps=inputs.qps, rdma_cm=inputs.rdma_cm,  # type: ignore[call-arg]
                   qp_timeout=inputs.qp_timeout)
    return cls()


def _threshold(inputs: TrafficInput, fabric: FabricIntent, rail: int) -> float:
    if inputs.threshold_gbps is not None:
        return inputs.threshold_gbps
    speeds = [r.speed for h in fabric.hosts.values() for r in h.rails if r.rail == rail]
    return round(min(speeds) * inputs.fraction_of_link, 3)


def locate_rails(ctx: Context, tool: Tool, inputs: TrafficInput, rails: dict[int, list[str]]) -> list[Location]:
    """Bisect every failing rail at once (rails are independent), with ring probes of `tool`."""
    ep = ends(ctx.fabric)

    def probe(rail: int, groups: list[list[str]]) -> list[GroupOutcome]:
        thr = _threshold(inputs, ctx.fabric, rail)
        links = [(ep[(g[i], rail)], ep[(g[(i + 1) % len(g)], rail)]) for g in groups for i in range(len(g))]
        ctx.progress(f"locate rail {rail}: {len(groups)} groups, {len(links)} links")
        ms = measure_links(ctx.site, tool, links, seconds=inputs.seconds, timeout=inputs.timeout_s,
                           threshold=thr, workers=inputs.parallel)
        out, k = [], 0
        for g in groups:
            part, k = ms[k:k + len(g)], k + len(g)
            lk = [Link(src=m.src, dst=m.dst, value=m.value or 0.0) for m in part]
            out.append(GroupOutcome(hosts=g, links=lk, value=min(x.value for x in lk),
                                    ok=all(m.ok for m in part),
                                    detail="; ".join(m.detail for m in part if m.detail)))
        return out

    with ThreadPoolExecutor(max_workers=max(1, len(rails))) as pool:
        return list(pool.map(lambda kv: locate(kv[0], kv[1], probe), sorted(rails.items())))


def location_evidence(loc: Location, fabric: FabricIntent) -> list[str]:
    lines = [f"fault location rail {loc.rail}: {loc.summary} after {loc.rounds} rounds"]
    for h in loc.hosts:
        r = next((x for x in fabric.hosts[h].rails if x.rail == loc.rail), None)
        if r:
            lines.append(f"  {h} {r.netdev} ({r.rdma}) ↔ {r.leaf}:{r.leaf_port}")
    for step in loc.steps:
        for g in step.groups:
            slow = min(g.links, key=lambda x: x.value) if g.links else None
            where = f"slowest {slow.src}→{slow.dst} {slow.value:g}" if slow else ""
            lines.append(f"  round {step.round}: ring {'→'.join(g.hosts)} {'ok' if g.ok else 'FAIL'} {where}"
                         + (f" ({g.detail})" if g.detail and not g.ok else ""))
    return lines


def round_links(rd: dict[int, list[Pair]], ep: dict[tuple[str, int], End], direction: int) -> list[tuple[End, End]]:
    """One round's links in one direction (0: a→b, 1: b→a)."""
    return [(ep[(a, rail)], ep[(b, rail)]) if direction == 0 else (ep[(b, rail)], ep[(a, rail)])
            for rail, ps in rd.items() for a, b in ps]


class Judged(NamedTuple):
    """A bandwidth check's verdict on its measurements."""

    measurements: list[Measurement]  # each with its rail's threshold and whether it reached it
    status: Literal["pass", "fail"]
    message: str
    failing: dict[int, list[str]]  # rail → the hosts measured on it, for each rail with a test below (to locate)


def judge_bandwidth(measured: list[Measurement], thresholds: dict[int, float], unit: str, how: str = "") -> Judged:
    """Each measurement against its rail's threshold (one that measured nothing fails), and the check's message:
    the lowest result when every test reached its threshold, else the worst and how many fell short (`how`: what
    measured, named in the message)."""
    by = f" ({how})" if how else ""
    ms = [m.model_copy(update={"threshold": thresholds[m.rail or 0],
                               "ok": m.value >= thresholds[m.rail or 0] if m.value is not None else m.ok})
          for m in measured]
    bad = [m for m in ms if not m.ok]
    if not bad:
        low = min(ms, key=lambda m: m.value or 0.0)
        return Judged(ms, "pass", f"{len(ms)} tests ≥ threshold{by}; lowest {low.value:g} {unit} "
                                  f"({low.src}→{low.dst} rail {low.rail})", {})
    worst = min(bad, key=lambda m: m.value or 0.0)
    failing = {rail: sorted({h for m in ms if m.rail == rail for h in (m.src, m.dst)})
               for rail in dict.fromkeys(m.rail or 0 for m in bad)}
    return Judged(ms, "fail", f"Expected ≥ {worst.threshold:g} {unit} on every rail and direction{by}. Actual: "
                              f"{len(bad)}/{len(ms)} below, worst {worst.src}→{worst.dst} rail {worst.rail} "
                              + (f"{worst.value:g} {unit}" if worst.value is not None else worst.detail), failing)


def add_locations(res: CheckResult, locations: list[Location], fabric: FabricIntent) -> None:
    """A failed check's fault locations and their evidence, on its result."""
    res.locations = locations
    for loc in locations:
        res.evidence += location_evidence(loc, fabric)


class PairBandwidth(Check):
    """Shared by rail-bandwidth and cross-su-bandwidth: scheduled pairs, both directions, per rail."""

    phase = "traffic"
    Input = TrafficInput

    def pairs(self, ctx: Context, quick: bool) -> Iterator[dict[int, list[Pair]]]:
        """Each round's pairs per rail, one round at a time."""
        raise NotImplementedError

    def plan(self, ctx: Context) -> Iterator[Planned]:
        inputs: TrafficInput = self.inputs  # type: ignore[assignment]
        tool, ep = _tool(inputs), ends(ctx.fabric)
        for k, rd in enumerate(self.pairs(ctx, ctx.quick if inputs.quick is None else inputs.quick), 1):
            for direction in (0, 1):
                yield from planned_links(tool, round_links(rd, ep, direction), seconds=inputs.seconds,
                                         round_=f"{k}{' reverse' if direction else ''}")

    def run(self, ctx: Context) -> CheckResult:
        inputs: TrafficInput = self.inputs  # type: ignore[assignment]
        tool = _tool(inputs)
        quick = ctx.quick if inputs.quick is None else inputs.quick
        rounds = list(self.pairs(ctx, quick))
        if not rounds:
            return self.result("skipped", self.no_pairs_reason(ctx))
        hosts = sorted({h for rd in rounds for ps in rd.values() for p in ps for h in p})
        why = missing(ctx.site, tool, hosts, ctx.fabric)
        if why:
            return self.result("skipped", f"{tool.name} cannot run: {why}")
        rails = sorted({rail for rd in rounds for rail, ps in rd.items() if ps})
        judged = judge_bandwidth(self._measure(ctx, tool, rounds),
                                 {rail: _threshold(inputs, ctx.fabric, rail) for rail in rails}, tool.unit,
                                 tool.name + (" over Soft-RoCE" if tool.needs_rdma and ctx.site.soft_roce else ""))
        ctx.traffic += judged.measurements
        res = self.result(judged.status, judged.message, measurements=judged.measurements, rounds=len(rounds))
        if judged.failing and inputs.locate:
            add_locations(res, locate_rails(ctx, tool, inputs, judged.failing), ctx.fabric)
            res.rounds += max((loc.rounds for loc in res.locations), default=0)
            res.message += ". Located: " + "; ".join(loc.summary for loc in res.locations)
        return res

    def _measure(self, ctx: Context, tool: Tool, rounds: list[dict[int, list[Pair]]]) -> list[Measurement]:
        """Every round's pairs, both directions, measured (not yet judged: no threshold)."""
        inputs: TrafficInput = self.inputs  # type: ignore[assignment]
        ep = ends(ctx.fabric)
        ms: list[Measurement] = []
        for k, rd in enumerate(rounds, 1):
            ctx.progress(f"{self.id}: round {k}/{len(rounds)}, {sum(map(len, rd.values()))} pairs × 2 directions")
            for direction in (0, 1):
                ms += measure_links(ctx.site, tool, round_links(rd, ep, direction), seconds=inputs.seconds,
                                    timeout=inputs.timeout_s, threshold=None, workers=inputs.parallel)
        return ms

    def no_pairs_reason(self, ctx: Context) -> str:
        return "fewer than two hosts per rail"


@register
class RailBandwidth(PairBandwidth):
    """ib_write_bw between hosts on each rail, both directions (lab: iperf3 through the same runner)."""

    name = "rail-bandwidth"
    tags = ["traffic", "bandwidth", "rail"]

    def pairs(self, ctx: Context, quick: bool) -> Iterator[dict[int, list[Pair]]]:
        return (rd.pairs for rd in iter_schedule(hosts_per_rail(ctx.fabric, self.inputs.rails), quick=quick))  # type: ignore[attr-defined]


@register
class CrossSuBandwidth(PairBandwidth):
    """The same across scalable units, through the spines."""

    name = "cross-su-bandwidth"
    tags = ["traffic", "bandwidth", "spine"]

    def pairs(self, ctx: Context, quick: bool) -> Iterator[dict[int, list[Pair]]]:
        shared: dict[tuple[tuple[str, ...], ...], Iterable[list[Pair]]] = {}  # rails with the same units share
        per_rail: dict[int, Iterable[list[Pair]]] = {}
        for rail, hosts in hosts_per_rail(ctx.fabric, self.inputs.rails).items():  # type: ignore[attr-defined]
            sus: dict[int, list[str]] = {}
            for h in hosts:
                sus.setdefault(ctx.fabric.hosts[h].su, []).append(h)
            units = tuple(tuple(sus[s]) for s in sorted(sus))
            per_rail[rail] = shared.setdefault(units, cross_rounds(units, quick=quick))
        return rounds_together(per_rail)

    def no_pairs_reason(self, ctx: Context) -> str:
        return f"one scalable unit ({len({h.su for h in ctx.fabric.hosts.values()})}): no spine path to test"
