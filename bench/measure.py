"""What the bench scripts measure of one command run as a whole process: wall seconds, CPU seconds (user + system
of it and the processes it waited for) and peak resident memory, with the machine's load average beside them (the
machine is shared: CPU seconds and peak RSS barely depend on the load, wall time does)."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FABRIC = str(ROOT / ".venv" / "bin" / "fabric")


@dataclass
class Figures:
    wall: float
    cpu: float
    rss_mib: float
    rc: int
    stopped: bool  # ended by the bench after its time limit

    def __str__(self) -> str:
        return (f"{self.wall:.2f} s wall, {self.cpu:.2f} CPU-s, peak RSS {self.rss_mib:,.0f} MiB"
                + (" (stopped at the time limit)" if self.stopped else f", rc {self.rc}"))


def load() -> str:
    """The load averages over 1, 5 and 15 minutes, and the CPUs they compare with."""
    one, five, fifteen = os.getloadavg()
    return f"load {one:.1f}/{five:.1f}/{fifteen:.1f} on {os.cpu_count()} CPUs"


def _interruptible() -> None:
    """In the child before exec: SIGINT as a terminal gives it (a bench started in the background of a
    non-interactive shell inherits it ignored, and the stop would be lost)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def run(argv: list[str], *, limit_s: float | None = None, stdout: int | None = subprocess.DEVNULL,
        env: dict[str, str] | None = None, watch: Callable[[float], None] | None = None) -> Figures:
    """Run `argv` (stdout to /dev/null unless given), stopped with SIGINT (as by Ctrl-C) after `limit_s` seconds;
    the figures of that one process (os.wait4: its own rusage, not every child's of the bench). `watch` is called
    with the seconds since the start every 50 ms while it runs (and last just before the stop); with neither, the
    bench waits for the end itself (the wall time exact, not to the 50 ms of a poll)."""
    proc = subprocess.Popen(argv, stdout=stdout, stderr=subprocess.DEVNULL, env={**os.environ, **(env or {})},
                            preexec_fn=_interruptible)
    t0 = time.perf_counter()
    stopped = False
    poll = os.WNOHANG if limit_s is not None or watch is not None else 0
    while True:
        pid, status, usage = os.wait4(proc.pid, poll)
        if pid:
            break
        if watch is not None and not stopped:
            watch(time.perf_counter() - t0)
        if limit_s is not None and time.perf_counter() - t0 > limit_s and not stopped:
            proc.send_signal(signal.SIGINT)
            stopped = True
        time.sleep(0.05)
    proc.returncode = os.waitstatus_to_exitcode(status)
    return Figures(wall=time.perf_counter() - t0, cpu=usage.ru_utime + usage.ru_stime, rss_mib=usage.ru_maxrss / 1024,
                   rc=proc.returncode, stopped=stopped)
