"""Sum the opt-in CPU profile of the suite (FABRIC_TEST_CPU, tests/conftest.py) per module: CPU seconds of the
test process and of its children, and wall seconds; the largest first."""

from __future__ import annotations

import json
import sys
from collections import defaultdict
from pathlib import Path


def per_module(folder: Path) -> dict[str, dict[str, float]]:
    """module → {tests, wall, cpu, children, total} summed over every worker's file in folder."""
    sums: dict[str, dict[str, float]] = defaultdict(lambda: dict.fromkeys(("tests", "wall", "cpu", "children"), 0.0))
    for path in sorted(folder.glob("*.jsonl")):
        for line in path.read_text().splitlines():
            row = json.loads(line)
            entry = sums[row["module"]]
            entry["tests"] += 1
            for key in ("wall", "cpu", "children"):
                entry[key] += row[key]
    for entry in sums.values():
        entry["total"] = entry["cpu"] + entry["children"]
    return dict(sums)


def per_group(folder: Path) -> dict[str, dict[str, float]]:
    """xdist group (the `@group` suffix of a test id: the serial groups of tests/conftest.py) → {tests, wall, total}:
    a serial group's wall is the time its worker spends on it, one test after another."""
    sums: dict[str, dict[str, float]] = defaultdict(lambda: dict.fromkeys(("tests", "wall", "total"), 0.0))
    for path in sorted(folder.glob("*.jsonl")):
        for line in path.read_text().splitlines():
            row = json.loads(line)
            group = row["test"].rpartition("@")[2] if "@" in row["test"] else "(spread)"
            entry = sums[group]
            entry["tests"] += 1
            entry["wall"] += row["wall"]
            entry["total"] += row["cpu"] + row["children"]
    return dict(sums)


def main(argv: list[str]) -> int:
    folder, top = Path(argv[0] if argv else "build/test-cpu"), int(argv[1]) if len(argv) > 1 else 25
    sums = per_module(folder)
    total = sum(e["total"] for e in sums.values())
    print(f"{'module':48} {'tests':>5} {'wall s':>8} {'CPU s':>8} {'own':>7} {'children':>8}")
    for module, e in sorted(sums.items(), key=lambda kv: -kv[1]["total"])[:top]:
        print(f"{module:48} {e['tests']:5.0f} {e['wall']:8.1f} {e['total']:8.1f} {e['cpu']:7.1f} {e['children']:8.1f}")
    print(f"{'all ' + str(len(sums)) + ' modules':48} {sum(e['tests'] for e in sums.values()):5.0f} "
          f"{sum(e['wall'] for e in sums.values()):8.1f} {total:8.1f}")
    print(f"\n{'group':48} {'tests':>5} {'wall s':>8} {'CPU s':>8}")
    for group, e in sorted(per_group(folder).items(), key=lambda kv: -kv[1]["wall"]):
        print(f"{group:48} {e['tests']:5.0f} {e['wall']:8.1f} {e['total']:8.1f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
