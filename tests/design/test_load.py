"""The one loader (`fabric.design.load`): what `validate`, `explain` and every other command start from, loaded and
derived afresh on every call, with nothing kept between commands; odd inventories are errors, never a hang."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from fabric.design import load as fl
from fabric.explain import answer, explain, select, to_json

ROOT = Path(__file__).resolve().parents[2]


def test_no_command_leaves_a_cache_behind(tmp_path: Path) -> None:
    """No command writes a cache, on a fabric of more than 2,000 devices too: the user's cache directory stays
    as it was (a derive cache kept 69 MB there per inventory edit of a 32k-GPU fabric, never pruned)."""
    from fabric.generate import GpuRailSpec, write

    inv = tmp_path / "inv"
    write(GpuRailSpec(gpus=2048, gpus_per_host=1, rails=1), inv)  # 2,048 hosts
    home = tmp_path / "home"
    env = {**os.environ, "HOME": str(home), "XDG_CACHE_HOME": str(home / ".cache")}
    env.pop("ROCE_FABRIC_CACHE", None)
    fabric = str(Path(sys.executable).parent / "fabric")
    for argv in (["validate", str(inv)], ["lint", str(inv)], ["explain", str(inv), "leaf-su1-r1", "--format", "json"],
                 ["render", str(inv), "-o", str(tmp_path / "out")]):
        p = subprocess.run([fabric, *argv], capture_output=True, text=True, timeout=120, env=env, cwd=tmp_path)
        assert p.returncode == 0, p.stderr
    assert not home.exists()


def test_validate_s_figures_are_those_of_the_derived_fabric(example_copy: Path) -> None:
    assert fl.summary(example_copy) == fl.Summary.of(fl.load_fabric(example_copy))


@pytest.mark.parametrize("name", ["example", "fixtures/irregular", "fixtures/k8s-vlan16"])
def test_explain_s_rows_filtered_are_what_the_whole_topology_gives(name: str, tmp_path: Path) -> None:
    """`explain` makes every row of one device and filters them (`answer`, `select`): for every device and path the
    rows and the JSON text equal those made from the whole derived fabric, and a device the fabric lacks is said
    to be missing."""
    src = ROOT / ("tests/fixtures/inventories/" + name.split("/")[1] if "/" in name else "inventories/" + name)
    inv = tmp_path / "inv"
    shutil.copytree(src, inv)
    whole = fl.load_fabric(inv)
    for dev in [*whole.intent.switches, *whole.intent.hosts]:
        intent = whole.deriver.device(dev)
        found = answer(inv, dev)
        assert found.rows is not None and found.fabric == whole.intent.name
        full = explain(whole.loaded, intent, "", whole.deriver.topo)  # type: ignore[arg-type]
        paths = {"", "ports", "ports[0]", "qos", "qos.queues.3", "effective", "bgp.asn", "rails[0]", "nccl_env",
                 "no.such.path", *(p for p, _, _ in full[::7]), *(p.rsplit(".", 1)[0] for p, _, _ in full[::11])}
        for path in sorted(paths):
            expected = explain(whole.loaded, intent, path, whole.deriver.topo)  # type: ignore[arg-type]
            assert select(found.rows, path) == expected, (dev, path)
            assert to_json(expected) == _json_dumps(expected)
    missing = answer(inv, "no-such-device")
    assert missing.rows is None and missing.fabric == whole.intent.name


def test_explain_json_text_is_json_dumps_on_odd_text() -> None:
    odd = ["", "ä", "\u2028", '"', "\\", "\x00\x1f", "€ 😀", "a\nb\tc"]
    rows = [(a, b, c) for a in odd for b in odd[:3] for c in odd[::-1][:3]]
    assert to_json(rows) == _json_dumps(rows)
    assert to_json([]) == _json_dumps([])


def _json_dumps(rows: list[tuple[str, str, str]]) -> str:
    return json.dumps([{"path": p, "value": v, "origin": o} for p, v, o in rows], indent=2, ensure_ascii=False) + "\n"


def test_a_fifo_in_the_inventory_is_an_error_never_a_wait(example_copy: Path) -> None:
    from tests import inproc

    os.mkfifo(example_copy / "pipe.yaml", 0o600)
    for argv in (["validate", example_copy], ["explain", example_copy, "spine1"], ["lint", example_copy]):
        p = inproc.fabric(*argv)
        assert p.returncode == 2 and "Traceback" not in p.stderr, p.stderr
        assert f"{example_copy}/pipe.yaml: expected a YAML file, found a FIFO" in p.stderr


def test_a_file_name_that_is_not_utf8_in_the_inventory(example_copy: Path) -> None:
    """Any bytes make a file name: a problem in it names it escaped."""
    from tests import inproc

    odd = example_copy / os.fsdecode(b"x\xff.yaml")
    odd.write_text("x-anchors: {}\n")
    p = inproc.fabric("validate", example_copy)
    assert p.returncode == 0 and "(6 files)" in p.stdout, p.stderr
    odd.write_text("x-anchors: [\n")
    p = inproc.fabric("validate", example_copy)
    assert p.returncode == 2 and "Traceback" not in p.stderr, p.stderr
    assert f"{example_copy}/x\\udcff.yaml:2: expected valid YAML" in p.stderr


def test_an_inventory_that_is_a_symlink_to_itself(tmp_path: Path) -> None:
    from tests import inproc

    loop = tmp_path / "inv"
    loop.symlink_to(loop)
    for argv in (["validate", loop], ["lint", loop], ["render", loop, "-o", tmp_path / "out"]):
        p = inproc.fabric(*argv)
        assert p.returncode == 2 and "Traceback" not in p.stderr, p.stderr
        assert f"{loop}: expected an inventory directory of YAML files, found a symlink that leads nowhere" \
               in p.stderr
