"""The acceptance checks: each a small class with a pydantic `Input`, selected and parameterized by the
catalog (fabric.accept.catalog). Failure messages read "Expected … Actual …".

A check whose tool is missing on the hosts (no RDMA NIC, no nccl-tests, no switch access) returns
`skipped` with the reason — never a pass.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field

from fabric.accept import counters as cn
from fabric.accept import transport as tr
from fabric.accept.locate import GroupOutcome, Link, Location, locate
from fabric.accept.results import CheckResult, Measurement
from fabric.accept.schedule import Pair, cross_rounds, schedule
from fabric.accept.tools import TOOLS, Tool, ends, measure_links, missing
from fabric.design.intent import FabricIntent


class Input(BaseModel):
    model_config = ConfigDict(extra="forbid")


@dataclass
class Context:
    """What a check may use: the intent, the transport, the lab (if any) and what ran before."""

    fabric: FabricIntent
    transport: tr.Transport
    quick: bool = False
    lab: object | None = None  # fabric.lab.state.LabState
    report_dir: Path | None = None
    progress: Callable[[str], None] = lambda _m: None
    traffic: list[Measurement] = field(default_factory=list)  # links exercised by traffic checks
    before: cn.Snapshot | None = None
    after: cn.Snapshot | None = None


class Check:
    """Base class: `name`, default `tags`, `phase` (pre → traffic → post), an `Input` and `run`."""

    name: ClassVar[str] = ""
    tags: ClassVar[list[str]] = []
    phase: ClassVar[Literal["pre", "traffic", "post"]] = "pre"
    Input: ClassVar[type[Input]] = Input

    def __init__(self, inputs: Input, *, name: str | None = None, tags: list[str] | None = None) -> None:
        self.inputs = inputs
        self.id = name or self.name
        self.tag_list = list(tags) if tags is not None else list(self.tags)

    def result(self, status: str, message: str = "", **kw: object) -> CheckResult:
        return CheckResult(name=self.id, check=self.name, tags=self.tag_list, status=status,  # type: ignore[arg-type]
                           message=message, **kw)  # type: ignore[arg-type]

    def run(self, ctx: Context) -> CheckResult:
        raise NotImplementedError


# -- traffic -------------------------------------------------------------------------------------

class TrafficInput(Input):
    tool: str = Field("ib_write_bw", description="ib_write_bw (RDMA) or iperf3 (lab stand-in)")
    threshold_gbps: float | None = Field(None, description="absolute minimum; default fraction × link speed")
    fraction_of_link: float = Field(0.9, gt=0, le=1)
    seconds: float = Field(5, gt=0, le=120, description="per test (-D / -t)")
    timeout_s: float = Field(30, gt=0, description="per test, servers included")
    message_size: int = Field(1 << 20, description="ib_write_bw -s (large messages)")
    qps: int = Field(4, ge=1)
    parallel: int = Field(16, ge=1, description="concurrent tests (bounded)")
    quick: bool | None = Field(None, description="pair every host once (default: --quick)")
    locate: bool = Field(True, description="bisect failures down to a host and rail")
    rails: list[int] | None = None


def _tool(inputs: TrafficInput) -> Tool:
    if inputs.tool not in TOOLS:
        raise ValueError(f"tool: expected one of {', '.join(TOOLS)}, found {inputs.tool!r}")
    cls = TOOLS[inputs.tool]
    if inputs.tool == "ib_write_bw":
        return cls(size=inputs.message_size, qps=inputs.qps)  # type: ignore[call-arg]
    return cls()


def _threshold(inputs: TrafficInput, fabric: FabricIntent, rail: int) -> float:
    if inputs.threshold_gbps is not None:
        return inputs.threshold_gbps
    speeds = [r.speed for h in fabric.hosts.values() for r in h.rails if r.rail == rail]
    return round(min(speeds) * inputs.fraction_of_link, 3)


def _locate_rails(ctx: Context, tool: Tool, inputs: TrafficInput, rails: dict[int, list[str]]) -> list[Location]:
    """Bisect every failing rail at once (rails are independent), with ring probes of `tool`."""
    ep = ends(ctx.fabric)

    def probe(rail: int, groups: list[list[str]]) -> list[GroupOutcome]:
        thr = _threshold(inputs, ctx.fabric, rail)
        links = [(ep[(g[i], rail)], ep[(g[(i + 1) % len(g)], rail)]) for g in groups for i in range(len(g))]
        ctx.progress(f"locate rail {rail}: {len(groups)} groups, {len(links)} links")
        ms = measure_links(ctx.transport, tool, links, seconds=inputs.seconds, timeout=inputs.timeout_s,
                           threshold=thr, workers=inputs.parallel)
        out, k = [], 0
        for g in groups:
            part, k = ms[k:k + len(g)], k + len(g)
            lk = [Link(src=m.src, dst=m.dst, value=m.value or 0.0) for m in part]
            out.append(GroupOutcome(hosts=g, links=lk, value=min(x.value for x in lk),
                                    ok=all(m.ok for m in part),
                                    detail="; ".join(m.detail for m in part if m.detail)))
        return out

    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(max_workers=max(1, len(rails))) as pool:
        return list(pool.map(lambda kv: locate(kv[0], kv[1], probe), sorted(rails.items())))


def _evidence(loc: Location, fabric: FabricIntent) -> list[str]:
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


class PairBandwidth(Check):
    """Shared by rail-bandwidth and cross-su-bandwidth: scheduled pairs, both directions, per rail."""

    phase = "traffic"
    Input = TrafficInput

    def pairs(self, ctx: Context, quick: bool) -> list[dict[int, list[Pair]]]:
        raise NotImplementedError

    def run(self, ctx: Context) -> CheckResult:
        inputs: TrafficInput = self.inputs  # type: ignore[assignment]
        tool = _tool(inputs)
        quick = ctx.quick if inputs.quick is None else inputs.quick
        rounds = self.pairs(ctx, quick)
        if not rounds:
            return self.result("skipped", self.no_pairs_reason(ctx))
        hosts = sorted({h for rd in rounds for ps in rd.values() for p in ps for h in p})
        why = missing(ctx.transport, tool, hosts, ctx.fabric)
        if why:
            return self.result("skipped", f"{tool.name} cannot run: {why}")
        ep = ends(ctx.fabric)
        ms: list[Measurement] = []
        for k, rd in enumerate(rounds, 1):
            jobs = [(rail, a, b) for rail, ps in rd.items() for a, b in ps]
            ctx.progress(f"{self.id}: round {k}/{len(rounds)}, {len(jobs)} pairs × 2 directions")
            for direction in (0, 1):
                links = [(ep[(a, rail)], ep[(b, rail)]) if direction == 0 else (ep[(b, rail)], ep[(a, rail)])
                         for rail, a, b in jobs]
                thr = {rail: _threshold(inputs, ctx.fabric, rail) for rail, _, _ in jobs}
                got = measure_links(ctx.transport, tool, links, seconds=inputs.seconds, timeout=inputs.timeout_s,
                                    threshold=None, workers=inputs.parallel)
                for m in got:
                    m.threshold = thr[m.rail or 0]
                    if m.value is not None:
                        m.ok = m.value >= m.threshold
                ms += got
        ctx.traffic += ms
        bad = [m for m in ms if not m.ok]
        res = self.result("pass" if not bad else "fail", measurements=ms, rounds=len(rounds))
        if not bad:
            low = min(ms, key=lambda m: m.value or 0.0)
            res.message = (f"{len(ms)} tests ≥ threshold; lowest {low.value:g} {tool.unit} "
                           f"({low.src}→{low.dst} rail {low.rail})")
            return res
        worst = min(bad, key=lambda m: m.value or 0.0)
        res.message = (f"Expected ≥ {worst.threshold:g} {tool.unit} on every rail and direction. Actual: "
                       f"{len(bad)}/{len(ms)} below, worst {worst.src}→{worst.dst} rail {worst.rail} "
                       + (f"{worst.value:g} {tool.unit}" if worst.value is not None else worst.detail))
        if inputs.locate:
            failing: dict[int, list[str]] = {}
            for m in bad:
                failing.setdefault(m.rail or 0, [])
            for rail in failing:
                failing[rail] = sorted({h for m in ms if m.rail == rail for h in (m.src, m.dst)})
            res.locations = _locate_rails(ctx, tool, inputs, failing)
            res.rounds += max((loc.rounds for loc in res.locations), default=0)
            for loc in res.locations:
                res.evidence += _evidence(loc, ctx.fabric)
            res.message += ". Located: " + "; ".join(loc.summary for loc in res.locations)
        return res

    def no_pairs_reason(self, ctx: Context) -> str:
        return "fewer than two hosts per rail"


def _hosts_per_rail(fabric: FabricIntent, rails: list[int] | None) -> dict[int, list[str]]:
    out: dict[int, list[str]] = {}
    for h in fabric.hosts.values():
        for r in h.rails:
            if rails is None or r.rail in rails:
                out.setdefault(r.rail, []).append(h.name)
    return out


class RailBandwidth(PairBandwidth):
    """ib_write_bw between hosts on each rail, both directions (lab: iperf3 through the same runner)."""

    name = "rail-bandwidth"
    tags = ["traffic", "bandwidth", "rail"]

    def pairs(self, ctx: Context, quick: bool) -> list[dict[int, list[Pair]]]:
        return [rd.pairs for rd in schedule(_hosts_per_rail(ctx.fabric, self.inputs.rails), quick=quick)]  # type: ignore[attr-defined]


class CrossSuBandwidth(PairBandwidth):
    """The same across scalable units, through the spines."""

    name = "cross-su-bandwidth"
    tags = ["traffic", "bandwidth", "spine"]

    def pairs(self, ctx: Context, quick: bool) -> list[dict[int, list[Pair]]]:
        per_rail: dict[int, list[list[Pair]]] = {}
        for rail, hosts in _hosts_per_rail(ctx.fabric, self.inputs.rails).items():  # type: ignore[attr-defined]
            sus: dict[int, list[str]] = {}
            for h in hosts:
                sus.setdefault(ctx.fabric.hosts[h].su, []).append(h)
            per_rail[rail] = cross_rounds([sus[s] for s in sorted(sus)], quick=quick)
        depth = max((len(v) for v in per_rail.values()), default=0)
        return [{rail: rs[k] for rail, rs in per_rail.items() if k < len(rs)} for k in range(depth)]

    def no_pairs_reason(self, ctx: Context) -> str:
        return f"one scalable unit ({len({h.su for h in ctx.fabric.hosts.values()})}): no spine path to test"


class LatencyInput(Input):
    tool: str = Field("ib_write_lat", description="ib_write_lat (RDMA) or ping (lab stand-in)")
    max_p99_us: float = Field(5.0, gt=0, description="one-way p99 latency limit")
    iterations: int = Field(5000, ge=10)
    timeout_s: float = 30
    parallel: int = 16
    quick: bool | None = None
    rails: list[int] | None = None


class RailLatency(Check):
    """ib_write_lat between host pairs on each rail, judged on p99 (lab: ping RTT/2)."""

    name = "rail-latency"
    tags = ["traffic", "latency", "rail"]
    phase = "traffic"
    Input = LatencyInput

    def run(self, ctx: Context) -> CheckResult:
        inputs: LatencyInput = self.inputs  # type: ignore[assignment]
        cls = TOOLS.get(inputs.tool)
        if cls is None or cls.higher_is_better:
            raise ValueError(f"tool: expected ib_write_lat or ping, found {inputs.tool!r}")
        tool = cls(iterations=inputs.iterations) if inputs.tool == "ib_write_lat" else cls()  # type: ignore[call-arg]
        quick = ctx.quick if inputs.quick is None else inputs.quick
        rounds = schedule(_hosts_per_rail(ctx.fabric, inputs.rails), quick=quick)
        if not rounds:
            return self.result("skipped", "fewer than two hosts per rail")
        hosts = sorted({h for rd in rounds for _, a, b in rd.jobs for h in (a, b)})
        why = missing(ctx.transport, tool, hosts, ctx.fabric)
        if why:
            return self.result("skipped", f"{tool.name} cannot run: {why}")
        ep = ends(ctx.fabric)
        ms: list[Measurement] = []
        for k, rd in enumerate(rounds, 1):
            ctx.progress(f"{self.id}: round {k}/{len(rounds)}")
            links = [(ep[(a, rail)], ep[(b, rail)]) for rail, a, b in rd.jobs]
            ms += measure_links(ctx.transport, tool, links, seconds=1, timeout=inputs.timeout_s,
                                threshold=inputs.max_p99_us, workers=inputs.parallel)
        bad = [m for m in ms if not m.ok]
        if not bad:
            hi = max(ms, key=lambda m: m.value or 0.0)
            return self.result("pass", f"{len(ms)} pairs, highest p99 {hi.value:g} us ({hi.src}→{hi.dst} "
                               f"rail {hi.rail})", measurements=ms, rounds=len(rounds))
        worst = max(bad, key=lambda m: m.value if m.value is not None else float("inf"))
        actual = f"{worst.value:g} us" if worst.value is not None else worst.detail
        return self.result("fail", f"Expected p99 ≤ {inputs.max_p99_us:g} us. Actual: {len(bad)}/{len(ms)} "
                           f"above, worst {worst.src}→{worst.dst} rail {worst.rail} {actual}",
                           measurements=ms, rounds=len(rounds))


# -- NCCL ------------------------------------------------------------------------------------------

class NcclInput(Input):
    binary: str = "all_reduce_perf"
    launcher: Literal["mpirun", "slurm", "k8s"] = "mpirun"
    pairs: Literal["quick", "all", "none"] = "quick"
    cluster: bool = True
    min_bytes: str = "8"
    max_bytes: str = "8G"
    largest_sizes: int = Field(2, ge=1, description="judge the lowest busbw over the N largest sizes")
    fraction_of_line: float = Field(0.9, gt=0, le=1.5,
                                    description="busbw threshold = fraction × NICs × link speed / 8 (GB/s)")
    min_busbw_gbytes: float | None = Field(None, description="absolute threshold instead")
    gpus_per_host: int | None = None
    timeout_s: float = 600
    image: str = "nvcr.io/nvidia/pytorch:24.07-py3"
    locate_tool: str = Field("ib_write_bw", description="rail tool for fault location after a failure")


def expected_busbw(fabric: FabricIntent, hosts: list[str]) -> float:
    """Line-rate bus bandwidth in GB/s: the slowest host's NIC count × link speed / 8."""
    return min(sum(r.speed for r in fabric.hosts[h].rails) / 8 for h in hosts)


