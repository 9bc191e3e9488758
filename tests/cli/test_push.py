"""`fabric plan INV --running DIR` end to end through the console entry point: the results table."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from tests import inproc


def test_a_plan_of_many_switches_is_one_row_a_line(tmp_path: Path) -> None:
    """A plan of more than 500 switches (896 at 16,384 GPUs) is written as aligned lines, one switch a line, the
    same results as JSON (rich laid the table out at about 0.5 ms a row: 3.7 CPU-s of 10.5 for 7,168 switches)."""
    inv, out, running = tmp_path / "g16k", tmp_path / "out", tmp_path / "running"
    assert inproc.fabric("generate", "gpu-rail", "--gpus", "16384", "-o", str(inv)).returncode == 0
    assert inproc.fabric("render", str(inv), "--only", "leaf-su1-r1", "--only", "spine1", "-o",
                         str(out)).returncode == 0
    running.mkdir()
    shutil.copy(out / "switches" / "spine1" / "nvue-patch.yaml", running / "spine1.yaml")
    leaf = (out / "switches" / "leaf-su1-r1" / "nvue-patch.yaml").read_text()
    assert "mtu: 9216\n" in leaf
    (running / "leaf-su1-r1.yaml").write_text(leaf.replace("mtu: 9216\n", "mtu: 9000\n", 1))
    doc = json.loads(inproc.fabric("plan", str(inv), "--running", str(running), "--format", "json").stdout)
    p = inproc.fabric("plan", str(inv), "--running", str(running))
    assert p.returncode == 1, p.stderr  # switches without a saved file
    lines = p.stdout.splitlines()
    devices = doc["devices"]
    assert len(devices) == 896
    assert lines[0] == f"g16k: plan against {running} (896 rows)"
    assert lines[1].split() == ["device", "target", "status", "+", "~", "-", "detail"]
    assert set(lines[2].replace(" ", "")) == {"-"}
    for line, d in zip(lines[3:3 + len(devices)], devices, strict=True):
        counts = [] if d["status"] == "no-file" else [str(d[k]) for k in ("added", "changed", "removed")]
        assert line.split() == [d["device"], d["target"], d["status"], *counts, *d["detail"].split()], line
    changed = next(d for d in devices if d["device"] == "leaf-su1-r1")
    assert changed["status"] == "changed" and changed["changed"] > 0
    assert lines[3 + len(devices)].startswith("leaf-su1-r1 (nvue) sha256:")  # then its diff, as before
    assert "1 changed, 894 no-file, 1 unchanged" in lines
    assert not any(c in p.stdout for c in "┃│┏")  # no box of rich's table


def test_a_devices_diff_lines_print_as_one_print_a_line_did() -> None:
    """The table's diff lines of a device, one Text for all of them, come out byte for byte as one print a line
    gave them (tests/oracles/plan_table.py): a real EOS diff and lines with secrets, control characters and more
    characters than the terminal's width, without and with colour, wrapped and not."""
    import io

    from rich.console import Console

    from fabric.cli.push import _diff_lines
    from fabric.design.derive import derive
    from fabric.model.load import load
    from fabric.nos.eos.driver import EosDriver
    from fabric.render import render_switch
    from fabric.targets.base import Change, DeviceDiff
    from tests.conftest import ROOT
    from tests.oracles.plan_table import print_diff_lines

    fabric = derive(load(ROOT / "inventories" / "eos-example"))
    intended = render_switch(fabric.switches["leaf-su1-r1"], fabric)["running-config.cfg"]
    running = (ROOT / "tests" / "fixtures" / "running" / "eos" / "leaf-su1-r1.cfg").read_text()
    real = EosDriver(None, "leaf-su1-r1", intended).diff_of(running)
    odd = DeviceDiff(device="sw", target="eos", changes=[
        Change(section="router bgp 65101", op="-", line="neighbor FABRIC password 7 0x1\x1b[31m red"),
        Change(section="(global)", op="~", old="snmp-server community pub ro", line="snmp-server community p ro"),
        Change(section="interface Ethernet1/1", op="+", line="description " + "x " * 150),
        Change(section="a\nb\tc", op="-", line="tacacs-server key 7 abc", foreign=True)])
    assert len(real.changes) > 10
    for kw in ({"width": 160}, {"force_terminal": True, "color_system": "truecolor", "width": 80},
               {"force_terminal": True, "color_system": "256", "width": 60, "soft_wrap": True}):
        for diff in (real, odd):
            new, old = io.StringIO(), io.StringIO()
            Console(file=new, markup=False, emoji=False, highlight=False, **kw).print(_diff_lines(diff.sections()))
            print_diff_lines(Console(file=old, markup=False, emoji=False, highlight=False, **kw), diff.sections())
            assert new.getvalue() == old.getvalue()
