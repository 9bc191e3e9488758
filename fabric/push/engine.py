"""Plan and apply across switches: bounded parallel device transactions, canary then batches.

Per device (`apply_device`): connect, diff, health before, snapshot (recorded before anything
changes), commit with the device's confirm timer, post-check, then confirm — or roll back when the
post-check fails, the device refuses a step, or the connection drops (reconnect and roll back; if
the device cannot be reached again, a target with a confirm timer reverts by itself).
"""

from __future__ import annotations

import contextlib
import gc
import itertools
import os
import queue
import signal
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel

from fabric.access import Credentials, SwitchEndpoint
from fabric.errors import InputError, ReplyError, one_line
from fabric.fast.batch import Beside, fork_map, gc_sparse
from fabric.model.running import check_running
from fabric.model.userfile import read_user_file
from fabric.nos import NOS
from fabric.push import state
from fabric.targets import driver, driver_class
from fabric.targets.base import DeviceDiff, Driver, Health, TargetError, Txn
from fabric.targets.owned import ScopeError
from fabric.targets.session import close, conn_errors, open_driver, reason

Status = Literal["unchanged", "changed", "unreachable", "error", "applied", "rolled-back", "failed",
                 "skipped", "reverted-by-timer", "unknown", "no-file", "pending"]
Progress = Callable[[str, str], None]  # (device, stage)


class DeviceResult(BaseModel):
    device: str
    target: str
    status: Status
    detail: str = ""
    diff: DeviceDiff | None = None
    seconds: float = 0.0

    def summary(self) -> dict[str, Any]:
        d = self.diff
        return {"device": self.device, "target": self.target, "status": self.status,
                "added": d.added if d else 0, "changed": d.changed if d else 0, "removed": d.removed if d else 0,
                "never_rendered_removals": len(d.foreign) if d else 0, "unmanaged": d.unmanaged if d else 0,
                "digest": d.digest if d and not d.empty else "", "sections": d.sections() if d else {},
                "detail": self.detail, "seconds": round(self.seconds, 2)}


class ApplyOptions(BaseModel):
    # removing lines the tool never rendered (a setting that contradicts a rendered one, a foreign line of an
    # owned object): refused per device unless the operator allows it (`--allow-unowned-removal`)
    allow_unowned_removal: bool = False
    confirm_seconds: int = 300
    postcheck_timeout: float = 60
    settle: float = 5
    connect_timeout: float = 10


def _short(exc: BaseException) -> str:
    return state.scrub(reason(exc))


def connect(ep: SwitchEndpoint, cred: Credentials, *, timeout: float,
            progress: Progress) -> tuple[Driver | None, str]:
    """The switch's driver, reporting `connecting`/`unreachable` to `progress`; (None, why) when unreachable."""
    progress(ep.device, "connecting")
    try:
        return open_driver(ep, cred, timeout=timeout, progress=lambda s: progress(ep.device, s)), ""
    except conn_errors() as exc:
        progress(ep.device, "unreachable")
        return None, _short(exc)


def plan_device(ep: SwitchEndpoint, cred: Credentials, *, timeout: float = 10,
                progress: Progress = lambda _d, _s: None, keep: dict[str, Driver] | None = None) -> DeviceResult:
    """The device's diff; `keep`: a changed device's session is left open there (the apply's transaction takes it)."""
    t0 = time.monotonic()
    drv, why = connect(ep, cred, timeout=timeout, progress=progress)
    if drv is None:
        return DeviceResult(device=ep.device, target=ep.target, status="unreachable", detail=why,
                            seconds=time.monotonic() - t0)
    try:
        progress(ep.device, "diff")
        diff = drv.diff()
        if keep is not None and not diff.empty:
            keep[ep.device], drv = drv, None
        return DeviceResult(device=ep.device, target=ep.target, status="unchanged" if diff.empty else "changed",
                            diff=diff, detail="; ".join(diff.notes), seconds=time.monotonic() - t0)
    except (TargetError, *conn_errors()) as exc:
        progress(ep.device, "error")
        return DeviceResult(device=ep.device, target=ep.target, status="error", detail=_short(exc),
                            seconds=time.monotonic() - t0)
    except ReplyError as exc:  # a reply not in its command's form: this switch's problem, located; the others go on
        progress(ep.device, "error")
        return DeviceResult(device=ep.device, target=ep.target, status="error", detail=state.scrub(str(exc)),
                            seconds=time.monotonic() - t0)
    finally:
        close(drv)
        progress(ep.device, "done")


