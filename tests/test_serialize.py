"""fabric.serialize, the block YAML every NVUE patch is written in: what it keeps between documents."""

from __future__ import annotations

from pathlib import Path

import yaml

from fabric import serialize
from fabric.design.load import load_fabric
from fabric.fast.memo import Memo
from fabric.render import render_switch

INVENTORY = Path(__file__).resolve().parent.parent / "inventories" / "h100-400g"


def test_a_ports_description_is_written_without_being_kept() -> None:
    """Two leaves of one shape have the same port names and different descriptions (their hosts' names): writing
    the second keeps none of its descriptions in the cache of recurring strings (at 131,072 GPUs that was one
    entry per port, never asked for again), and the patch reads back as its tree."""
    fabric = load_fabric(INVENTORY).intent
    first, second, *_ = [sw for sw in fabric.switches.values() if sw.role == "leaf" and sw.rail == 1]
    memo = Memo()
    render_switch(first, fabric, extras=False, memo=memo)
    before = serialize._string.cache_info().currsize
    patch = render_switch(second, fabric, extras=False, memo=memo)["nvue-patch.yaml"]
    descriptions = [p.description for p in second.ports]
    assert len(set(descriptions)) > 16
    assert serialize._string.cache_info().currsize - before < len(descriptions) // 4
    ifaces = yaml.safe_load(patch)[0]["set"]["interface"]
    assert [ifaces[p.name]["description"] for p in second.ports] == descriptions
