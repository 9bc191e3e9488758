"""fabric.fast.batch: the collector settings of a run over a fleet."""

from __future__ import annotations

import gc
import weakref

from fabric.fast.batch import gc_sparse


class _Node:
    def __init__(self) -> None:
        self.me = self  # a cycle: only the collector frees it, as paramiko's transport and channel


def test_gc_sparse_freezes_what_was_built_before_and_still_frees_cycles_made_inside() -> None:
    before = gc.get_threshold()
    kept = _Node()
    try:
        with gc_sparse(young=4000):
            assert gc.get_threshold() == (4000, *before[1:])
            assert gc.get_freeze_count() > 0
            made = _Node()
            gone = weakref.ref(made)
            del made
            gc.collect()
            assert gone() is None  # made inside: not frozen, collected
        assert gc.get_threshold() == before
        dropped = weakref.ref(kept)
        del kept
        gc.collect()
        assert dropped() is not None  # built before: frozen, out of the collector's reach
    finally:
        gc.unfreeze()
        gc.collect()
