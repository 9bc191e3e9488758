"""Time the commands engineers run dozens of times a day, as whole processes, on generated fabrics of growing size.

For each size (GPUs; default 4,096 and 32,768) it generates a rail-optimized fabric (`fabric generate gpu-rail`),
renders it once, saves each switch's rendered NVUE patch as its "running" config, and then times, median of
`--runs`: `--version`, `--help`, `validate`, `lint`, `render`, `render --all`, `explain` of one leaf (JSON and table),
`lint --configs` on the render and `plan --running` against the unchanged render. With `--baseline FABRIC` (the
`fabric` executable of another checkout, e.g. the last release's venv) each figure is measured for both in the same
run, alternating, so a loaded machine slows both alike, and the ratio is printed; `no-cache:FABRIC` runs a
baseline with `ROCE_FABRIC_CACHE=off` (releases that had a derive cache), while a plain one gets a fresh cache
directory. With two or more sizes, the exponent k in CPU time ∝ size^k between the smallest and largest size says
whether a command scales linearly (k ≈ 1; below 1 where start-up still weighs).

Each figure is wall seconds and, in brackets, CPU seconds (user + system of the command and the processes it
waited for) and peak RSS (of the largest of its processes), with the load average when it ended: on a shared
machine the CPU seconds say more. Every side runs from compiled bytecode in the bench's own cache
(`PYTHONPYCACHEPREFIX`), compiled before the first run.

`--profile N` prints each command's top N cProfile entries (bench/profile_command.py) after its timings.

Usage: `.venv/bin/python bench/commands.py [--sizes 4096,32768,65536] [--runs 3] [--baseline PATH/bin/fabric]
[--profile 8] [--only validate,lint] [--work /dev/shm]`
"""

from __future__ import annotations

import argparse
import math
import os
import shutil
import statistics
import subprocess
import tempfile
from pathlib import Path

from measure import load, run

HERE = Path(__file__).resolve().parent.parent
FABRIC = str(HERE / ".venv" / "bin" / "fabric")


def commands(inv: Path, out: Path, running: Path) -> dict[str, list[str]]:
    return {
        "--version": ["--version"],
        "--help": ["--help"],
        "validate": ["validate", str(inv)],
        "lint": ["lint", str(inv)],
        "render": ["render", str(inv), "-o", str(out / "r")],
        "render --all": ["render", str(inv), "--all", "-o", str(out / "a")],
        "explain leaf-su1-r1": ["explain", str(inv), "leaf-su1-r1", "--format", "json"],
        "explain (table)": ["explain", str(inv), "leaf-su1-r1"],
        "lint --configs": ["lint", str(inv), "--configs", str(running)],
        "plan --running": ["plan", str(inv), "--running", str(running)],
    }


NO_CACHE = "no-cache:"  # a baseline so marked runs with its derive cache off (ROCE_FABRIC_CACHE=off)


CPU: dict[str, list[float]] = {}  # "size command exe" → CPU seconds of each run (user + system, all processes)
RSS: dict[str, list[float]] = {}  # "size command exe" → peak RSS of each run, MiB (the largest of its processes)


def seconds(exe: str, argv: list[str], label: str = "") -> float:
    """Wall seconds of one run (`measure.run`); its CPU seconds (the command and every process it waited for, such
    as render's workers) go to CPU[label]: on a shared machine they say more than the wall time."""
    figures = run([exe.removeprefix(NO_CACHE), *argv],
                  env={"ROCE_FABRIC_CACHE": "off"} if exe.startswith(NO_CACHE) else None)
    CPU.setdefault(label, []).append(figures.cpu)
    RSS.setdefault(label, []).append(figures.rss_mib)
    return figures.wall


def warm(exe: str) -> None:
    """Compile the package of `exe` into the bench's bytecode cache (PYTHONPYCACHEPREFIX): a checkout without
    fresh .pyc files (PYTHONDONTWRITEBYTECODE, an edited file) otherwise compiles its modules on every run, and
    the two sides would not be compared alike."""
    python = str(Path(exe.removeprefix(NO_CACHE)).parent / "python")
    where = subprocess.run([python, "-c", "import fabric, os; print(os.path.dirname(fabric.__file__))"],
                           capture_output=True, text=True, check=True).stdout.strip()
    subprocess.run([python, "-m", "compileall", "-q", where], stdout=subprocess.DEVNULL, check=False)


def profile(argv: list[str], top: int) -> None:
    """The command's top entries by own time under cProfile (bench/profile_command.py), our code only."""
    res = subprocess.run([str(HERE / ".venv" / "bin" / "python"), str(HERE / "bench" / "profile_command.py"),
                          "--top", str(top), "--", *argv], capture_output=True, text=True, check=False)
    print(res.stdout.rstrip() or f"    (no profile: {res.stderr.strip()[-200:]})", flush=True)


