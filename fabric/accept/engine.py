"""Run a selection of checks: state checks first, counter snapshot, traffic checks, snapshot, counter checks."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator
from datetime import UTC, datetime
from pathlib import Path

from fabric.accept import counters as cn
from fabric.accept.checks import Check, Context, run_check
from fabric.accept.results import AcceptReport, CheckResult, CounterChange, Planned
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
    want_counters = any(c.phase != "pre" for c in ordered)
    # hosts over SSH only when a check reaches them so (a Kubernetes or Slurm run may have no SSH to them)
    nodes = (list(site.fabric.hosts) if any(c.on_hosts for c in ordered) else []) + list(site.fabric.switches)
    results: list[CheckResult] = []

    def snap_after() -> None:
        if ctx.before is not None and ctx.after is None:
            progress("counters: snapshot after traffic")
            ctx.after = cn.snapshot(site, nodes=nodes)

    gated: str | None = None  # the gate check that failed
    for check in ordered:
        if gated is not None and check.phase != "pre":
            res = check.result("skipped", f"not run: {gated} failed, so traffic would not take the paths the model "
                               "has (fix it first)")
            results.append(res)
            done(res)
            continue
        if want_counters and ctx.before is None and check.phase != "pre":
            progress("counters: snapshot before traffic")
            ctx.before = cn.snapshot(site, nodes=nodes)
        if check.phase == "post":
            snap_after()
        progress(f"{check.id}: running")
        res = run_check(check, ctx)
        results.append(res)
        done(res)
        if check.gate and res.status == "fail":
            gated = check.id
    snap_after()
    return AcceptReport(fabric=site.name, mode=site.kind, quick=quick,
                        started=started, seconds=round(time.monotonic() - t0, 2), results=results,
                        switch_counters=switch_changes(site, ctx.before, ctx.after),
                        launchers=sorted({c.inputs.launcher for c, r in zip(ordered, results, strict=True)
                                          if hasattr(c.inputs, "launcher") and r.status != "skipped"}))


SWITCH_COUNTERS = ("queue:", "pfc:", "pfcwd:")


def switch_changes(site: Site, before: cn.Snapshot | None, after: cn.Snapshot | None) -> list[CounterChange]:
    """The switch ports' queue, PFC and watchdog counters between the two snapshots, for every queue or priority
    where one of them moved (so a flat drop counter shows beside the bytes that went through)."""
    if before is None or after is None:
        return []
    out = []
    for node in sorted(n for n in after if n in site.fabric.switches):
        for port, cs in sorted(after[node].items()):
            was = before.get(node, {}).get(port, {})
            pairs = {k: (was[k], v) for k, v in cs.items() if k.startswith(SWITCH_COUNTERS) and k in was}
            moved = {k.rsplit(":", 1)[0] for k, (b, a) in pairs.items() if a != b}
            out += [CounterChange(node=node, port=port, counter=k, before=b, after=a)
                    for k, (b, a) in sorted(pairs.items()) if k.rsplit(":", 1)[0] in moved]
    return out


def plan(site: Site, checks: list[Check], *, quick: bool = False,
         report_dir: Path | None = None) -> Iterator[tuple[str, Iterable[Planned]]]:
    """`--dry-run`: per check (in run order, the counter snapshots where they would be taken) the commands it
    would run with their hosts and rounds, one step at a time and each check's commands as it makes them (an
    all-pairs plan of thousands of hosts is written as it comes, never held); launch files are written to
    `report_dir`. Nothing runs."""
    ctx = Context(site=site, quick=quick, report_dir=report_dir)
    ordered = sorted(checks, key=lambda c: PHASES.index(c.phase))
    snap = cn.planned_snapshot(site) if any(c.phase == "post" for c in ordered) else []
    for i, check in enumerate(ordered):
        if snap and check.phase != "pre" and (i == 0 or ordered[i - 1].phase == "pre"):
            yield "counters before traffic", snap
        if snap and check.phase == "post" and (i == 0 or ordered[i - 1].phase != "post"):
            yield "counters after traffic", snap
        yield check.id, check.plan(ctx)
