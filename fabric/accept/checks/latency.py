"""Latency check: ib_write_lat (lab: ping RTT/2) between host pairs on each rail, judged on p99."""

from __future__ import annotations

from collections.abc import Iterator

from pydantic import Field

from fabric.accept.checks.base import Check, Context, Input, hosts_per_rail, register
from fabric.accept.results import CheckResult, Measurement, Planned
from fabric.accept.schedule import Round, iter_schedule
from fabric.accept.tools import TOOLS, Tool, ends, measure_links, missing, planned_links


class LatencyInput(Input):
    tool: str = Field("ib_write_lat", description="ib_write_lat (RDMA) or ping (lab stand-in)")
    max_p99_us: float = Field(5.0, gt=0, description="one-way p99 latency limit")
    iterations: int = Field(5000, ge=10)
    rdma_cm: bool = Field(False, description="perftest -R: connect with rdma_cm, ToS by -T (else --tclass)")
    timeout_s: float = 30
    parallel: int = 16
    quick: bool | None = None
    rails: list[int] | None = None


@register
class RailLatency(Check):
    """ib_write_lat between host pairs on each rail, judged on p99 (lab: ping RTT/2)."""

    name = "rail-latency"
    tags = ["traffic", "latency", "rail"]
    phase = "traffic"
    Input = LatencyInput

    def _tool(self) -> Tool:
        inputs: LatencyInput = self.inputs  # type: ignore[assignment]
        cls = TOOLS.get(inputs.tool)
        if cls is None or cls.higher_is_better:
            raise ValueError(f"tool: expected ib_write_lat or ping, found {inputs.tool!r}")
        if inputs.tool == "ib_write_lat":
            return cls(iterations=inputs.iterations, rdma_cm=inputs.rdma_cm)  # type: ignore[call-arg]
        return cls()

    def _rounds(self, ctx: Context) -> Iterator[Round]:
        inputs: LatencyInput = self.inputs  # type: ignore[assignment]
        return iter_schedule(hosts_per_rail(ctx.fabric, inputs.rails), quick=ctx.quick if inputs.quick is None
                             else inputs.quick)

    def plan(self, ctx: Context) -> Iterator[Planned]:
        tool, ep = self._tool(), ends(ctx.fabric)
        for k, rd in enumerate(self._rounds(ctx), 1):
            yield from planned_links(tool, [(ep[(a, rail)], ep[(b, rail)]) for rail, a, b in rd.jobs], seconds=1,
                                     round_=str(k))

    def run(self, ctx: Context) -> CheckResult:
        inputs: LatencyInput = self.inputs  # type: ignore[assignment]
        tool = self._tool()
        rounds = list(self._rounds(ctx))
        if not rounds:
            return self.result("skipped", "fewer than two hosts per rail")
        hosts = sorted({h for rd in rounds for _, a, b in rd.jobs for h in (a, b)})
        why = missing(ctx.site, tool, hosts, ctx.fabric)
        if why:
            return self.result("skipped", f"{tool.name} cannot run: {why}")
        ep = ends(ctx.fabric)
        ms: list[Measurement] = []
        for k, rd in enumerate(rounds, 1):
            ctx.progress(f"{self.id}: round {k}/{len(rounds)}")
            links = [(ep[(a, rail)], ep[(b, rail)]) for rail, a, b in rd.jobs]
            ms += measure_links(ctx.site, tool, links, seconds=1, timeout=inputs.timeout_s,
                                threshold=inputs.max_p99_us, workers=inputs.parallel)
        status, message = judge_latency(ms, inputs.max_p99_us)
        return self.result(status, message, measurements=ms, rounds=len(rounds))


def judge_latency(measured: list[Measurement], limit_us: float) -> tuple[str, str]:
    """(pass | fail, message): every measurement's p99 at most `limit_us` (one that measured nothing fails); the
    highest when all are within, else the worst and how many are above."""
    bad = [m for m in measured if m.value is None or m.value > limit_us or not m.ok]
    if not bad:
        hi = max(measured, key=lambda m: m.value or 0.0)
        return "pass", f"{len(measured)} pairs, highest p99 {hi.value:g} us ({hi.src}→{hi.dst} rail {hi.rail})"
    worst = max(bad, key=lambda m: m.value if m.value is not None else float("inf"))
    actual = f"{worst.value:g} us" if worst.value is not None else worst.detail
    return "fail", (f"Expected p99 ≤ {limit_us:g} us. Actual: {len(bad)}/{len(measured)} above, worst "
                    f"{worst.src}→{worst.dst} rail {worst.rail} {actual}")
