"""`fabric graph` and the cabling report's picture: the DOT goes through graphviz's real `dot` (the command runs it;
the Makefile's APT_PACKAGES install it), the SVG is read back as XML and counted: one node per device in the detail
view, one per SU and spine group (SUs framed by pod) in the overview, host cables in their rail's colour, a cabling
report's links in their state's."""

from __future__ import annotations

import shutil
import subprocess
import xml.etree.ElementTree as ET
from collections import Counter
from functools import cache
from pathlib import Path

import pytest

from fabric.design.cabling import Status
from fabric.design.load import load_deriver
from fabric.render.files import dot_id
from fabric.render.graph import DETAIL_MAX, RAILS, STATE
from tests.conftest import require
from tests.inproc import fabric
from tests.support import lldp_outputs as L

ROOT = Path(__file__).resolve().parents[2]
SVG = "{http://www.w3.org/2000/svg}"


@pytest.fixture(autouse=True)
def graphviz() -> None:
    require(shutil.which("dot") is not None, "graphviz's dot (make deps)")


def drawn(path: Path) -> dict[str, list[ET.Element]]:
    """The SVG's groups by class (`node`, `cluster`, `edge ok` …), each a well-formed XML element."""
    groups: dict[str, list[ET.Element]] = {}
    for g in ET.parse(path).getroot().iter(f"{SVG}g"):
        groups.setdefault(g.get("class", ""), []).append(g)
    return groups


def title(g: ET.Element) -> str:
    return g.findtext(f"{SVG}title") or ""


def stroke(g: ET.Element) -> str:
    return next(p.get("stroke", "") for p in g.iter(f"{SVG}path"))


@cache
def big(tmp: Path) -> Path:
    result = fabric("generate", "gpu-rail", "--gpus", "32768", "-o", tmp / "big")
    assert result.returncode == 0, result.stderr
    return tmp / "big"


