"""fabric.design.derive.addressing: the address plan as a derive uses it."""

from __future__ import annotations

import gc
import tracemalloc
from pathlib import Path

from fabric.design.load import load_fabric
from fabric.generate import GpuRailSpec
from fabric.generate import write as write_inventory
from tests.support.paths import ROOT


def test_a_derived_fabric_leaves_no_address_text_behind_once_dropped(tmp_path: Path) -> None:
    """Every address of a fabric is made for its intent: once the fabric is dropped, none stays in memory (a cache
    of the address texts kept one more string per host address and rail, about 1 MiB at 4,096 GPUs)."""
    write_inventory(GpuRailSpec(gpus=4096), tmp_path / "inv")
    load_fabric(ROOT / "inventories" / "example")  # the fixed-size caches of every module, filled once
    gc.collect()
    tracemalloc.start()
    try:
        fabric = load_fabric(tmp_path / "inv")
        assert len(fabric.intent.hosts) == 512
        del fabric
        gc.collect()
        retained, _ = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert retained < 300 * 1024
