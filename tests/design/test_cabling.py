"""`fabric cabling INV --from DIR`: the LLDP of a fabric of the shipped inventories, rendered as each NOS prints it
(tests/support/lldp_outputs.py, after the real outputs in tests/fixtures/lldp), with cable faults applied; the
explanations are asserted word for word."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from functools import cache
from pathlib import Path

import pytest

from fabric.design.load import load_deriver
from fabric.design.topology import Topo
from tests.inproc import fabric
from tests.support import lldp_outputs as L

ROOT = Path(__file__).resolve().parents[2]


@cache
def topo(name: str) -> Topo:
    return load_deriver(ROOT / "inventories" / name).topo


def run(name: str, cables: list[L.Cable], tmp: Path, *args: str, skip: frozenset[str] = frozenset()):
    L.write(topo(name), cables, tmp / "lldp", skip)
    return fabric("cabling", ROOT / "inventories" / name, "--from", tmp / "lldp", *args)


def swapped(name: str, a: L.End, b: L.End, tmp: Path, *args: str, skip: frozenset[str] = frozenset()):
    """`run` on the model's cabling with the far ends of ports `a` and `b` (device, port) swapped."""
    return run(name, L.swap_far(L.hall(topo(name)), a, b), tmp, *args, skip=skip)


def faults(result) -> list[str]:
    assert result.returncode in (0, 1), result.stderr
    return [f["message"] for f in json.loads(result.stdout)["faults"]]


@pytest.mark.parametrize(("name", "links"), [("example", 24), ("h100-400g", 1024), ("sonic-example", 16),
                                             ("eos-example", 16)])
def test_cabled_as_the_model_is_all_ok(tmp_path: Path, name: str, links: int) -> None:
    result = run(name, L.hall(topo(name)), tmp_path)
    devices = len(topo(name).switches) + len(topo(name).hosts)
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.strip() == f"{links} links: {links} ok; LLDP read from {devices} of {devices} devices"


def test_rail_swap_on_a_host(tmp_path: Path) -> None:
    result = swapped("example", ("leaf-su1-r2", "swp3"), ("leaf-su1-r3", "swp3"), tmp_path, "--format", "json")
    assert result.returncode == 1
    assert faults(result) == ["gpu-su1-03 NIC 2 is in leaf-su1-r3:swp3, expected leaf-su1-r2:swp3; gpu-su1-03 NIC 3 "
                              "is in leaf-su1-r2:swp3 — NICs 2 and 3 of gpu-su1-03 are crossed: swap these two cables"]
    doc = json.loads(result.stdout)
    assert doc["counts"]["miswired"] == 2 and doc["counts"]["ok"] == 22


def test_two_host_cables_swapped_at_the_leaf(tmp_path: Path) -> None:
    """SONiC: the hosts' lldpd see the leaf's port alias (etp1, etp2), resolved to Ethernet0, Ethernet4."""
    result = swapped("sonic-example", ("leaf-su1-r2", "Ethernet0"), ("leaf-su1-r2", "Ethernet4"), tmp_path, "-f",
                     "json")
    assert faults(result) == [
        "gpu-su1-01 NIC 2 is in leaf-su1-r2:Ethernet4, expected leaf-su1-r2:Ethernet0; gpu-su1-02 NIC 2 is in "
        "leaf-su1-r2:Ethernet0 — swap these two cables"]


def test_host_on_the_wrong_rail_seen_from_the_switches_only(tmp_path: Path) -> None:
    """Only the switches read (EOS): the hosts' side is inferred from what the leaves see."""
    result = swapped("eos-example", ("leaf-su1-r1", "Ethernet2/1"), ("leaf-su1-r2", "Ethernet2/1"), tmp_path, "-f",
                     "json", skip=frozenset(topo("eos-example").hosts))
    assert faults(result) == [
        "gpu-su1-02 NIC 1 is in leaf-su1-r2:Ethernet2/1, expected leaf-su1-r1:Ethernet2/1; gpu-su1-02 NIC 2 is in "
        "leaf-su1-r1:Ethernet2/1 — NICs 1 and 2 of gpu-su1-02 are crossed: swap these two cables"]
    assert json.loads(result.stdout)["unread"][:1] == ["gpu-su1-01"]


