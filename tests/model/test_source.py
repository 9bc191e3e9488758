"""One pydantic-error → problem conversion (fabric.model.source.pydantic_problems) for every user file:
inventories, the acceptance catalog, the diagnose catalog and host intents all report every error at its
file:line, exit 2, never a traceback."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from fabric.accept import catalog as accept_catalog
from fabric.errors import InputError
from fabric.model.source import SourceMap, json_source
from tests import inproc
from tests.support.paths import ROOT


def fabric(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return inproc.fabric(*args, stdin=stdin)  # in this process (tests.inproc)


def problems(exc: pytest.ExceptionInfo[InputError]) -> list[str]:
    return [str(p) for p in exc.value.problems]


# -- the acceptance catalog ----------------------------------------------------------------------------

ACCEPT_CATALOG = """\
checks:
  - check: rail-bandwdith
  - check: rail-bandwidth
    input:
      seconds: -1
      fraction_of_link: 2
      colour: red
  - check: bgp
    name: x
  - check: bgp
    name: x
  - check: nccl-allreduce
    input: {launcher: pbs}
"""


def test_accept_catalog_reports_every_error_with_its_line(tmp_path: Path) -> None:
    path = tmp_path / "catalog.yaml"
    path.write_text(ACCEPT_CATALOG)
    with pytest.raises(InputError) as exc:
        accept_catalog.load_catalog(path)
    got = problems(exc)
    assert f"{path}:2: checks[0].check: expected one of cabling, host-config, host-prereqs, bgp, " in got[0]
    assert got[0].endswith("found 'rail-bandwdith'")
    assert f"{path}:5: checks[1].input.seconds: expected greater than 0, found -1" in got
    assert f"{path}:6: checks[1].input.fraction_of_link: expected less than or equal to 1, found 2" in got
    assert any(p.startswith(f"{path}:7: checks[1].input.colour: expected one of tool, threshold_gbps, ")
               and p.endswith("found unknown key 'colour'") for p in got)
    assert f"{path}:11: checks[3].name: expected a name unique in the catalog, found 'x'" in got
    assert any(p.startswith(f"{path}:13: checks[4].input.launcher: expected 'mpirun', 'slurm' or 'k8s'")
               for p in got)
    assert len(got) == 6


def test_accept_catalog_structure_and_yaml_errors_have_lines(tmp_path: Path) -> None:
    path = tmp_path / "catalog.yaml"
    path.write_text("checks:\n  - check: bgp\n    nmae: x\n")
    with pytest.raises(InputError) as exc:
        accept_catalog.load_catalog(path)
    assert problems(exc) == [f"{path}:3: checks[0].nmae: expected one of check, name, tags, input, "
                             "found unknown key 'nmae'"]
    path.write_text("checks:\n  - check: bgp\n  - [\n")
    with pytest.raises(InputError) as exc:
        accept_catalog.load_catalog(path)
    assert problems(exc)[0].startswith(f"{path}:4: expected valid YAML")


def test_accept_cli_bad_catalog_exits_2(tmp_path: Path) -> None:
    path = tmp_path / "catalog.yaml"
    path.write_text(ACCEPT_CATALOG)
    p = fabric("accept", "inventories/example", "--catalog", str(path), "-o", str(tmp_path / "out"))
    assert p.returncode == 2 and "Traceback" not in p.stderr
    lines = p.stderr.splitlines()
    assert len(lines) == 6 and all(line.startswith(f"error: {path}:") for line in lines), p.stderr


# -- host intents (fabric host plan|apply --intent) ----------------------------------------------------------

def _intent_text(tmp_path: Path) -> str:
    out = tmp_path / "render"
    p = fabric("render", "inventories/example", "--only", "gpu-su1-01", "-o", str(out))
    assert p.returncode == 0, p.stderr
    return (out / "hosts" / "gpu-su1-01" / "host.json").read_text()


def _line_of(text: str, needle: str, start: int = 0) -> int:
    return text[: text.index(needle, start)].count("\n") + 1


def test_host_intent_reports_every_error_with_its_line(tmp_path: Path) -> None:
    text = _intent_text(tmp_path)
    doc = json.loads(text)
    doc["roce_mtu"] = "big"
    doc["rails"][1]["vfs"] = "many"
    doc["rails"][1]["colour"] = "red"
    del doc["rails"][0]["leaf"]
    bad = json.dumps(doc, indent=2)
    path = tmp_path / "host.json"
    path.write_text(bad)
    p = fabric("host", "plan", "--intent", str(path))
    assert p.returncode == 2 and "Traceback" not in p.stderr, p.stderr
    errors = p.stderr.splitlines()
    mtu, rail0, rail1 = (_line_of(bad, k) for k in ('"roce_mtu"', '"rail": 1', '"rail": 2'))
    vfs, colour = _line_of(bad, '"vfs"', bad.index('"rail": 2')), _line_of(bad, '"colour"')
    assert f"error: {path}:{mtu}: roce_mtu: expected a valid integer" in p.stderr
    assert f"error: {path}:{vfs}: rails[1].vfs: expected a valid integer" in p.stderr and vfs > rail1
    assert f"error: {path}:{colour}: rails[1].colour: expected one of rail, rdma, " in p.stderr
    assert f"error: {path}:{rail0 - 1}: rails[0].leaf: expected this required key" in p.stderr  # at its "{"
    assert len(errors) == 4, p.stderr


def test_host_intent_from_stdin_and_invalid_json(tmp_path: Path) -> None:
    text = _intent_text(tmp_path)
    broken = text.replace('"gpus": 4,', '"gpus": 4', 1)
    p = fabric("host", "plan", "--intent", "-", stdin=broken)
    assert p.returncode == 2 and "Traceback" not in p.stderr
    line = _line_of(broken, '"management_interface"')
    assert p.stderr.startswith(f"error: <stdin>:{line}: expected valid JSON, found ',' or '}}'"), p.stderr


def test_json_source_lines_and_odd_input() -> None:
    smap = SourceMap()
    assert json_source('{\n  "a": [\n    1,\n    {"b": 2}\n  ]\n}\n', "x.json", smap) == {"a": [1, {"b": 2}]}
    assert smap.where(("a", 1, "b")) == ("x.json", 4)
    for text in ('{"a": "\\q"}', "[" * 100_000, ""):
        with pytest.raises(InputError) as exc:
            json_source(text, "x.json", SourceMap())
        assert "expected valid JSON" in str(exc.value)


# -- inventories: structural and semantic problems in one run -----------------------------------------

def _example(tmp_path: Path) -> Path:
    import shutil

    dst = tmp_path / "inv"
    shutil.copytree(ROOT / "inventories" / "example", dst)
    return dst


def _edit(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new))


def test_structural_and_semantic_problems_come_out_of_one_run(tmp_path: Path) -> None:
    inv = _example(tmp_path)
    _edit(inv / "switching.yaml", "  mtu: 9216", "  mtus: 9216")  # unknown key
    _edit(inv / "fabric.yaml", "cable: 5m}", "cable: 5ft}")  # bad unit
    _edit(inv / "hosts.yaml", "{rail: 4, rdma: mlx5_3", "{rail: 5, rdma: mlx5_3")  # semantic: no rail-5 leaf
    p = fabric("validate", str(inv))
    assert p.returncode == 2 and "Traceback" not in p.stderr
    assert p.stderr.splitlines() == [
        f"error: {inv}/fabric.yaml:18: cabling.host_leaf.cable: expected a cable length in metres like 5m or 40m, "
        "found '5ft'",
        f"error: {inv}/switching.yaml:2: switching.mtus: expected one of mtu, adaptive_routing, neighbor, bgp, "
        "found unknown key 'mtus'",
        f"error: {inv}/hosts.yaml:10: hosts.defaults.nics[3].rail: expected a rail with a leaf in SU 1 "
        "(rails 1-4), found rail 5 on gpu-su1-01 (from the shared default: 4 hosts)",
    ]


def test_a_structural_problem_in_a_list_keeps_the_other_semantic_checks(tmp_path: Path) -> None:
    inv = _example(tmp_path)
    _edit(inv / "hosts.yaml", "{rail: 1, rdma: mlx5_0, netdev: rail1}", "{rail: one, rdma: mlx5_0, netdev: rail1}")
    (inv / "links.yaml").write_text("links:\n  - {a: leaf-su1-r1:swp9, b: spine9:swp1}\n")
    p = fabric("validate", str(inv))
    assert p.returncode == 2
    assert "hosts.defaults.nics[0].rail: expected a valid integer" in p.stderr
    assert f"{inv}/links.yaml:2: links[0].b: expected a switch of this fabric, found 'spine9'" in p.stderr


def test_a_link_to_a_host_port_in_use_says_so(tmp_path: Path) -> None:
    inv = _example(tmp_path)
    (inv / "links.yaml").write_text("links:\n  - {a: leaf-su1-r1:swp9, b: gpu-su1-01:rail1}\n"
                                    "  - {a: leaf-su1-r2:swp9, b: gpu-su1-02:eth7}\n")
    p = fabric("validate", str(inv))
    assert p.returncode == 2
    assert p.stderr.splitlines() == [
        f"error: {inv}/links.yaml:2: links[0].b: expected a switch port (a host NIC is cabled by hosts.nics, to its "
        "rail's leaf), found gpu-su1-01:rail1, already cabled to leaf-su1-r1:swp1",
        f"error: {inv}/links.yaml:3: links[1].b: expected a switch port (a host NIC is cabled by hosts.nics, to its "
        "rail's leaf), found gpu-su1-02:eth7, no NIC of host gpu-su1-02",
    ]


def test_a_dropped_key_is_not_blamed_elsewhere_in_its_section(tmp_path: Path) -> None:
    """The semantic checks run without the refused keys (defaults in their place), so what they find in a
    section with a structural problem is not reported: it could come from a default; other sections are."""
    inv = _example(tmp_path)
    _edit(inv / "hosts.yaml", "{rail: 1, rdma: mlx5_0", "{rail: one, rdma: mlx5_0")
    _edit(inv / "hosts.yaml", "{rail: 4, rdma: mlx5_3", "{rail: 5, rdma: mlx5_3")
    _edit(inv / "addressing.yaml", "  rail_prefix_length: 24", "  rail_prefix_length: 24x")
    (inv / "links.yaml").write_text("links:\n  - {a: leaf-su1-r1:swp9, b: spine9:swp1}\n")
    p = fabric("validate", str(inv))
    assert p.returncode == 2
    assert [ln.split(": ", 2)[1] for ln in p.stderr.splitlines()] == [
        f"{inv}/addressing.yaml:5", f"{inv}/hosts.yaml:7", f"{inv}/links.yaml:2"]
    assert "hosts.yaml:10" not in p.stderr  # rail 5: in the section whose NIC list was dropped
