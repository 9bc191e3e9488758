"""`fabric cabling --from DIR` on bad LLDP outputs, in every format a device of the model saves (SONiC `show lldp
table`, NVUE JSON, EOS JSON, lldpctl JSON; rendered by tests/support/lldp_outputs.py after the real outputs in
tests/fixtures/lldp): an unreadable file is one located problem per device and exit 2, never a traceback, in bounded
time; a neighbour that is no device of the model (no name, a chassis ID for a name, a stranger, two on one port)
is a fault naming the port, exit 1."""

from __future__ import annotations

import json
import time
from functools import cache
from pathlib import Path

import pytest

from fabric.design.load import load_deriver
from fabric.design.topology import Topo
from tests.inproc import fabric
from tests.support import lldp_outputs as L

ROOT = Path(__file__).resolve().parents[2]
FX = ROOT / "tests" / "fixtures" / "lldp"
INVENTORY = {"lldp-sonic": "sonic-example", "lldp-nvue": "h100-400g", "lldp-eos": "eos-example", "lldpctl": "example"}
FOREIGN = {  # kind → (another source's real output saved under its name, what the error says)
    "lldpctl": ("eos-lldp-neighbors-detail.json", "an object with an 'lldp' key, found keys lldpNeighbors"),
    "lldp-eos": ("lldpctl-json-one.json", "an object with 'lldpNeighbors'"),
    "lldp-sonic": ("nvue-interface-lldp.json", "'LocalPort  RemoteDevice"),
    "lldp-nvue": ("lldpctl-json-one.json", "found keys lldp"),
}


@cache
def topo(name: str) -> Topo:
    return load_deriver(ROOT / "inventories" / name).topo


def cabling(kind: str, directory: Path):
    return fabric("cabling", ROOT / "inventories" / INVENTORY[kind], "--from", directory)


def saved(kind: str, tmp: Path, cables: list[L.Cable] | None = None, skip: frozenset[str] = frozenset()) -> Path:
    t = topo(INVENTORY[kind])
    return L.write(t, L.hall(t) if cables is None else cables, tmp / "lldp", skip)


def refused(result) -> str:
    assert result.returncode == 2 and "Traceback" not in result.stderr, result.stdout + result.stderr
    return result.stderr