def test_spine_uplinks_crossed_between_two_leaves(tmp_path: Path) -> None:
    assert faults(swapped("example", ("spine1", "swp1"), ("spine1", "swp3"), tmp_path, "-f", "json")) == [
        "leaf-su1-r1:swp5 is in spine1:swp3, expected spine1:swp1; leaf-su1-r3:swp5 is in spine1:swp1 — swap these "
        "two cables"]


def test_each_miswired_link_says_where_its_ends_are_cabled(tmp_path: Path) -> None:
    """The judgement keeps, per link, the port each end's cable really reaches (what the picture draws), in the
    model's port names: SONiC leaves, whose hosts see each port by its alias."""
    result = swapped("sonic-example", ("leaf-su1-r2", "Ethernet0"), ("leaf-su1-r2", "Ethernet4"), tmp_path, "-f",
                     "json")
    links = {ln["a"]: ln for ln in json.loads(result.stdout)["links"]}
    assert {a: (ln["b"], ln["a_cabled_to"], ln["b_cabled_to"]) for a, ln in links.items()
            if ln["status"] == "miswired"} == {
        "gpu-su1-01:ens1f1np1": ("leaf-su1-r2:Ethernet0", "leaf-su1-r2:Ethernet4", "gpu-su1-02:ens1f1np1"),
        "gpu-su1-02:ens1f1np1": ("leaf-su1-r2:Ethernet4", "leaf-su1-r2:Ethernet0", "gpu-su1-01:ens1f1np1")}
    assert (links["gpu-su1-01:ens1f0np0"]["a_cabled_to"], links["gpu-su1-01:ens1f0np0"]["b_cabled_to"]) == ("", "")
    # a pulled cable: its end sees nothing, its expected port holds another leaf's uplink
    t = topo("example")
    cables = L.pull(L.hall(t), ("leaf-su1-r1", "swp5"))
    cables[L.find(cables, ("spine1", "swp3"))] = (("leaf-su1-r3", "swp5"), ("spine1", "swp1"))
    links = {ln["a"]: ln for ln in json.loads(run("example", cables, tmp_path / "pulled", "-f", "json").stdout)
             ["links"]}
    assert (links["leaf-su1-r1:swp5"]["a_cabled_to"], links["leaf-su1-r1:swp5"]["b_cabled_to"]) == \
        ("", "leaf-su1-r3:swp5")
    assert (links["leaf-su1-r3:swp5"]["a_cabled_to"], links["leaf-su1-r3:swp5"]["b_cabled_to"]) == ("spine1:swp1", "")


def test_breakout_legs_in_the_wrong_order(tmp_path: Path) -> None:
    """NVUE, SN5600 broken out 2x400G: the two legs of leaf-su1-r1's port 1 reversed."""
    result = swapped("h100-400g", ("leaf-su1-r1", "swp1s0"), ("leaf-su1-r1", "swp1s1"), tmp_path, "-f", "json")
    assert faults(result) == [
        "gpu-su1-01 NIC 1 is in leaf-su1-r1:swp1s1, expected leaf-su1-r1:swp1s0; gpu-su1-02 NIC 1 is in "
        "leaf-su1-r1:swp1s0 — the legs of breakout leaf-su1-r1 port 1 are in the wrong order: swap these two cables"]


