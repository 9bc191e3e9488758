"""`fabric plan` (online), `fabric apply` and `fabric rollback`: the commands around `engine`."""

from __future__ import annotations

import fnmatch
import functools
import json
import sys
import time
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.text import Text

from fabric.access import Credentials, SwitchEndpoint
from fabric.cli.console import console, print_table, styled
from fabric.cli.progress import devices as device_progress
from fabric.cli.progress import track
from fabric.cli.site import none_answered, open_site
from fabric.errors import UsageError, printable
from fabric.lab.state import instance, instance_key
from fabric.push import engine, state
from fabric.secrets import MASK, mask_line

out = console()
err = console(stderr=True)

LimitOpt = Annotated[str | None, typer.Option("--limit", help="switch name glob(s), comma-separated")]
WorkersOpt = Annotated[int, typer.Option("--workers", min=1, help="devices contacted at the same time")]
TimeoutOpt = Annotated[float | None, typer.Option(
    "--timeout", min=1, max=60, help="seconds a switch may take to answer one command before it is reported "
                                     "(default: each command's own wait, up to 60)")]
InsecureOpt = Annotated[bool, typer.Option("--insecure-lab", help="with --lab: do not verify SSH host keys")]
LabOpt = Annotated[bool, typer.Option("--lab", help="the running lab of this inventory (FRR in namespaces)")]
FormatOpt = Annotated[str, typer.Option("--format", help="table or json")]
InventoryArg = Annotated[Path, typer.Argument(help="inventory directory of YAML files", show_default=False)]


class Context:
    """The site (the inventory's switches, or the lab's with --lab), the selected switches and credentials."""

    def __init__(self, inventory: Path, limit: str | None, *, lab: bool, insecure_lab: bool,
                 names: list[str] | None = None, reply_timeout: float | None = None):
        _loaded, self.site = open_site(inventory, lab=lab, insecure_lab=insecure_lab)
        self.reply_timeout = reply_timeout  # --timeout
        self.fabric = self.site.fabric
        self.name = self.fabric.name
        # the name its apply records, audit log, journal and lock go under: a lab's (`<fabric>+lab`, with an
        # instance `<fabric>+<instance>+lab`) never stand for the production fabric's, nor one lab's for another's
        self.records = f"{instance_key(self.name, instance())}+lab" if lab else self.name
        switches = list(self.fabric.switches)
        if names is not None:
            unknown = [n for n in names if n not in self.fabric.switches]
            if unknown:
                raise UsageError(f"device: expected a switch of {self.name}, found {', '.join(unknown)}")
            switches = names
        if limit:
            pats = [p.strip() for p in limit.split(",") if p.strip()]
            switches = [s for s in switches if any(fnmatch.fnmatchcase(s, p) for p in pats)]
            if not switches:
                raise UsageError(f"--limit: expected a pattern matching switches of {self.name}, found {limit!r}")
        self.names = switches

    @functools.cached_property
    def endpoints(self) -> list[SwitchEndpoint]:
        return [self.endpoint(n) for n in self.names]

    def endpoint(self, name: str) -> SwitchEndpoint:
        """A selected switch with its rendered intent."""
        return self._owned(self.site.switch(name))

    def _owned(self, ep: SwitchEndpoint) -> SwitchEndpoint:
        """The endpoint with what the last confirmed apply rendered (its removal is in the owned scope)."""
        man = state.manifest(self.records, ep.device)
        return ep if man is None else ep.model_copy(update={"options": {**ep.options, "manifest": man}})

    @functools.cached_property
    def cred(self) -> Credentials:
        """Resolved on first use (after the apply lock is taken)."""
        cred = self.site.switch_credentials().model_copy(update={"reply_timeout": self.reply_timeout})
        if cred.password is not None:
            state.register_secret(cred.password.get_secret_value())
        return cred


