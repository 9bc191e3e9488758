"""Batch work at cluster scale: a 32k-GPU fabric builds ~10^6 short-lived, acyclic objects (ports,
links, rails, rendered strings). Python's cyclic garbage collector would scan them again and again
(a third of derivation time); `gc_paused` turns it off for such a step and back on afterwards. Independent
items go over both cores with `fork_map`."""

from __future__ import annotations

import contextlib
import gc
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
    import multiprocessing  # only where work is forked (derive and a cold `lint INV` never do)

    with multiprocessing.get_context("fork").Pool(workers) as pool:
        return pool.map(fn, jobs, chunksize=chunksize)
