"""`engine.plan_all` shares a large plan among processes, one per core: every switch planned once, in a forked process
or this one, results in the inventory's order, each device's progress reported here, a fault of the tool raised here,
and no process left behind."""

from __future__ import annotations

import multiprocessing
import os
import threading
import time
from typing import Any

import pytest

from fabric.access import Credentials, SwitchEndpoint
from fabric.push import engine
from tests.conftest import require


def _eps(n: int) -> list[SwitchEndpoint]:
    return [SwitchEndpoint(device=f"leaf{i:03d}", target="sonic", address=f"198.18.1.{i}", device_type="linux",
                           intended="{}") for i in range(n)]


def _planned_where(ep: SwitchEndpoint, _cred: Credentials, *, progress: Any, **_kw: Any) -> engine.DeviceResult:
    """A plan that says which process planned the switch (the real one reaches it over SSH)."""
    progress(ep.device, "diff")
    if ep.device == os.environ.get("PLAN_FAULT"):
        raise RuntimeError(f"a fault of the tool at {ep.device}")
    progress(ep.device, "done")
    return engine.DeviceResult(device=ep.device, target=ep.target, status="unchanged", detail=str(os.getpid()))


def test_a_large_plan_is_shared_among_processes_and_reported_here(monkeypatch: pytest.MonkeyPatch) -> None:
    require(len(os.sched_getaffinity(0)) >= 2, "two cores")
    monkeypatch.setattr(engine, "plan_device", _planned_where)
    stages: list[tuple[str, str, int]] = []
    lock = threading.Lock()

    def progress(device: str, stage: str) -> None:
        with lock:
            stages.append((device, stage, os.getpid()))

    eps = _eps(2 * engine.SHARE + 5)
    results = engine.plan_all(eps, Credentials(username="u"), workers=8, progress=progress)
    assert [r.device for r in results] == [ep.device for ep in eps]
    pids = {r.detail for r in results}
    assert str(os.getpid()) in pids and len(pids) == 2  # this process and one forked
    assert {pid for *_, pid in stages} == {os.getpid()}  # every stage reported here
    done = sorted(d for d, s, _ in stages if s == "done")
    assert done == sorted(ep.device for ep in eps)  # once each
    assert not multiprocessing.active_children()


def test_a_fault_of_the_tool_in_a_forked_share_is_raised_here(monkeypatch: pytest.MonkeyPatch) -> None:
    require(len(os.sched_getaffinity(0)) >= 2, "two cores")
    monkeypatch.setattr(engine, "plan_device", _planned_where)
    eps = _eps(2 * engine.SHARE)
    monkeypatch.setenv("PLAN_FAULT", eps[1].device)  # the second share's first switch: planned in the forked process
    with pytest.raises(RuntimeError, match="a fault of the tool at leaf001"):
        engine.plan_all(eps, Credentials(username="u"), workers=8)
    assert not multiprocessing.active_children()


def test_a_small_plan_and_one_that_keeps_sessions_stay_in_this_process(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(engine, "plan_device", _planned_where)
    small = engine.plan_all(_eps(2 * engine.SHARE - 1), Credentials(username="u"), workers=64)
    kept = engine.plan_all(_eps(2 * engine.SHARE), Credentials(username="u"), workers=2 * engine.SHARE, keep={})
    assert {r.detail for r in small + kept} == {str(os.getpid())}


def _applied_where(_fabric: str, ep: SwitchEndpoint, _cred: Credentials, _opts: Any, *, progress: Any,
                   stop: engine.Stop | None = None, **_kw: Any) -> engine.DeviceResult:
    """A transaction that waits for its post-check (at most 20 s) unless stopped, and says which process ran it."""
    progress(ep.device, "post-check")
    stopped = stop is not None and stop.event.wait(20)
    status = "skipped" if stopped else "applied"
    progress(ep.device, status)
    return engine.DeviceResult(device=ep.device, target=ep.target, status=status, detail=str(os.getpid()))


def test_a_large_batch_is_shared_and_a_signal_only_this_process_got_stops_every_share(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Any) -> None:
    """`kill PID` reaches the tool's own process: the forked share's transactions stop as this one's do."""
    require(len(os.sched_getaffinity(0)) >= 2, "two cores")
    monkeypatch.setattr(engine, "apply_device", _applied_where)
    monkeypatch.setenv("FABRIC_STATE", str(tmp_path))
    stop = engine.Stop()
    threading.Timer(1.0, stop.event.set).start()  # as the signal handler does, in this process alone
    t0 = time.monotonic()
    results = engine.rollout("f", _eps(2 * engine.SHARE + 2), Credentials(username="u"), engine.ApplyOptions(),
                             canary=0, batch="100%", workers=2 * engine.SHARE + 2, stop=stop)
    assert time.monotonic() - t0 < 10
    assert {r.status for r in results} == {"skipped"}
    assert len({r.detail for r in results}) == 2  # both processes ran transactions, and both stopped
    assert not multiprocessing.active_children()
