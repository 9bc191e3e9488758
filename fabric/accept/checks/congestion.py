"""Congestion checks: `incast` (N senders → 1 receiver per rail) and `ets` (the RoCE class against bulk TCP on one
egress port). Each round reads the counters of the receivers' leaf ports and of the hosts before and after, so
the result carries what the switch did: CE-marked packets and drops on the receiver's leaf egress queue, PFC
pauses, and per sender whether it handled the receiver's CNPs.

In the lab (no RDMA) iperf3 TCP with ECN, carrying the RoCE ToS, stands in for RoCE; the lab's switch ports are
shaped and queued by fabric.lab.qos, so they congest and (with `red`) mark like a switch.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from itertools import pairwise
from statistics import median

from pydantic import Field

from fabric.accept import counters as cn
from fabric.accept.checks.base import Check, Context, Input, hosts_per_rail, register
from fabric.accept.locate import Location
from fabric.accept.results import CheckResult, Measurement, Planned
from fabric.accept.tools import (
    TOOLS,
    End,
    Iperf3,
    Tool,
    ends,
    lossless_priority,
    measure_links,
    missing,
    planned_links,
)
from fabric.design.intent import FabricIntent


class CongestionInput(Input):
    tool: str = Field("ib_write_bw", description="the RoCE-class traffic: ib_write_bw (--tclass) or iperf3 (lab: TCP "
                      "with ECN and the RoCE ToS)")
    seconds: float = Field(5, gt=0, le=60, description="each round, bounded")
    timeout_s: float = Field(30, gt=0)
    rails: list[int] | None = None


def _tool(name: str, streams: int = 1) -> Tool:
    if name not in ("ib_write_bw", "iperf3"):
        raise ValueError(f"tool: expected ib_write_bw or iperf3, found {name!r}")
    return Iperf3(streams=streams) if name == "iperf3" else TOOLS[name]()


def _port(fabric: FabricIntent, host: str, rail: int) -> tuple[str, str]:
    r = next(x for x in fabric.hosts[host].rails if x.rail == rail)
    return r.leaf, r.leaf_port


def _queue(d: cn.Snapshot, leaf: str, port: str, tc: int) -> dict[str, int | None]:
    """The queue's counters (ECN marks from the port where the NOS counts them per port only)."""
    cs = d.get(leaf, {}).get(port, {})
    q = {k: cs.get(f"queue:{tc}:{k}") for k in ("ecn_marked", "drops", "tx_bytes")}
    if q["ecn_marked"] is None:
        q["ecn_marked"] = cs.get("port:ecn_marked")
    return q


def _pauses(d: cn.Snapshot, leaf: str, port: str) -> int | None:
    cs = d.get(leaf, {}).get(port, {})
    keys = [k for k in cs if cn.PAUSE.search(k)]
    return sum(cs[k] for k in keys) if keys else None


def _round(ctx: Context, tool: Tool, links: list[tuple[End, End]], inputs: CongestionInput,
           extra: tuple[Tool, list[tuple[End, End]]] | None = None) -> tuple[list[Measurement], list[Measurement],
                                                                             cn.Snapshot]:
    """Counters of the receivers' leaves and every host involved, the traffic (and `extra` traffic at the same
    time, from another tool), counters again: (measurements, extra measurements, delta)."""
    fabric = ctx.fabric
    everything = links + (extra[1] if extra else [])
    leaves = sorted({_port(fabric, dst.host, dst.rail)[0] for _src, dst in everything})
    hosts = sorted({e.host for link in everything for e in link})
    receivers = sorted({dst.host for _src, dst in everything})
    before = cn.snapshot(ctx.site, nodes=leaves + hosts, workers=8)
    kernel_before = cn.kernel_ecn(ctx.site, receivers)

    def go(job: tuple[Tool, list[tuple[End, End]]]) -> list[Measurement]:
        t, lk = job
        return measure_links(ctx.site, t, lk, seconds=inputs.seconds, timeout=inputs.timeout_s, threshold=None,
                             workers=len(lk), rerun_unmeasured=False)  # the round's counters hold these runs alone

    jobs = [(tool, links)] + ([extra] if extra else [])
    with ThreadPoolExecutor(max_workers=len(jobs)) as pool:
        got = list(pool.map(go, jobs))
    after = cn.snapshot(ctx.site, nodes=leaves + hosts, workers=8)
    kernel = cn.delta(kernel_before, cn.kernel_ecn(ctx.site, receivers))
    d = cn.delta(before, after)
    for h, ports in kernel.items():
        d.setdefault(h, {}).update(ports)
    return got[0], got[1] if extra else [], d


