"""`make fuzz`: every fuzz family of tests/fuzz/test_fuzz.py to FUZZ_EXAMPLES cases, in chunks of FUZZ_CHUNK cases,
each chunk a fresh pytest process with its own seed (FUZZ_SEED·1000 + chunk). Hypothesis keeps every generated
case's record for the whole run (a 3,000-case run of the reply family grows the same ~0.2 MiB a case with the
parsers stubbed out), so one process per chunk bounds the memory per case; the judge's bound applies per chunk.
Then the canary sweep's whole matrix (family `canary`, tests/fuzz/test_canary.py). Writes build/fuzz/<family>.json
(cases, defects, wall seconds, peak RSS) and prints one line a family."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
FAMILIES = {"inventories": "test_fuzz_inventories", "configs": "test_fuzz_configs", "outputs": "test_fuzz_outputs",
            "intents": "test_fuzz_host_intents", "running": "test_fuzz_running_configs",
            "replies": "test_fuzz_replies", "remediate": "test_fuzz_remediate"}
# The canary sweep's whole matrix (tests/fuzz/test_canary.py): one process, its size set by the shipped inventories.
CANARY = "tests/fuzz/test_canary.py::test_canary_matrix"


def run_family(family: str, cases: int, chunk: int, seed: int) -> dict[str, object]:
    out = ROOT / "build" / "fuzz"
    total: dict[str, object] = {"target": family, "cases": 0, "defects": 0, "seconds": 0.0, "peak_rss_mib": 0,
                                "chunks": 0, "first_defects": []}
    for i in range((cases + chunk - 1) // chunk):
        n = min(chunk, cases - i * chunk)
        env = {**os.environ, "FUZZ_EXAMPLES": str(n), "FUZZ_SHARES": f"{family}=1.0", "FUZZ_SEED": str(seed * 1000 + i),
               "FUZZ_OUT": str(out / "chunks" / f"{family}-{i:03d}")}
        t0 = time.monotonic()
        subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                        f"tests/fuzz/test_fuzz.py::{FAMILIES[family]}"], cwd=ROOT, env=env, check=False,
                       stdout=subprocess.DEVNULL)
        total["seconds"] = round(float(total["seconds"]) + time.monotonic() - t0, 1)  # type: ignore[arg-type]
        try:
            doc = json.loads((Path(env["FUZZ_OUT"]) / f"{family}.json").read_text())
        except (OSError, ValueError):  # the chunk died before writing its counts: a defect in itself
            doc = {"cases": 0, "defects": 1, "first_defects": [f"chunk {i} wrote no counts"], "peak_rss_mib": 0}
        total["cases"] = int(total["cases"]) + int(doc["cases"])  # type: ignore[call-overload]
        total["defects"] = int(total["defects"]) + int(doc["defects"])  # type: ignore[call-overload]
        total["peak_rss_mib"] = max(int(total["peak_rss_mib"]), int(doc.get("peak_rss_mib", 0)))  # type: ignore[call-overload]
        total["first_defects"] = [*total["first_defects"], *doc["first_defects"]][:10]  # type: ignore[misc]
        total["chunks"] = i + 1
    (out / f"{family}.json").write_text(json.dumps(total, indent=2) + "\n")
    return total


def run_canary() -> dict[str, object]:
    env = {**os.environ, "FUZZ_CANARY": "all"}
    subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", CANARY], cwd=ROOT, env=env,
                   check=False, stdout=subprocess.DEVNULL)
    try:
        return json.loads((ROOT / "build" / "fuzz" / "canary.json").read_text())
    except (OSError, ValueError):
        return {"cases": 0, "defects": 1, "seconds": 0, "peak_rss_mib": 0}


def main() -> int:
    cases = int(os.environ.get("FUZZ_EXAMPLES", "10000"))
    chunk = int(os.environ.get("FUZZ_CHUNK", "1000"))
    seed = int(os.environ.get("FUZZ_SEED", "17"))
    families = [f for f in os.environ.get("FUZZ_FAMILIES", ",".join([*FAMILIES, "canary"])).split(",") if f]
    bad = 0
    for family in families:
        doc = run_canary() if family == "canary" else run_family(family, cases, chunk, seed)
        bad += int(doc["defects"])  # type: ignore[call-overload]
        print(f"{family}: {doc['cases']} cases, {doc['defects']} defects, {doc['seconds']} s, "
              f"peak RSS {doc['peak_rss_mib']} MiB", flush=True)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
