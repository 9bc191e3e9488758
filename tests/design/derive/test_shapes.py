"""Derivation validates a rail, host or switch intent (and a switch's SVIs, BGP and neighbour table) once per
shape and trusts the same shape again (`fabric.design.intent.trusted`), and `validate` stops at the checked
topology. Both must give exactly what the
validating path gives, on every example and fixture inventory and on a generated fabric of many hosts per shape."""

from __future__ import annotations

import pickle
from pathlib import Path

import pytest

import fabric.design.derive as derive_module
import fabric.design.derive.shapes as shapes_module
from fabric.design.derive import Deriver, checked_topology
from fabric.design.intent import GidIntent, HostIntent, Model, RailIntent, trusted
from fabric.design.load import Fabric, Summary
from fabric.generate import GpuRailSpec
from fabric.generate import write as write_inventory
from fabric.model.load import load
from tests.support.paths import ROOT

INVENTORIES = sorted([*ROOT.glob("inventories/*/fabric.yaml"), *ROOT.glob("tests/fixtures/inventories/*/fabric.yaml")])


@pytest.fixture(scope="module")
def generated(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("gen") / "g1k"
    write_inventory(GpuRailSpec(gpus=1024, hosts_per_su=16), out)
    return out


def _validating(model, fields):  # type: ignore[no-untyped-def]
    return model(**fields)


def _same(a: Model, b: Model) -> None:
    assert a == b
    assert list(a.__dict__) == list(b.__dict__)
    assert a.model_fields_set == b.model_fields_set
    assert a.__pydantic_extra__ == b.__pydantic_extra__ and a.__pydantic_private__ == b.__pydantic_private__
    assert a.model_dump_json() == b.model_dump_json()
    assert repr(a) == repr(b)


def _check(inv: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    loaded = load(inv)
    fast = Deriver(loaded).fabric()
    with monkeypatch.context() as m:
        m.setattr(shapes_module, "trusted", _validating)
        m.setattr(derive_module, "trusted", _validating)
        slow = Deriver(loaded).fabric()
    assert fast == slow
    assert fast.model_dump_json() == slow.model_dump_json()
    assert list(fast.hosts) == list(slow.hosts)
    for name, h in fast.hosts.items():
        _same(h, slow.hosts[name])
        for r, s in zip(h.rails, slow.hosts[name].rails, strict=True):
            _same(r, s)
            # what the host agent reads back validates to the same intent
            _same(RailIntent.model_validate_json(r.model_dump_json()), s)
        _same(HostIntent.model_validate_json(h.model_dump_json()), slow.hosts[name])
    for name, sw in fast.switches.items():  # a switch, its SVIs and neighbour table: validated once per shape too
        _same(sw, slow.switches[name])
        _same(sw.neighbor, slow.switches[name].neighbor)
        _same(sw.bgp, slow.switches[name].bgp)
        for v, w in zip(sw.svis, slow.switches[name].svis, strict=True):
            _same(v, w)
        assert sw.ports == slow.switches[name].ports and sw.bgp == slow.switches[name].bgp
    assert pickle.loads(pickle.dumps(fast)) == slow
    # validate's figures from the checked topology are those of the derived intent
    assert Summary.of_topology(loaded, checked_topology(loaded)) == Summary.of(Fabric(loaded, Deriver(loaded), fast))


@pytest.mark.parametrize("inv", [p.parent for p in INVENTORIES], ids=lambda p: p.name)
def test_trusted_equals_validated(inv: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _check(inv, monkeypatch)


def test_trusted_equals_validated_generated(generated: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _check(generated, monkeypatch)


def test_switches_are_validated_once_per_shape(generated: Path) -> None:
    d = Deriver(load(generated))
    d.fabric()
    shapes = [k for k in d._parts if isinstance(k, tuple) and k[:1] == ("switch",)]
    assert 0 < len(shapes) <= 3 < len(d.topo.switches)  # leaves, spines (and super-spines): one each


def test_trusted_falls_back_to_validation() -> None:
    assert trusted(GidIntent, {"policy": "auto", "index": 3}) == GidIntent(policy="auto", index=3)
    with pytest.raises(ValueError, match="index"):  # a missing field: the validating constructor's message
        trusted(GidIntent, {"policy": "auto"})
    with pytest.raises(ValueError, match="extra"):
        trusted(GidIntent, {"policy": "auto", "index": 3, "other": 1})


def test_a_new_shape_is_validated(generated: Path) -> None:
    """The first host of a shape goes through validation: a bad value there raises as it always did."""
    d = Deriver(load(generated))
    host = next(iter(d.topo.hosts.values()))
    host.settings = {**host.settings, "gpus": "eight"}  # not an int: only validation can say so
    with pytest.raises(ValueError, match="gpus"):
        d.host(host, 0)


@pytest.mark.parametrize(("edit", "expected"), [
    (lambda t: t.replace("management_interface: eth0", "management_interface: rail1.100").replace(
        "netdev: rail1}", "netdev: rail1, vlan: 100}"),
     "hosts.defaults.nics[0].vlan: expected a rail interface other than the management interface rail1.100, "
     "found rail1.100 (VLAN 100)"),
    (lambda t: t.replace("netdev: rail1}", "netdev: rail1.5}").replace(
        "    mtu: 9000\n", "    mtu: 9000\n    sysctls:\n      net.ipv4.conf.rail1.5.rp_filter: 1\n"),
     "hosts.defaults.sysctls.net.ipv4.conf.rail1.5.rp_filter: expected a sysctl of all, default, {if} or a rail "
     "interface (rail1.5, rail2, rail3, rail4), found rail1 (as the host writes it: net/ipv4/conf/rail1/5/rp_filter"),
])
def test_what_a_host_intent_refuses_the_topology_refuses(tmp_path: Path, edit, expected: str) -> None:  # type: ignore[no-untyped-def]
    """`validate` derives no device: what a host intent's own check would refuse (once a traceback) is a located
    problem of the checked topology."""
    import shutil

    from fabric.errors import InputError

    inv = tmp_path / "inv"
    shutil.copytree(ROOT / "inventories" / "example", inv)
    hosts = inv / "hosts.yaml"
    text = hosts.read_text()
    hosts.write_text(edit(text))
    assert hosts.read_text() != text
    with pytest.raises(InputError) as exc:
        checked_topology(load(inv))
    assert any(expected in str(p) for p in exc.value.problems), exc.value.problems
