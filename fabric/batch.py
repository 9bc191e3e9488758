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


def _answer(fn: Callable[[], Any], conn: Any) -> None:
    try:
        with gc_paused():
            answer = (True, fn())
    except Exception as exc:
        answer = (False, exc)
    try:
        conn.send(answer)
    except Exception as exc:  # an answer that does not pickle
        conn.send((False, RuntimeError(f"no answer from the other process: {exc}")))
    conn.close()


class Beside:
    """`fn()` in one forked process (it sees this one's state as it is at the start) while this one goes on;
    `get()` its result (the same on every call), or raises its exception, or RuntimeError where the process
    ended without an answer (killed, out of memory). `fn` need not be picklable; its result must be."""

    def __init__(self, fn: Callable[[], Any]):
        ctx = multiprocessing.get_context("fork")
        self.reader, writer = ctx.Pipe(duplex=False)
        self.process: Any = ctx.Process(target=_answer, args=(fn, writer), daemon=True)
        self.process.start()
        writer.close()  # only the child writes: its end closing is an end of file here
        self.got: tuple[bool, Any] | None = None

    def get(self) -> Any:
        if self.got is None:
            try:
                self.got = self.reader.recv()
            except (EOFError, OSError):
                self.got = (False, RuntimeError("the other process ended without an answer"))
            finally:
                self.close()
        ok, value = self.got
        if not ok:
            raise value
        return value

    def close(self) -> None:
        if self.process is not None:
            self.reader.close()
            if self.got is None:
                self.process.terminate()
            self.process.join()
            self.process = None