def measure(gpus: int, runs: int, exes: list[str], work: Path, top: int = 0,
            only: set[str] | None = None) -> dict[str, list[float]]:
    inv, out, running = work / f"g{gpus}", work / f"out{gpus}", work / f"running{gpus}"
    subprocess.run([FABRIC, "generate", "gpu-rail", "--gpus", str(gpus), "-o", str(inv)], check=True,
                   stdout=subprocess.DEVNULL)
    subprocess.run([FABRIC, "render", str(inv), "-o", str(out / "seed")], check=True, stdout=subprocess.DEVNULL)
    running.mkdir()
    for patch in (out / "seed" / "switches").glob("*/nvue-patch.yaml"):
        shutil.copy(patch, running / f"{patch.parent.name}.yaml")
    medians: dict[str, list[float]] = {}
    for name, argv in commands(inv, out, running).items():
        if only is not None and name not in only:
            continue
        times: list[list[float]] = [[] for _ in exes]
        for _ in range(runs):
            for i, exe in enumerate(exes):  # alternate: the same load on both
                times[i].append(seconds(exe, argv, f"{gpus} {name} {i}"))
        medians[name] = [statistics.median(t) for t in times]
        cpu = [statistics.median(CPU[f"{gpus} {name} {i}"]) for i in range(len(exes))]
        rss = [max(RSS[f"{gpus} {name} {i}"]) for i in range(len(exes))]
        print(f"  {gpus:>6} GPUs  {name:<22} " + "  ".join(f"{m:8.2f} s ({c:.2f} CPU-s, {r:.0f} MiB)" for m, c, r in
                                                           zip(medians[name], cpu, rss, strict=True))
              + f"; {load()}", flush=True)
        if top and name not in ("--version", "--help"):
            profile(argv, top)
    return medians


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="4096,32768")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--baseline", help="the fabric executable to compare with")
    ap.add_argument("--profile", type=int, default=0, metavar="N",
                    help="after each command's timings, its top N cProfile entries (new code)")
    ap.add_argument("--only", help="comma-separated command names (default: all)")
    ap.add_argument("--work", type=Path, default=HERE / "build",
                    help="where the fabrics and outputs go (default build/); /dev/shm takes the disk's file system out "
                         "of the figures: ext4 creating files soon after mass deletions scans for inodes in the kernel")
    args = ap.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    exes = [FABRIC, *([args.baseline] if args.baseline else [])]
    base = args.work
    base.mkdir(exist_ok=True)
    with tempfile.TemporaryDirectory(dir=base, prefix="bench-commands-") as tmp:
        os.environ["ROCE_FABRIC_CACHE"] = str(Path(tmp) / "cache")  # a baseline's derive cache: a fresh one
        os.environ["PYTHONPYCACHEPREFIX"] = str(Path(tmp) / "pycache")  # every side's bytecode, compiled once
        os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
        for exe in exes:
            warm(exe)
        results = {gpus: measure(gpus, args.runs, exes, Path(tmp), args.profile,
                                 set(args.only.split(",")) if args.only else None) for gpus in sizes}
    head = "| command | " + " | ".join(f"{g:,} GPUs" for g in sizes)
    head += " | exponent (CPU-s; baseline) |" if len(sizes) > 1 else " |"
    print("\n" + head + "\n|" + " --- |" * (head.count("|") - 1))
    for name in results[sizes[0]]:
        cells = []
        for g in sizes:
            new, *old = results[g][name]
            cnew, *cold = (statistics.median(CPU[f"{g} {name} {i}"]) for i in range(len(exes)))
            rnew, *rold = (max(RSS[f"{g} {name} {i}"]) for i in range(len(exes)))
            cells.append(f"{new:.2f} s ({cnew:.2f} CPU-s, {rnew:.0f} MiB)" + (
                f" (baseline {old[0]:.2f} s ({cold[0]:.2f} CPU-s, {rold[0]:.0f} MiB): {old[0] / new:.1f}×, "
                f"CPU {cold[0] / cnew:.1f}×)" if old else ""))
        row = f"| `{name}` | " + " | ".join(cells)
        if len(sizes) > 1:
            k = [math.log(statistics.median(CPU[f"{sizes[-1]} {name} {i}"]) / statistics.median(
                CPU[f"{sizes[0]} {name} {i}"])) / math.log(sizes[-1] / sizes[0]) for i in range(len(exes))]
            row += " | " + "; ".join(f"{x:.2f}" for x in k) + " |"
        else:
            row += " |"
        print(row)


if __name__ == "__main__":
    main()
