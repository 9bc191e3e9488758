"""Remediation shared by `fabric accept`, `fabric diagnose` and `fabric remediate`: print (or, with
--remediate / --execute, run) the scheduler actions for located faulty hosts; every run is audited."""

from __future__ import annotations

import datetime as dt
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.console import Console

from fabric.cli.console import console
from fabric.design.intent import FabricIntent
from fabric.errors import UsageError, printable
from fabric.remediate import (
    MAX_HOSTS,
    MAX_WINDOW,
    SCHEDULERS,
    WINDOW,
    Action,
    Budget,
    Fault,
    actions,
    budget,
    command_lines,
    execute,
    screen,
)

if TYPE_CHECKING:
    from fabric.push.state import Remediated

out = console(soft_wrap=True)

SchedulerOpt = Annotated[str, typer.Option(
    "--scheduler", help=f"where located faults are handed: any of {', '.join(SCHEDULERS)} (comma-separated)")]
RemediateOpt = Annotated[bool, typer.Option(
    "--remediate", help="run the scheduler actions for located faulty hosts (default: only print them)")]
MaxHostsOpt = Annotated[int, typer.Option(
    "--max-hosts", min=1, help="act on at most this many hosts in any --window, counted across runs (in the state "
                               "directory); more: nothing is run, exit 1")]
WindowOpt = Annotated[str, typer.Option(
    "--window", help="the span --max-hosts counts over: minutes, hours or days (90m, 24h, 7d; at most 30d)")]


def schedulers(value: str) -> list[str]:
    names = [s.strip() for s in value.split(",") if s.strip()]
    bad = [s for s in names if s not in SCHEDULERS]
    if bad or not names:
        raise UsageError(f"--scheduler: expected some of {', '.join(SCHEDULERS)}, found {value!r}")
    return names


def hand_over(fabric: FabricIntent, faults: list[Fault], names: list[str], run: bool, revert: bool = False,
              flag: str = "--remediate", limit: Budget | None = None, say: Console = out) -> bool:
    """Print the actions (and how to undo them) on `say` (stderr where stdout holds a machine format), or run them
    and audit each; False if one failed, a host named is not an inventory host (`fabric.remediate.screen`), or the
    hosts would overrun the budget (`within_budget`: then nothing is run)."""
    members, refused = screen(fabric, faults)
    for r in refused:
        say.print(f"  {r.host}: {r.why}", markup=False)
    todo = actions(fabric, members, names)
    if not todo:
        return not refused
    hosts = list(dict.fromkeys(a.host for a in todo))
    allowed = within_budget(fabric.name, hosts, limit or budget(MAX_HOSTS, WINDOW), run, revert, say)
    run = run and allowed
    verb = "undo" if revert else "remediation"
    say.print(f"{verb} for {len(hosts)} host(s) ({', '.join(names)}):", markup=False)
    ok = not refused and allowed
    for a in todo:
        ok &= _show_and_run(fabric.name, a, run, revert, say)
    if not run and allowed:
        say.print(f"  (printed only: {flag} runs them)", markup=False)
    return ok


def _show_and_run(fabric: str, a: Action, run: bool, revert: bool, say: Console) -> bool:
    """Print one action (with its undo), and run and audit it when `run`; False if it failed."""
    from fabric.push import state

    say.print(f"  {a.host} [{a.scheduler}] {printable(a.fault)}", markup=False)
    for line in command_lines(a, revert):
        say.print(f"    {line}", markup=False)
    if not revert:
        for line in command_lines(a, revert=True):
            say.print(f"    undo: {line}", markup=False)
    if not run:
        return True
    done, detail = execute(a, revert)
    say.print(f"    {'done' if done else 'FAILED'}: {detail}", markup=False)
    state.audit(fabric, state.AuditEntry(
        time=state.now(), who=state.who(), fabric=fabric, device=a.host, target=a.scheduler,
        action="revert" if revert else "remediate", diff_digest="", added=0, removed=0,
        result="executed" if done else "failed",
        detail="; ".join(command_lines(a, revert)) + (f" → {detail}" if detail else "")))
    return done