def judge_nccl(text: str, *, expected_gbytes: float, fraction: float, largest: int, file: str = "nccl",
               absolute: float | None = None) -> Measurement:
    """Judge nccl-tests output on busbw at the largest sizes (never the 'Avg bus bandwidth' line)."""
    from fabric.accept.parsers import busbw_at_largest, parse_nccl

    res = parse_nccl(text, file)
    threshold = absolute if absolute is not None else round(expected_gbytes * fraction, 2)
    if not res.rows:
        return Measurement(unit="GB/s", threshold=threshold, ok=False, tool="all_reduce_perf",
                           detail="no result rows")
    value = busbw_at_largest(res, largest)
    wrong = sum((r.out_of_place.wrong or 0) + (r.in_place.wrong or 0) for r in res.rows)
    ok = value >= threshold and wrong == 0 and res.out_of_bounds_ok is not False
    detail = f"avg line {res.avg_busbw} GB/s (not judged)" + (f"; {wrong} wrong" if wrong else "")
    return Measurement(value=value, unit="GB/s", threshold=threshold, ok=ok, tool="all_reduce_perf",
                       detail=detail)


class NcclAllReduce(Check):
    """nccl-tests all_reduce_perf between host pairs and across the cluster, NCCL env from the rendering."""

    name = "nccl-allreduce"
    tags = ["traffic", "nccl", "bandwidth"]
    phase = "traffic"
    Input = NcclInput

    def run(self, ctx: Context) -> CheckResult:
        from fabric.accept import launchers

        inputs: NcclInput = self.inputs  # type: ignore[assignment]
        hosts = sorted(ctx.fabric.hosts)
        if len(hosts) < 2:
            return self.result("skipped", "fewer than two hosts")
        groups: list[list[str]] = []
        if inputs.pairs != "none":
            for rd in schedule({0: hosts}, quick=inputs.pairs == "quick"):
                groups += [list(p) for p in rd.pairs.get(0, [])]
        if inputs.cluster and len(hosts) > 2:
            groups.append(hosts)
        out_dir = (ctx.report_dir or Path("build/accept")) / "launch" / self.id
        jobs = [launchers.nccl_job(ctx.fabric, g, inputs, name=f"{self.id}-{i}") for i, g in enumerate(groups)]
        rendered = [str(p) for j in jobs for p in launchers.render(j, inputs.launcher, ctx.fabric, out_dir)]
        runner = launchers.runner(inputs.launcher, ctx.transport, hosts, inputs.binary)
        if runner.skip:
            return self.result("skipped", f"{inputs.launcher}: {runner.skip} (rendered {len(rendered)} files "
                               f"in {out_dir})", rendered=rendered)
        ms: list[Measurement] = []
        for j in jobs:
            ctx.progress(f"{self.id}: {j.name} ({len(j.hosts)} hosts)")
            text, err = runner.run(j, out_dir, inputs.timeout_s)
            exp = expected_busbw(ctx.fabric, j.hosts)
            if err:
                m = Measurement(unit="GB/s", ok=False, tool=inputs.binary, detail=err)
            else:
                try:
                    m = judge_nccl(text, expected_gbytes=exp, fraction=inputs.fraction_of_line,
                                   largest=inputs.largest_sizes, file=j.name, absolute=inputs.min_busbw_gbytes)
                except Exception as exc:
                    m = Measurement(unit="GB/s", ok=False, tool=inputs.binary, detail=str(exc).splitlines()[0])
            m.src, m.dst = j.hosts[0], (j.hosts[1] if len(j.hosts) == 2 else f"{len(j.hosts)} hosts")
            ms.append(m)
        bad = [m for m in ms if not m.ok]
        res = self.result("pass" if not bad else "fail", measurements=ms, rendered=rendered, rounds=len(jobs))
        if not bad:
            res.message = f"{len(ms)} runs; lowest busbw {min(m.value or 0 for m in ms):g} GB/s at the largest sizes"
            return res
        w = bad[0]
        res.message = (f"Expected busbw ≥ {w.threshold} GB/s at the {inputs.largest_sizes} largest sizes. "
                       f"Actual: {w.value if w.value is not None else w.detail} ({w.src}, {w.dst})")
        tool_cls = TOOLS.get(inputs.locate_tool)
        if tool_cls is not None and not missing(ctx.transport, tool_cls(), hosts[:1], ctx.fabric):
            ti = TrafficInput(tool=inputs.locate_tool, seconds=2)
            failing = sorted({h for m in bad for h in ([m.src, m.dst] if m.dst in hosts else hosts)})
            rails = sorted({r.rail for h in failing for r in ctx.fabric.hosts[h].rails})
            res.locations = [loc for loc in _locate_rails(ctx, tool_cls(), ti, dict.fromkeys(rails, failing))
                             if loc.hosts or loc.between or loc.suspects]
            for loc in res.locations:
                res.evidence += _evidence(loc, ctx.fabric)
        return res