def test_three_cables_rotated(tmp_path: Path) -> None:
    hall = L.hall(topo("example"))
    cables = L.swap_far(L.swap_far(hall, ("leaf-su1-r1", "swp1"), ("leaf-su1-r1", "swp2")),
                        ("leaf-su1-r1", "swp1"), ("leaf-su1-r1", "swp3"))
    assert faults(run("example", cables, tmp_path, "-f", "json")) == [
        "gpu-su1-01 NIC 1 is in leaf-su1-r1:swp2, expected leaf-su1-r1:swp1; gpu-su1-02 NIC 1 is in leaf-su1-r1:swp3; "
        "gpu-su1-03 NIC 1 is in leaf-su1-r1:swp1 — move each of these 3 cables to its expected port"]


def test_pulled_cable_is_missing(tmp_path: Path) -> None:
    result = run("example", L.pull(L.hall(topo("example")), ("gpu-su1-04", "rail2")), tmp_path)
    assert result.returncode == 1
    assert "missing  gpu-su1-04 NIC 2 — leaf-su1-r2:swp4: no neighbour on either end (cable out, or the link down)" \
        in result.stdout
    assert "24 links: 23 ok, 1 missing; LLDP read from 10 of 10 devices" in result.stdout


def test_half_seen_where_a_host_sends_no_lldp(tmp_path: Path) -> None:
    run("example", L.hall(topo("example")), tmp_path)
    (tmp_path / "lldp" / "gpu-su1-02.lldpctl").write_text('{\n  "lldp": {\n\n  }\n}\n')  # lldpd with no neighbour
    result = fabric("cabling", ROOT / "inventories" / "example", "--from", tmp_path / "lldp", "-f", "json")
    assert faults(result) == ["gpu-su1-02 sees nothing on 4 ports its neighbours see it on (rail1, rail2, rail3, "
                              "rail4) (LLDP not running or not received there)"]
    doc = json.loads(result.stdout)
    assert doc["counts"]["half-seen"] == 4 and doc["faults"][0]["links"][0] == "gpu-su1-02:rail1 — leaf-su1-r1:swp2"
    # one port alone: named with the neighbour that sees it
    one = json.loads((tmp_path / "lldp" / "leaf-su1-r3.lldpctl").read_text())
    one["lldp"]["interface"] = [i for i in one["lldp"]["interface"] if "swp4" not in i]
    (tmp_path / "lldp" / "leaf-su1-r3.lldpctl").write_text(json.dumps(one))
    result = fabric("cabling", ROOT / "inventories" / "example", "--from", tmp_path / "lldp", "-f", "json")
    assert faults(result)[1] == ("gpu-su1-04 NIC 3 sees leaf-su1-r3:swp4, which sees nothing on swp4 (LLDP not "
                                 "running or not received there)")


def test_strangers_and_nameless_neighbours(tmp_path: Path) -> None:
    t = topo("example")
    cables = [*L.hall(t), (("leaf-su1-r1", "swp8"), ("mgmt-sw1", "Ethernet48"))]
    L.write(t, cables, tmp_path / "lldp")
    host = tmp_path / "lldp" / "gpu-su1-01.lldpctl"
    doc = json.loads(host.read_text())
    first = doc["lldp"]["interface"][0]["rail1"]
    first["chassis"] = next(iter(first["chassis"].values()))  # no SysName TLV: lldpd keeps the chassis unnamed
    host.write_text(json.dumps(doc))
    result = fabric("cabling", ROOT / "inventories" / "example", "--from", tmp_path / "lldp", "-f", "json")
    stranger = L.mac(("mgmt-sw1", "Ethernet48"))
    assert faults(result) == [
        f"leaf-su1-r1:swp8 — mgmt-sw1:{stranger} (not in the inventory): a cable the model does not have"]
    # the nameless neighbour is not trusted, but the leaf's own report still shows the cable: ok
    assert json.loads(result.stdout)["counts"]["ok"] == 24


def test_two_neighbours_on_one_port(tmp_path: Path) -> None:
    cables = [*L.hall(topo("example")), (("leaf-su1-r1", "swp1"), ("gpu-su1-02", "rail1"))]
    found = faults(run("example", cables, tmp_path, "-f", "json"))
    assert "2 neighbours on leaf-su1-r1:swp1: gpu-su1-01 NIC 1, gpu-su1-02 NIC 1 (a switch or hub in between?)" in found
    assert "2 neighbours on gpu-su1-02 NIC 1: leaf-su1-r1:swp2, leaf-su1-r1:swp1 (a switch or hub in between?)" in found