class IncastInput(CongestionInput):
    senders: int = Field(0, ge=0, description="senders per receiver (0: every other host on the rail)")
    receivers: str = Field("one", pattern="^(one|all)$", description="one receiver per rail, or each host in turn")
    fair_share: float = Field(0.6, gt=0, le=1, description="each sender ≥ this × (aggregate / senders)")
    threshold_gbps: float | None = Field(None, description="aggregate into the receiver; default fraction × link")
    fraction_of_link: float = Field(0.8, gt=0, le=1)
    expect_marks: bool = Field(True, description="CE marks on the receiver's leaf egress queue, where it counts them")
    streams: int = Field(1, ge=1, le=16, description="iperf3 -P: TCP streams per sender (the lab's stand-in), enough "
                         "to keep the receiver's queue above its marking threshold")


ALONE_TRIES = 2  # runs of a slow sender alone: a run starved of CPU is not the path's rate


def _floor(fabric: FabricIntent, inputs: IncastInput, rail: int, hosts: list[str]) -> float:
    """The aggregate's floor into a receiver on one rail, in Gb/s: the input's, or its fraction of the slowest
    of these hosts' links on the rail (also what a sender alone into it must reach)."""
    if inputs.threshold_gbps is not None:
        return inputs.threshold_gbps
    return min(r.speed for h in hosts for r in fabric.hosts[h].rails if r.rail == rail) * inputs.fraction_of_link


