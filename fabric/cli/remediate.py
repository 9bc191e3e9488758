"""Remediation shared by `fabric accept`, `fabric diagnose` and `fabric remediate`: print (or, with
--remediate / --execute, run) the scheduler actions for located faulty hosts; every run is audited."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from fabric.cli.console import console
from fabric.design.intent import FabricIntent
from fabric.errors import UsageError, printable
from fabric.remediate import MAX_HOSTS, SCHEDULERS, Fault, actions, command_lines, execute, screen

out = console(soft_wrap=True)

SchedulerOpt = Annotated[str, typer.Option(
    "--scheduler", help=f"where located faults are handed: any of {', '.join(SCHEDULERS)} (comma-separated)")]
RemediateOpt = Annotated[bool, typer.Option(
    "--remediate", help="run the scheduler actions for located faulty hosts (default: only print them)")]
MaxHostsOpt = Annotated[int, typer.Option(
    "--max-hosts", min=1, help="act on at most this many hosts in one run; more: nothing is run, exit 1")]


def schedulers(value: str) -> list[str]:
    names = [s.strip() for s in value.split(",") if s.strip()]
    bad = [s for s in names if s not in SCHEDULERS]
    if bad or not names:
        raise UsageError(f"--scheduler: expected some of {', '.join(SCHEDULERS)}, found {value!r}")
    return names


def hand_over(fabric: FabricIntent, faults: list[Fault], names: list[str], run: bool, revert: bool = False,
              flag: str = "--remediate", max_hosts: int = MAX_HOSTS) -> bool:
    """Print the actions (and how to undo them), or run them and audit each; False if one failed, a host named
    is not an inventory host (`fabric.remediate.screen`), or more than `max_hosts` hosts would be acted on (then
    nothing is run)."""
    from fabric.push import state

    members, refused = screen(fabric, faults)
    for r in refused:
        out.print(f"  {r.host}: {r.why}", markup=False)
    todo = actions(fabric, members, names)
    hosts = len({a.host for a in todo})
    if hosts > max_hosts and run:
        out.print(f"not remediated: {hosts} hosts exceed --max-hosts {max_hosts} (nothing was run)", markup=False)
        run, capped = False, True
    else:
        capped = False
    if not todo:
        return not refused
    verb = "undo" if revert else "remediation"
    out.print(f"{verb} for {hosts} host(s) ({', '.join(names)}):", markup=False)
    ok = not refused and not capped
    for a in todo:
        out.print(f"  {a.host} [{a.scheduler}] {printable(a.fault)}", markup=False)
        for line in command_lines(a, revert):
            out.print(f"    {line}", markup=False)
        if not revert:
            for line in command_lines(a, revert=True):
                out.print(f"    undo: {line}", markup=False)
        if run:
            done, detail = execute(a, revert)
            ok &= done
            out.print(f"    {'done' if done else 'FAILED'}: {detail}", markup=False)
            state.audit(fabric.name, state.AuditEntry(
                time=state.now(), who=state.who(), fabric=fabric.name, device=a.host, target=a.scheduler,
                action="revert" if revert else "remediate", diff_digest="", added=0, removed=0,
                result="executed" if done else "failed",
                detail="; ".join(command_lines(a, revert)) + (f" → {detail}" if detail else "")))
    if not run and not capped:
        out.print(f"  (printed only: {flag} runs them)", markup=False)
    return ok


def remediate(
    inventory: Annotated[Path, typer.Argument(help="Inventory directory.")],
    host: Annotated[list[str], typer.Option("--host", help="faulty host (repeatable)")],
    reason: Annotated[str, typer.Option("--reason", help="what is wrong (Slurm Reason, audit log)")] = "fabric fault",
    scheduler: SchedulerOpt = "slurm,kubernetes",
    revert: Annotated[bool, typer.Option("--revert", help="the undo commands (resume, uncordon, untaint, re-add)")
                      ] = False,
    run: Annotated[bool, typer.Option("--execute", help="run the commands (default: print them)")] = False,
    max_hosts: MaxHostsOpt = MAX_HOSTS,
) -> None:
    """Drain/cordon/taint faulty hosts in the scheduler (or undo it); printed unless --execute."""
    from fabric.design.load import load_fabric

    names = schedulers(scheduler)
    fabric = load_fabric(inventory).intent
    unknown = [h for h in host if h not in fabric.hosts]
    if unknown:
        raise UsageError(f"--host: expected hosts of {fabric.name}, found {', '.join(unknown)}")
    token = "".join(c if c.isalnum() else "-" for c in reason)[:40]
    faults = [Fault(host=h, reason=reason, token=token) for h in host]
    sys.exit(0 if hand_over(fabric, faults, names, run, revert, flag="--execute", max_hosts=max_hosts) else 1)


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


def diagnose_faults(report) -> list[Fault]:
    """Hosts that error findings point at as the faulty one (located through the inventory where given)."""
    faults = []
    for f in report.findings:
        if f.severity != "error" or not f.host_fault:
            continue
        hosts = [(loc.host, loc.rail, loc.nic) for loc in f.located if loc.host] or [
            (s["host"], None, s.get("dev")) for s in f.subjects if s.get("host")]
        for host, rail, nic in hosts:
            faults.append(Fault(host=host, rail=rail, nic=nic, token=f.id,
                                reason=f"{f.id} {f.title}" + (f" ({nic})" if nic else "")))
    return faults
