"""Shows that a refactoring changed no behaviour: every offline output of this checkout against another's, on every
shipped and fixture inventory and on generated fabrics. Per inventory: `validate`, `render --all` (the whole
tree, byte for byte), `lint --format json`, `plan --offline --format json`, `plan --running` against the
baseline's own render (the plan a user would see after upgrading), and `explain --format json` of the first
leaf, the first spine and the first host; exit codes and stderr too. Derive cache off on both sides.

Usage: `.venv/bin/python bench/compare_outputs.py --baseline REV [--gpus 4096,32768] [--work DIR]`
(REV is checked out into a temporary worktree; exits 1 and names each difference).
"""

from __future__ import annotations

import argparse
import filecmp
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent.parent
PY = sys.executable


def fabric(checkout: Path, argv: list[str]) -> tuple[int, str, str]:
    env = {**os.environ, "ROCE_FABRIC_CACHE": "off", "PYTHONPATH": str(checkout), "COLUMNS": "200"}
    p = subprocess.run([PY, "-c", "from fabric.cli import main; main()", *argv], capture_output=True, text=True,
                       env=env, cwd=checkout, timeout=1800)
    return p.returncode, p.stdout, p.stderr.replace(str(checkout), "<checkout>")


def tree_diff(a: Path, b: Path) -> list[str]:
    """Files that differ, or exist on one side only, between two rendered trees."""
    out: list[str] = []
    cmp = filecmp.dircmp(a, b)
    out += [f"only in baseline: {a / n}" for n in cmp.left_only] + [f"only now: {b / n}" for n in cmp.right_only]
    _, mismatch, errors = filecmp.cmpfiles(a, b, cmp.common_files, shallow=False)
    out += [f"differs: {b / n}" for n in mismatch + errors]
    for sub in cmp.common_dirs:
        out += tree_diff(a / sub, b / sub)
    return out


def devices(inv: Path) -> list[str]:
    """The first spine and leaf of an inventory (this checkout's offline plan) and its first host."""
    rc, out, _ = fabric(HERE, ["plan", "--offline", "--format", "json", str(inv)])
    if rc != 0:
        return []
    rows = json.loads(out)
    picks = [next((r["device"] for r in rows if r["kind"].startswith(role)), None) for role in ("spine", "leaf")]
    rc, out, _ = fabric(HERE, ["hosts", "inventory", str(inv)])
    host = next((line.strip().rstrip(":") for line in out.splitlines() if line.startswith(" " * 8)
                 and line.rstrip().endswith(":")), None) if rc == 0 else None
    return [n for n in [*picks, host] if n]


def compare(base: Path, inv: Path, work: Path) -> list[str]:
    problems: list[str] = []
    commands = [["validate", str(inv)], ["lint", "--format", "json", str(inv)],
                ["plan", "--offline", "--format", "json", str(inv)]]
    commands += [["explain", str(inv), d, "--format", "json"] for d in devices(inv)]
    for argv in commands:
        if fabric(base, argv) != fabric(HERE, argv):
            problems.append(f"{inv.name}: fabric {' '.join(argv[:1])} {' '.join(argv[2:])} differs")
    trees = {}
    for side, checkout in (("baseline", base), ("now", HERE)):
        trees[side] = work / side / inv.name
        rc, _, err = fabric(checkout, ["render", "--all", str(inv), "-o", str(trees[side])])
        if rc:
            problems.append(f"{inv.name}: render on the {side} side exits {rc}: {err.strip()[:200]}")
    if all(tree.is_dir() for tree in trees.values()):
        problems += [f"{inv.name}: {d}" for d in tree_diff(trees["baseline"], trees["now"])]
    return problems


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--baseline", required=True, help="git revision to compare against")
    ap.add_argument("--gpus", default="4096", help="generated fabrics (comma-separated GPU counts; '' for none)")
    ap.add_argument("--work", type=Path, default=None)
    args = ap.parse_args()
    work = args.work or Path(tempfile.mkdtemp(prefix="compare-outputs-"))
    base = work / "baseline-checkout"
    if not base.exists():
        subprocess.run(["git", "-C", str(HERE), "worktree", "add", "--detach", str(base), args.baseline], check=True,
                       capture_output=True)
    inventories = sorted((HERE / "inventories").iterdir()) + sorted((HERE / "tests/fixtures/inventories").iterdir())
    for gpus in filter(None, args.gpus.split(",")):
        gen = work / f"g{gpus}"
        if not gen.exists():
            fabric(HERE, ["generate", "gpu-rail", "--gpus", gpus, "-o", str(gen)])
        inventories.append(gen)
    problems: list[str] = []
    try:
        for inv in inventories:
            found = compare(base, inv, work)
            print(f"{inv.name}: {'identical' if not found else f'{len(found)} differences'}", flush=True)
            problems += found
    finally:
        subprocess.run(["git", "-C", str(HERE), "worktree", "remove", "--force", str(base)], capture_output=True)
    for p in problems:
        print(p)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