@register
class Incast(Check):
    """N senders → 1 receiver per rail at once, bounded: per sender its fair share and its CNPs handled, per
    receiver leaf port the CE-marked packets, drops and pauses of the RoCE queue; a slow sender or receiver
    port is named. A sender below its fair share is measured again alone into the receiver: where its path then
    carries the port's rate, the share it got is its congestion control's, not the fabric's, and it is reported,
    not failed; where its path cannot, it is the located fault."""

    name = "incast"
    tags = ["traffic", "congestion", "ecn", "incast"]
    phase = "traffic"
    Input = IncastInput

    def rounds(self, fabric: FabricIntent) -> list[dict[int, tuple[str, list[str]]]]:
        """Per round, per rail: (receiver, senders)."""
        inputs: IncastInput = self.inputs  # type: ignore[assignment]
        per_rail = {rail: sorted(hs) for rail, hs in hosts_per_rail(fabric, inputs.rails).items() if len(hs) > 1}
        depth = max((len(hs) if inputs.receivers == "all" else 1 for hs in per_rail.values()), default=0)
        out = []
        for k in range(depth):
            rd = {}
            for rail, hs in per_rail.items():
                if k < (len(hs) if inputs.receivers == "all" else 1):
                    others = [h for h in hs if h != hs[k]]
                    rd[rail] = (hs[k], others[: inputs.senders] if inputs.senders else others)
            out.append(rd)
        return out

    def _links(self, ep: dict[tuple[str, int], End], rd: dict[int, tuple[str, list[str]]]) -> list[tuple[End, End]]:
        return [(ep[(s, rail)], ep[(r, rail)]) for rail, (r, ss) in sorted(rd.items()) for s in ss]

    def plan(self, ctx: Context) -> list[Planned]:
        inputs: IncastInput = self.inputs  # type: ignore[assignment]
        ep, tool = ends(ctx.fabric), _tool(inputs.tool, inputs.streams)
        return [p for k, rd in enumerate(self.rounds(ctx.fabric), 1)
                for p in planned_links(tool, self._links(ep, rd), seconds=inputs.seconds, round_=str(k))]

    def run(self, ctx: Context) -> CheckResult:
        inputs: IncastInput = self.inputs  # type: ignore[assignment]
        fabric, ep, tool = ctx.fabric, ends(ctx.fabric), _tool(inputs.tool, inputs.streams)
        rounds = self.rounds(fabric)
        if not rounds:
            return self.result("skipped", "fewer than two hosts per rail")
        why = missing(ctx.site, tool, sorted({h for rd in rounds for r, ss in rd.values() for h in (r, *ss)}), fabric)
        if why:
            return self.result("skipped", f"{tool.name} cannot run: {why}")
        ms: list[Measurement] = []
        problems: list[str] = []
        locations: list[Location] = []
        for k, rd in enumerate(rounds, 1):
            ctx.progress(f"{self.id}: round {k}/{len(rounds)}, {len(rd)} rails, "
                         f"{sum(len(ss) for _, ss in rd.values())} senders")
            got, _, d = _round(ctx, tool, self._links(ep, rd), inputs)
            ctx.traffic += got
            judged: dict[str, list[Measurement]] = {}
            for rail, (receiver, senders) in sorted(rd.items()):
                part = [m for m in got if m.rail == rail]
                alone = self._alone(ctx, tool, rail, receiver, part)
                judged.setdefault(receiver, []).extend(
                    self._judge(fabric, d, inputs, rail, receiver, senders, part, problems, locations, alone))
            for receiver, part in sorted(judged.items()):
                ms += part + received_ce(d, receiver, part)
        bad = [m for m in ms if not m.ok]
        res = self.result("fail" if bad else "pass", measurements=ms, rounds=len(rounds), locations=locations,
                          evidence=problems)
        ports = [m for m in ms if m.unit == "CE-marked packets"]
        marks = sum(int(m.value or 0) for m in ports)
        measured = [m for m in ports if m.value is not None]
        received = [m for m in ms if m.unit == RECEIVED_CE]
        shares = [m for m in ms if m.tool and m.unit != "CE-marked packets" and m.dst != "aggregate"]
        low = min((m.value / m.threshold for m in shares if m.value and m.threshold), default=0.0)
        summary = (f"{len(rounds)} rounds, {len(shares)} senders into {len(ports)} receiver leaf ports; "
                   f"lowest sender at {low:.2f}× its fair-share floor; "
                   + (f"{marks} CE-marked packets on {len(measured)}/{len(ports)} leaf ports (their qdiscs' count)"
                      if measured else "CE marks not counted by these switches")
                   + (f"; {sum(int(m.value or 0) for m in received)} CE packets received by the receivers' kernels"
                      if received else ""))
        if bad:
            res.message = (f"Expected every sender ≥ {inputs.fair_share:g}× its fair share, the aggregate at line "
                           f"rate, CE marks on the receiver's leaf queue and no lossless drops. Actual: "
                           + "; ".join(problems[:4]) + (f". Located: {'; '.join(loc.summary for loc in locations)}"
                                                        if locations else ""))
        else:
            res.message = summary
        return res

    def _alone(self, ctx: Context, tool: Tool, rail: int, receiver: str, got: list[Measurement]
               ) -> dict[str, Measurement]:
        """Each sender of one rail's incast that got less than its fair share, measured again alone into the
        receiver, one at a time (its path's own rate): up to ALONE_TRIES runs, the first at the floor or else the
        best kept, so that one run starved of CPU (an emulated host, a busy sender) does not stand for the path."""
        inputs: IncastInput = self.inputs  # type: ignore[assignment]
        ep, fair = ends(ctx.fabric), sum(m.value or 0.0 for m in got) / max(1, len(got))
        floor = _floor(ctx.fabric, inputs, rail, [receiver, *(m.src for m in got)])
        out: dict[str, Measurement] = {}
        for m in got:
            if m.value is None or m.value >= inputs.fair_share * fair:
                continue
            ctx.progress(f"{self.id}: {m.src} below its fair share, measured alone into {receiver}")
            for _ in range(ALONE_TRIES):
                solo = measure_links(ctx.site, tool, [(ep[(m.src, rail)], ep[(receiver, rail)])],
                                     seconds=inputs.seconds, timeout=inputs.timeout_s, threshold=None)[0]
                best = out.get(m.src)
                if best is None or (solo.value or 0.0) > (best.value or 0.0):
                    out[m.src] = solo
                if (solo.value or 0.0) >= floor:
                    break
        return out

    def _judge(self, fabric: FabricIntent, d: cn.Snapshot, inputs: IncastInput, rail: int, receiver: str,
               senders: list[str], got: list[Measurement], problems: list[str],
               locations: list[Location], alone: dict[str, Measurement] | None = None) -> list[Measurement]:
        """The round's judgement on one receiver: each sender's share (`alone`: the rate of a sender below it when
        it sent alone), the aggregate, the receiver port's queue, the CNPs."""
        out: list[Measurement] = []
        values = [m.value or 0.0 for m in got]
        total = sum(values)
        fair = total / len(got) if got else 0.0
        floor = _floor(fabric, inputs, rail, [receiver, *senders])
        for m in got:
            m.threshold = round(inputs.fair_share * fair, 3)
            m.ok = m.value is not None and m.value >= m.threshold
            why = m.detail  # a run with no value: its tool's error
            m.detail = (m.detail + "; " if m.detail else "") + f"{len(got)}-way incast into {receiver}"
            solo = (alone or {}).get(m.src)
            if not m.ok and m.value is not None and solo is not None and solo.value is not None:
                m.ok = solo.value >= floor
                m.detail += (f"; below {inputs.fair_share:g}× its fair share, alone {solo.value:g} {solo.unit} "
                             + (f"≥ {floor:g}: its path carries the port's rate (the senders' congestion control "
                                "shared the port unevenly)" if m.ok
                                else f"< {floor:g} at best of {ALONE_TRIES} runs: its path is slow"))
            if not m.ok:
                leaf, port = _port(fabric, m.src, rail)
                problems.append(f"{m.src}→{receiver} rail {rail} " + (
                    f"{m.value:g} {m.unit}, below {m.threshold:g} ({inputs.fair_share:g}× fair share)"
                    if m.value is not None else (why or "no result")))
                problems[-1] += f" (its port {leaf}:{port})" + (
                    f", alone {solo.value:g} {solo.unit} at best of {ALONE_TRIES} runs (< {floor:g})"
                    if solo and solo.value is not None else "")
                locations.append(Location(rail=rail, hosts=[m.src]))
        out += got
        agg = Measurement(rail=rail, src=",".join(senders), dst="aggregate", value=round(total, 3),
                          unit=got[0].unit if got else "", threshold=floor, ok=total >= floor,
                          detail=f"{len(got)} senders into {receiver}")
        if not agg.ok and all(m.ok for m in got):  # every sender got its share of too little: the receiver side
            leaf, port = _port(fabric, receiver, rail)
            problems.append(f"aggregate into {receiver} rail {rail} {total:.3g}, expected ≥ {floor:g} "
                            f"(receiver port {leaf}:{port})")
            locations.append(Location(rail=rail, hosts=[receiver]))
        out.append(agg)
        # the receiver's leaf egress queue of the RoCE class
        prio = lossless_priority(fabric, receiver)
        leaf, port = _port(fabric, receiver, rail)
        tc = fabric.switches[leaf].qos.priority_to_tc[prio] if leaf in fabric.switches else prio
        q = _queue(d, leaf, port, tc)
        pauses = _pauses(d, leaf, port)
        marked, drops = q["ecn_marked"], q["drops"]
        lossless = tc in (fabric.switches[leaf].qos.lossless_tcs if leaf in fabric.switches else [])
        ok, why = True, []
        if marked is None:
            why.append("no ECN-marked counter here")
        elif inputs.expect_marks and marked == 0:
            ok = False
            why.append("no CE marks under incast (ECN/RED off on this queue?)")
        if drops and pauses is not None and lossless:  # a PFC-capable switch dropped on the lossless queue
            ok = False
            why.append(f"{drops} drops on lossless TC{tc}")
        detail = (f"{leaf}:{port} TC{tc}: CE-marked +{marked if marked is not None else '?'}, drops "
                  f"+{drops if drops is not None else '?'}, tx +{q['tx_bytes'] if q['tx_bytes'] is not None else '?'} B"
                  + (f", PFC pause +{pauses}" if pauses is not None else "") + (f" ({'; '.join(why)})" if why else ""))
        out.append(Measurement(rail=rail, src=leaf, dst=port, value=marked, unit="CE-marked packets", ok=ok,
                               detail=detail))
        if not ok:
            problems.append(detail)
        # CNPs: the receiver's NIC sends them; each sender must handle them (judged per sender)
        cnp = d.get(receiver, {}).get(_netdev(fabric, receiver, rail), {}).get(cn.CNP_SENT)
        if cnp:
            for s in senders:
                handled = d.get(s, {}).get(_netdev(fabric, s, rail), {}).get(cn.CNP_HANDLED, 0)
                m = Measurement(rail=rail, src=s, dst=receiver, value=handled, unit="CNPs handled", ok=handled > 0,
                                detail=f"{receiver} np_cnp_sent +{cnp}; {s} rp_cnp_handled +{handled}")
                out.append(m)
                if not m.ok:
                    problems.append(f"{s} rail {rail}: rp_cnp_handled flat while {receiver} sent {cnp} CNPs "
                                    "(CNP DSCP/priority or DCQCN rp off on this sender)")
                    locations.append(Location(rail=rail, hosts=[s]))
        return out


