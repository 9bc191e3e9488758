"""Run a selection of checks: state checks first, counter snapshot, traffic checks, snapshot, counter checks."""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

from fabric.accept import counters as cn
from fabric.accept.checks import Check, Context, run_check
from fabric.accept.results import AcceptReport, CheckResult, Planned
from fabric.access import Site

PHASES = ("pre", "traffic", "post")


def run(site: Site, checks: list[Check], *, quick: bool = False, report_dir: Path | None = None,
        progress: Callable[[str], None] = lambda _m: None,
        done: Callable[[CheckResult], None] = lambda _r: None) -> AcceptReport:
    """Run `checks` in phase order; one check's failure or crash never stops the others."""
    t0 = time.monotonic()
    started = datetime.now(UTC).isoformat(timespec="seconds")
    ctx = Context(site=site, quick=quick, report_dir=report_dir, progress=progress)
    ordered = sorted(checks, key=lambda c: PHASES.index(c.phase))
    want_counters = any(c.phase == "post" for c in ordered)
    results: list[CheckResult] = []
    snapped_before = False
    for check in ordered:
        if want_counters and not snapped_before and check.phase != "pre":
            progress("counters: snapshot before traffic")
            ctx.before, snapped_before = cn.snapshot(site, switches=True), True
        if check.phase == "post" and ctx.after is None and ctx.before is not None:
            progress("counters: snapshot after traffic")
            ctx.after = cn.snapshot(site, switches=True)
        progress(f"{check.id}: running")
        res = run_check(check, ctx)
        results.append(res)
        done(res)
    return AcceptReport(fabric=site.name, mode=site.kind, quick=quick,
                        started=started, seconds=round(time.monotonic() - t0, 2), results=results)


def plan(site: Site, checks: list[Check], *, quick: bool = False,
         report_dir: Path | None = None) -> list[tuple[str, list[Planned]]]:
    """`--dry-run`: per check (in run order, the counter snapshots where they would be taken) the commands it
    would run with their hosts and rounds; launch files are written to `report_dir`. Nothing runs."""
    ctx = Context(site=site, quick=quick, report_dir=report_dir)
    ordered = sorted(checks, key=lambda c: PHASES.index(c.phase))
    snap = cn.planned_snapshot(site) if any(c.phase == "post" for c in ordered) else []
    out: list[tuple[str, list[Planned]]] = []
    for i, check in enumerate(ordered):
        if snap and check.phase != "pre" and (i == 0 or ordered[i - 1].phase == "pre"):
            out.append(("counters before traffic", snap))
        if snap and check.phase == "post" and (i == 0 or ordered[i - 1].phase != "post"):
            out.append(("counters after traffic", snap))
        out.append((check.id, check.plan(ctx)))
    return out
