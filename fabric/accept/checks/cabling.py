"""Cabling check: the cables LLDP shows against the model's (fabric.design.cabling), first of all, so that a
miswired fabric fails with the cable to move instead of as slow NCCL. Switches are read through their push driver
(`Driver.lldp`), hosts over SSH with lldpd's `lldpctl -f json`; a device that cannot be read is judged from the
other end of its cables."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

from pydantic import Field

from fabric.accept import transport as tr
from fabric.accept.checks.base import Check, Context, Input, register
from fabric.accept.results import CheckResult, Measurement, Planned
from fabric.access import Site
from fabric.design.cabling import Names, judge
from fabric.design.intent import FabricIntent
from fabric.errors import InputError, one_line
from fabric.nos import NOS
from fabric.parsers.lldp import Lldp, parse_lldpctl
from fabric.targets.base import TargetError
from fabric.targets.session import conn_errors, session

HOST_COMMAND = ["lldpctl", "-f", "json"]


class CablingInput(Input):
    hosts: bool = Field(True, description="read the hosts' lldpd too (lldpctl -f json over SSH)")
    connect_timeout: float = Field(10, gt=0, description="seconds to reach each switch")
    timeout_s: float = Field(20, gt=0, description="seconds for each host's lldpctl")
    parallel: int = Field(16, ge=1, description="devices read at the same time")


@register
class Cabling(Check):
    """Every cable where the model has it (LLDP of the switches and the hosts); a miswire named as the cable to
    move."""

    name = "cabling"
    tags = ["cabling", "lldp", "switch"]
    gate = True
    Input = CablingInput

    @property
    def on_hosts(self) -> bool:
        return bool(self.inputs.hosts)  # type: ignore[attr-defined]

    def plan(self, ctx: Context) -> list[Planned]:
        rows = [Planned(host=name, role="read", command="; ".join(NOS[sw.target].module("driver").DRIVER.lldp_commands))
                for name, sw in sorted(ctx.fabric.switches.items())]
        if self.on_hosts:
            rows += [Planned(host=h, role="read", command=" ".join(HOST_COMMAND)) for h in sorted(ctx.fabric.hosts)]
        return rows

    def run(self, ctx: Context) -> CheckResult:
        inputs: CablingInput = self.inputs  # type: ignore[assignment]
        devices = sorted(ctx.fabric.switches) + (sorted(ctx.fabric.hosts) if inputs.hosts else [])
        reports, unread = read_lldp(ctx.site, ctx.fabric, devices, inputs)
        if not reports:
            first = next(iter(unread.values()), "no device")
            return self.result("skipped", f"no LLDP read from any of {len(devices)} devices (e.g. {first})")
        result = judge(ctx.fabric.links, Names.of_intent(ctx.fabric), reports)
        ms = [Measurement(src=f.links[0] if f.links else "", ok=False, detail=f.message) for f in result.faults]
        ms += [Measurement(src=d, ok=True, tool="skipped", detail=f"not read: {why}") for d, why in unread.items()]
        counts = ", ".join(f"{n} {s}" for s, n in result.counts.items() if n)
        if result.failed:
            shown = "; ".join(f.message for f in result.faults[:3])
            more = f" (+{len(result.faults) - 3} more)" if len(result.faults) > 3 else ""
            return self.result("fail", f"Expected every cable where the model has it. Actual: {shown}{more} "
                               f"[{counts}]", measurements=ms)
        return self.result("pass", f"{counts}; LLDP read from {len(reports)} of {len(devices)} devices",
                           measurements=ms)


def read_lldp(site: Site, fabric: FabricIntent, devices: list[str],
              inputs: CablingInput | None = None) -> tuple[dict[str, Lldp], dict[str, str]]:
    """The LLDP of each device through the site (switches: their driver's `lldp()`, hosts: `lldpctl -f json`), in
    parallel; returns (device → report, device → why it was not read)."""
    opts = inputs or CablingInput()
    with ThreadPoolExecutor(max_workers=opts.parallel) as pool:
        read = dict(zip(devices, pool.map(lambda d: _read(site, fabric, opts, d), devices), strict=True))
    return ({d: r for d, r in read.items() if isinstance(r, Lldp)},
            {d: r for d, r in read.items() if isinstance(r, str)})


def _read(site: Site, fabric: FabricIntent, inputs: CablingInput, device: str) -> Lldp | str:
    """A device's LLDP, or why it could not be read."""
    if device in fabric.hosts:
        done = tr.run(site, device, HOST_COMMAND, timeout=inputs.timeout_s)
        if done.rc != 0:
            return f"{device}: lldpctl: {done.last_error[:160]}"
        try:
            return parse_lldpctl(done.stdout, f"{device}: lldpctl -f json")
        except InputError as exc:
            return str(exc).splitlines()[0]
    try:
        with session(site.switch(device), site.switch_credentials(), timeout=inputs.connect_timeout) as drv:
            found = drv.lldp()
    except (TargetError, ValueError, *conn_errors()) as exc:
        return f"{device}: {one_line(exc, 160)}"
    return found if found is not None else f"{device}: LLDP not read on this NOS"