def received_ce(d: cn.Snapshot, receiver: str, judged: list[Measurement]) -> list[Measurement]:
    """What the receiver's kernel counted CE on arrival (per packet on the wire), beside the figure of its leaf ports'
    qdiscs in `judged` (one mark per packet they queued: a GSO batch of many wire packets is one). Reported, not
    judged: the kernel counts per host, over all its rails, and RDMA NICs deliver RoCE past it."""
    ce = d.get(receiver, {}).get(cn.KERNEL, {}).get(cn.KERNEL_CE)
    if ce is None:
        return []
    ports = [m for m in judged if m.unit == "CE-marked packets"]
    qdisc = ", ".join(f"{m.src}:{m.dst} +{'?' if m.value is None else f'{m.value:g}'}" for m in ports) or "none read"
    return [Measurement(src=receiver, dst=cn.KERNEL, value=ce, unit=RECEIVED_CE,
                        detail=f"{receiver}'s kernel received +{ce} CE packets (IpExt InCEPkts, all its rails), one "
                        f"per packet on the wire; its leaf ports' qdiscs counted CE marks {qdisc}, one per queued "
                        "packet (a GSO batch is one)")]


RECEIVED_CE = "CE packets received (kernel)"


def _netdev(fabric: FabricIntent, host: str, rail: int) -> str:
    return next(r.ifname for r in fabric.hosts[host].rails if r.rail == rail)


