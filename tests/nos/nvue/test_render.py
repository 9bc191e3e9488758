"""NVUE renders: PTM's cabling plan (`topology.dot`), checked against the format of NVIDIA's Cumulus Linux user
guide, "Prescriptive Topology Manager - PTM" (5.9 and 5.15): an undirected `graph` of `"host":"port" --
"host":"port";` edges, per-port LLDP parameters in brackets (`match_type=ifname|portdescr`); its examples are
tests/fixtures/nvue/ptm-topology-example.dot."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from fabric.design.load import load_deriver
from fabric.nos import NOS
from tests.conftest import require
from tests.inproc import fabric

ROOT = Path(__file__).resolve().parents[3]
FIXTURE = ROOT / "tests/fixtures/nvue/ptm-topology-example.dot"
# one edge as the guide writes them: quoted host and port on each side, an optional LLDP parameter, a semicolon
EDGE = re.compile(r'^\s*"([^"]+)":"([^"]+)" -- "([^"]+)":"([^"]+)"(?: \[LLDP="match_type=(ifname|portdescr)"\])?;$')


def edges(text: str) -> list[tuple[str, ...]]:
    """The edges of a topology.dot written in the guide's form; any other line but the graph's frame is a failure."""
    body = [ln for ln in text.splitlines() if ln.strip() and not ln.lstrip().startswith("//")]
    assert body[0] == "graph G {" and body[-1] == "}", body[:1] + body[-1:]
    found = [EDGE.match(ln) for ln in body[1:-1]]
    assert all(found), [ln for ln, m in zip(body[1:-1], found, strict=True) if not m]
    return [m.groups() for m in found if m]


def test_the_guides_examples_are_in_the_form_checked() -> None:
    assert len(edges(FIXTURE.read_text())) == 9


@pytest.mark.parametrize("device", ["leaf-su1-r1", "spine1"])
def test_topology_dot_has_every_link_of_the_switch(tmp_path: Path, device: str) -> None:
    """`fabric render --all` writes it; every link of the switch is an edge, a host's port matched by description
    (lldpd on a host sends its MAC as Port ID), a Cumulus peer's by name."""
    result = fabric("render", ROOT / "inventories/h100-400g", "--all", "--only", device, "-o", tmp_path / "out")
    assert result.returncode == 0, result.stderr
    text = (tmp_path / "out/switches" / device / "topology.dot").read_text()
    got = {(a, ap, b, bp): match for a, ap, b, bp, match in edges(text)}
    topo = load_deriver(ROOT / "inventories/h100-400g").topo
    want = {(ln.a, ln.a_port, ln.b, ln.b_port) if ln.a == device else (ln.b, ln.b_port, ln.a, ln.a_port): ln.b
            for ln in topo.links if device in (ln.a, ln.b)}
    assert set(got) == set(want) and len(got) == len(want) > 0
    for edge, match in got.items():
        assert match == ("portdescr" if edge[2] in topo.hosts else None), edge
    require(shutil.which("dot") is not None, "graphviz's dot (make deps)")
    subprocess.run(["dot", "-Tcanon", "-o", str(tmp_path / "canon.dot")], input=text, text=True, check=True,
                   timeout=60)  # graphviz parses it as DOT


def test_without_all_no_topology_dot(tmp_path: Path) -> None:
    """The push's render leaves it out (NVUE has no object for /etc/ptm.d): it is declared not pushed."""
    result = fabric("render", ROOT / "inventories/h100-400g", "--only", "spine1", "-o", tmp_path / "out")
    assert result.returncode == 0, result.stderr
    assert not (tmp_path / "out/switches/spine1/topology.dot").exists()
    assert "topology.dot" in dict(NOS["nvue"].not_pushed)


def test_every_nos_says_how_its_cabling_is_checked_on_the_switch() -> None:
    """Each row names its own check or says why there is none; docs/cabling.md's table has a row for each NOS."""
    doc = (ROOT / "docs/cabling.md").read_text()
    for row in NOS.values():
        assert row.cabling_check.note.strip(), row.name
        assert f"| {row.title} |" in doc, row.title
    assert NOS["nvue"].cabling_check.mechanism and "topology.dot" in NOS["nvue"].cabling_check.mechanism
