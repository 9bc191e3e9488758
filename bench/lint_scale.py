"""Time `fabric lint` on a 32,768-GPU fabric (4,096 hosts × 8 rails) built in a temporary inventory.

Run: .venv/bin/python bench/lint_scale.py   (prints load, derive and lint seconds; target: lint < 5 s)
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path

import yaml

from fabric.design.derive import Deriver
from fabric.lint.context import Context
from fabric.lint.engine import run
from fabric.model.load import load

INVENTORY = {
    "fabric": {"name": "gpu32k"},
    # 128 SUs × 32 hosts × 8 rails; 16 pods of 8 SUs, 32 spines per pod, 4 super-spines per plane
    "topology": {"rails": 8, "scalable_units": 128, "hosts_per_su": 32, "spines": 32, "pods": 16,
                 "super_spines": 4},
    "roles": {"leaf": {"platform": "sn5600", "target": "sonic", "breakout": "2x400G"},
              "spine": {"platform": "sn5600", "target": "sonic", "breakout": "2x400G"},
              "super-spine": {"platform": "sn5600", "target": "sonic", "breakout": "2x400G"}},
    "addressing": {"loopbacks": "10.254.0.0/16", "rails": "10.0.0.0/10", "rail_prefix_length": 24,
                   "management": "198.18.0.0/15", "asn": {"leaves": 4200000000}},
    "hosts": {"defaults": {"gpus": 8}},
}


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        (Path(tmp) / "fabric.yaml").write_text(yaml.safe_dump(INVENTORY, sort_keys=False))
        t0 = time.perf_counter()
        loaded = load(tmp)
        t1 = time.perf_counter()
        deriver = Deriver(loaded)
        intent = deriver.fabric()
        t2 = time.perf_counter()
        result = run(Context(loaded, intent, deriver))
        t3 = time.perf_counter()
    gpus = sum(h.gpus for h in intent.hosts.values())
    print(f"{gpus:,} GPUs, {len(intent.hosts):,} hosts, {len(intent.switches):,} switches, "
          f"{len(intent.links):,} links")
    print(f"load {t1 - t0:.2f} s, derive {t2 - t1:.2f} s, lint {t3 - t2:.2f} s ({len(result.rules)} rules)")
    print(f"findings: {result.counts()}")
    for f in result.findings[:5]:
        print(f"  {f.severity.value} {f.rule} {f.target}: {f.message}")


if __name__ == "__main__":
    main()