class EtsInput(CongestionInput):
    bulk_streams: int = Field(4, ge=1, description="parallel TCP streams of the bulk flow (it would take more "
                              "than its share without ETS)")
    tolerance: float = Field(0.15, ge=0, lt=1, description="RoCE ≥ (1 − tolerance) × its configured share")


def configured_share(fabric: FabricIntent, host: str, leaf: str) -> tuple[float, int, int]:
    """(RoCE class share of the port against best effort, RoCE TC, bulk TC) from the leaf's QoS facts."""
    q = fabric.switches[leaf].qos
    roce_tc = q.priority_to_tc[lossless_priority(fabric, host)]
    bulk_tc = q.dscp_to_tc[0]
    rq, bq = q.queues.get(roce_tc), q.queues.get(bulk_tc)
    if rq and rq.scheduler == "strict":
        return 1.0, roce_tc, bulk_tc
    rw, bw = (rq.weight or 0) if rq else 0, (bq.weight or 0) if bq else 0
    return (rw / (rw + bw) if rw + bw else 0.5), roce_tc, bulk_tc


def backlogged_share(samples: list[tuple[float, dict[str, int], dict[int, int]]], roce_tc: int, bulk_tc: int
                     ) -> tuple[float | None, float]:
    """The RoCE class's share of one port read from samples of its queue counters taken during a round, each
    (seconds, queue_counters, queue_backlog): the median over the intervals whose both ends found both classes
    queued of the class's part of the `tx_bytes` both classes sent in it. DWRR divides the port by the configured
    shares only while both classes have packets waiting; a class alone (its flow started earlier or ended sooner)
    takes the whole port, which the round's totals would count. A sampler that stalled gives one long interval in
    which a class could drain and fill again unseen: the median leaves it out where a sum of the bytes would
    count it. Returns (share or None, seconds of the intervals used)."""
    shares: list[float] = []
    seconds = 0.0
    for (t0, c0, b0), (t1, c1, b1) in pairwise(samples):
        if min(b0.get(roce_tc, 0), b0.get(bulk_tc, 0), b1.get(roce_tc, 0), b1.get(bulk_tc, 0)) > 0:
            roce = c1.get(f"queue:{roce_tc}:tx_bytes", 0) - c0.get(f"queue:{roce_tc}:tx_bytes", 0)
            bulk = c1.get(f"queue:{bulk_tc}:tx_bytes", 0) - c0.get(f"queue:{bulk_tc}:tx_bytes", 0)
            if roce + bulk > 0:
                shares.append(roce / (roce + bulk))
                seconds += t1 - t0
    return (median(shares) if shares else None), seconds


