"""Peak memory of an all-pairs acceptance plan: `fabric accept INV --dry-run` on generated fabrics.

For each size (GPUs) it generates a rail-optimized fabric (`fabric generate gpu-rail`) and runs the whole dry run
(every check of the default catalog, all pairs) as one process, stdout to /dev/null and the plan kept below a
temporary directory; it prints peak RSS, CPU and wall seconds, the plan's size on disk and the load average. The
plan is written as it is made, so its peak RSS should not grow with the number of pairs; `--limit-s` stops a size
(SIGINT, as Ctrl-C) after that many seconds (32,768 GPUs makes about 270 million commands, tens of GB): the figures
are then those of the part written, which is enough to see that memory stays flat. `--baseline OTHER/bin/fabric`
measures another checkout's `fabric` on the same fabric first (`--baseline-max N`: only sizes up to N GPUs, since an
unstreamed plan needs about 10 GiB at 4,096).

    .venv/bin/python bench/accept_dryrun.py [--sizes 4096,32768] [--limit-s 0,120] [--baseline PATH/bin/fabric]
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from measure import FABRIC, load, run


class Plan:
    """What a dry run has written into `out`, watched while it runs: when its first bytes appeared, and its size
    and commands, counted at the end or, for a run stopped after `limit` seconds, just before the stop (the
    growing temporary file is removed when a stopped run ends)."""

    def __init__(self, out: Path, limit: float | None) -> None:
        self.out, self.limit = out, limit
        self.first: float | None = None
        self.size = self.commands = 0
        self.counted = False

    def watch(self, seconds: float) -> None:
        if self.first is None and any(p.stat().st_size for p in self.out.glob("*dry-run.txt*") if p.is_file()):
            self.first = seconds
        if self.limit is not None and seconds > self.limit and not self.counted:
            self.count()

    def count(self) -> None:
        """Count the commands (every line but the checks' headers) of the plan as it stands."""
        for p in self.out.glob("*dry-run.txt*"):
            with open(p, "rb") as f:
                self.commands = sum(1 for line in f if line.startswith(b"  "))
            self.size = p.stat().st_size
        self.counted = True

    def __str__(self) -> str:
        first = f"first lines after {self.first:.1f} s, " if self.first is not None else ""
        return f"{first}{self.commands:,} commands, {self.size / 2**30:.2f} GiB written"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="4096")
    ap.add_argument("--limit-s", default="", help="seconds per size, comma-separated (0: to completion)")
    ap.add_argument("--baseline", help="another checkout's fabric executable, measured first")
    ap.add_argument("--baseline-max", type=int, default=2048, help="largest size the baseline runs at")
    args = ap.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    limits = [float(x) or None for x in args.limit_s.split(",")] if args.limit_s else [None] * len(sizes)
    env = {"ROCE_FABRIC_CACHE": "off"}
    with tempfile.TemporaryDirectory(prefix="accept-dryrun-") as tmp:
        for gpus, limit in zip(sizes, limits, strict=True):
            inv = Path(tmp) / f"g{gpus}"
            subprocess.run([FABRIC, "generate", "gpu-rail", "--gpus", str(gpus), "-o", str(inv)], check=True,
                           stdout=subprocess.DEVNULL)
            sides = [("baseline", args.baseline)] if args.baseline and gpus <= args.baseline_max else []
            for label, exe in [*sides, ("this", FABRIC)]:
                out = Path(tmp) / f"out{gpus}-{label}"
                plan = Plan(out, limit)
                got = run([exe, "accept", str(inv), "--dry-run", "-o", str(out)], limit_s=limit, env=env,
                          watch=plan.watch)
                if not plan.counted:
                    plan.count()
                print(f"{gpus:>6} GPUs  accept --dry-run (all pairs)  {label:<8}  {got}; plan: {plan}; {load()}",
                      flush=True)
                shutil.rmtree(out, ignore_errors=True)
            shutil.rmtree(inv)


if __name__ == "__main__":
    main()
