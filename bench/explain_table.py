"""`fabric explain INV DEVICE` in its default (table) format against `--format json`, on generated fabrics.

For each size (GPUs) it generates a rail-optimized fabric and times, median of `--runs`, each as a whole process
with stdout to /dev/null: a leaf and a spine, table and JSON. Each line gives wall and CPU seconds, peak RSS and the
load average; `--baseline OTHER/bin/fabric` measures another checkout's `fabric` alternately with this one (its
derive cache off, where a release had one).

    .venv/bin/python bench/explain_table.py [--sizes 4096,32768] [--runs 3] [--baseline PATH/bin/fabric]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from measure import FABRIC, Figures, load, run

DEVICES = ("leaf-su1-r1", "spine1")


def rows(exe: str, inv: Path, device: str) -> int:
    """How many rows `device` has (the JSON's length)."""
    text = subprocess.run([exe, "explain", str(inv), device, "--format", "json"], capture_output=True, text=True,
                          env={**os.environ, "ROCE_FABRIC_CACHE": "off"}, check=True).stdout
    return len(json.loads(text))


def median(figures: list[Figures]) -> str:
    wall, cpu = statistics.median(f.wall for f in figures), statistics.median(f.cpu for f in figures)
    return f"{wall:5.2f} s ({cpu:.2f} CPU-s, {max(f.rss_mib for f in figures):.0f} MiB)"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="4096,32768")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--baseline", help="another checkout's fabric executable")
    args = ap.parse_args()
    exes = [("this", FABRIC), *([("baseline", args.baseline)] if args.baseline else [])]
    with tempfile.TemporaryDirectory(prefix="explain-table-") as tmp:
        for gpus in (int(s) for s in args.sizes.split(",")):
            inv = Path(tmp) / f"g{gpus}"
            subprocess.run([FABRIC, "generate", "gpu-rail", "--gpus", str(gpus), "-o", str(inv)], check=True,
                           stdout=subprocess.DEVNULL)
            for device in DEVICES:
                n = rows(FABRIC, inv, device)
                for fmt in ("table", "json"):
                    env = {"ROCE_FABRIC_CACHE": "off"}
                    argv = ["explain", str(inv), device, "--format", fmt]
                    got: dict[str, list[Figures]] = {label: [] for label, _ in exes}
                    for _ in range(args.runs):
                        for label, exe in exes:  # alternate: the same load on both
                            got[label].append(run([exe, *argv], env=env))
                    print(f"{gpus:>6} GPUs  explain {device} ({n:,} rows)  --format {fmt:<5}  "
                          + "  ".join(f"{label} {median(f)}" for label, f in got.items()) + f"; {load()}",
                          flush=True)


if __name__ == "__main__":
    main()
