"""BGP check: every session established and ECMP as wide as designed, read through each switch's push
driver (the same on real switches and in the lab)."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

from pydantic import Field

from fabric.accept.checks.base import Check, Context, Input, register
from fabric.accept.results import CheckResult, Measurement, Planned
from fabric.design.bgp import expectation
from fabric.errors import one_line
from fabric.targets.base import TargetError
from fabric.targets.session import conn_errors, session


class BgpInput(Input):
    connect_timeout: float = Field(10, gt=0, description="seconds to reach each switch")
    parallel: int = Field(8, ge=1, description="switches read at the same time")


@register
class Bgp(Check):
    """Every BGP session established and ECMP as wide as designed, read through each switch's push driver."""

    name = "bgp"
    on_hosts = False  # type: ignore[assignment]  # switches only
    tags = ["switch", "bgp"]
    Input = BgpInput

    def plan(self, ctx: Context) -> list[Planned]:
        from fabric.nos import NOS

        return [Planned(host=name, role="read", command="; ".join(NOS[sw.target].module("driver").DRIVER.bgp_commands))
                for name, sw in sorted(ctx.fabric.switches.items())]

    def run(self, ctx: Context) -> CheckResult:
        inputs: BgpInput = self.inputs  # type: ignore[assignment]
        cred = ctx.site.switch_credentials()

        def one(name: str) -> tuple[Measurement, list[str], int]:
            sw = ctx.fabric.switches[name]
            want = expectation(sw, ctx.fabric)
            try:
                with session(ctx.site.switch(name), cred, timeout=inputs.connect_timeout) as drv:
                    health, routes = drv.bgp_state()
            except (TargetError, ValueError, *conn_errors()) as exc:
                msg = f"{name}: not readable ({one_line(exc, 160)})"
                return Measurement(src=name, ok=False, detail=msg), [msg], 0
            problems = []
            down = sorted(p for p, state in health.bgp_peers.items() if state != "Established")
            if health.bgp_established < want.peers or down:
                problems.append(f"{name}: {health.bgp_established}/{want.peers} sessions established"
                                + (f" (down: {', '.join(down)})" if down else ""))
            width = None
            if routes is not None:
                missing = sorted(p for p in want.learned if p not in routes)
                if missing:
                    problems.append(f"{name}: {len(missing)} prefixes not learned (e.g. {missing[0]})")
                widths = [routes.get(p, 0) for p in want.leaf_prefixes]
                width = min(widths) if widths else None
                if want.ecmp is not None and widths and (width or 0) < want.ecmp:
                    problems.append(f"{name}: ECMP width {width}, expected {want.ecmp}")
            detail = "; ".join(problems) or (f"{health.bgp_established}/{want.peers} established"
                                             + ("" if routes is not None else "; routes not read on this NOS"))
            return (Measurement(src=name, value=width, unit="ECMP", threshold=want.ecmp, ok=not problems,
                                detail=detail), problems, health.bgp_established)

        with ThreadPoolExecutor(max_workers=inputs.parallel) as pool:
            rows = list(pool.map(one, sorted(ctx.fabric.switches)))
        ms = [m for m, _, _ in rows]
        bad = [p for _, ps, _ in rows for p in ps]
        if bad:
            return self.result("fail", "Expected every session Established and full ECMP. Actual: "
                               + "; ".join(bad[:4]) + (f" (+{len(bad) - 4} more)" if len(bad) > 4 else ""),
                               measurements=ms)
        return self.result("pass", f"{sum(n for _, _, n in rows)} sessions established, ECMP as designed "
                           f"on {len(rows)} switches", measurements=ms)