def within_budget(fabric: str, hosts: list[str], limit: Budget, run: bool, revert: bool, say: Console) -> bool:
    """Whether `hosts` fit the budget: with the hosts earlier runs acted on in the window (`remediated.json`,
    counted once each), at most `limit.max_hosts`. When they fit and `run`, they are taken from it before any
    command runs (under its lock, so concurrent runs count each other). An undo returns hosts to service: only
    its own count is limited, and it takes nothing from the budget. Prints the budget and every host refused."""
    from fabric.push import state

    if revert:
        if run and len(hosts) > limit.max_hosts:
            say.print(f"not remediated: {len(hosts)} hosts exceed --max-hosts {limit.max_hosts} (nothing was run)",
                      markup=False)
            return False
        return True
    with state.remediation_ledger(fabric, write=run, keep=MAX_WINDOW) as ledger:
        now = dt.datetime.now(dt.UTC).replace(microsecond=0)
        recent = [e for e in ledger.hosts if e.time > now - limit.window]
        used = list(dict.fromkeys(e.host for e in recent))
        new = [h for h in hosts if h not in used]
        left = max(0, limit.max_hosts - len(used))
        say.print(f"budget {limit.describe()} (--max-hosts, --window): {len(used)} used{_runs(recent)}, "
                  f"{left} left", markup=False)
        if len(new) > left:
            for h in new:
                say.print(f"  {h}: not remediated: {len(new)} new host(s) exceed the {left} left in the budget"
                          + (" (nothing was run)" if run else " (--remediate/--execute would run nothing)"),
                          markup=False)
            return not run
        if run:
            ledger.hosts += [state.Remediated(host=h, time=now, who=state.who()) for h in hosts]
    return True


def _runs(recent: list[Remediated]) -> str:
    """` (gpu-a, gpu-b by alice@ws at 2026-…; …)`: the hosts each earlier run in the window took, by run."""
    by_run: dict[tuple[str, dt.datetime], list[str]] = {}
    for e in recent:
        by_run.setdefault((e.who, e.time), []).append(e.host)
    return " (" + "; ".join(f"{', '.join(dict.fromkeys(hosts))} by {who} at {time.isoformat(timespec='seconds')}"
                            for (who, time), hosts in by_run.items()) + ")" if by_run else ""


def remediate(
    inventory: Annotated[Path, typer.Argument(help="Inventory directory.")],
    host: Annotated[list[str], typer.Option("--host", help="faulty host (repeatable)")],
    reason: Annotated[str, typer.Option("--reason", help="what is wrong (Slurm Reason, audit log)")] = "fabric fault",
    scheduler: SchedulerOpt = "slurm,kubernetes",
    revert: Annotated[bool, typer.Option("--revert", help="the undo commands (resume, uncordon, untaint, re-add)")
                      ] = False,
    run: Annotated[bool, typer.Option("--execute", help="run the commands (default: print them)")] = False,
    max_hosts: MaxHostsOpt = MAX_HOSTS,
    window: WindowOpt = WINDOW,
) -> None:
    """Drain/cordon/taint faulty hosts in the scheduler (or undo it); printed unless --execute."""
    from fabric.design.load import load_fabric

    names = schedulers(scheduler)
    limit = budget(max_hosts, window)
    fabric = load_fabric(inventory).intent
    unknown = [h for h in host if h not in fabric.hosts]
    if unknown:
        raise UsageError(f"--host: expected hosts of {fabric.name}, found {', '.join(unknown)}")
    token = "".join(c if c.isalnum() else "-" for c in reason)[:40]
    faults = [Fault(host=h, reason=reason, token=token) for h in host]
    sys.exit(0 if hand_over(fabric, faults, names, run, revert, flag="--execute", limit=limit) else 1)


def accept_faults(fabric: FabricIntent, results: list) -> list[Fault]:
    """Hosts an acceptance run located (fault location of traffic checks; failing host checks)."""
    faults = []
    for r in results:
        if r.status != "fail":
            continue
        for loc in r.locations:
            for h in loc.hosts:
                rails = fabric.hosts[h].rails if h in fabric.hosts else []
                rail = next((x for x in rails if x.rail == loc.rail), None)
                nic = f" {rail.rdma}/{rail.netdev}" if rail else ""
                faults.append(Fault(host=h, rail=loc.rail, nic=rail.rdma if rail else None,
                                    reason=f"{r.name}: rail {loc.rail}{nic} failed", token=f"rail{loc.rail}-{r.check}"))
        if r.check in ("host-config", "host-prereqs"):
            faults += [Fault(host=m.src, reason=f"{r.name}: {m.detail}"[:120], token=r.check)
                       for m in r.measurements if not m.ok and m.src in fabric.hosts]
    return faults


def diagnose_faults(report, fabric: FabricIntent) -> list[Fault]:
    """Hosts that error findings point at as the faulty one (located through the inventory), and every host name
    such a finding gives that is no inventory host (`FabricIndex.host`): `screen` refuses it by name."""
    from fabric.diagnose.bind import FabricIndex

    index = FabricIndex(fabric)
    faults = []
    for f in report.findings:
        if f.severity != "error" or not f.host_fault:
            continue
        located = [(loc.host, loc.rail, loc.nic) for loc in f.located if loc.host]
        unknown = [(s["host"], None, s.get("dev")) for s in f.subjects
                   if s.get("host") and index.host(s["host"]) is None]
        for host, rail, nic in located + unknown:
            faults.append(Fault(host=host, rail=rail, nic=nic, token=f.id,
                                reason=f"{f.id} {f.title}" + (f" ({nic})" if nic else "")))
    return faults
