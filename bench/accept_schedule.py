"""Acceptance scheduling: rounds and wall time, all-pairs vs quick.

1. Simulated 4,096-host × 8-rail cluster (scheduling only, simulated measurements): rounds of the
   circle method and of quick mode, time to compute them, and bisection rounds to name one slow NIC.
2. The lab (root, FRR, iperf3; `--lab`): real `fabric accept --tags rail-bandwidth` with and without
   --quick on a private copy of inventories/example, wall time and rounds; always torn down.

    .venv/bin/python bench/accept_schedule.py [--lab]
"""

from __future__ import annotations

import json
import math
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from fabric.accept.locate import locate, simulated_probe  # noqa: E402
from fabric.accept.schedule import schedule  # noqa: E402

FABRIC = str(Path(sys.executable).with_name("fabric"))


def simulated(hosts: int = 4096, rails: int = 8) -> None:
    names = [f"gpu{i:05d}" for i in range(hosts)]
    per_rail = {r: names for r in range(1, rails + 1)}
    for quick in (False, True):
        t0 = time.perf_counter()
        rounds = schedule(per_rail, quick=quick)
        took = time.perf_counter() - t0
        tests = sum(len(ps) for rd in rounds for ps in rd.pairs.values())
        est = len(rounds) * 2 * 5  # both directions, 5 s per ib_write_bw test
        print(f"simulated {hosts} hosts × {rails} rails, {'quick' if quick else 'all pairs'}: {len(rounds)} rounds, "
              f"{tests:,} pair tests, scheduled in {took:.2f}s; at 2×5 s per round ≈ {est / 3600:.1f} h "
              f"({est:,} s)")
    bad = names[2345]
    probe = simulated_probe(lambda rail, h: 50.0 if (rail, h) == (5, bad) else 390.0, threshold=360)
    t0 = time.perf_counter()
    loc = locate(5, names, probe)
    took = time.perf_counter() - t0
    print(f"fault location over {hosts} hosts: named {loc.summary} in {loc.rounds} rounds "
          f"(⌈log2 N⌉ = {math.ceil(math.log2(hosts))}), computed in {took:.2f}s")


def lab() -> None:
    d = Path(tempfile.mkdtemp()) / "accbench"
    shutil.copytree(ROOT / "inventories" / "example", d)
    fab = (d / "fabric.yaml").read_text().replace("name: example", "name: accbench")
    (d / "fabric.yaml").write_text(fab)
    (d / "addressing.yaml").write_text((d / "addressing.yaml").read_text()
                                       .replace("198.18.0.0/24", "198.51.100.0/24"))
    (d / "lab.yaml").write_text("lab:\n  prefix: ab\n  management: 198.51.100.0/24\n")
    env = {**os.environ, "FABRIC_LAB_STATE": "/run/roce-fabric/bench-lab"}

    def fabric(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([FABRIC, *args], capture_output=True, text=True, env=env, cwd=ROOT, timeout=600)

    try:
        p = fabric("lab", "up", str(d))
        if p.returncode:
            print("lab up failed:", p.stderr.strip())
            return
        for extra in ([], ["--quick"]):
            out = d / ("quick" if extra else "all")
            t0 = time.perf_counter()
            p = fabric("accept", str(d), "--lab", "--tags", "rail-bandwidth", "--format", "json", "-o", str(out),
                       *extra)
            took = time.perf_counter() - t0
            data = json.loads((out / "accept.json").read_text())
            r = data["results"][0]
            print(f"lab 4 hosts × 4 rails, {'quick' if extra else 'all pairs'} (iperf3 1 s × 2 directions): "
                  f"{r['rounds']} rounds, {len(r['measurements'])} tests, {r['status']}, wall {took:.1f}s")
    finally:
        fabric("lab", "down", str(d))
        shutil.rmtree(d.parent, ignore_errors=True)


if __name__ == "__main__":
    simulated()
    if "--lab" in sys.argv:
        lab()
