"""Run one `fabric` command under cProfile and print its top entries by own time (for proportions only: the
profiler slows Python code several times, C code not at all).

Usage: `.venv/bin/python bench/profile_command.py [--top 12] -- validate INVENTORY`
"""

from __future__ import annotations

import argparse
import contextlib
import cProfile
import io
import pstats
import sys


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--top", type=int, default=12)
    ap.add_argument("argv", nargs=argparse.REMAINDER)
    args = ap.parse_args()
    argv = args.argv[1:] if args.argv[:1] == ["--"] else args.argv
    from fabric.cli.main import main as fabric_main

    sys.argv = ["fabric", *argv]
    prof = cProfile.Profile()
    with contextlib.redirect_stdout(io.StringIO()), contextlib.suppress(SystemExit):
        prof.runcall(fabric_main)
    out = io.StringIO()
    stats = pstats.Stats(prof, stream=out)
    stats.sort_stats("tottime").print_stats(args.top)
    lines = [ln for ln in out.getvalue().splitlines() if ln.strip()]
    start = next(i for i, ln in enumerate(lines) if ln.lstrip().startswith("ncalls"))
    total = next((ln.strip() for ln in lines if "function calls" in ln), "")
    print(f"    {total}")
    for ln in lines[start:]:
        print("    " + ln.replace(sys.prefix, "<venv>"))


if __name__ == "__main__":
    main()
