"""Batch work at cluster scale: a 32k-GPU fabric builds ~10^6 short-lived, acyclic objects (ports,
links, rails, rendered strings). Python's cyclic garbage collector would scan them again and again
(a third of derivation time); `gc_paused` turns it off for such a step and back on afterwards."""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator


@contextlib.contextmanager
def gc_paused() -> Iterator[None]:
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()
