"""Lossless checks after the traffic: no discard or sequence-error counter grew, CNPs were handled by
their senders (lossless-counters), and no PFC storm (pfc-watchdog)."""

from __future__ import annotations

from pydantic import Field

from fabric.accept import counters as cn
from fabric.accept.checks.base import Check, Context, Input, register
from fabric.accept.results import CheckResult, Measurement
from fabric.design.intent import FabricIntent


class CountersInput(Input):
    allow: list[str] = Field([], description="counter names (source:name) whose increase is tolerated")


def adaptive_leaf(fabric: FabricIntent, leaf: str) -> str | None:
    """The leaf name when adaptive routing is on for the paths through it (its fabric ports), else None."""
    sw = fabric.switches.get(leaf)
    return leaf if sw is not None and sw.adaptive_routing else None


Findings = tuple[list[Measurement], list[str]]


def _increments(counters: dict[str, int]) -> str:
    return ", ".join(f"{k} +{v}" for k, v in sorted(counters.items()))


def lossless_findings(before: cn.Snapshot, after: cn.Snapshot, traffic: list[Measurement],
                      fabric: FabricIntent, allow: list[str] = ()) -> Findings:
    """Increases of discard/sequence counters, and receivers sending CNPs that their senders ignore."""
    d = cn.delta(before, after)
    ms: list[Measurement] = []
    problems: list[str] = []
    for found, said in (_switch_queue_drops(d, fabric, allow), _host_discards(d, fabric, allow),
                        _deaf_senders(d, traffic, fabric)):
        ms += found
        problems += said
    return ms, problems


def _switch_queue_drops(d: cn.Snapshot, fabric: FabricIntent, allow: list[str]) -> Findings:
    """Drops on a lossless queue of a switch port with PFC (a PFC port drops nothing there; a port without
    PFC counters, the lab's software switch, may drop and is not judged)."""
    ms: list[Measurement] = []
    problems: list[str] = []
    for node, ports in sorted(d.items()):
        sw = fabric.switches.get(node)
        if sw is None:
            continue
        for port, cs in sorted(ports.items()):
            if not any(k.startswith("pfc:") for k in cs):
                continue
            drops = {k: v for k, v in cs.items() if v > 0 and (m := cn.QUEUE_DROPS.match(k))
                     and int(m["n"]) in sw.qos.lossless_tcs and k not in allow}
            if drops:
                text = _increments(drops)
                problems.append(f"{node} {port}: {text} (lossless queue)")
                ms.append(Measurement(src=node, dst=port, value=sum(drops.values()), unit="increments", threshold=0,
                                      ok=False, detail=text))
    return ms, problems


def _host_discards(d: cn.Snapshot, fabric: FabricIntent, allow: list[str]) -> Findings:
    """One measurement per host port: the discard and sequence-error counters that grew; behind a leaf with
    adaptive routing the reordering counters are tolerated (said in the detail)."""
    netdev = {(h.name, r.ifname): r for h in fabric.hosts.values() for r in h.rails}
    ms: list[Measurement] = []
    problems: list[str] = []
    for host, ports in sorted(d.items()):
        if host not in fabric.hosts:
            continue
        for port, cs in sorted(ports.items()):
            r = netdev.get((host, port))
            ar = adaptive_leaf(fabric, r.leaf) if r else None
            grew, tolerated = _grown(cs, allow, reorder_ok=ar is not None)
            detail = _increments(grew) or f"{len(cs)} counters flat"
            if tolerated:
                detail += f"; tolerated: {_increments(tolerated)} (adaptive routing on {ar}: packets arrive out of " \
                          "order by design)"
            ms.append(Measurement(rail=r.rail if r else None, src=host, dst=port, value=sum(grew.values()),
                                  unit="increments", threshold=0, ok=not grew, detail=detail))
            if grew:
                problems.append(f"{host} {port}: {_increments(grew)}")
    return ms, problems


def _grown(cs: dict[str, int], allow: list[str], *, reorder_ok: bool) -> tuple[dict[str, int], dict[str, int]]:
    """The discard and sequence-error counters of one port that grew (not in `allow`), and apart from them the
    reordering ones when reordering is expected."""
    grew = {k: v for k, v in cs.items() if v > 0 and k not in allow
            and (cn.DISCARD.search(k) or cn.SEQUENCE.search(k))}
    tolerated = {k: v for k, v in grew.items() if k in cn.REORDER} if reorder_ok else {}
    return {k: v for k, v in grew.items() if k not in tolerated}, tolerated


def _deaf_senders(d: cn.Snapshot, traffic: list[Measurement], fabric: FabricIntent) -> Findings:
    """A receiver that sent CNPs on a rail, judged per sender of the traffic to it: one whose rp_cnp_handled
    stayed flat (one deaf sender among many is found)."""
    by_rail = {(h.name, r.rail): r.ifname for h in fabric.hosts.values() for r in h.rails}
    ms: list[Measurement] = []
    problems: list[str] = []
    for (host, rail), ifname in sorted(by_rail.items()):
        sent = d.get(host, {}).get(ifname, {}).get(cn.CNP_SENT, 0)
        if sent <= 0:
            continue
        senders = sorted({m.src for m in traffic if m.dst == host and m.rail == rail})
        handled = {s: d.get(s, {}).get(by_rail.get((s, rail), ""), {}).get(cn.CNP_HANDLED, 0) for s in senders}
        for s in [s for s, v in handled.items() if v == 0]:
            problems.append(f"{host} rail {rail}: np_cnp_sent +{sent} but rp_cnp_handled flat on sender {s} "
                            f"(CNPs not reaching it or not handled: check CNP DSCP/priority and DCQCN rp on {s})")
            ms.append(Measurement(rail=rail, src=s, dst=host, value=0, unit="CNPs handled", ok=False,
                                  detail=f"{host} np_cnp_sent +{sent}, {s} rp_cnp_handled flat"))
    return ms, problems


