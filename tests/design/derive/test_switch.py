"""A switch's intent made with its ports put in order by a permutation kept per sequence of port names
(`fabric.design.derive.switch.in_port_order`), its lanes and headroom looked up once per (speed, cable), its
(SU, rail) members gathered in one pass and its origins' texts made once per kind of switch equals the intent of the
code as it read before
(tests/oracles/derive_switch.py) on every example and fixture inventory, a generated fabric, and switches whose ports
are listed shuffled and named twice."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from fabric.design.derive import Deriver
from fabric.design.derive.switch import _by_port, in_port_order
from fabric.generate import GpuRailSpec
from fabric.generate import write as write_inventory
from fabric.model.load import load
from tests.oracles.derive_switch import switch_before, tables_before
from tests.support.paths import ROOT

INVENTORIES = sorted([*ROOT.glob("inventories/*/fabric.yaml"), *ROOT.glob("tests/fixtures/inventories/*/fabric.yaml")])


# -- the tests ----------------------------------------------------------------------------------------------------
def _same(d: Deriver) -> int:
    n = 0
    for sw in d.topo.switches.values():
        new, old = d.switch(sw), switch_before(d, sw)
        assert new == old
        assert new.model_dump_json() == old.model_dump_json()
        assert [p.name for p in new.ports] == [p.name for p in old.ports]
        n += 1
    return n


@pytest.fixture(scope="module")
def generated(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("gen") / "g1k"
    write_inventory(GpuRailSpec(gpus=1024, hosts_per_su=16), out)
    return out


@pytest.mark.parametrize("inv", [p.parent for p in INVENTORIES], ids=lambda p: p.name)
def test_switch_equals_before(inv: Path) -> None:
    d = Deriver(load(inv))
    assert _same(d) == len(d.topo.switches)
    _same_tables(d)


def _same_tables(d: Deriver) -> None:
    """The tables `Deriver.__init__` makes in one pass over the links equal those made before, order included."""
    max_h, nic_at, ports, host_links = tables_before(d)
    assert list(d.max_h.items()) == list(max_h.items())
    assert list(d.nic_at.items()) == list(nic_at.items())
    assert list(d.ports.items()) == list(ports.items())
    assert list(d.host_links.items()) == list(host_links.items())


def test_switch_equals_before_generated(generated: Path) -> None:
    d = Deriver(load(generated))
    assert _same(d) == len(d.topo.switches) > 50
    _same_tables(d)
    assert 0 < len(d._port_orders) < 10  # the switches of a shape share one order


@pytest.mark.parametrize("inv", [ROOT / "inventories" / "example", "generated"], ids=["example", "generated"])
def test_shuffled_and_twice_named_ports(inv: Path | str, generated: Path) -> None:
    """Ports listed in any order, and a port name listed twice, come out in the order the old sort gave them."""
    d = Deriver(load(generated if inv == "generated" else inv))  # type: ignore[arg-type]
    rng = random.Random(27)
    for ports in d.ports.values():
        if ports and rng.random() < 0.5:
            ports.append(ports[rng.randrange(len(ports))])  # the same port twice
        rng.shuffle(ports)
        assert in_port_order(ports, d._port_orders) == sorted(ports, key=_by_port)
    assert _same(d) == len(d.topo.switches)
