"""`make fuzz`: every fuzz family of tests/fuzz/test_fuzz.py to FUZZ_EXAMPLES cases, in chunks of FUZZ_CHUNK cases,
each chunk a fresh pytest process with its own seed (FUZZ_SEED·1000 + chunk). Hypothesis keeps every generated
case's record for the whole run (a 3,000-case run of the reply family grows the same ~0.2 MiB a case with the
parsers stubbed out), so one process per chunk bounds the memory per case; the judge's bound applies per chunk.
FUZZ_JOBS chunks (of any family) run at once, each in its own process (the cases are the same whatever FUZZ_JOBS).
Then the canary sweep's whole matrix (family `canary`, tests/fuzz/test_canary.py). Writes build/fuzz/<family>.json
(cases, defects, wall seconds from its first chunk's start to its last chunk's end, CPU seconds of its chunks, peak
RSS) and prints one line a family."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
FAMILIES = {"inventories": "test_fuzz_inventories", "configs": "test_fuzz_configs", "outputs": "test_fuzz_outputs",
            "intents": "test_fuzz_host_intents", "running": "test_fuzz_running_configs",
            "replies": "test_fuzz_replies", "remediate": "test_fuzz_remediate"}
# The canary sweep's whole matrix (tests/fuzz/test_canary.py): one process, its size set by the shipped inventories.
CANARY = "tests/fuzz/test_canary.py::test_canary_matrix"
# To end a long run early: create this file (chunks not yet started are skipped) and stop the running chunks' pytest
# processes; each keeps the counts of the cases it judged (saved every 25 cases, "partial").
STOP = ROOT / "build" / "fuzz" / "stop"


def run_chunk(family: str, i: int, n: int, seed: int) -> dict[str, object]:
    """Chunk `i` of `family` (`n` cases) in a fresh process: its counts, with its start and end time."""
    out = ROOT / "build" / "fuzz" / "chunks" / f"{family}-{i:03d}"
    env = {**os.environ, "FUZZ_EXAMPLES": str(n), "FUZZ_SHARES": f"{family}=1.0", "FUZZ_SEED": str(seed * 1000 + i),
           "FUZZ_OUT": str(out)}
    start = time.time()
    if STOP.exists():
        return {"cases": 0, "defects": 0, "first_defects": [], "skipped": True, "start": start, "end": start}
    rc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                         f"tests/fuzz/test_fuzz.py::{FAMILIES[family]}"], cwd=ROOT, env=env, check=False,
                        stdout=subprocess.DEVNULL).returncode
    try:
        doc = json.loads((out / f"{family}.json").read_text())
    except (OSError, ValueError):  # the chunk died before writing its counts: a defect in itself
        doc = {"cases": 0, "defects": 1, "first_defects": [f"chunk {i} wrote no counts (exit {rc})"],
               "peak_rss_mib": 0}
    if doc.get("partial") and not STOP.exists():  # it died after some cases (killed for memory?): a defect too
        doc = {**doc, "defects": int(doc["defects"]) + 1,
               "first_defects": [f"chunk {i} ended after {doc['cases']} of {n} cases (exit {rc})",
                                 *doc["first_defects"]]}
    return {**doc, "start": start, "end": time.time()}


def run_families(families: list[str], cases: int, chunk: int, seed: int, jobs: int) -> list[dict[str, object]]:
    """Every chunk of every family, `jobs` at a time; one total per family, written to build/fuzz/<family>.json."""
    todo = [(f, i, min(chunk, cases - i * chunk), seed) for f in families for i in range((cases + chunk - 1) // chunk)]
    with ThreadPoolExecutor(max(jobs, 1)) as pool:
        done = list(pool.map(lambda args: run_chunk(*args), todo))
    totals = []
    for family in families:
        docs = [d for (f, *_), d in zip(todo, done, strict=True) if f == family]
        total = {"target": family, "cases": sum(int(d["cases"]) for d in docs),  # type: ignore[call-overload]
                 "defects": sum(int(d["defects"]) for d in docs),  # type: ignore[call-overload]
                 "seconds": round(max(float(d["end"]) for d in docs) - min(float(d["start"]) for d in docs), 1),  # type: ignore[arg-type]
                 "cpu_seconds": round(sum(float(d.get("cpu_seconds", 0)) for d in docs), 1),  # type: ignore[arg-type]
                 "peak_rss_mib": max(int(d.get("peak_rss_mib", 0)) for d in docs),  # type: ignore[call-overload]
                 "chunks": len(docs), "jobs": jobs, "seed": seed,
                 "partial_chunks": sum(bool(d.get("partial")) for d in docs),
                 "skipped_chunks": sum(bool(d.get("skipped")) for d in docs),
                 "first_defects": [x for d in docs for x in d["first_defects"]][:10]}  # type: ignore[attr-defined]
        (ROOT / "build" / "fuzz" / f"{family}.json").write_text(json.dumps(total, indent=2) + "\n")
        totals.append(total)
    return totals


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
    jobs = int(os.environ.get("FUZZ_JOBS", "1"))
    families = [f for f in os.environ.get("FUZZ_FAMILIES", ",".join([*FAMILIES, "canary"])).split(",") if f]
    (ROOT / "build" / "fuzz").mkdir(parents=True, exist_ok=True)
    docs = run_families([f for f in families if f != "canary"], cases, chunk, seed, jobs)
    if "canary" in families:
        docs.append(run_canary())
    for doc in docs:
        print(f"{doc['target']}: {doc['cases']} cases, {doc['defects']} defects, {doc['seconds']} s, "
              f"peak RSS {doc['peak_rss_mib']} MiB", flush=True)
    return 1 if sum(int(d["defects"]) for d in docs) else 0  # type: ignore[call-overload]


if __name__ == "__main__":
    sys.exit(main())