@pytest.fixture(scope="module")
def generated(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return big(tmp_path_factory.mktemp("gen"))


def test_example_detail_one_node_per_device_host_cables_in_rail_colours(tmp_path: Path) -> None:
    result = fabric("graph", ROOT / "inventories/example", "-o", tmp_path / "example.svg")
    assert result.returncode == 0, result.stderr
    subprocess.run(["dot", "-Tsvg", "-o", str(tmp_path / "again.svg"), str(tmp_path / "example.dot")], check=True,
                   timeout=60)
    topo = load_deriver(ROOT / "inventories/example").topo
    g = drawn(tmp_path / "example.svg")
    assert sorted(title(n) for n in g["node"]) == sorted([*topo.switches, *topo.hosts])
    assert [title(c) for c in g["cluster"]] == ["cluster_su1"]
    host_edges = [e for e in g["edge"] if "gpu" in title(e)]
    assert len(host_edges) == 16
    for e in host_edges:
        leaf = next(n for n in title(e).split("--") if n.startswith("leaf"))
        assert stroke(e) == RAILS[topo.switches[leaf].rail - 1], title(e)


def test_32k_gpus_overview_groups_sus_by_pod(generated: Path, tmp_path: Path) -> None:
    """98,304 links drawn as 128 SUs in 16 pod frames, 16 spine groups and the super-spines: 145 nodes, 16 edges."""
    result = fabric("graph", generated, "-o", tmp_path / "o.svg")
    assert result.returncode == 0, result.stderr
    g = drawn(tmp_path / "o.svg")
    kinds = Counter(title(n).split(" ")[0] for n in g["node"])
    assert kinds == {"SU": 128, "spines-pod1": 1, **{f"spines-pod{p}": 1 for p in range(2, 17)}, "super-spine": 1}
    assert len(g["cluster"]) == 16 and len(g["edge"]) == 16
    assert all("2048 links" in "".join(e.itertext()) for e in g["edge"])


def test_32k_gpus_one_su_in_detail(generated: Path, tmp_path: Path) -> None:
    result = fabric("graph", generated, "--su", "3", "-o", tmp_path / "su3.svg")
    assert result.returncode == 0, result.stderr
    topo = load_deriver(generated).topo
    leaves = {n for n, s in topo.switches.items() if s.role == "leaf" and s.su == 3}
    spines = {ln.b for ln in topo.links if ln.a in leaves and ln.kind == "leaf-spine"}
    want = leaves | spines | {n for n, h in topo.hosts.items() if h.su == 3}
    assert sorted(title(n) for n in drawn(tmp_path / "su3.svg")["node"]) == sorted(want)
    assert len(want) == 32 + 8 + 32


def test_an_su_the_fabric_lacks_is_refused(tmp_path: Path) -> None:
    result = fabric("graph", ROOT / "inventories/example", "--su", "9", "-o", tmp_path / "x.svg")
    assert result.returncode == 2
    assert "--su: expected an SU of the fabric (1–1), found 9" in result.stderr
    assert not (tmp_path / "x.svg").exists()


def test_cabling_report_colours_each_link_by_state(tmp_path: Path) -> None:
    """The miswired example: 4 links where the model has them (dashed red) and 4 where they are, 20 ok in green;
    each fault's links carry its number."""
    result = fabric("cabling", ROOT / "inventories/example", "--from", ROOT / "tests/fixtures/lldp/example-miswired",
                    "-o", tmp_path / "report.svg")
    assert result.returncode == 1, result.stderr
    g = drawn(tmp_path / "report.svg")
    assert len(g["edge ok"]) == 20 and {stroke(e) for e in g["edge ok"]} == {STATE[Status.ok][0]}
    assert len(g["edge miswired"]) == 4 and {stroke(e) for e in g["edge miswired"]} == {STATE[Status.miswired][0]}
    assert {title(e) for e in g["edge miswired"]} == {"spine1--leaf-su1-r1", "spine1--leaf-su1-r3",
                                                     "leaf-su1-r2--gpu-su1-03", "leaf-su1-r3--gpu-su1-03"}
    assert len(g["edge actual"]) == 4
    numbers = Counter("".join(e.itertext()).split()[-1] for e in g["edge miswired"] + g["edge actual"])
    assert numbers == {"1": 4, "2": 4}


def test_cabling_report_as_html(tmp_path: Path) -> None:
    result = fabric("cabling", ROOT / "inventories/example", "--from", ROOT / "tests/fixtures/lldp/example-miswired",
                    "--format", "html")
    assert result.returncode == 1, result.stderr
    page = result.stdout
    assert page.startswith("<!DOCTYPE html>") and "<svg" in page and "<?xml" not in page
    assert "1  miswired  gpu-su1-03 NIC 2 is in leaf-su1-r3:swp3" in page


def test_names_are_quoted_for_dot(tmp_path: Path) -> None:
    """A name with a quote, a backslash or a graphviz label escape (`\\N`: the node's name) is drawn as written."""
    names = ['a"b', "c\\N", "d;e -- f"]
    text = "graph g {\n" + "".join(f"  {dot_id(n)};\n" for n in names) + "}\n"
    svg = subprocess.run(["dot", "-Tsvg"], input=text, capture_output=True, text=True, check=True, timeout=60).stdout
    (tmp_path / "n.svg").write_text(svg)
    nodes = drawn(tmp_path / "n.svg")["node"]
    assert sorted(n.findtext(f"{SVG}text") or "" for n in nodes) == sorted(names)


def test_cabling_overview_counts_the_links_to_fix_per_su(tmp_path: Path) -> None:
    """A fabric beyond the detail view's size (4,096 GPUs) with two host cables of SU 2 crossed: the overview's SU 2
    says 2 links to fix, no other group does."""
    assert fabric("generate", "gpu-rail", "--gpus", "4096", "-o", tmp_path / "inv").returncode == 0
    topo = load_deriver(tmp_path / "inv").topo
    assert len(topo.switches) + len(topo.hosts) > DETAIL_MAX
    leaf1, leaf2 = topo.leaf_of[(2, 1)], topo.leaf_of[(2, 2)]
    port = next(ln.b_port for ln in topo.links if ln.b == leaf1 and ln.kind == "host-leaf")
    L.write(topo, L.swap_far(L.hall(topo), (leaf1, port), (leaf2, port)), tmp_path / "lldp")
    result = fabric("cabling", tmp_path / "inv", "--from", tmp_path / "lldp", "-o", tmp_path / "report.svg")
    assert result.returncode == 1, result.stderr
    fixes = {title(n): "".join(n.itertext()) for n in drawn(tmp_path / "report.svg")["node"]
             if "to fix" in "".join(n.itertext())}
    assert list(fixes) == ["SU 2"] and "2 links to fix" in fixes["SU 2"]


def test_su_without_a_picture_is_refused() -> None:
    result = fabric("cabling", ROOT / "inventories/example", "--from", ROOT / "tests/fixtures/lldp/example-miswired",
                    "--su", "1")
    assert result.returncode == 2
    assert "--su: expected a picture (--format svg, dot or html), found --format table" in result.stderr


def test_a_miswire_is_drawn_where_its_cable_is_not_where_a_neighbour_is(tmp_path: Path) -> None:
    """leaf-su1-r1:swp5's uplink pulled and leaf-su1-r3:swp5's moved into the port it leaves free (spine1:swp1):
    the one cable is drawn where it is (leaf-su1-r3 — spine1); the pulled one is drawn only where the model has it,
    never towards what its expected port holds (the other leaf)."""
    topo = load_deriver(ROOT / "inventories/example").topo
    cables = L.pull(L.hall(topo), ("leaf-su1-r1", "swp5"))
    cables[L.find(cables, ("spine1", "swp3"))] = (("leaf-su1-r3", "swp5"), ("spine1", "swp1"))
    L.write(topo, cables, tmp_path / "lldp")
    result = fabric("cabling", ROOT / "inventories/example", "--from", tmp_path / "lldp", "-o", tmp_path / "r.svg")
    assert result.returncode == 1, result.stderr
    g = drawn(tmp_path / "r.svg")
    assert {title(e) for e in g["edge miswired"]} == {"spine1--leaf-su1-r1", "spine1--leaf-su1-r3"}
    assert [title(e) for e in g["edge actual"]] == ["leaf-su1-r3--spine1"]