def _summary(results: list[engine.DeviceResult]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for r in results:
        counts[r.status] = counts.get(r.status, 0) + 1
    return counts


def _masked(r: engine.DeviceResult) -> tuple[dict[str, list[str]], int]:
    """The device's diff sections with every secret masked by its NOS's structure (fabric.secrets), and the
    count of lines masked."""
    return (r.diff.sections(), r.diff.masked) if r.diff else ({}, 0)


def _diff_lines(sections: dict[str, list[str]]) -> Text:
    """A device's diff as the table output shows it: each section, then its lines coloured by their change; one
    Text for the device (rich lays out each line of it as it would a Text of its own, at a fraction of the cost of
    one print a line). Device text: control characters escaped."""
    block = Text()
    for section, items in sections.items():
        block.append(f"  {printable(section)}\n")
        for item in items:
            block.append(f"    {printable(item)}", style={"+": "green", "~": "yellow"}.get(item[0], "red"))
            block.append("\n")
    block.right_crop(1)  # the last newline: print ends the block with its own
    return block


def print_results(title: str, results: list[engine.DeviceResult], fmt: str, *, diffs: bool = True) -> None:
    """The results as a table (with each diff) or JSON; secret lines of running configs (passwords, secrets,
    keys, communities) are masked in both, and the output says how many were."""
    counts = _summary(results)
    masked = {r.device: _masked(r) for r in results}
    hidden = sum(n for _, n in masked.values())
    if fmt == "json":
        devices = [{**r.summary(), "sections": masked[r.device][0], "detail": mask_line(r.detail)[0],
                    "masked_lines": masked[r.device][1]} for r in results]
        sys.stdout.write(json.dumps({"fabric": title, "summary": counts, "masked_lines": hidden,
                                     "devices": devices}, indent=2) + "\n")
        return
    style = {"unchanged": "green", "applied": "green", "changed": "yellow", "rolled-back": "yellow",
             "skipped": "dim"}
    print_table(out, title, ("device", "target", "status", "+", "~", "-", "detail"), [
        (r.device, r.target, styled(r.status, style.get(r.status, "red")), str(r.diff.added if r.diff else ""),
         str(r.diff.changed if r.diff else ""), str(r.diff.removed if r.diff else ""),
         printable(mask_line(r.detail)[0])) for r in results])
    if diffs:
        for r in results:
            if r.diff and not r.diff.empty:
                out.print(Text.assemble((r.device, "bold"), f" ({r.target}) {r.diff.digest}; {r.diff.unmanaged} "
                                        "settings the inventory does not render left as they are"))
                out.print(_diff_lines(masked[r.device][0]))
    out.print(", ".join(f"{n} {s}" for s, n in sorted(counts.items())))
    unmanaged = [r.diff.unmanaged for r in results if r.diff]
    if unmanaged:
        out.print(f"left alone: {sum(unmanaged)} settings the inventory does not render, on {len(unmanaged)} "
                  "switches")
    foreign = sum(len(r.diff.foreign) for r in results if r.diff)
    if foreign:
        out.print(f"{foreign} lines the tool never rendered would be removed (marked above): `fabric apply` refuses "
                  "them without --allow-unowned-removal")
    if hidden:
        out.print(f"{hidden} secret lines masked (password, secret, key, community: shown as {MASK})")


def online_plan(inventory: Path, limit: str | None, fmt: str, workers: int, lab: bool, insecure_lab: bool,
                detailed: bool = False, timeout: float | None = None) -> int:
    """Diff every selected switch against its intent; exit 1 when a device is unreachable or errs, and with
    `detailed` (`--detailed-exitcode`, as terraform plan) 3 when every switch answered and some would change."""
    ctx = Context(inventory, limit, lab=lab, insecure_lab=insecure_lab, reply_timeout=timeout)
    warn_interrupted(ctx.records)
    with track("plan") as progress:
        update = device_progress(progress, f"plan {ctx.name}", len(ctx.endpoints))
        results = engine.plan_all(ctx.endpoints, ctx.cred, workers=workers, progress=update)
    print_results(f"{ctx.name}: plan", results, fmt)
    if results and all(r.status == "unreachable" for r in results):
        err.print(f"error: {none_answered(ctx.site, 'switches', [r.device for r in results])}", markup=False,
                  soft_wrap=True)
    if any(r.status in ("unreachable", "error") for r in results):
        return 1
    return 3 if detailed and any(r.status == "changed" for r in results) else 0


def print_order(groups: list[list[str]], canary: int, console: Console) -> None:
    """The rollout's order, before anything is asked or changed: the canary, then each batch."""
    console.print(f"rollout: {sum(map(len, groups))} switches in {len(groups)} steps, each after the one before "
                  "succeeded", markup=False)
    for i, group in enumerate(groups):
        label = "canary" if i == 0 and canary else f"batch {i + (0 if canary else 1)}"
        console.print(f"  {label:<9} {', '.join(group)}", markup=False, soft_wrap=True)


def interrupted_note(fabric: str) -> str:
    """One line per transaction an interrupted (killed) run left, or ''."""
    journal, pending = state.interrupted(fabric)
    if not pending and journal is None:
        return ""
    head = (f"an earlier {journal.action} of {fabric} did not finish (pid {journal.pid} on {journal.host} by "
            f"{journal.who} since {journal.started})" if journal else f"unsettled transactions of {fabric}")
    lines = [head + (":" if pending else "; no device was left mid-change")]
    for device, txn in pending.items():
        at = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(txn.started))
        lines.append(f"  {device} ({txn.target}): " + ("committed" if txn.committed else "prepared, not committed")
                     + f" at {at}, not confirmed by the tool")
    if pending:
        lines.append(f"  `fabric apply --resume` reads each back and confirms what is healthy; `fabric rollback "
                     f"INVENTORY {' '.join(pending)}` reverts them")
    return "\n".join(lines)


