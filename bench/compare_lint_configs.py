"""Compare `fabric lint INV --configs DIR` of two checkouts: the same JSON report, stderr and exit code
on the renders of every example and fixture inventory (every NOS the option reads: SONiC, NVUE, EOS, FRR), on
given directories of saved NVUE patches (`--case INV=DIR`, e.g. the bench's 4k and 32k ones) and on edited copies
of them (a drifted MTU and ASN, a missing file, a foreign file; a malformed file: exit 2 with file:line). Each
side runs with the derive cache off, then twice with a fresh cache of its own (a miss that fills it, then a hit).

Usage: `.venv/bin/python bench/compare_lint_configs.py --baseline /path/bin/fabric --work /tmp/cmp
[--case /work/perf/g32k=/work/perf/q27k/run32k …]`
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent.parent
FABRIC = str(HERE / ".venv" / "bin" / "fabric")


def run(exe: str, argv: list[str], cache: str) -> tuple[int, str, str]:
    p = subprocess.run([exe, *argv], capture_output=True, text=True, check=False,
                       env={**os.environ, "ROCE_FABRIC_CACHE": cache})
    return p.returncode, p.stdout, p.stderr


def edited(src: Path, dst: Path, malformed: bool) -> Path:
    """A copy of `src` (saved NVUE patches): drifted values, a missing and a foreign file; or one malformed file."""
    if dst.exists():
        shutil.rmtree(dst)
    shutil.copytree(src, dst)
    files = sorted(dst.glob("*.yaml"))
    if malformed:
        files[3].write_text(files[3].read_text().replace("    interface:\n", "    interface: [\n", 1))
        return dst
    files[0].write_text(files[0].read_text().replace("mtu: 9216", "mtu: 1500", 1))
    text = files[1].read_text()
    at = text.index("autonomous-system: ") + len("autonomous-system: ")
    files[1].write_text(text[:at] + "1" + text[at:])  # another (public) ASN
    files[2].unlink()
    shutil.copy(files[4], dst / "foreign-switch.yaml")
    return dst


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--baseline", required=True)
    ap.add_argument("--work", type=Path, required=True)
    ap.add_argument("--case", action="append", default=[], help="INV=DIR of saved NVUE patches")
    args = ap.parse_args()
    work = args.work
    work.mkdir(parents=True, exist_ok=True)
    cases: list[tuple[str, list[str]]] = []
    fixtures = HERE / "tests" / "fixtures"
    for inv in sorted([*HERE.glob("inventories/*/fabric.yaml"), *fixtures.glob("inventories/*/fabric.yaml")]):
        out = work / f"render-{inv.parent.name}"
        if out.exists():
            shutil.rmtree(out)
        if subprocess.run([FABRIC, "render", str(inv.parent), "-o", str(out)], capture_output=True,
                          check=False).returncode == 0:
            cases.append((inv.parent.name, ["lint", str(inv.parent), "--configs", str(out), "-f", "json"]))
            cases.append((f"{inv.parent.name} (configs only)", ["lint", "--configs", str(out), "-f", "json"]))
    for spec in args.case:
        inv, _, src = spec.partition("=")
        name = Path(src).name
        cases.append((name, ["lint", inv, "--configs", src, "-f", "json"]))
        for bad in (False, True):
            dst = edited(Path(src), work / f"{name}-{'malformed' if bad else 'edited'}", bad)
            cases.append((dst.name, ["lint", inv, "--configs", str(dst), "-f", "json"]))
    failed = 0
    for name, argv in cases:
        got = {}
        for side, exe in (("base", args.baseline), ("new", FABRIC)):
            cache = work / f"cache-{side}"
            if cache.exists():
                shutil.rmtree(cache)
            got[side] = [run(exe, argv, "off"), run(exe, argv, str(cache)), run(exe, argv, str(cache))]
        answers = {a for side in got.values() for a in side}
        same = len(answers) == 1
        failed += not same
        rc, out, err = got["new"][0]
        findings = out.count('"rule"')
        print(f"{'same' if same else 'DIFFERENT'}  {name}: exit {rc}, {findings} findings"
              f"{', stderr ' + err.strip().splitlines()[-1][:100] if err.strip() else ''}", flush=True)
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