def plan_saved(ep: SwitchEndpoint, running_dir: Path) -> DeviceResult:
    """The same diff as `plan_device`, against a saved running configuration `<dir>/<switch><suffix>`."""
    path = running_dir / f"{ep.device}{NOS[ep.target].running_suffix}"
    if not path.is_file():
        return DeviceResult(device=ep.device, target=ep.target, status="no-file", detail=f"no {path}")
    drv = driver(ep.target, None, ep.device, ep.intended, options=ep.options)
    try:
        text = read_user_file(path, f"a saved {ep.target} running configuration")
        diff = drv.unchanged_text(text)  # the render itself, byte for byte: nothing to read
        if diff is None:
            check_running(ep.target, path, text, located=False)  # lines: only for a problem
            diff = drv.diff_of(text)
    except InputError as exc:  # located: file, line, path, expected, found (fabric.model.running)
        return DeviceResult(device=ep.device, target=ep.target, status="error",
                            detail="; ".join(str(p) for p in exc.problems[:3]))
    except (TargetError, ScopeError) as exc:  # the pre-flight's reasons (SONiC), another ASN: sentences
        return DeviceResult(device=ep.device, target=ep.target, status="error",
                            detail=f"{path}: {' '.join(str(exc).split())}")
    except (OSError, ValueError, TypeError, AttributeError, KeyError, IndexError, RecursionError,
            yaml.YAMLError) as exc:  # what the structure checks let through: still this switch's problem only
        return DeviceResult(device=ep.device, target=ep.target, status="error",
                            detail=f"{path}: expected a {ep.target} running configuration, found {one_line(exc)}")
    return DeviceResult(device=ep.device, target=ep.target, status="unchanged" if diff.empty else "changed", diff=diff,
                        detail="; ".join(diff.notes))


_PLAN: tuple[Callable[[str], SwitchEndpoint], Path] | None = None  # inherited by forked workers, never pickled


def _plan_saved_names(names: list[str]) -> list[DeviceResult]:
    assert _PLAN is not None
    endpoint, running_dir = _PLAN
    return [plan_saved(endpoint(n), running_dir) for n in names]


