"""Batch work at cluster scale: a 32k-GPU fabric builds ~10^6 short-lived, acyclic objects (ports,
links, rails, rendered strings). Python's cyclic garbage collector would scan them again and again
(a third of derivation time); `gc_paused` turns it off for such a step and back on afterwards. Independent
items go over both cores with `fork_map`."""

from __future__ import annotations

import contextlib
import gc
import multiprocessing
from collections.abc import Callable, Iterator
from typing import Any


@contextlib.contextmanager
def gc_paused() -> Iterator[None]:
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def fork_map(fn: Callable[[Any], Any], jobs: list[Any], workers: int, chunksize: int = 16) -> list[Any]:
    """`fn` of every job, in order: in `workers` forked processes (they see the parent's state as it is now), or
    in this process where `workers` ≤ 1."""
    if workers <= 1:
        return [fn(job) for job in jobs]
    with multiprocessing.get_context("fork").Pool(workers) as pool:
        return pool.map(fn, jobs, chunksize=chunksize)


_BESIDE: dict[int, Callable[[], Any]] = {}  # the work of each `Beside` about to fork, by its number


def _run_beside(n: int) -> Any:
    with gc_paused():
        return _BESIDE[n]()


class Beside:
    """`fn()` in one forked process (it sees this one's state as it is at the start) while this one goes on;
    `get()` its result (the same on every call), or raises its exception. `fn` need not be picklable; its
    result must be."""

    def __init__(self, fn: Callable[[], Any]):
        n = len(_BESIDE)
        _BESIDE[n] = fn
        try:
            self.pool: Any = multiprocessing.get_context("fork").Pool(1)  # forks now: the child has `fn`
        finally:
            del _BESIDE[n]
        self.pending = self.pool.apply_async(_run_beside, (n,))
        self.got: tuple[Any] | None = None

    def get(self) -> Any:
        if self.got is None:
            try:
                self.got = (self.pending.get(),)
            finally:
                self.close()
        return self.got[0]

    def close(self) -> None:
        if self.pool is not None:
            self.pool.terminate()
            self.pool.join()
            self.pool = None
