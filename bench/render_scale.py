"""Load (validate), derive, render and lint generated rail-optimized fabrics of growing size.

Prints wall time per stage, files and bytes written, and peak memory (ours and the render workers')
for 2k, 8k and 32k GPUs, each size in a fresh process, so linear scaling can be read off the table.
Targets at 32,768 GPUs on a 2-core machine: load + derive + render ≤ 10 s and ≤ 1 GiB;
lint ≤ 3 s after derive. `fabric render` writes what deployment needs (`--all` adds the review and
boot-time copies); the bench measures that default, writing below build/ as the command does (BENCH_OUT
moves it: on the project's machine /tmp is several times slower to create files in than build/ or
/var/tmp). Usage: `.venv/bin/python bench/render_scale.py [GPUS…]`.
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def one(gpus: int) -> dict[str, float]:
    """Run in a child process: generate, then time each stage; report peak RSS of us and workers."""
    from fabric.design.derive import Deriver
    from fabric.generate import GpuRailSpec, write
    from fabric.lint.context import Context
    from fabric.lint.engine import run
    from fabric.model.load import load
    from fabric.render import render_to

    # where `fabric render` writes by default: build/ of the working directory (BENCH_OUT moves it)
    base = Path(os.environ.get("BENCH_OUT", "build"))
    base.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=base, prefix="render-scale-") as tmp:
        inv = Path(tmp) / "inv"
        write(GpuRailSpec(name=f"g{gpus}", gpus=gpus), inv)
        t0 = time.perf_counter()
        loaded = load(inv)
        t1 = time.perf_counter()
        deriver = Deriver(loaded)
        fabric = deriver.fabric()
        t2 = time.perf_counter()
        files = render_to(Path(tmp) / "out", fabric)
        t3 = time.perf_counter()
        peak = max(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss,
                   resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss) / 1024
        written = sum(p.stat().st_size for p in (Path(tmp) / "out").rglob("*") if p.is_file())
        t4 = time.perf_counter()
        run(Context(loaded, fabric, deriver))
        t5 = time.perf_counter()
        return {"gpus": gpus, "switches": len(fabric.switches), "hosts": len(fabric.hosts), "files": files,
                "mb": written / 1e6, "load_s": t1 - t0, "derive_s": t2 - t1, "render_s": t3 - t2,
                "total_s": t3 - t0, "lint_s": t5 - t4, "peak_mib": peak}


def main() -> None:
    if len(sys.argv) > 2 and sys.argv[1] == "--one":
        print(json.dumps(one(int(sys.argv[2]))))
        return
    sizes = [int(a) for a in sys.argv[1:]] or [2048, 8192, 32768]
    print(f"{'GPUs':>6} {'switches':>8} {'hosts':>6} {'files':>6} {'MB':>6} {'load s':>7} {'derive s':>8} "
          f"{'render s':>8} {'total s':>7} {'lint s':>6} {'peak MiB':>8} {'µs/GPU':>7}")
    for gpus in sizes:
        out = subprocess.run([sys.executable, __file__, "--one", str(gpus)], capture_output=True, text=True,
                             check=True).stdout
        r = json.loads(out)
        print(f"{r['gpus']:>6} {r['switches']:>8} {r['hosts']:>6} {r['files']:>6} {r['mb']:>6.0f} {r['load_s']:>7.2f} "
              f"{r['derive_s']:>8.2f} {r['render_s']:>8.2f} {r['total_s']:>7.2f} {r['lint_s']:>6.2f} "
              f"{r['peak_mib']:>8.0f} {r['total_s'] / gpus * 1e6:>7.0f}")


if __name__ == "__main__":
    main()