def plan_saved_all(names: list[str], endpoint: Callable[[str], SwitchEndpoint], running_dir: Path,
                   per_worker: int = 100) -> list[DeviceResult]:
    """`plan_saved` of every switch, in order; each switch rendered (`endpoint`) and then diffed in turn (the NVUE
    driver diffs the tree it just rendered), a large fabric in forked workers on every core (switches are
    independent)."""
    global _PLAN
    workers = min(os.cpu_count() or 1, len(names) // per_worker)
    _PLAN = (endpoint, running_dir)
    try:
        if workers <= 1:
            return _plan_saved_names(names)
        chunks = [names[i:i + 16] for i in range(0, len(names), 16)]
        return [r for part in fork_map(_plan_saved_names, chunks, workers, chunksize=1) for r in part]
    finally:
        _PLAN = None


SHARE = 32  # devices: work on at least twice as many is shared among processes, one per core (`run_all`)
Work = Callable[[SwitchEndpoint, Progress], DeviceResult]  # one device's plan or transaction, its stages reported


def plan_all(eps: list[SwitchEndpoint], cred: Credentials, *, workers: int = 8, timeout: float = 10,
             progress: Progress = lambda _d, _s: None, keep: dict[str, Driver] | None = None) -> list[DeviceResult]:
    """Diff every endpoint, at most `workers` at a time; results in the order of `eps`. `keep` (an apply): where
    every endpoint is planned at once (no more than `workers`), the changed devices' sessions stay open there for
    their transactions (one login per switch; `kept_sessions` closes what is left); a larger plan closes each and is
    shared among processes (`run_all`)."""
    keep = keep if keep is not None and len(eps) <= workers else None
    return run_all(eps, lambda ep, report: plan_device(ep, cred, timeout=timeout, progress=report, keep=keep),
                   workers=workers, progress=progress, share=keep is None)


def run_all(eps: list[SwitchEndpoint], work: Work, *, workers: int, progress: Progress, share: bool = True,
            stop: Stop | None = None) -> list[DeviceResult]:
    """`work` on every endpoint, at most `workers` at a time; results in the order of `eps`.

    Work on at least 2 × SHARE devices (`share`) is shared among forked processes, one per core, each with its share
    of the workers: a switch's diff is the tool's own CPU work (reading, scoping, diffing its configuration), which
    one interpreter does on one core at a time. Each forked share (`Beside`, started before any worker here) sends its
    devices' stages and results as they happen, reported here; `stop` (an apply's) is each process's own, set in all
    of them by the signals that set it here."""
    shares = min(len(os.sched_getaffinity(0)), len(eps) // SHARE, workers) if share else 1
    if shares <= 1:
        return _run_threads(eps, work, workers, progress)
    with gc_sparse():  # a fleet: before the shares fork
        return _run_shares(eps, work, workers, progress, shares, stop)


def _run_shares(eps: list[SwitchEndpoint], work: Work, workers: int, progress: Progress, shares: int,
                stop: Stop | None) -> list[DeviceResult]:
    parts = [eps[i::shares] for i in range(shares)]
    each = max(1, workers // shares)
    besides = [Beside(partial(_events, part, work, each, stop)) for part in parts[1:]]
    results: dict[str, DeviceResult] = {}
    failures: list[BaseException] = []
    ended = threading.Event()

    def relay(beside: Beside, count: int) -> None:
        try:
            for i in itertools.count():
                if not count:
                    return
                device, event = beside.get(i)
                if isinstance(event, DeviceResult):
                    results[device], count = event, count - 1
                else:
                    progress(device, event)
        except BaseException as exc:  # raised in the calling thread
            failures.append(exc)

    def forward() -> None:  # a signal this process alone got (`kill PID`), to each share
        while stop is not None and not ended.is_set():
            if stop.event.wait(0.2):
                for b in besides:
                    b.interrupt()
                return

    threads = [threading.Thread(target=relay, args=(b, len(part)), daemon=True)
               for b, part in zip(besides, parts[1:], strict=True)]
    try:
        for t in [*threads, threading.Thread(target=forward, daemon=True)]:
            t.start()
        results.update((r.device, r) for r in _run_threads(parts[0], work, each, progress))
        for t in threads:
            t.join()
    finally:
        ended.set()
        for b in besides:
            b.close()
    if failures:
        raise failures[0]
    return [results[ep.device] for ep in eps]


def _run_threads(eps: list[SwitchEndpoint], work: Work, workers: int, progress: Progress) -> list[DeviceResult]:
    with ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
        futs = [pool.submit(work, ep, progress) for ep in eps]
        return [f.result() for f in futs]


def _events(eps: list[SwitchEndpoint], work: Work, workers: int,
            stop: Stop | None) -> Iterator[tuple[str, str | DeviceResult]]:
    """In a forked process: (device, stage) as each device's work goes on, (device, its result) at its end; an
    exception that ended a device's work (a fault of the tool, not of the device) ends it. With `stop`, the signals
    that set the parent's set this process's copy."""
    gc.enable()  # `Beside` pauses the collector; SSH sessions hold cycles (paramiko's transport and channel)
    events: queue.SimpleQueue[tuple[str, str | DeviceResult] | BaseException] = queue.SimpleQueue()

    def one(ep: SwitchEndpoint) -> None:
        try:
            events.put((ep.device, work(ep, lambda d, s: events.put((d, s)))))
        except BaseException as exc:
            events.put(exc)

    with signals_handled(stop) if stop is not None else contextlib.nullcontext(), \
            ThreadPoolExecutor(max_workers=workers) as pool:
        for ep in eps:
            pool.submit(one, ep)
        left = len(eps)
        while left:
            event = events.get()
            if isinstance(event, BaseException):
                raise event
            left -= isinstance(event[1], DeviceResult)
            yield event


@contextlib.contextmanager
def kept_sessions() -> Iterator[dict[str, Driver]]:
    """Where `plan_all` keeps sessions for the transactions of the same run; those none took are closed at the end."""
    sessions: dict[str, Driver] = {}
    try:
        yield sessions
    finally:
        while sessions:
            close(sessions.popitem()[1])


class Stop:
    """Set by SIGTERM/SIGHUP/SIGINT (`signals_handled`): no new device is started; a device whose change
    was committed is rolled back instead of confirmed; every device still gets its audit line."""

    def __init__(self) -> None:
        self.event = threading.Event()
        self.signal = ""

    def __bool__(self) -> bool:
        return self.event.is_set()


@contextlib.contextmanager
def signals_handled(stop: Stop) -> Iterator[Stop]:
    """Turn SIGTERM, SIGHUP (the operator's ssh dropped) and SIGINT into `stop` for the duration."""
    def handler(signum: int, _frame: object) -> None:
        stop.signal = signal.Signals(signum).name
        stop.event.set()

    if threading.current_thread() is not threading.main_thread():
        yield stop
        return
    old = {s: signal.signal(s, handler) for s in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT)}
    try:
        yield stop
    finally:
        for s, h in old.items():
            signal.signal(s, h)


def apply_device(fabric: str, ep: SwitchEndpoint, cred: Credentials, opts: ApplyOptions, *, action: str = "apply",
                 progress: Progress = lambda _d, _s: None, stop: Stop | None = None,
                 session: Driver | None = None) -> DeviceResult:
    """One device transaction; always audited when the device was (or may have been) changed.

    `session`: the plan's open session to the device (`plan_all` keep); one the switch closed meanwhile (the
    operator took long to confirm) is replaced by a new one before anything is read.

    Any exception after the commit — a refused command, a lost session, a reply that is not what was
    expected, a full disk, an interrupt — rolls the device back, over a new session when needed, after
    reading where the transaction stands on the device (`Driver.txn_state`).
    """
    t0 = time.monotonic()
    stage = lambda s: progress(ep.device, s)  # noqa: E731
    res = DeviceResult(device=ep.device, target=ep.target, status="failed")
    txn: Txn | None = None
    drv: Driver | None = None
    stop = stop if stop is not None else Stop()
    try:
        stage("connecting")
        if session is not None:
            drv, session.progress = session, stage
            stage("diff")
            try:
                res.diff = drv.diff()
            except conn_errors():  # the switch closed the plan's session while it waited: a new one
                close(drv)
                drv = None
        if drv is None:
            drv = open_driver(ep, cred, timeout=opts.connect_timeout, progress=stage)
            stage("diff")
            res.diff = drv.diff()
        if res.diff.empty:
            res.status = "unchanged"
            return res
        if res.diff.foreign and not opts.allow_unowned_removal:
            res.status, res.detail = "error", refused(res.diff)
            return res
        before = drv.health()
        if ep.options.get("bgp_before") is not None:  # a rollback: the sessions the switch had before that apply
            before = before.model_copy(update={"bgp_established": min(before.bgp_established,
                                                                      int(ep.options["bgp_before"]))})
        if stop:
            res.status, res.detail = "skipped", f"interrupted ({stop.signal}) before the change; device unchanged"
            return res
        stage("snapshot")
        txn = drv.begin()
        txn.native["bgp_before"] = before.bgp_established
        try:
            # the journal entry, written before anything changes: from here on the change may reach the device
            state.save_record(fabric, txn.model_copy(update={"committed": True}))
        except OSError as exc:
            drv.discard(txn)
            raise TargetError(f"cannot write the record to the state directory ({exc.strerror or exc})") from None
        stage("commit")
        drv.commit(txn, opts.confirm_seconds)
        with contextlib.suppress(OSError):
            state.save_record(fabric, txn)  # with what the commit returned (NVUE: the revision)
        stage("post-check")
        problems = drv.postcheck(before, timeout=opts.postcheck_timeout, settle=opts.settle)
        if stop:
            problems = [f"interrupted ({stop.signal}) before the confirm"]
        if problems:
            stage("rollback")
            drv.rollback(txn)
            res.status, res.detail = "rolled-back", ("post-check failed: " if not stop else "") + "; ".join(problems)
        else:
            stage("confirm")
            drv.confirm(txn)
            res.status = "applied"
    except Exception as exc:
        lost = isinstance(exc, conn_errors())
        why = state.scrub(str(exc)) if isinstance(exc, TargetError | ReplyError) else _short(exc)
        if drv is None:
            res.status, res.detail = ("unreachable" if lost else "failed"), why
        elif txn is None or not txn.committed:
            res.detail = (f"connection lost before the change ({why})" if lost else why) + "; device unchanged"
            if txn is not None and not lost:
                with contextlib.suppress(Exception):
                    drv.discard(txn)
        else:
            res.status, res.detail = _undo(ep, cred, opts, txn, None if lost else drv,
                                           f"connection lost ({why})" if lost else why)
    finally:
        close(drv)
        res.seconds = time.monotonic() - t0
        _settle(fabric, ep, action, txn, res)
        stage(res.status)
    return res


def refused(diff: DeviceDiff) -> str:
    """Why an apply leaves a device alone: it would remove lines the tool never rendered."""
    first = diff.foreign[0]
    return (f"refused: {len(diff.foreign)} lines the tool never rendered would be removed (first: {first.section}: "
            f"{first.line}); review them in `fabric plan`, then re-run with --allow-unowned-removal; device unchanged")


def _settle(fabric: str, ep: SwitchEndpoint, action: str, txn: Txn | None, res: DeviceResult) -> None:
    """Record and audit the outcome; a state directory that fails now is reported, never raised."""
    try:
        if txn is not None and res.status not in ("pending", "unknown"):
            state.settle_record(fabric, ep.device, applied=res.status == "applied" and action != "rollback")
    except OSError as exc:
        _unwritten(res, exc)
        return
    if res.status not in ("unchanged", "unreachable", "skipped") or txn is not None:
        audit_result(fabric, ep, action, res)


def audit_result(fabric: str, ep: SwitchEndpoint, action: str, res: DeviceResult) -> None:
    """One audit line of a device's outcome (its diff's counts, if any); a state directory that fails now is
    reported in `res.detail`, never raised."""
    d = res.diff
    try:
        state.audit(fabric, state.AuditEntry(
            time=state.now(), who=state.who(), fabric=fabric, device=ep.device, target=ep.target,
            action=action, diff_digest=d.digest if d else "", added=d.added if d else 0,
            removed=d.removed if d else 0, changed=d.changed if d else 0, result=res.status, detail=res.detail))
    except OSError as exc:
        _unwritten(res, exc)


def _unwritten(res: DeviceResult, exc: OSError) -> None:
    res.detail += f"; the state directory could not be written ({exc.strerror or exc}): audit line missing"


def _undo(ep: SwitchEndpoint, cred: Credentials, opts: ApplyOptions, txn: Txn, drv: Driver | None,
          why: str) -> tuple[Status, str]:
    """A committed change after a failure: read where it stands on the device, then roll it back."""
    fresh: Driver | None = None
    try:
        if drv is None:
            drv = fresh = open_driver(ep, cred, timeout=opts.connect_timeout)
        where = drv.txn_state(txn)
        if where == "confirmed":
            return "applied", f"{why}; the device had confirmed the change (read back): it stays"
        if where == "reverted":
            return "reverted-by-timer", f"{why}; the device already reverted it (read back)"
        drv.rollback(txn)
        return "rolled-back", f"{why}; rolled back"
    except Exception as exc:
        if driver_class(ep.target).has_confirm_timer:
            at = time.strftime("%H:%M:%S UTC", time.gmtime(txn.started + opts.confirm_seconds + 60))
            return "pending", (f"{why}; rollback not possible ({_short(exc)}); not verified: the device reverts by its "
                               f"confirm timer ({opts.confirm_seconds}s after the commit, by about {at}) — "
                               f"`fabric apply --resume` or `fabric rollback` reads it back")
        return "unknown", f"{why}; rollback failed ({_short(exc)}); run `fabric rollback` for {ep.device}"
    finally:
        close(fresh)


def resume_device(fabric: str, ep: SwitchEndpoint, cred: Credentials, opts: ApplyOptions, txn: Txn, *,
                  finish: bool, progress: Progress = lambda _d, _s: None) -> DeviceResult:
    """A transaction an interrupted run left (its pending record): read where it stands on the device;
    `finish`: confirm it when it still waits and the device is healthy; else roll it back."""
    t0 = time.monotonic()
    res = DeviceResult(device=ep.device, target=ep.target, status="unknown")
    drv: Driver | None = None
    try:
        progress(ep.device, "connecting")
        drv = open_driver(ep, cred, timeout=opts.connect_timeout)
        where = drv.txn_state(txn)
        if where == "confirmed":
            res.status, res.detail = ("applied", "the interrupted transaction had been confirmed") if finish else \
                ("applied", "confirmed before the interruption; `fabric rollback` restores the state before it")
        elif where in ("reverted", "failed", ""):
            res.status = "reverted-by-timer"
            res.detail = f"the interrupted transaction is not in place ({where or 'none'})"
        elif finish:
            before = Health(bgp_established=int(txn.native.get("bgp_before", 0)))
            problems = drv.postcheck(before, timeout=opts.postcheck_timeout, settle=0)
            if problems:
                drv.rollback(txn)
                res.status, res.detail = "rolled-back", "resume: post-check failed: " + "; ".join(problems)
            else:
                drv.confirm(txn)
                res.status, res.detail = "applied", "resume: the interrupted transaction confirmed"
        else:
            drv.rollback(txn)
            res.status, res.detail = "rolled-back", "the interrupted transaction rolled back"
    except Exception as exc:
        res.detail = f"could not settle the interrupted transaction: {_short(exc)}"
    finally:
        close(drv)
        res.seconds = time.monotonic() - t0
        if res.status != "unknown":
            _settle(fabric, ep, "resume" if finish else "rollback", txn, res)
        progress(ep.device, res.status)
    return res


def batches(devices: list[str], canary: int, batch: str) -> list[list[str]]:
    """Canary devices first, then batches of N devices or P% of the rest (at least one)."""
    if not devices:
        return []
    canary = max(0, min(canary, len(devices)))
    first, rest = devices[:canary], devices[canary:]
    size = max(1, round(len(rest) * float(batch[:-1]) / 100)) if batch.endswith("%") else max(1, int(batch))
    out = [first] if first else []
    out += [rest[i:i + size] for i in range(0, len(rest), size)]
    return out


def rollout(fabric: str, eps: list[SwitchEndpoint], cred: Credentials, opts: ApplyOptions, *, canary: int, batch: str,
            workers: int, action: str = "apply", progress: Progress = lambda _d, _s: None,
            rollback_on_failure: bool = False, stop: Stop | None = None,
            sessions: dict[str, Driver] | None = None) -> list[DeviceResult]:
    """Apply batch by batch; the first batch with a device not applied/unchanged stops the rollout.

    `rollback_on_failure`: the devices earlier batches applied go back to their recorded state (the
    same transaction as `fabric rollback`). A journal in the state directory names the rollout while
    it runs, so a run that is killed is found by the next one.
    """
    stop = stop if stop is not None else Stop()
    by_name = {ep.device: ep for ep in eps}
    results: dict[str, DeviceResult] = {}
    plan = batches(list(by_name), canary, batch)
    state.begin_journal(fabric, action, list(by_name))
    try:
        for i, group in enumerate(plan):
            kept = {n: s for n in group if (s := (sessions or {}).pop(n, None)) is not None}

            def work(ep: SwitchEndpoint, report: Progress, kept: dict[str, Driver] = kept) -> DeviceResult:
                return apply_device(fabric, ep, cred, opts, action=action, progress=report, stop=stop,
                                    session=kept.pop(ep.device, None))

            done = run_all([by_name[n] for n in group], work, workers=workers, progress=progress,
                           share=not kept, stop=stop)  # a group with a kept session stays in this process
            results.update((r.device, r) for r in done)
            if stop or any(results[n].status not in ("applied", "unchanged") for n in group):
                why = f"interrupted ({stop.signal})" if stop else f"batch {i + 1} failed"
                for later in plan[i + 1:]:
                    for n in later:
                        results[n] = DeviceResult(device=n, target=by_name[n].target, status="skipped",
                                                  detail=f"rollout stopped: {why}")
                if rollback_on_failure and action == "apply":
                    earlier = [n for g in plan[:i + 1] for n in g if results[n].status == "applied"]
                    _roll_back_applied(fabric, [by_name[n] for n in earlier], cred, opts, results, workers, progress)
                break
    finally:
        state.end_journal(fabric)
    return [results[ep.device] for ep in eps]


def _roll_back_applied(fabric: str, eps: list[SwitchEndpoint], cred: Credentials, opts: ApplyOptions,
                       results: dict[str, DeviceResult], workers: int, progress: Progress) -> None:
    """--rollback-on-failure: each device this rollout applied back to the state recorded before it."""
    todo = []
    for ep in eps:
        rec = state.load_record(fabric, ep.device)
        if rec is None:
            results[ep.device].detail += "; no record to roll back to"
            continue
        todo.append(restore_endpoint(ep, rec))
    undone = run_all(todo, lambda ep, report: apply_device(fabric, ep, cred, opts, action="rollback", progress=report),
                     workers=workers, progress=progress)
    for r in undone:
        n, ok = r.device, r.status in ("applied", "unchanged")
        results[n] = results[n].model_copy(update={
            "status": "rolled-back" if ok else "failed",
            "detail": f"applied, then rolled back (--rollback-on-failure): {r.status}"
                      + (f" ({r.detail})" if r.detail and not ok else "")})


def restore_endpoint(ep: SwitchEndpoint, rec: Txn) -> SwitchEndpoint:
    """The endpoint whose intent is a recorded snapshot, inside the scope that apply owned."""
    return ep.model_copy(update={"intended": rec.snapshot,
                                 "options": {**ep.options, "scope": rec.native.get("scope"), "manifest": None,
                                             "bgp_before": rec.native.get("bgp_before"),
                                             "scripts_restore": rec.native.get("scripts_restore")}})