def warn_interrupted(fabric: str) -> None:
    note = "" if state.lock_held(fabric) else interrupted_note(fabric)  # a run in progress is not interrupted
    if note:
        sys.stderr.write(f"warning: {note}\n")


def running_plan(inventory: Path, running: Path, limit: str | None, fmt: str, detailed: bool = False) -> int:
    """The online plan's diff against saved running configurations `<running>/<switch><suffix>`; a switch
    without a file is reported (exit 1, like an unreachable one), the others are still diffed; `detailed` as
    in `online_plan`."""
    if not running.is_dir():
        raise UsageError(f"--running: expected a directory of saved running configurations, found {str(running)!r}")
    ctx = Context(inventory, limit, lab=False, insecure_lab=False)
    results = engine.plan_saved_all(ctx.names, ctx.endpoint, running)
    print_results(f"{ctx.name}: plan against {running}", results, fmt)
    if any(r.status in ("no-file", "error") for r in results):
        return 1
    return 3 if detailed and any(r.status == "changed" for r in results) else 0


def _check_timers(confirm_timer: int, postcheck_timeout: float, settle: float) -> None:
    if confirm_timer < postcheck_timeout + settle + 10:
        raise UsageError(f"--confirm-timer: expected at least --postcheck-timeout + --settle + 10 = "
                         f"{postcheck_timeout + settle + 10:.0f} s, found {confirm_timer}")


def _confirm_or_refuse(yes: bool, prompt: str) -> bool:
    if yes:
        return True
    return typer.confirm(prompt, default=False, err=True)


def _require_tty(yes: bool, verb: str) -> None:
    if not yes and not sys.stdin.isatty():
        raise UsageError(f"refusing to {verb} without --yes: no terminal to confirm on")


