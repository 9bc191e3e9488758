"""`fabric plan` against 32 lab switches: concurrent vs one at a time (root; brings a lab up and down).

A generated rail-optimized fabric (3 SUs × 8 rails = 24 leaves + 8 spines, one host per SU) runs in
the lab with real FRR and sshd; the plan connects to every switch over SSH with netmiko and runs
frr-reload.py --test there. Prints both wall times, the slowest single device (from the sequential
run) and whether the concurrent wall time stays within 2× of it. Because the lab's switches share
this machine's cores with the tool, it also prints the CPU time one plan costs (sshd login,
frr-reload.py, vtysh and the tool, from /proc/stat) and the floor that puts under a concurrent run.

    sudo .venv/bin/python bench/plan_concurrency.py [--workers 32] [--keep]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FABRIC = str(Path(sys.executable).with_name("fabric"))
os.environ.setdefault("FABRIC_LAB_STATE", "/run/roce-fabric/bench-plan")


def fabric(*args: str) -> None:
    subprocess.run([FABRIC, *args], check=True, cwd=ROOT)


def cpu_seconds() -> float:
    """Busy CPU time of the whole machine (every core), in seconds."""
    f = [int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    return (f[0] + f[1] + f[2] + f[5] + f[6] + f[7]) / os.sysconf("SC_CLK_TCK")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--workers", type=int, default=32)
    ap.add_argument("--rounds", type=int, default=2, help="concurrent rounds (best is reported)")
    args = ap.parse_args()
    if os.geteuid() != 0:
        print("bench/plan_concurrency.py needs root (the lab)", file=sys.stderr)
        return 2
    from fabric.cli.push import Context
    from fabric.push import engine

    with tempfile.TemporaryDirectory(prefix="plan-bench-") as tmp:
        inv = Path(tmp) / "bench32"
        fabric("generate", "gpu-rail", "-o", str(inv), "--gpus", "24", "--rails", "8", "--hosts-per-su", "1",
               "--spines", "8", "--platform", "linux-frr", "--breakout", "none", "--target", "frr",
               "--speed", "100G", "--name", "bench32")
        addr = inv / "addressing.yaml"
        addr.write_text(addr.read_text().replace("198.18.0.0/24", "198.18.94.0/24"))
        with (inv / "fabric.yaml").open("a") as f:
            f.write("lab:\n  prefix: pb\n  management: 198.18.94.0/24\n")
        fabric("lab", "up", str(inv), "--timeout", "240")
        try:
            ctx = Context(inv, None, lab=True, insecure_lab=False)
            n = len(ctx.endpoints)
            t0, c0 = time.monotonic(), cpu_seconds()
            seq = engine.plan_all(ctx.endpoints, ctx.cred, workers=1)
            seq_wall, seq_cpu = time.monotonic() - t0, cpu_seconds() - c0
            slowest = max(seq, key=lambda r: r.seconds)
            walls = []
            for _ in range(args.rounds):
                t0 = time.monotonic()
                conc = engine.plan_all(ctx.endpoints, ctx.cred, workers=args.workers)
                walls.append(time.monotonic() - t0)
            bad = [r for r in seq + conc if r.status != "unchanged"]
            wall = min(walls)
            print(f"switches: {n} (cores: {os.cpu_count()})")
            print(f"one at a time:        {seq_wall:6.2f} s wall")
            print(f"slowest single device: {slowest.seconds:5.2f} s ({slowest.device})")
            print(f"concurrent ({args.workers} workers): {wall:6.2f} s wall (rounds: "
                  f"{', '.join(f'{w:.2f}' for w in walls)}); slowest device in it "
                  f"{max(r.seconds for r in conc):.2f} s")
            ratio = wall / slowest.seconds
            floor = seq_cpu / (os.cpu_count() or 1)
            print(f"concurrent / slowest single = {ratio:.2f} ({'within' if ratio <= 2 else 'NOT within'} 2x)")
            print(f"CPU per switch plan (tool + sshd + frr-reload.py + vtysh): {seq_cpu / n:.2f} s; all {n} on "
                  f"{os.cpu_count()} cores need ≥ {floor:.2f} s wall; concurrent / that floor = {wall / floor:.2f}")
            if bad:
                print(f"unexpected results: {[(r.device, r.status, r.detail) for r in bad][:3]}")
            return 1 if bad else 0
        finally:
            fabric("lab", "down", str(inv))


if __name__ == "__main__":
    sys.exit(main())
