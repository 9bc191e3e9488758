"""The canary sweep's whole matrix (tests/canary.py): every string field of every shipped inventory × every
canary value × every command that runs offline (validate, lint, render, explain, show, plan --offline, plan --running
against a saved config, export in every format, accept --dry-run and --render-only, hosts inventory), and `hosts
plan`/`hosts apply` through ansible-runner in a network namespace with no route for every value the model accepts.
`make fuzz` runs it whole (FUZZ_CANARY=all); `make test` one accepted field with one value through every command.
Counts go to build/fuzz/canary.json."""

from __future__ import annotations

import json
import os
import resource
import shutil
import tempfile
import time
from pathlib import Path

from tests.canary import Field, fields, fleet_commands, offline_commands, sweep
from tests.fuzz.harness import OUT


def matrix(inv: Path, out: Path, field: Field) -> list[list[str]]:
    return [*offline_commands(inv, out, field), *fleet_commands(inv, out, field)[1:]]


def test_canary_matrix() -> None:
    whole = os.environ.get("FUZZ_CANARY") == "all"
    chosen = list(fields()) if whole else [f for f in fields() if f.inventory == "example"
                                           and f.path == ("fabric", "description")]
    t0, problems, runs = time.monotonic(), [], 0
    for field in chosen:
        case = Path(tempfile.mkdtemp(prefix="canary-"))
        try:
            got, n = sweep(field, case, matrix, only=None if whole else 0)
            problems += got
            runs += n
        finally:
            shutil.rmtree(case, ignore_errors=True)
    doc = {"target": "canary", "fields": len(chosen), "cases": runs, "defects": len(problems),
           "seconds": round(time.monotonic() - t0, 1), "first_defects": problems[:10],
           "peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024}
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / "canary.json").write_text(json.dumps(doc, indent=2) + "\n")
    assert not problems, json.dumps(doc, indent=2)
    assert runs >= len(matrix(Path("i"), Path("o"), chosen[0]))  # the accepted value went through every command