def apply_command(
    inventory: InventoryArg,
    limit: LimitOpt = None,
    canary: Annotated[int, typer.Option(min=0, help="devices changed first, alone")] = 1,
    batch: Annotated[str, typer.Option(help="then batches of N devices or P% of the rest")] = "25%",
    workers: WorkersOpt = 8,
    yes: Annotated[bool, typer.Option("--yes", "-y", help="do not ask for confirmation")] = False,
    lab: LabOpt = False,
    insecure_lab: InsecureOpt = False,
    timeout: TimeoutOpt = None,
    confirm_timer: Annotated[int, typer.Option(help="seconds the device waits for confirmation")] = 300,
    postcheck_timeout: Annotated[float, typer.Option(help="seconds for BGP to recover after a change")] = 60,
    settle: Annotated[float, typer.Option(help="seconds to wait before the post-check")] = 5,
    fmt: FormatOpt = "table",
    resume: Annotated[bool, typer.Option("--resume", help="first settle what an interrupted run left: confirm "
                                         "what is healthy, roll back the rest")] = False,
    rollback_on_failure: Annotated[bool, typer.Option("--rollback-on-failure", help="when a batch fails, return "
                                                      "the earlier batches to their recorded state")] = False,
    allow_unowned_removal: Annotated[bool, typer.Option("--allow-unowned-removal", help="remove lines the tool "
                                                        "never rendered where the plan marks them (settings that "
                                                        "contradict a rendered one); without it such a switch is "
                                                        "refused")] = False,
) -> None:
    """Change the switches to their intent: canary, then batches, each device a transaction with rollback."""
    import re

    if fmt not in ("table", "json"):
        raise UsageError(f"--format: expected table or json, found {fmt!r}")
    if not re.fullmatch(r"\d+%?", batch) or batch in ("0", "0%"):
        raise UsageError(f"--batch: expected a device count N or a percentage P%, found {batch!r}")
    _check_timers(confirm_timer, postcheck_timeout, settle)
    _require_tty(yes, "apply")
    ctx = Context(inventory, limit, lab=lab, insecure_lab=insecure_lab, reply_timeout=timeout)
    opts = engine.ApplyOptions(confirm_seconds=confirm_timer, postcheck_timeout=postcheck_timeout, settle=settle,
                               allow_unowned_removal=allow_unowned_removal)
    state.check_writable(ctx.records)  # the audit log and records first: refuse before any device is touched
    with (state.apply_lock(ctx.records), engine.signals_handled(engine.Stop()) as stop,
          engine.kept_sessions() as sessions):
        settled = _settle_interrupted(ctx, opts, resume=resume)
        with track("apply") as progress:
            update = device_progress(progress, f"plan {ctx.name}", len(ctx.endpoints))
            planned = engine.plan_all(ctx.endpoints, ctx.cred, workers=workers, progress=update, keep=sessions)
        changed = [r.device for r in planned if r.status == "changed"]
        if planned and all(r.status == "unreachable" for r in planned):
            err.print(f"error: {none_answered(ctx.site, 'switches', [r.device for r in planned])}", markup=False,
                      soft_wrap=True)
        if fmt == "table":
            print_results(f"{ctx.name}: plan", planned, fmt)
        if not changed:
            if fmt == "json":
                print_results(ctx.name, planned, fmt)
            else:
                out.print("nothing to apply")
            raise typer.Exit(1 if any(r.status in ("unreachable", "error") for r in planned) else 0)
        groups = engine.batches(changed, canary, batch)
        print_order(groups, canary, err if fmt == "json" else out)
        if not _confirm_or_refuse(yes, f"apply to {len(changed)} switches in {len(groups)} batches "
                                       f"({', '.join(str(len(g)) for g in groups)})?"):
            raise typer.Exit(1)
        eps = [ep for ep in ctx.endpoints if ep.device in changed]
        with track("apply") as progress:
            update = device_progress(progress, f"apply {ctx.name} ({len(groups)} batches)", len(eps))
            applied = engine.rollout(ctx.records, eps, ctx.cred, opts, canary=canary, batch=batch, workers=workers,
                                     progress=update, rollback_on_failure=rollback_on_failure, stop=stop,
                                     sessions=sessions)
    done = {r.device: r for r in [*settled, *applied]}
    results = [done.get(r.device, r) for r in planned]
    print_results(f"{ctx.name}: apply", results, fmt, diffs=False)
    if stop:
        sys.stderr.write(f"interrupted by {stop.signal}: changes not confirmed were rolled back\n")
        raise typer.Exit(130 if stop.signal == "SIGINT" else 143)
    raise typer.Exit(0 if all(r.status in ("applied", "unchanged") for r in results) else 1)


