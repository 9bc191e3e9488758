"""Run `fabric` on hostile input and judge the outcome.

A run is a defect when it ends in a traceback (any exception but SystemExit), an exit code other than 0/1/2, runs
past its time bound (a hang: 30 CPU seconds, or 300 s of wall time for a run that blocks), grows the process past
a memory bound, prints an error without a location (each `error:` line must start with the input's path or an
option), or writes a file outside its output directory.
Runs are in-process (fast: `fabric.cli.main.main` with sys.argv set); `subprocess_run` is the real process for
a sample of cases (real exit codes, segfaults)."""

from __future__ import annotations

import contextlib
import io
import json
import os
import resource
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
TIME_BOUND_S = float(os.environ.get("FUZZ_TIME_BOUND", "30"))  # CPU seconds of this process (a loop, a regex)
WALL_BOUND_S = 10 * TIME_BOUND_S  # wall seconds (a blocking read): a starved run at nice 19 is no hang
MEMORY_BOUND_MIB = int(os.environ.get("FUZZ_MEMORY_BOUND", "1500"))
OUT = Path(os.environ.get("FUZZ_OUT") or ROOT / "build" / "fuzz")  # tests/fuzz/long.py: one folder per chunk


class Hang(Exception):
    pass


@dataclass
class Outcome:
    rc: int
    stdout: str
    stderr: str
    seconds: float
    error: str = ""  # a traceback's last line, or why it hung


@dataclass
class Stats:
    """Counts for one fuzz target, written to build/fuzz/<target>.json; defects saved for replay."""

    target: str
    cases: int = 0
    runs: int = 0
    exit_codes: dict[int, int] = field(default_factory=dict)
    defects: list[str] = field(default_factory=list)
    started: float = field(default_factory=time.monotonic)

    def record(self, outcome: Outcome) -> None:
        self.runs += 1
        self.exit_codes[outcome.rc] = self.exit_codes.get(outcome.rc, 0) + 1

    def defect(self, why: str, case_dir: Path | None) -> None:
        n = len(self.defects)
        if case_dir is not None and n < 50:  # keep the input to replay it
            keep = OUT / "defects" / self.target / f"{n:03d}"
            shutil.rmtree(keep, ignore_errors=True)
            shutil.copytree(case_dir, keep, symlinks=True, ignore_dangling_symlinks=True,
                            ignore=lambda d, names: [x for x in names if not (Path(d) / x).is_file()
                                                     and not (Path(d) / x).is_dir()])
        self.defects.append(why[:2000])

    def save(self, partial: bool = False) -> dict[str, object]:
        """Write the counts; `partial`: a save while the run goes on (a chunk stopped early keeps what it did)."""
        seconds = time.monotonic() - self.started
        doc = {"target": self.target, "cases": self.cases, "runs": self.runs, "seconds": round(seconds, 1),
               "cases_per_s": round(self.cases / seconds, 1) if seconds else 0,
               "exit_codes": {str(k): v for k, v in sorted(self.exit_codes.items())},
               "defects": len(self.defects), "first_defects": self.defects[:10], "partial": partial,
               "cpu_seconds": round(sum(r.ru_utime + r.ru_stime for r in map(resource.getrusage, (
                   resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN))), 1),  # the chunk's process and its children
               "peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024}
        OUT.mkdir(parents=True, exist_ok=True)
        (OUT / f"{self.target}.json").write_text(json.dumps(doc, indent=2) + "\n")
        return doc


def _alarm(signum: int, frame: object) -> None:
    raise Hang(f"no result in {TIME_BOUND_S:.0f} CPU s" if signum == signal.SIGVTALRM else
               f"no result in {WALL_BOUND_S:.0f} s")


def rss_mib() -> float:
    with open("/proc/self/statm") as fh:
        return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def run(*args: str, stdin: str = "") -> Outcome:
    """`fabric ARGS` in this process; exceptions other than SystemExit are reported, not raised."""
    from fabric.cli.main import main

    if trace := os.environ.get("FUZZ_TRACE"):  # the command about to run, kept when the process dies (OOM)
        with open(trace, "a") as fh:
            fh.write(" ".join(args) + "\n")
    out, err = io.StringIO(), io.StringIO()
    old = signal.signal(signal.SIGALRM, _alarm), signal.signal(signal.SIGVTALRM, _alarm)
    signal.setitimer(signal.ITIMER_VIRTUAL, TIME_BOUND_S)
    signal.setitimer(signal.ITIMER_REAL, WALL_BOUND_S)
    argv, stdin_old = sys.argv, sys.stdin
    sys.argv, sys.stdin = ["fabric", *args], io.StringIO(stdin)
    t0 = time.monotonic()
    rc, error = 0, ""
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            main()
    except SystemExit as exc:
        rc = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    except Hang as exc:
        rc, error = -1, f"hang: {exc}"
    except BaseException as exc:  # a traceback is exactly what the fuzzer looks for
        import traceback

        rc, error = -2, "traceback: " + "".join(traceback.format_exception(exc)[-3:]).strip()
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.setitimer(signal.ITIMER_VIRTUAL, 0)
        signal.signal(signal.SIGALRM, old[0])
        signal.signal(signal.SIGVTALRM, old[1])
        sys.argv, sys.stdin = argv, stdin_old
    return Outcome(rc, out.getvalue(), err.getvalue(), time.monotonic() - t0, error)


def subprocess_run(*args: str) -> Outcome:
    """The real `fabric` process: its exit code (139 for a segfault) and output."""
    t0 = time.monotonic()
    try:
        r = subprocess.run([sys.executable, "-c", "from fabric.cli.main import main; main()", *args],
                           capture_output=True, text=True, timeout=TIME_BOUND_S * 2, cwd=ROOT)
    except subprocess.TimeoutExpired:
        return Outcome(-1, "", "", time.monotonic() - t0, "hang (subprocess)")
    return Outcome(r.returncode, r.stdout, r.stderr, time.monotonic() - t0)


def judge(outcome: Outcome, located_at: tuple[str, ...], out_dir: Path | None = None,
          case_dir: Path | None = None) -> str | None:
    """Why `outcome` is a defect, or None. `located_at`: prefixes an `error:` line may start with (the input
    paths, `--option`s). With `out_dir` and `case_dir`: nothing written in case_dir outside out_dir."""
    if outcome.error:
        return outcome.error
    if outcome.rc not in (0, 1, 2):
        return f"exit code {outcome.rc}: {outcome.stderr[-500:]}"
    if "Traceback (most recent call last)" in outcome.stderr + outcome.stdout:
        return f"traceback printed: {outcome.stderr[-800:]}"
    for line in outcome.stderr.splitlines():
        if line.startswith("error: ") and not line.startswith("error: … and "):
            text = line.removeprefix("error: ")
            if not text.startswith(located_at):
                return f"error without a location: {line[:300]}"
    if rss_mib() > MEMORY_BOUND_MIB:
        return f"memory over {MEMORY_BOUND_MIB} MiB: {rss_mib():.0f} MiB"
    if out_dir is not None and case_dir is not None:
        for p in case_dir.rglob("*"):
            if out_dir not in (p, *p.parents) and p.name != "inv" and "inv" not in p.relative_to(case_dir).parts:
                return f"a file written outside the output directory: {p}"
    return None
