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
