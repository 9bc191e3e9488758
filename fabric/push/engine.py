"""Plan and apply across switches: bounded parallel device transactions, canary then batches.

Per device (`apply_device`): connect, diff, health before, snapshot (recorded before anything
changes), commit with the device's confirm timer, post-check, then confirm — or roll back when the
post-check fails, the device refuses a step, or the connection drops (reconnect and roll back; if
the device cannot be reached again, a target with a confirm timer reverts by itself).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Literal

from pydantic import BaseModel

from fabric.access import Credentials, SwitchEndpoint
from fabric.push import state
from fabric.targets import driver_class
from fabric.targets.base import DeviceDiff, Driver, TargetError, Txn
from fabric.targets.session import close, conn_errors, open_driver, reason

Status = Literal["unchanged", "changed", "unreachable", "error", "applied", "rolled-back", "failed",
                 "skipped", "reverted-by-timer", "unknown"]
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
                "added": d.added if d else 0, "removed": d.removed if d else 0,
                "digest": d.digest if d and not d.empty else "", "sections": d.sections() if d else {},
                "detail": self.detail, "seconds": round(self.seconds, 2)}


class ApplyOptions(BaseModel):
    confirm_seconds: int = 300
    postcheck_timeout: float = 60
    settle: float = 5
    connect_timeout: float = 10


def _short(exc: BaseException) -> str:
    return state.scrub(reason(exc))


def plan_device(ep: SwitchEndpoint, cred: Credentials, *, timeout: float = 10,
                progress: Progress = lambda _d, _s: None) -> DeviceResult:
    t0 = time.monotonic()
    progress(ep.device, "connecting")
    try:
        drv = open_driver(ep, cred, timeout=timeout, progress=lambda s: progress(ep.device, s))
    except conn_errors() as exc:
        progress(ep.device, "unreachable")
        return DeviceResult(device=ep.device, target=ep.target, status="unreachable", detail=_short(exc),
                            seconds=time.monotonic() - t0)
    try:
        progress(ep.device, "diff")
        diff = drv.diff()
        return DeviceResult(device=ep.device, target=ep.target, status="unchanged" if diff.empty else "changed",
                            diff=diff, seconds=time.monotonic() - t0)
    except (TargetError, *conn_errors()) as exc:
        progress(ep.device, "error")
        return DeviceResult(device=ep.device, target=ep.target, status="error", detail=_short(exc),
                            seconds=time.monotonic() - t0)
    finally:
        close(drv)
        progress(ep.device, "done")


def plan_all(eps: list[SwitchEndpoint], cred: Credentials, *, workers: int = 8, timeout: float = 10,
             progress: Progress = lambda _d, _s: None) -> list[DeviceResult]:
    """Diff every endpoint, at most `workers` at a time; results in the order of `eps`."""
    with ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
        futs = [pool.submit(plan_device, ep, cred, timeout=timeout, progress=progress) for ep in eps]
        return [f.result() for f in futs]


def apply_device(fabric: str, ep: SwitchEndpoint, cred: Credentials, opts: ApplyOptions, *, action: str = "apply",
                 progress: Progress = lambda _d, _s: None) -> DeviceResult:
    """One device transaction; always audited when the device was (or may have been) changed."""
    t0 = time.monotonic()
    stage = lambda s: progress(ep.device, s)  # noqa: E731
    res = DeviceResult(device=ep.device, target=ep.target, status="failed")
    txn: Txn | None = None
    drv: Driver | None = None
    try:
        stage("connecting")
        drv = open_driver(ep, cred, timeout=opts.connect_timeout, progress=stage)
        stage("diff")
        res.diff = drv.diff()
        if res.diff.empty:
            res.status = "unchanged"
            return res
        before = drv.health()
        stage("snapshot")
        txn = drv.begin()
        if action == "apply":
            state.save_record(fabric, txn)
        stage("commit")
        drv.commit(txn, opts.confirm_seconds)
        stage("post-check")
        problems = drv.postcheck(before, timeout=opts.postcheck_timeout, settle=opts.settle)
        if problems:
            stage("rollback")
            drv.rollback(txn)
            res.status, res.detail = "rolled-back", "post-check failed: " + "; ".join(problems)
        else:
            stage("confirm")
            drv.confirm(txn)
            res.status = "applied"
    except TargetError as exc:
        res.detail = state.scrub(str(exc))
        if txn is not None and txn.committed and drv is not None:
            res.status, res.detail = _undo(ep, cred, opts, txn, drv, res.detail, reconnect=False)
        else:
            res.detail += "; device unchanged"
    except conn_errors() as exc:
        if drv is None:
            res.status, res.detail = "unreachable", _short(exc)
        elif txn is None or not txn.committed:
            res.detail = f"connection lost before the change ({_short(exc)}); device unchanged"
        else:
            res.status, res.detail = _undo(ep, cred, opts, txn, None, f"connection lost ({_short(exc)})",
                                           reconnect=True)
    finally:
        close(drv)
        res.seconds = time.monotonic() - t0
        if action == "apply" and txn is not None and res.status in ("applied", "rolled-back", "failed"):
            state.settle_record(fabric, ep.device, applied=res.status == "applied")
        stage(res.status)
        if res.status not in ("unchanged", "unreachable"):
            d = res.diff
            state.audit(fabric, state.AuditEntry(
                time=state.now(), who=state.who(), fabric=fabric, device=ep.device, target=ep.target,
                action=action, diff_digest=d.digest if d else "", added=d.added if d else 0,
                removed=d.removed if d else 0, result=res.status, detail=res.detail))
    return res


def _undo(ep: SwitchEndpoint, cred: Credentials, opts: ApplyOptions, txn: Txn, drv: Driver | None, why: str, *,
          reconnect: bool) -> tuple[Status, str]:
    """Roll a committed change back, over a new connection when the old one dropped."""
    fresh: Driver | None = None
    try:
        if reconnect:
            drv = fresh = open_driver(ep, cred, timeout=opts.connect_timeout)
        assert drv is not None
        drv.rollback(txn)
        return "rolled-back", f"{why}; rolled back"
    except (TargetError, *conn_errors()) as exc:
        if driver_class(ep.target).has_confirm_timer:
            return "reverted-by-timer", (f"{why}; rollback not possible ({_short(exc)}); the device reverts by "
                                         f"its confirm timer ({opts.confirm_seconds}s after commit, not verified)")
        return "unknown", f"{why}; rollback failed ({_short(exc)}); run `fabric rollback` for {ep.device}"
    finally:
        close(fresh)


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
            workers: int, action: str = "apply", progress: Progress = lambda _d, _s: None) -> list[DeviceResult]:
    """Apply batch by batch; the first batch with a device not applied/unchanged stops the rollout."""
    by_name = {ep.device: ep for ep in eps}
    results: dict[str, DeviceResult] = {}
    plan = batches(list(by_name), canary, batch)
    for i, group in enumerate(plan):
        with ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
            futs = {n: pool.submit(apply_device, fabric, by_name[n], cred, opts, action=action, progress=progress)
                    for n in group}
            for n, f in futs.items():
                results[n] = f.result()
        if any(results[n].status not in ("applied", "unchanged") for n in group):
            for later in plan[i + 1:]:
                for n in later:
                    results[n] = DeviceResult(device=n, target=by_name[n].target, status="skipped",
                                              detail=f"rollout stopped: batch {i + 1} failed")
            break
    return [results[ep.device] for ep in eps]
