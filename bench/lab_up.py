"""Lab benchmark: `lab up` → converged time and memory per node (RSS of the lab's processes / nodes).

Run as root: `.venv/bin/python bench/lab_up.py [INVENTORY ...]` (default: example and lab-2su8r).
Each lab is brought up, measured, and taken down again.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from fabric.design.derive import derive  # noqa: E402
from fabric.lab import lifecycle  # noqa: E402
from fabric.lab.sh import require_root  # noqa: E402
from fabric.model.load import load  # noqa: E402


def rss_kib(pid: int) -> int:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


def bench(inventory: str) -> None:
    loaded = load(ROOT / inventory)
    fabric = derive(loaded, target="frr")
    t0 = time.monotonic()
    st = lifecycle.up(fabric, inventory=inventory, prefix=loaded.inv.lab.prefix,
                      management=loaded.inv.lab.management, timeout=180)
    wall = time.monotonic() - t0
    try:
        per_daemon: dict[str, list[int]] = {}
        for node in st.nodes.values():
            for daemon, pid in node.pids.items():
                per_daemon.setdefault(daemon, []).append(rss_kib(pid))
        total = sum(sum(v) for v in per_daemon.values())
        nodes = len(st.nodes)
        sws, hosts = len(fabric.switches), len(fabric.hosts)
        print(f"{fabric.name}: {sws} switches, {hosts} hosts, {len(st.links)} cables")
        print(f"  lab up → converged: {wall:.1f} s (state says {st.up_seconds} s)")
        mib = total / 1024
        print(f"  RSS of lab processes: {mib:.1f} MiB total, {mib / nodes:.1f} MiB per node")
        for daemon, values in sorted(per_daemon.items()):
            print(f"    {daemon:8s} {len(values):3d} × {sum(values) / len(values) / 1024:5.1f} MiB")
    finally:
        t1 = time.monotonic()
        lifecycle.down(fabric.name)
        print(f"  lab down: {time.monotonic() - t1:.1f} s")


def main() -> None:
    require_root()
    os.environ.setdefault("FABRIC_LAB_STATE", "/run/roce-fabric/bench-lab")
    for inventory in sys.argv[1:] or ["inventories/example", "inventories/lab-2su8r"]:
        bench(inventory)


if __name__ == "__main__":
    main()