# -- state checks ----------------------------------------------------------------------------------

class HostConfigInput(Input):
    command: list[str] = Field(["fabric", "host", "plan", "--intent", "/var/lib/roce-fabric/host.json",
                                "--format", "json"], description="run on real hosts (not the lab)")
    strict: bool = Field(False, description="skipped agent items count as differences")


class HostConfig(Check):
    """The host agent's plan is empty on every host (nothing would change)."""

    name = "host-config"
    tags = ["host", "config"]
    Input = HostConfigInput

    def run(self, ctx: Context) -> CheckResult:
        import json

        from fabric.host.model import HostPlan

        inputs: HostConfigInput = self.inputs  # type: ignore[assignment]
        ms: list[Measurement] = []
        for name, intent in sorted(ctx.fabric.hosts.items()):
            ns = ctx.transport.netns(name)
            try:
                if ns is not None:
                    from fabric.host.agent import plan

                    hp = plan(intent, netns=ns)
                else:
                    c = tr.run(ctx.transport, name, inputs.command, timeout=60)
                    if c.rc not in (0, 1):
                        raise RuntimeError(c.last_error)
                    hp = HostPlan.model_validate(json.loads(c.stdout))
            except Exception as exc:
                ms.append(Measurement(src=name, ok=False, detail=f"no plan: {exc}"))
                continue
            pending = [i for i in hp.items if i.status in ("changed", "failed")
                       or (inputs.strict and i.status == "skipped")]
            skipped = sum(i.status == "skipped" for i in hp.items)
            detail = "; ".join(f"{i.section} {i.target} {i.name}: {i.current} → {i.desired}"
                               + (f" ({i.reason})" if i.reason else "") for i in pending[:5])
            if skipped and not pending:
                detail = f"{skipped} items not applicable here (e.g. no mlnx_qos/RDMA sysfs)"
            ms.append(Measurement(src=name, value=len(pending), unit="changes", threshold=0, ok=not pending,
                                  detail=detail))
        bad = [m for m in ms if not m.ok]
        if bad:
            return self.result("fail", "Expected an empty host plan on every host. Actual: "
                               + "; ".join(f"{m.src}: {m.detail}" for m in bad[:3]), measurements=ms)
        return self.result("pass", f"{len(ms)} hosts: nothing to change", measurements=ms)


