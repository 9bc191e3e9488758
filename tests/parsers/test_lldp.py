"""LLDP parsers on real outputs (tests/fixtures/lldp/SOURCE.md), through `fabric parse KIND FILE`, and on bad input:
one located problem (exit 2), never a traceback, in bounded time."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from tests.inproc import fabric

FX = Path(__file__).resolve().parents[1] / "fixtures" / "lldp"


def parsed(kind: str, path: Path | str) -> list[dict]:
    result = fabric("parse", kind, path)
    assert result.returncode == 0, result.stderr
    return [(n["port"], n["system_name"], n["port_id"], n["port_description"]) for n in
            json.loads(result.stdout)["neighbors"]]


def test_sonic_show_lldp_table() -> None:
    assert parsed("lldp-sonic", FX / "sonic-show-lldp-table.txt") == [
        ("Ethernet0", "dummy", "00:00:00:00:00:01", "First MAC"), ("Ethernet0", "dummy", "00:00:00:00:00:02",
                                                                     "Second MAC")]


@pytest.mark.parametrize("name", ["lldpctl-json-one.json", "lldpctl-json0-one.json"])
def test_lldpctl_json_and_json0(name: str) -> None:
    result = fabric("parse", "lldpctl", FX / name)
    n = json.loads(result.stdout)["neighbors"]
    assert [(x["port"], x["system_name"], x["chassis_id"], x["port_id_type"], x["port_description"], x["ttl"],
             x["management"]) for x in n] == [("eth0", "ns-2.example.com", "00:00:00:00:00:02", "mac", "eth1", 120,
                                               ["fe80::200:ff:fe00:2"])]


def test_lldpctl_many_interfaces_and_a_chassis_without_name(tmp_path: Path) -> None:
    """lldpd's json writer: several interfaces are a list of {name: body}; a chassis without a system name keeps no
    name key (only its id)."""
    one = json.loads((FX / "lldpctl-json-one.json").read_text())["lldp"]["interface"]["eth0"]
    nameless = dict(one, chassis={"id": {"type": "mac", "value": "0c:42:a1:00:00:07"}})
    doc = {"lldp": {"interface": [{"eth0": one}, {"eth1": nameless}, {"eth1": one}]}}
    (tmp_path / "many.json").write_text(json.dumps(doc, indent=2))
    assert parsed("lldpctl", tmp_path / "many.json") == [("eth0", "ns-2.example.com", "00:00:00:00:00:02", "eth1"),
                                                         ("eth1", "", "00:00:00:00:00:02", "eth1"),
                                                         ("eth1", "ns-2.example.com", "00:00:00:00:00:02", "eth1")]


def test_eos_detail_json() -> None:
    assert parsed("lldp-eos", FX / "eos-lldp-neighbors-detail.json") == [
        ("Ethernet1", "DC1-SPINE1", "Ethernet1", "P2P_LINK_TO_DC1-LEAF1A_Ethernet1"),
        ("Ethernet2", "DC1-SPINE2", "Ethernet1", "P2P_LINK_TO_DC1-LEAF1A_Ethernet2")]
    two = parsed("lldp-eos", FX / "eos-lldp-neighbors-detail-two-on-one-port.json")
    assert [(p, s) for p, s, _, _ in two] == [("Ethernet1", "DC1-SPINE1"), ("Ethernet1", "DC1-SPINE2")]


def test_nvue_interface_lldp() -> None:
    got = parsed("lldp-nvue", FX / "nvue-interface-lldp.json")
    assert got[0] == ("swp1", "server01", "48:b0:2d:76:ee:8e", "") and got[5] == ("swp51", "spine01", "swp1", "")
    assert len(got) == 9


def _cut(path: Path, tmp: Path) -> Path:
    out = tmp / f"cut-{path.name}"
    out.write_text(path.read_text()[: len(path.read_text()) * 2 // 3])
    return out


@pytest.mark.parametrize(("kind", "name", "expected"), [
    ("lldp-sonic", "sonic-show-lldp-table.txt", "Total entries displayed"),
    ("lldpctl", "lldpctl-json-one.json", "valid JSON"),
    ("lldp-eos", "eos-lldp-neighbors-detail.json", "valid JSON"),
    ("lldp-nvue", "nvue-interface-lldp.json", "valid JSON"),
])
def test_truncated_output_is_one_located_problem(tmp_path: Path, kind: str, name: str, expected: str) -> None:
    result = fabric("parse", kind, _cut(FX / name, tmp_path))
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert result.stderr.count("error:") == 1 and expected in result.stderr and "cut-" in result.stderr


@pytest.mark.parametrize(("kind", "foreign", "expected"), [
    ("lldpctl", "eos-lldp-neighbors-detail.json", "an object with an 'lldp' key, found keys lldpNeighbors"),
    ("lldp-eos", "lldpctl-json-one.json", "an object with 'lldpNeighbors'"),
    ("lldp-sonic", "nvue-interface-lldp.json", "'LocalPort  RemoteDevice"),
    ("lldp-nvue", "lldpctl-json-one.json", "found keys lldp"),
])
def test_foreign_output_is_refused(kind: str, foreign: str, expected: str) -> None:
    result = fabric("parse", kind, FX / foreign)
    assert result.returncode == 2 and expected in result.stderr and "Traceback" not in result.stderr


def test_one_nvue_interface_document_says_what_is_missing(tmp_path: Path) -> None:
    (tmp_path / "one.json").write_text(json.dumps(json.loads((FX / "nvue-interface-lldp.json").read_text())["swp51"]))
    result = fabric("parse", "lldp-nvue", tmp_path / "one.json")
    assert result.returncode == 2 and "does not say which interface" in result.stderr


def test_ten_thousand_neighbours_bounded(tmp_path: Path) -> None:
    body = json.loads((FX / "lldpctl-json-one.json").read_text())["lldp"]["interface"]["eth0"]
    (tmp_path / "big.json").write_text(json.dumps({"lldp": {"interface": [{f"eth{i}": body}
                                                                          for i in range(10_000)]}}))
    t0 = time.process_time()  # CPU time of this process (the command runs in it): the machine's load adds none
    result = fabric("parse", "lldpctl", tmp_path / "big.json")
    assert result.returncode == 2 and "at most 4096 LLDP neighbours" in result.stderr
    assert time.process_time() - t0 < 5


def test_sonic_count_mismatch_is_located(tmp_path: Path) -> None:
    lines = (FX / "sonic-show-lldp-table.txt").read_text().splitlines(keepends=True)
    (tmp_path / "t.txt").write_text("".join(lines[:4] + lines[5:]))  # a row lost in the middle
    result = fabric("parse", "lldp-sonic", tmp_path / "t.txt")
    assert result.returncode == 2 and "t.txt:6: Total entries displayed: expected 1 (the rows above), found 2" \
        in result.stderr
