"""The derived intent's parts that are plain data: a cable is one class from the topology to the intent."""

from __future__ import annotations

from pathlib import Path

from fabric.design.load import load_fabric

ROOT = Path(__file__).resolve().parents[2]


def test_the_intents_links_are_the_topologys_with_where_the_inventory_names_them() -> None:
    """`fabric accept` (the intent's links) and `fabric cabling` (the topology's) judge the same cables: one class,
    the same objects, each explicit `links:` entry still carrying its inventory location."""
    fabric = load_fabric(ROOT / "tests" / "fixtures" / "inventories" / "irregular")
    topo_links = fabric.deriver.topo.links
    assert fabric.intent.links == topo_links
    assert all(a is b for a, b in zip(fabric.intent.links, topo_links, strict=True))
    explicit = {(ln.a, ln.a_port, ln.b, ln.b_port): ln for ln in fabric.intent.links if ln.loc[:1] == ("links",)}
    assert explicit[("l1", "Ethernet248", "s1", "Ethernet0")].loc == ("links", 0)
    assert (explicit[("l1", "Ethernet248", "s1", "Ethernet0")].speed,
            explicit[("l1", "Ethernet248", "s1", "Ethernet0")].cable_m) == (400, 30)
    assert explicit[("l2", "Ethernet248", "s1", "Ethernet8")].loc == ("links", 1)