class BgpInput(Input):
    pass


class Bgp(Check):
    """Every BGP session established and ECMP as wide as designed (read from each switch's FRR)."""

    name = "bgp"
    tags = ["switch", "bgp"]
    Input = BgpInput

    def run(self, ctx: Context) -> CheckResult:
        if ctx.lab is None:
            return self.result("skipped", "switch state needs switch access (lab: --lab); no switch target "
                               "session is configured for acceptance")
        from fabric.lab.status import switches_status

        sws = switches_status(ctx.lab, ctx.fabric)  # type: ignore[arg-type]
        ms = [Measurement(src=s.name, value=s.ecmp_min, unit="ECMP", threshold=s.ecmp_expected, ok=not s.problems,
                          detail="; ".join(s.problems) or
                          f"{sum(x.state == 'Established' for x in s.sessions)}/{len(s.sessions)} established")
              for s in sws]
        bad = [p for s in sws for p in s.problems]
        if bad:
            return self.result("fail", "Expected every session Established and full ECMP. Actual: "
                               + "; ".join(bad[:4]) + (f" (+{len(bad) - 4} more)" if len(bad) > 4 else ""),
                               measurements=ms)
        return self.result("pass", f"{sum(len(s.sessions) for s in sws)} sessions established, ECMP as designed "
                           f"on {len(sws)} switches", measurements=ms)


