"""`engine.plan_all` shares a large plan among processes, one per core: every switch planned once, in a forked process
or this one, results in the inventory's order, each device's progress reported here, a fault of the tool raised here,
and no process left behind."""

from __future__ import annotations

import multiprocessing
import os
import threading
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