def _settle_interrupted(ctx: Context, opts: engine.ApplyOptions, *, resume: bool) -> list[engine.DeviceResult]:
    """Refuse to start over an interrupted run's unsettled transactions, unless --resume settles them."""
    _journal, pending = state.interrupted(ctx.records)
    if not pending:
        state.end_journal(ctx.records)  # a journal without pending transactions: nothing was mid-change
        return []
    if not resume:
        raise UsageError(interrupted_note(ctx.records).replace("\n", " ").replace("  ", " "))
    by_name = {ep.device: ep for ep in ctx.endpoints}
    results = [engine.resume_device(ctx.records, by_name.get(d) or ctx.site.switch(d), ctx.cred, opts, txn, finish=True)
               for d, txn in pending.items()]
    state.end_journal(ctx.records)
    return results


def rollback_command(
    inventory: InventoryArg,
    devices: Annotated[list[str], typer.Argument(help="switches to restore", show_default=False)],
    workers: WorkersOpt = 8,
    yes: Annotated[bool, typer.Option("--yes", "-y", help="do not ask for confirmation")] = False,
    lab: LabOpt = False,
    insecure_lab: InsecureOpt = False,
    confirm_timer: Annotated[int, typer.Option(help="seconds the device waits for confirmation")] = 300,
    postcheck_timeout: Annotated[float, typer.Option(help="seconds for BGP to recover")] = 60,
    settle: Annotated[float, typer.Option(help="seconds to wait before the post-check")] = 5,
    fmt: FormatOpt = "table",
) -> None:
    """Restore switches to the state recorded before the last apply (a transaction like apply)."""
    _check_timers(confirm_timer, postcheck_timeout, settle)
    _require_tty(yes, "roll back")
    ctx = Context(inventory, None, lab=lab, insecure_lab=insecure_lab, names=devices)
    eps, unsettled = [], {}
    for ep in ctx.endpoints:
        pend = state.load_pending(ctx.records, ep.device)
        rec = state.load_record(ctx.records, ep.device)
        if pend is not None:  # an interrupted run's transaction: revert it on the device first
            unsettled[ep.device] = pend
        elif rec is None:
            raise UsageError(f"{ep.device}: no record of an apply of {ctx.name} in {state.state_root(ctx.records)}")
        else:
            eps.append(engine.restore_endpoint(ep, rec))
    if not _confirm_or_refuse(yes, f"roll back {', '.join(devices)}?"):
        raise typer.Exit(1)
    opts = engine.ApplyOptions(confirm_seconds=confirm_timer, postcheck_timeout=postcheck_timeout, settle=settle)
    state.check_writable(ctx.records)
    by_name = {ep.device: ep for ep in ctx.endpoints}
    with state.apply_lock(ctx.records), track("rollback") as progress:
        update = device_progress(progress, f"roll back {ctx.name}", len(eps) + len(unsettled))
        results = [engine.resume_device(ctx.records, by_name[d], ctx.cred, opts, txn, finish=False, progress=update)
                   for d, txn in unsettled.items()]
        for r in results:  # confirmed before the interruption: restore the snapshot like any apply
            txn = unsettled[r.device]
            if r.status == "applied":
                state.settle_record(ctx.records, r.device, applied=False)
                eps.append(engine.restore_endpoint(by_name[r.device], txn))
        results = [r for r in results if r.status != "applied"]
        if eps:
            results += engine.rollout(ctx.records, eps, ctx.cred, opts, canary=0, batch=str(len(eps)), workers=workers,
                                      action="rollback", progress=update)
        if not state.interrupted(ctx.records)[1]:
            state.end_journal(ctx.records)
    print_results(f"{ctx.name}: rollback", results, fmt, diffs=False)
    # an interrupted transaction reverted on the device (or by its timer) is a successful rollback
    ok = {d: ("applied", "unchanged", "rolled-back", "reverted-by-timer") for d in unsettled}
    raise typer.Exit(0 if all(r.status in ok.get(r.device, ("applied", "unchanged")) for r in results) else 1)