@pytest.mark.parametrize("kind", INVENTORY)
def test_truncated_outputs_are_one_located_problem_per_device(tmp_path: Path, kind: str) -> None:
    lldp = saved(kind, tmp_path)
    for leaf in ("leaf-su1-r1", "leaf-su1-r2"):
        text = (lldp / f"{leaf}.{kind}").read_text()
        (lldp / f"{leaf}.{kind}").write_text(text[: len(text) * 2 // 3])
    err = refused(cabling(kind, lldp))
    expected = "Total entries displayed" if kind == "lldp-sonic" else "expected valid JSON"
    for leaf in ("leaf-su1-r1", "leaf-su1-r2"):
        [line] = [ln for ln in err.splitlines() if f"{leaf}.{kind}" in ln]
        assert expected in line and str(lldp) in line, err


@pytest.mark.parametrize("kind", INVENTORY)
def test_foreign_output_is_located(tmp_path: Path, kind: str) -> None:
    lldp = saved(kind, tmp_path)
    foreign, expected = FOREIGN[kind]
    (lldp / f"leaf-su1-r1.{kind}").write_text((FX / foreign).read_text())
    err = refused(cabling(kind, lldp))
    assert f"leaf-su1-r1.{kind}" in err and expected in err, err


@pytest.mark.parametrize("kind", INVENTORY)
def test_ten_thousand_neighbours_are_refused_in_bounded_time(tmp_path: Path, kind: str) -> None:
    lldp = saved(kind, tmp_path)
    strangers = [(f"Ethernet{i}" if kind == "lldp-sonic" else f"swp{i}", (f"stranger{i}", "eth0"))
                 for i in range(10_000)]
    (lldp / f"leaf-su1-r1.{kind}").write_text(L.RENDER[kind](topo(INVENTORY[kind]), strangers))
    t0 = time.process_time()  # CPU time of this process (the command runs in it): the machine's load adds none
    err = refused(cabling(kind, lldp))
    assert time.process_time() - t0 < 5
    assert f"leaf-su1-r1.{kind}: expected at most 4096 LLDP neighbours (a switch's ports), found more" in err, err


def test_a_neighbour_without_a_system_name_is_named_by_its_chassis(tmp_path: Path) -> None:
    """gpu-su1-01's rail 1 sees a chassis that sends no system name, and its leaf was not read: nothing says which
    device it is, so the fault says what was seen and where the model has the cable."""
    lldp = saved("lldpctl", tmp_path, skip=frozenset({"leaf-su1-r1"}))
    host = lldp / "gpu-su1-01.lldpctl"
    doc = json.loads(host.read_text())
    rail1 = doc["lldp"]["interface"][0]["rail1"]
    rail1["chassis"] = next(iter(rail1["chassis"].values()))  # lldpd keeps a chassis without SysName unnamed
    host.write_text(json.dumps(doc))
    result = cabling("lldpctl", lldp)
    assert result.returncode == 1, result.stderr
    chassis, port = L.mac(("leaf-su1-r1", "")), L.mac(("leaf-su1-r1", "swp1"))
    assert f"unexpected  gpu-su1-01 NIC 1 sees a neighbour without a system name (chassis {chassis}, port {port}), " \
        "expected leaf-su1-r1:swp1" in result.stdout


def _chassis_named(path: Path, port: str) -> str:
    """The NVUE neighbour on `port` without its system name and keyed by its chassis ID, which the parser then takes
    for its name (what NVUE keys a nameless neighbour by is not documented; the chassis ID is the one id it has)."""
    doc = json.loads(path.read_text())
    [(_, n)] = doc[port]["neighbor"].items()
    del n["chassis"]["system-name"]
    doc[port]["neighbor"] = {n["chassis"]["chassis-id"]: n}
    path.write_text(json.dumps(doc))
    return n["chassis"]["chassis-id"]


def test_a_chassis_id_in_place_of_a_name_says_so_and_names_the_host_not_read(tmp_path: Path) -> None:
    """NVUE leaves, hosts not read: the neighbour on leaf-su1-r1:swp1s0 is known only by its chassis ID. The fault
    says so, and that the host expected there was not read (not that it sees nothing)."""
    lldp = saved("lldp-nvue", tmp_path, skip=frozenset(topo("h100-400g").hosts))
    chassis = _chassis_named(lldp / "leaf-su1-r1.lldp-nvue", "swp1s0")
    result = cabling("lldp-nvue", lldp)
    assert result.returncode == 1, result.stderr
    port = L.mac(next((ln.a, ln.a_port) for ln in topo("h100-400g").links if (ln.b, ln.b_port) ==
                      ("leaf-su1-r1", "swp1s0")))  # a host's lldpd sends its MAC as port id
    assert result.stdout.splitlines()[0] == (
        f"unexpected  leaf-su1-r1:swp1s0 holds a neighbour named by its chassis ID {chassis} (port {port}), expected "
        "gpu-su1-01 NIC 1 (gpu-su1-01 not read)")


def test_a_chassis_id_is_no_name_where_the_other_end_tells(tmp_path: Path) -> None:
    """EOS: the neighbour on a leaf's host port sends its chassis ID (EOS' aabb.ccdd.eeff) as its system name; the
    host's own report shows the cable where the model has it: ok, as for a neighbour without a name."""
    lldp = saved("lldp-eos", tmp_path)
    leaf = lldp / "leaf-su1-r1.lldp-eos"
    doc = json.loads(leaf.read_text())
    port = next(p for p, e in doc["lldpNeighbors"].items() if e["lldpNeighborInfo"][0]["systemName"] == "gpu-su1-01")
    info = doc["lldpNeighbors"][port]["lldpNeighborInfo"][0]
    info["systemName"] = info["chassisId"]
    leaf.write_text(json.dumps(doc))
    result = cabling("lldp-eos", lldp)
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.startswith("16 links: 16 ok;")


def test_two_neighbours_on_one_port(tmp_path: Path) -> None:
    """A hub on a leaf's host port: EOS lists both hosts in the port's lldpNeighborInfo (as in
    tests/fixtures/lldp/eos-lldp-neighbors-detail-two-on-one-port.json)."""
    t = topo("eos-example")
    leaf_port = next(ln.b_port for ln in t.links if ln.b == "leaf-su1-r1" and ln.a == "gpu-su1-01")
    nic = next(ln.a_port for ln in t.links if ln.b == "leaf-su1-r1" and ln.a == "gpu-su1-02")
    cables = [*L.hall(t), (("leaf-su1-r1", leaf_port), ("gpu-su1-02", nic))]
    result = cabling("lldp-eos", saved("lldp-eos", tmp_path, cables))
    assert result.returncode == 1, result.stderr
    assert f"unexpected  2 neighbours on leaf-su1-r1:{leaf_port}: gpu-su1-01 NIC 1, gpu-su1-02 NIC 1 (a switch or " \
        "hub in between?)" in result.stdout.splitlines()


def test_a_name_outside_the_inventory(tmp_path: Path) -> None:
    """SONiC `show lldp table`: a management switch on a port the model leaves free."""
    t = topo("sonic-example")
    free = next(p for p in ("Ethernet120", "Ethernet124") if ("leaf-su1-r1", p) not in
                {e for c in L.hall(t) for e in c})
    cables = [*L.hall(t), (("leaf-su1-r1", free), ("mgmt-sw1", "Ethernet48"))]
    result = cabling("lldp-sonic", saved("lldp-sonic", tmp_path, cables))
    assert result.returncode == 1, result.stderr
    assert f"unexpected  leaf-su1-r1:{free} — mgmt-sw1:{L.mac(('mgmt-sw1', 'Ethernet48'))} (not in the inventory): " \
        "a cable the model does not have" in result.stdout