def test_junit_and_output_file(tmp_path: Path) -> None:
    cables = L.pull(L.hall(topo("example")), ("gpu-su1-04", "rail2"))
    result = run("example", cables, tmp_path, "--format", "junit", "-o", str(tmp_path / "cabling.xml"))
    assert result.returncode == 1 and result.stdout == ""
    root = ET.fromstring((tmp_path / "cabling.xml").read_text())
    assert root.get("tests") == "2" and root.get("failures") == "1"
    assert (tmp_path / "cabling.xml").stat().st_mode & 0o077 == 0


def test_bad_input_is_located(tmp_path: Path) -> None:
    inv = ROOT / "inventories" / "example"
    L.write(topo("example"), L.hall(topo("example")), tmp_path / "lldp")
    (tmp_path / "lldp" / "leaf-su1-r2.lldpctl").write_text('{"lldp": {"interface": {"swp1": {"chassis": ')
    (tmp_path / "lldp" / "spine1.lldp-eos").write_text("{}")
    result = fabric("cabling", inv, "--from", tmp_path / "lldp")
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert "leaf-su1-r2.lldpctl:1: json: expected valid JSON" in result.stderr
    assert "spine1.lldp-eos: expected spine1.lldpctl (spine1 runs frr), found spine1.lldp-eos" in result.stderr
    empty = tmp_path / "empty"
    empty.mkdir()
    result = fabric("cabling", inv, "--from", empty)
    assert result.returncode == 2 and "expected a saved LLDP output of a device of the model" in result.stderr
    result = fabric("cabling", inv, "--from", tmp_path / "lldp", "--format", "sarif")
    assert result.returncode == 2 and "--format: expected one of table, json, junit" in result.stderr


def test_one_source_saved_or_the_lab(tmp_path: Path) -> None:
    inv = ROOT / "inventories" / "example"
    result = fabric("cabling", inv)
    assert result.returncode == 2 and "expected one of --from DIR or --lab, found neither" in result.stderr
    result = fabric("cabling", inv, "--from", tmp_path, "--lab")
    assert result.returncode == 2 and "expected one of --from DIR or --lab, found both" in result.stderr
    assert "Traceback" not in result.stderr


@pytest.mark.parametrize("name", ["example", "h100-400g", "sonic-example", "eos-example"])
def test_accept_reads_port_names_from_the_intent_as_cabling_from_the_topology(name: str) -> None:
    """`fabric accept` has the derived intent, `fabric cabling` the topology: both name every port alike (a Linux
    white box's ports have 1 lane, an SN5600's 2x400G legs 4 of 8)."""
    from fabric.design.cabling import Names
    from fabric.design.load import load_fabric

    intent = Names.of_intent(load_fabric(ROOT / "inventories" / name).intent)
    model = Names.of_topology(topo(name))
    assert intent.rails == model.rails
    for sw, ports in model.switches.items():
        assert (intent.switches[sw].ways, intent.switches[sw].indexes()) == (ports.ways, ports.indexes()), sw
        assert intent.switches[sw].aliases() == ports.aliases(), sw


def test_a_neighbour_name_never_reaches_the_terminal_raw(tmp_path: Path) -> None:
    """A system name with an escape sequence (a device anyone can plug in sends what it likes): escaped."""
    t = topo("example")
    L.write(t, [*L.hall(t), (("leaf-su1-r1", "swp8"), ("evil\x1b[2J", "eth0"))], tmp_path / "lldp")
    result = fabric("cabling", ROOT / "inventories" / "example", "--from", tmp_path / "lldp")
    assert result.returncode == 1 and "\x1b" not in result.stdout and "evil\\x1b[2J:" in result.stdout