@register
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


@register
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


class ClassInput(Input):
    min_share: float = Field(0.9, gt=0, le=1, description="share of the port's per-priority/queue bytes that "
                             "must be on the lossless priority")
    min_bytes: int = Field(1 << 20, ge=0, description="a port with less traffic than this is not judged")


def class_shares(d: cn.Snapshot, traffic: list[Measurement], fabric: FabricIntent, *, min_share: float,
                 min_bytes: int, off_class: dict[tuple[str, str], set[int]] | None = None) -> list[Measurement]:
    """Where the RoCE traffic went: on every sender NIC the lossless priority's `tx_prio<P>_bytes` (and on
    every receiver NIC its `rx_prio<P>_bytes`) carries ≥ `min_share` of the per-priority bytes, and so does
    the lossless queue on the leaf port toward each receiver (`queue:<TC>:tx_bytes`). CNPs (their own
    priority) are not counted against it, nor what a check loaded on purpose (`off_class`: the ets check's bulk
    TCP). A port without the counters is not measured."""
    from fabric.accept.tools import lossless_priority

    ms: list[Measurement] = []
    rails = {(h.name, r.rail): r for h in fabric.hosts.values() for r in h.rails}
    roles: dict[tuple[str, int], set[str]] = {}
    for m in traffic:
        if m.rail is not None and (m.src, m.rail) in rails and (m.dst, m.rail) in rails:
            roles.setdefault((m.src, m.rail), set()).add("tx")
            roles.setdefault((m.dst, m.rail), set()).add("rx")

    def judge(node: str, port: str, rail: int, counters: dict[str, int], pattern, want: int, skip: int,
              what: str, direction: str | None = None) -> None:
        per: dict[int, int] = {}
        ignore = {skip} | (off_class or {}).get((node, port.split()[0]), set())
        for k, v in counters.items():
            g = pattern.match(k)
            if g and (direction is None or g.group("dir") == direction) and int(g.group("n")) not in ignore:
                per[int(g.group("n"))] = per.get(int(g.group("n")), 0) + v
        total = sum(per.values())
        if not per or total < min_bytes:
            return
        share = per.get(want, 0) / total
        others = ", ".join(f"{what}{n} +{v}" for n, v in sorted(per.items()) if n != want and v)
        ms.append(Measurement(rail=rail, src=node, dst=port, value=round(share, 4), unit="share",
                              threshold=min_share, ok=share >= min_share,
                              detail=f"{what}{want} +{per.get(want, 0)} B of {total} B" + (f"; {others}" if others
                                                                                         else "")))

    for (host, rail), dirs in sorted(roles.items()):
        r, q = rails[(host, rail)], fabric.hosts[host].nic_qos
        prio = lossless_priority(fabric, host)
        for direction in sorted(dirs):
            judge(host, f"{r.ifname} {direction}", rail, d.get(host, {}).get(r.ifname, {}), cn.PRIO_BYTES, prio,
                  q.cnp_priority, "prio", direction)
        if "rx" in dirs and r.leaf in fabric.switches:
            f = fabric.switches[r.leaf].qos
            judge(r.leaf, r.leaf_port, rail, d.get(r.leaf, {}).get(r.leaf_port, {}), cn.QUEUE_BYTES,
                  f.priority_to_tc[prio], f.priority_to_tc[f.cnp_priority], "TC")
    return ms


@register
class TrafficClass(Check):
    """The traffic checks' RoCE ran on the lossless class: per-priority bytes of the sender and receiver NICs
    (mlx5 `tx_prio3_bytes`/`rx_prio3_bytes`) and per-queue bytes of the receiver's leaf port."""

    name = "traffic-class"
    tags = ["counters", "lossless", "qos"]
    phase = "post"
    Input = ClassInput

    def run(self, ctx: Context) -> CheckResult:
        inputs: ClassInput = self.inputs  # type: ignore[assignment]
        if ctx.before is None or ctx.after is None or not ctx.traffic:
            return self.result("skipped", "no traffic checks ran (nothing to attribute)")
        ms = class_shares(cn.delta(ctx.before, ctx.after), ctx.traffic, ctx.fabric, min_share=inputs.min_share,
                          min_bytes=inputs.min_bytes, off_class=ctx.off_class)
        if not ms:
            return self.result("skipped", "no NIC exposes per-priority byte counters (ethtool -S tx_prio<N>_bytes) "
                               "and no switch per-queue counters were read")
        bad = [m for m in ms if not m.ok]
        if bad:
            return self.result("fail", f"Expected ≥ {inputs.min_share:.0%} of the bytes on the lossless priority/"
                               "queue. Actual: " + "; ".join(f"{m.src} {m.dst}: {m.value:.0%} ({m.detail})"
                                                             for m in bad[:4]), measurements=ms)
        low = min(ms, key=lambda m: m.value or 0.0)
        return self.result("pass", f"{len(ms)} NIC/leaf ports on the lossless class; lowest share {low.value:.0%} "
                           f"({low.src} {low.dst})", measurements=ms)