@register
class Ets(Check):
    """RoCE-class traffic and bulk TCP (best effort, several streams) into one receiver's leaf port at once, per
    rail: RoCE keeps at least its configured ETS share (measured on the hosts and, where the switch counts per
    queue, on the port); a port that does not schedule by class is named."""

    name = "ets"
    tags = ["traffic", "congestion", "qos", "ets"]
    phase = "traffic"
    Input = EtsInput

    def _plan_links(self, fabric: FabricIntent):
        inputs: EtsInput = self.inputs  # type: ignore[assignment]
        ep = ends(fabric)
        roce, bulk = [], []
        for rail, hs in sorted(hosts_per_rail(fabric, inputs.rails).items()):
            hs = sorted(hs)
            if len(hs) < 2:
                continue
            receiver, a = hs[0], hs[1]
            b = hs[2] if len(hs) > 2 else hs[1]
            roce.append((ep[(a, rail)], ep[(receiver, rail)]))
            bulk.append((ep[(b, rail)], ep[(receiver, rail)]))
        return roce, bulk

    def judge(self, fabric: FabricIntent, src: End, dst: End, m: Measurement, b: Measurement, d: cn.Snapshot,
              window_share: float | None = None) -> Measurement:
        """The RoCE share of the receiver's leaf port against its floor: from the port's queue counters where the
        switch counts per class (`window_share`: already read over the round's backlogged window, see
        backlogged_share; else the round's deltas in `d`), otherwise from the hosts' rates. Where either class's
        traffic gave no result (its client never reached its server), no share: the port was not contended as the
        check means, and the tools' errors say why."""
        inputs: EtsInput = self.inputs  # type: ignore[assignment]
        leaf, port = _port(fabric, dst.host, dst.rail)
        share, roce_tc, bulk_tc = configured_share(fabric, dst.host, leaf)
        floor = round(share * (1 - inputs.tolerance), 3)
        lost = [f"{what} from {x.src} {x.detail}" for x, what in ((m, f"RoCE TC{roce_tc}"), (b, f"bulk TC{bulk_tc}"))
                if x.value is None]
        if lost:
            return Measurement(rail=src.rail, src=leaf, dst=port, unit="RoCE share", threshold=floor, ok=False,
                               tool=m.tool, detail=f"{leaf}:{port}: " + "; ".join(lost) + f"; configured {share:.0%}")
        rv, bv = m.value or 0.0, b.value or 0.0
        host_share = rv / (rv + bv) if rv + bv else 0.0
        q = d.get(leaf, {}).get(port, {})
        qr, qb = q.get(f"queue:{roce_tc}:tx_bytes"), q.get(f"queue:{bulk_tc}:tx_bytes")
        switch_share = window_share if window_share is not None else (
            qr / (qr + qb) if qr is not None and qb is not None and qr + qb else None)
        value = switch_share if switch_share is not None else host_share
        ok = value >= floor
        detail = (f"{leaf}:{port}: RoCE TC{roce_tc} {rv:.3g} {m.unit} ({src.host}) vs bulk TC{bulk_tc} "
                  f"{bv:.3g} {b.unit} ({b.src}, {inputs.bulk_streams} streams); hosts {host_share:.0%}"
                  + (f", port queues {switch_share:.0%} (TC{roce_tc} +{qr} B, TC{bulk_tc} +{qb} B"
                     + (", backlogged window" if window_share is not None else "") + ")"
                     if switch_share is not None else "") + f"; configured {share:.0%}")
        return Measurement(rail=src.rail, src=leaf, dst=port, value=round(value, 4), unit="RoCE share",
                           threshold=floor, ok=ok, tool=m.tool, detail=detail)

    def _bulk(self) -> Iperf3:
        inputs: EtsInput = self.inputs  # type: ignore[assignment]
        bulk = Iperf3(tos=0, streams=inputs.bulk_streams)
        bulk.base_port = Iperf3.base_port + 100  # its own servers beside the RoCE class's
        return bulk

    def plan(self, ctx: Context) -> list[Planned]:
        inputs: EtsInput = self.inputs  # type: ignore[assignment]
        roce, bulk = self._plan_links(ctx.fabric)
        return (planned_links(_tool(inputs.tool), roce, seconds=inputs.seconds, round_="1")
                + planned_links(self._bulk(), bulk, seconds=inputs.seconds, round_="1"))

    def run(self, ctx: Context) -> CheckResult:
        inputs: EtsInput = self.inputs  # type: ignore[assignment]
        fabric, tool, bulk = ctx.fabric, _tool(inputs.tool), self._bulk()
        roce_links, bulk_links = self._plan_links(fabric)
        if not roce_links:
            return self.result("skipped", "fewer than two hosts per rail")
        hosts = sorted({e.host for link in roce_links + bulk_links for e in link})
        why = missing(ctx.site, tool, hosts, fabric) or missing(ctx.site, bulk, hosts, fabric)
        if why:
            return self.result("skipped", f"cannot run: {why}")
        ctx.progress(f"{self.id}: {len(roce_links)} rails, RoCE class against {inputs.bulk_streams}-stream bulk TCP")
        got, got_bulk, d = _round(ctx, tool, roce_links, inputs, (bulk, bulk_links))
        ms: list[Measurement] = []
        problems: list[str] = []
        for (src, dst), m, b in zip(roce_links, got, got_bulk, strict=True):
            ms.append(self.judge(fabric, src, dst, m, b, d))
            if not ms[-1].ok:
                problems.append(ms[-1].detail)
            leaf, port = _port(fabric, dst.host, dst.rail)
            _share, _roce_tc, bulk_tc = configured_share(fabric, dst.host, leaf)
            ctx.off_class.setdefault((leaf, port), set()).add(bulk_tc)
            for h in (b.src, dst.host):
                bulk_prio = fabric.hosts[h].nic_qos.dscp2prio.get(0, 0)
                ctx.off_class.setdefault((h, _netdev(fabric, h, dst.rail)), set()).add(bulk_prio)
        ctx.traffic += got
        bad = [m for m in ms if not m.ok]
        res = self.result("fail" if bad else "pass", measurements=ms, rounds=1, evidence=problems)
        if bad:  # a port without a share is not located: nothing was measured against it
            below, unmeasured = [m for m in bad if m.value is not None], [m for m in bad if m.value is None]
            parts = []
            if below:
                parts.append(f"Expected the RoCE class ≥ {below[0].threshold:.0%} of the port against bulk TCP. "
                             "Actual: " + "; ".join(f"{m.src}:{m.dst} {m.value:.0%}" for m in below[:4])
                             + ". Located: " + ", ".join(f"{m.src}:{m.dst} (rail {m.rail})" for m in below[:4]))
            if unmeasured:
                parts.append(f"No share measured on {len(unmeasured)} port(s): "
                             + "; ".join(m.detail for m in unmeasured[:4]))
            res.message = ". ".join(parts)
        else:
            low = min(ms, key=lambda m: m.value or 0.0)
            res.message = (f"{len(ms)} leaf ports keep the RoCE class share; lowest {low.value:.0%} "
                           f"({low.src}:{low.dst}, floor {low.threshold:.0%})")
        return res