class CountersInput(Input):
    allow: list[str] = Field([], description="counter names (source:name) whose increase is tolerated")


def lossless_findings(before: cn.Snapshot, after: cn.Snapshot, traffic: list[Measurement],
                      fabric: FabricIntent, allow: list[str] = ()) -> tuple[list[Measurement], list[str]]:
    """Increases of discard/sequence counters, and receivers sending CNPs that their senders ignore."""
    d = cn.delta(before, after)
    ms: list[Measurement] = []
    problems: list[str] = []
    netdev = {(h.name, r.ifname): r.rail for h in fabric.hosts.values() for r in h.rails}
    for host, ports in sorted(d.items()):
        for port, cs in sorted(ports.items()):
            rail = netdev.get((host, port))
            grew = {k: v for k, v in cs.items() if v > 0 and k not in allow
                    and (cn.DISCARD.search(k) or cn.SEQUENCE.search(k))}
            ms.append(Measurement(rail=rail, src=host, value=sum(grew.values()), unit="increments", threshold=0,
                                  ok=not grew, detail=", ".join(f"{k} +{v}" for k, v in sorted(grew.items()))
                                  or f"{len(cs)} counters flat"))
            if grew:
                problems.append(f"{host} {port}: " + ", ".join(f"{k} +{v}" for k, v in sorted(grew.items())))
    by_rail = {(h.name, r.rail): r.ifname for h in fabric.hosts.values() for r in h.rails}
    for (host, rail), ifname in sorted(by_rail.items()):
        sent = d.get(host, {}).get(ifname, {}).get(cn.CNP_SENT, 0)
        if sent <= 0:
            continue
        senders = sorted({m.src for m in traffic if m.dst == host and m.rail == rail})
        handled = {s: d.get(s, {}).get(by_rail.get((s, rail), ""), {}).get(cn.CNP_HANDLED, 0) for s in senders}
        if senders and all(v == 0 for v in handled.values()):
            problems.append(f"{host} rail {rail}: np_cnp_sent +{sent} but rp_cnp_handled flat on senders "
                            f"{', '.join(senders)} (CNPs not reaching or not handled: check CNP DSCP/priority)")
            ms.append(Measurement(rail=rail, src=host, dst=",".join(senders), value=sent, unit="CNPs", ok=False,
                                  detail="np_cnp_sent grows, senders' rp_cnp_handled flat"))
    return ms, problems


