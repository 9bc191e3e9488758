"""`fabric drain SWITCH` / `fabric undrain SWITCH`: BGP graceful shutdown through the apply transaction, or the
NOS's own traffic shift where the tool does not render the switch's BGP (fabric.push.drain)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated

import typer

from fabric.cli.push import Context, FormatOpt, InsecureOpt, InventoryArg, LabOpt, _check_timers, _require_tty, out
from fabric.errors import UsageError
from fabric.push import engine, state
from fabric.push.drain import DrainResult, drain, fmt_rate

SwitchArg = Annotated[str, typer.Argument(help="the switch to drain", show_default=False)]


def _run(inventory: Path, switch: str, *, undrain: bool, lab: bool, insecure_lab: bool, yes: bool,
         threshold: float, timeout: float, interval: float, confirm_timer: int, postcheck_timeout: float,
         settle: float, fmt: str) -> None:
    if fmt not in ("table", "json"):
        raise UsageError(f"--format: expected table or json, found {fmt!r}")
    _check_timers(confirm_timer, postcheck_timeout, settle)
    _require_tty(yes, "undrain" if undrain else "drain")
    ctx = Context(inventory, None, lab=lab, insecure_lab=insecure_lab, names=[switch])
    ep = ctx.endpoints[0]
    ports = [p.name for p in ctx.fabric.switches[switch].ports if p.kind == "fabric"]
    opts = engine.ApplyOptions(confirm_seconds=confirm_timer, postcheck_timeout=postcheck_timeout, settle=settle)
    verb = "undrain" if undrain else "drain"
    if not yes and not typer.confirm(f"{verb} {switch}?", default=False, err=True):
        raise typer.Exit(1)
    state.check_writable(ctx.records)
    note = (lambda s: sys.stderr.write(s + "\n")) if fmt == "table" else (lambda _s: None)
    with state.apply_lock(ctx.records):
        res = drain(ctx.records, ep, ctx.cred, opts, ports, release=ctx.fabric.switches[switch].release,
                    undrain=undrain, threshold_bps=threshold, timeout=timeout, interval=interval, note=note)
    _print(verb, res, threshold, fmt)
    ok = res.result.status in ("applied", "unchanged") and res.quiet is not False
    raise typer.Exit(0 if ok else 1)


def _print(verb: str, res: DrainResult, threshold: float, fmt: str) -> None:
    r = res.result
    if fmt == "json":
        sys.stdout.write(json.dumps({"action": verb, **r.summary(), "fabric_ports": res.ports,
                                     "before_bps": res.before_bps, "after_bps": res.after_bps,
                                     "threshold_bps": threshold, "quiet": res.quiet,
                                     "waited": round(res.waited, 1)}, indent=2) + "\n")
        return
    out.print(f"{r.device}: {verb} {r.status}{': ' + r.detail if r.detail else ''}", markup=False)
    out.print(f"fabric ports ({len(res.ports)}): {fmt_rate(res.before_bps)} before, {fmt_rate(res.after_bps)} after"
              + ("" if res.quiet is None else f" ({'at or under' if res.quiet else 'still above'} "
                 f"{fmt_rate(threshold)} after {res.waited:.0f} s)"), markup=False)


ThresholdOpt = Annotated[float, typer.Option("--threshold", help="bit/s over the fabric ports that counts as drained")]
TimeoutOpt = Annotated[float, typer.Option("--timeout", help="seconds to wait for the traffic to move away")]
IntervalOpt = Annotated[float, typer.Option("--interval", help="seconds between counter reads")]
YesOpt = Annotated[bool, typer.Option("--yes", "-y", help="do not ask for confirmation")]
ConfirmOpt = Annotated[int, typer.Option(help="seconds the device waits for confirmation")]
PostcheckOpt = Annotated[float, typer.Option(help="seconds for BGP to recover after the change")]
SettleOpt = Annotated[float, typer.Option(help="seconds to wait before the post-check")]


def drain_command(inventory: InventoryArg, switch: SwitchArg, lab: LabOpt = False, insecure_lab: InsecureOpt = False,
                  yes: YesOpt = False, threshold: ThresholdOpt = 1e6, timeout: TimeoutOpt = 300,
                  interval: IntervalOpt = 5, confirm_timer: ConfirmOpt = 300, postcheck_timeout: PostcheckOpt = 60,
                  settle: SettleOpt = 5, fmt: FormatOpt = "table") -> None:
    """BGP graceful shutdown (RFC 8326) on a switch (SONiC on bgpcfgd: TSA), then wait until its fabric ports
    carry ≤ --threshold."""
    _run(inventory, switch, undrain=False, lab=lab, insecure_lab=insecure_lab, yes=yes, threshold=threshold,
         timeout=timeout, interval=interval, confirm_timer=confirm_timer, postcheck_timeout=postcheck_timeout,
         settle=settle, fmt=fmt)


def undrain_command(inventory: InventoryArg, switch: SwitchArg, lab: LabOpt = False, insecure_lab: InsecureOpt = False,
                    yes: YesOpt = False, interval: IntervalOpt = 5, confirm_timer: ConfirmOpt = 300,
                    postcheck_timeout: PostcheckOpt = 60, settle: SettleOpt = 5, fmt: FormatOpt = "table") -> None:
    """End a drain: the plain intent again (the graceful-shutdown setting removed; SONiC on bgpcfgd: TSB), rates
    reported."""
    _run(inventory, switch, undrain=True, lab=lab, insecure_lab=insecure_lab, yes=yes, threshold=0, timeout=0,
         interval=interval, confirm_timer=confirm_timer, postcheck_timeout=postcheck_timeout, settle=settle, fmt=fmt)
