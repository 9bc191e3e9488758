"""Enter a named network namespace (`ip netns add NAME`) for the calling thread, and leave it."""

from __future__ import annotations

import ctypes
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from fabric.errors import UsageError

CLONE_NEWNET = 0x40000000
NETNS_RUN_DIR = Path("/run/netns")
_libc = ctypes.CDLL(None, use_errno=True)


def _setns(fd: int) -> None:
    if _libc.setns(fd, CLONE_NEWNET) != 0:
        err = ctypes.get_errno()
        raise OSError(err, os.strerror(err))


@contextmanager
def netns(name: str | None) -> Iterator[None]:
    """Run the body inside network namespace `name` (no-op for None); always switch back.

    Netlink sockets opened, /proc/sys files read and processes started inside the body belong to
    that namespace. /sys is not remounted: pass a sysfs root for the namespace's devices if needed.
    """
    if name is None:
        yield
        return
    path = NETNS_RUN_DIR / name
    if "/" in name or not path.exists():
        raise UsageError(f"no network namespace {name!r} ({path} does not exist)")
    own = os.open("/proc/thread-self/ns/net", os.O_RDONLY)
    try:
        target = os.open(path, os.O_RDONLY)
        try:
            try:
                _setns(target)
            except OSError as exc:
                raise UsageError(f"cannot enter network namespace {name!r}: {exc.strerror}") from None
            try:
                yield
            finally:
                _setns(own)
        finally:
            os.close(target)
    finally:
        os.close(own)
