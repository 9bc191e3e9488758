"""Inventory loading: every error is `file:line: field.path: expected …, found …`, all at once, exit 2."""

from __future__ import annotations

from pathlib import Path

import pytest

from fabric.design.derive import derive
from fabric.errors import InputError
from fabric.model.load import load
from tests import inproc
from tests.support.paths import FIXTURES, ROOT


def errors_of(inv: Path) -> list[str]:
    with pytest.raises(InputError) as exc:
        derive(load(inv))
    return [str(p) for p in exc.value.problems]


def edit(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text, f"{old!r} not in {path}"
    path.write_text(text.replace(old, new, 1))


def test_example_loads() -> None:
    loaded = load(ROOT / "inventories" / "example")
    assert loaded.inv.fabric.name == "example"
    assert loaded.qos.lossless_priorities == [3]
    assert loaded.qos.ecn[3].min_bytes == 150000


def test_unknown_key_names_line_and_allowed_keys(example_copy: Path) -> None:
    edit(example_copy / "switching.yaml", "  mtu: 9216", "  mtu: 9216\n  mtus: 9000")
    [msg] = errors_of(example_copy)
    assert msg.startswith(f"{example_copy}/switching.yaml:3: switching.mtus: expected one of mtu, adaptive_routing")
    assert msg.endswith("found unknown key 'mtus'")


def test_wrong_unit_and_wrong_type_reported_together(example_copy: Path) -> None:
    edit(example_copy / "fabric.yaml", "cable: 5m", "cable: 5ft")
    edit(example_copy / "switching.yaml", "keepalive: 3", "keepalive: three")
    msgs = errors_of(example_copy)
    assert any(m.startswith(f"{example_copy}/fabric.yaml:18: cabling.host_leaf.cable: expected a cable length in "
                            "metres like 5m or 40m, found '5ft'") for m in msgs), msgs
    assert any("switching.yaml:6: switching.bgp.keepalive: expected a valid integer" in m and "'three'" in m
               for m in msgs), msgs


def test_duplicate_key_in_yaml(example_copy: Path) -> None:
    edit(example_copy / "addressing.yaml", "  mode: svi", "  mode: svi\n  mode: p2p31")
    [msg] = errors_of(example_copy)
    assert "addressing.yaml:3: addressing.mode: expected each key once (first defined on line 2)" in msg


def test_section_in_two_files(example_copy: Path) -> None:
    (example_copy / "more.yaml").write_text("qos:\n  preset: sonic-azure\n")
    [msg] = errors_of(example_copy)
    assert msg.startswith(f"{example_copy}/qos.yaml:1: qos: expected section 'qos' in one file only, found it "
                          f"again (first in {example_copy}/more.yaml:1)")


def test_yaml_syntax_error_has_line(example_copy: Path) -> None:
    (example_copy / "qos.yaml").write_text("qos:\n  preset: [nvidia-roce\n")
    [msg] = errors_of(example_copy)
    assert msg.startswith(f"{example_copy}/qos.yaml:3: expected valid YAML")


def test_duplicate_device_name(example_copy: Path) -> None:
    edit(example_copy / "fabric.yaml", "spines: 2",
         "spines: 2\n  names: {spine: 'leaf-su1-r{n}', leaf: 'leaf-su1-r{rail}'}")
    msgs = errors_of(example_copy)
    assert any("each switch name once, found leaf-su1-r1 twice" in m for m in msgs), msgs


def test_overlapping_pools(example_copy: Path) -> None:
    edit(example_copy / "addressing.yaml", "loopbacks: 10.254.0.0/24", "loopbacks: 10.100.7.0/24")
    [msg] = errors_of(example_copy)
    assert "addressing.yaml:4: addressing.rails: expected a pool that does not overlap addressing.loopbacks " \
           "(10.100.7.0/24), found 10.100.0.0/16" in msg


def test_pool_too_small(example_copy: Path) -> None:
    edit(example_copy / "addressing.yaml", "rail_prefix_length: 24", "rail_prefix_length: 30")
    msgs = errors_of(example_copy)
    assert any("addressing.rail_prefix_length: expected a /30 block holding 7 addresses for SU 1 rail 1" in m
               and "found 4 addresses" in m for m in msgs), msgs
    edit(example_copy / "addressing.yaml", "rail_prefix_length: 30", "rail_prefix_length: 24")
    edit(example_copy / "addressing.yaml", "loopbacks: 10.254.0.0/24", "loopbacks: 10.254.0.0/30")
    [msg] = errors_of(example_copy)
    assert "addressing.loopbacks: expected room for 6 switch loopbacks, found 10.254.0.0/30 with 2 addresses" in msg


def test_rail_without_leaf(example_copy: Path) -> None:
    edit(example_copy / "hosts.yaml", "{rail: 4, rdma: mlx5_3, netdev: rail4}",
         "{rail: 5, rdma: mlx5_3, netdev: rail4}")
    [msg] = errors_of(example_copy)
    assert msg.startswith(f"{example_copy}/hosts.yaml:10: hosts.defaults.nics[3].rail: expected a rail with a leaf "
                          "in SU 1 (rails 1-4), found rail 5 on gpu-su1-01")


def test_public_asn(example_copy: Path) -> None:
    edit(example_copy / "addressing.yaml", "spines: 65000", "spines: 3356")
    [msg] = errors_of(example_copy)
    assert "addressing.yaml:8: addressing.asn.spines: expected a private ASN (64512-65534 or " \
           "4200000000-4294967294), found 3356" in msg


def test_port_used_twice(example_copy: Path) -> None:
    (example_copy / "links.yaml").write_text("links:\n  - {a: 'spine1:swp1', b: 'spine2:swp9'}\n")
    [msg] = errors_of(example_copy)
    assert msg.startswith(f"{example_copy}/links.yaml:2: links[0].a: expected a free port (swp1 is cabled to "
                          "leaf-su1-r1:swp5), found spine1:swp1 used twice")


@pytest.mark.parametrize("b", ["spine1:swp9", "spine1:swp1", "spine1:9"])
def test_a_link_from_a_switch_back_to_itself_is_refused(example_copy: Path, b: str) -> None:
    """A loop cable (another port, the same port, or the same switch by its NOS-neutral port) is a located error of
    `fabric validate`, not a link whose BGP session peers with its own switch."""
    (example_copy / "links.yaml").write_text(f"links:\n  - {{a: 'spine1:swp32', b: '{b}'}}\n")
    proc = inproc.fabric("validate", str(example_copy))
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
    [msg] = [ln.removeprefix("error: ") for ln in proc.stderr.splitlines() if ln.startswith("error: ")]
    assert msg.startswith(f"{example_copy}/links.yaml:2: links[0].b: expected a port of another device than spine1, "
                          f"found {b} (both ends on spine1)"), msg


def test_all_problems_at_once(example_copy: Path) -> None:
    edit(example_copy / "fabric.yaml", "rails: 4", "rails: four")
    edit(example_copy / "switching.yaml", "  mtu: 9216", "  mtu: 99999")
    edit(example_copy / "qos.yaml", "preset: nvidia-roce", "preset: nvidia-roce\n  lossless_priorities: [9]")
    msgs = errors_of(example_copy)
    assert len(msgs) == 3, msgs
    assert any("topology.rails" in m for m in msgs) and any("switching.mtu" in m for m in msgs)
    assert f"{example_copy}/qos.yaml:3: qos.lossless_priorities[0]: expected less than or equal to 7, found 9" in msgs


def test_qos_override_changes_one_value(example_copy: Path) -> None:
    (example_copy / "qos.yaml").write_text("qos:\n  preset: nvidia-roce\n  ecn:\n    3:\n      min_bytes: 200KB\n")
    q = load(example_copy).qos
    assert q.ecn[3].min_bytes == 200000
    assert q.ecn[3].max_bytes == 1500000 and q.ecn[0].min_bytes == 150000
    assert q.lossless_priorities == [3] and q.dscp_to_priority == {26: 3, 48: 6}


def test_cli_prints_errors_and_exits_2(example_copy: Path) -> None:
    edit(example_copy / "switching.yaml", "  mtu: 9216", "  mtu: 9216\n  mtus: 9000")
    proc = inproc.fabric("validate", str(example_copy))
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr
    assert proc.stderr.startswith(f"error: {example_copy}/switching.yaml:3: switching.mtus: expected one of")


def test_missing_inventory_dir(tmp_path: Path) -> None:
    [msg] = errors_of(tmp_path / "nope")
    assert msg == f"{tmp_path}/nope: expected an inventory directory of YAML files, found no such directory"


def test_explicit_irregular_fabric() -> None:
    """No generation: explicit switches, links (one overriding speed and cable) and hosts."""
    from fabric.design.derive import derive

    f = derive(load(FIXTURES / "inventories" / "irregular"))
    assert sorted(f.switches) == ["l1", "l2", "s1"] and sorted(f.hosts) == ["h1", "h2"]
    s1 = f.switches["s1"]
    assert [(p.name, p.peer, p.peer_port, p.cable_m) for p in s1.ports] == [
        ("Ethernet0", "l1", "Ethernet248", 30), ("Ethernet8", "l2", "Ethernet248", 40)]
    assert [n.remote_asn for n in s1.bgp.neighbors] == [65100, 65101]
    h1 = f.hosts["h1"]
    assert [(r.leaf, r.leaf_port, r.address) for r in h1.rails] == [
        ("l1", "Ethernet0", "10.1.0.2/24"), ("l2", "Ethernet0", "10.1.1.2/24")]
    assert f.switches["l1"].svis[0].members == ["Ethernet0", "Ethernet8"]



def test_the_lab_cables_an_inventorys_port_names_on_its_own_switches() -> None:
    """The lab realizes every switch as Linux/FRR: a link the SONiC inventory writes as Ethernet248 (the last
    port of an SN4700) is that switch's swp32 there, with its cable, never a second port named Ethernet248."""
    from fabric.design.derive import derive

    f = derive(load(FIXTURES / "inventories" / "irregular"), "frr")
    assert [(p.name, p.peer, p.peer_port, p.cable_m) for p in f.switches["s1"].ports] == [
        ("swp1", "l1", "swp32", 30), ("swp2", "l2", "swp32", 40)]