class LosslessCounters(Check):
    """ethtool -S, link statistics and RDMA hw_counters before and after the traffic checks."""

    name = "lossless-counters"
    tags = ["counters", "lossless"]
    phase = "post"
    Input = CountersInput

    def run(self, ctx: Context) -> CheckResult:
        if ctx.before is None or ctx.after is None:
            return self.result("skipped", "no counter snapshots")
        exposed = {k.split(":", 1)[0] for ports in ctx.after.values() for cs in ports.values() for k in cs}
        if not exposed:
            return self.result("skipped", "no counters readable on any host (ethtool/ip/hw_counters)")
        ms, problems = lossless_findings(ctx.before, ctx.after, ctx.traffic, ctx.fabric, self.inputs.allow)  # type: ignore[attr-defined]
        note = f"sources {', '.join(sorted(exposed))}" + ("" if "hw" in exposed else "; no RDMA hw_counters")
        if problems:
            return self.result("fail", "Expected no discard/sequence-error increase and CNPs handled. Actual: "
                               + "; ".join(problems[:4]), measurements=ms, evidence=problems)
        return self.result("pass", f"{len(ms)} ports flat over {len(ctx.traffic)} traffic tests ({note})",
                           measurements=ms)


class PfcWatchdog(Check):
    """No PFC storms: NIC tx_pause_storm_* events (switch watchdog counters where exposed)."""

    name = "pfc-watchdog"
    tags = ["counters", "pfc"]
    phase = "post"
    Input = CountersInput

    def run(self, ctx: Context) -> CheckResult:
        snap = ctx.after or {}
        ms = []
        for host, ports in sorted(snap.items()):
            for port, cs in sorted(ports.items()):
                storm = {k: v for k, v in cs.items() if cn.STORM.search(k)}
                if storm:
                    n = sum(storm.values())
                    ms.append(Measurement(src=host, dst=port, value=n, unit="events", threshold=0, ok=n == 0,
                                          detail=", ".join(f"{k}={v}" for k, v in sorted(storm.items()))))
        if not ms:
            return self.result("skipped", "no port exposes PFC storm counters (ethtool tx_pause_storm_*; "
                               "veths and non-mlx5 NICs have none)")
        bad = [m for m in ms if not m.ok]
        if bad:
            return self.result("fail", "Expected no PFC storm events. Actual: "
                               + "; ".join(f"{m.src} {m.dst}: {m.detail}" for m in bad[:4]), measurements=ms)
        return self.result("pass", f"{len(ms)} ports without storm events", measurements=ms)


CHECKS: dict[str, type[Check]] = {c.name: c for c in (HostConfig, Bgp, RailBandwidth, CrossSuBandwidth, RailLatency,
                                                      NcclAllReduce, LosslessCounters, PfcWatchdog)}


def run_check(check: Check, ctx: Context) -> CheckResult:
    """Run one check; an unexpected exception becomes an `error` result, never a crashed run."""
    t0 = time.monotonic()
    try:
        res = check.run(ctx)
    except Exception as exc:
        res = check.result("error", f"{type(exc).__name__}: {exc}")
    res.seconds = round(time.monotonic() - t0, 2)
    return res
