"""Load, validate, derive and render generated rail-optimized fabrics of growing size.

Prints wall time per stage and peak memory for 2k, 8k and 32k GPUs (each size in a fresh process),
so linear scaling can be read off the table. Usage: `.venv/bin/python bench/render_scale.py [GPUS…]`.
"""

from __future__ import annotations

import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def one(gpus: int) -> dict[str, float]:
    """Run in a child process: generate, then time each stage; report peak RSS of us and workers."""
    from fabric.design.derive import derive
    from fabric.generate import GpuRailSpec, write
    from fabric.model.load import load
    from fabric.render import render_to

    with tempfile.TemporaryDirectory() as tmp:
        inv = Path(tmp) / "inv"
        write(GpuRailSpec(name=f"g{gpus}", gpus=gpus), inv)
        t0 = time.perf_counter()
        loaded = load(inv)
        t1 = time.perf_counter()
        fabric = derive(loaded)
        t2 = time.perf_counter()
        files = render_to(Path(tmp) / "out", fabric)
        t3 = time.perf_counter()
        peak = max(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss,
                   resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss) / 1024
        return {"gpus": gpus, "switches": len(fabric.switches), "hosts": len(fabric.hosts), "files": files,
                "load_s": t1 - t0, "derive_s": t2 - t1, "render_s": t3 - t2, "total_s": t3 - t0, "peak_mib": peak}


def main() -> None:
    if len(sys.argv) > 2 and sys.argv[1] == "--one":
        print(json.dumps(one(int(sys.argv[2]))))
        return
    sizes = [int(a) for a in sys.argv[1:]] or [2048, 8192, 32768]
    print(f"{'GPUs':>6} {'switches':>8} {'hosts':>6} {'files':>6} {'load s':>7} {'derive s':>8} {'render s':>8} "
          f"{'total s':>7} {'peak MiB':>8} {'µs/GPU':>7}")
    for gpus in sizes:
        out = subprocess.run([sys.executable, __file__, "--one", str(gpus)], capture_output=True, text=True,
                             check=True).stdout
        r = json.loads(out)
        print(f"{r['gpus']:>6} {r['switches']:>8} {r['hosts']:>6} {r['files']:>6} {r['load_s']:>7.2f} "
              f"{r['derive_s']:>8.2f} {r['render_s']:>8.2f} {r['total_s']:>7.2f} {r['peak_mib']:>8.0f} "
              f"{r['total_s'] / gpus * 1e6:>7.0f}")


if __name__ == "__main__":
    main()
