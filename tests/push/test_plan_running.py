"""`fabric plan INV --running DIR` on the realistic running configs of tests/fixtures/running/<nos>/.

Each fixture holds what the tool must never touch (AAA, users, management VRF, SNMP, syslog, NTP, LLDP,
unused ports, platform PORT lanes/fec, buffer defaults) plus an older version of the fabric part. For every
target: the plan changes nothing outside the owned scope (every leaf outside it is identical after the
change is applied), applying the plan and planning again gives an empty plan, and for SONiC the JSON Patch
applied with the `jsonpatch` library gives a CONFIG_DB with 0 YANG violations (../shared/tools/
sonic_yang_check.py, as `config apply-patch` validates before it touches a switch).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import jsonpatch
import pytest

from fabric.design.derive import derive
from fabric.model.load import load
from fabric.nos import NOS
from fabric.render import render_switch
from fabric.targets import driver
from fabric.targets.base import Driver
from fabric.targets.owned import (
    apply_leaves,
    apply_text,
    json_patch,
    parse_text,
    render_text,
    text_leaves,
    tree_leaves,
)
from tests.conftest import ROOT
from tests.support.nos import keep, retarget

RUNNING = ROOT / "tests" / "fixtures" / "running"
# (inventory, target to set on every role or None, switch, fixture)
CASES = [
    ("h100-400g", "sonic", "leaf-su1-r1", "sonic/sn5600-2x400G.json"),
    ("h100-400g", "sonic", "spine1", "sonic/sn5600-2x400G.json"),
    ("sonic-example", None, "leaf-su1-r1", "sonic/msn2700.json"),
    ("h100-400g", None, "leaf-su1-r1", "nvue/leaf-su1-r1.yaml"),
    ("h100-400g", None, "spine1", "nvue/spine1.yaml"),
    ("eos-example", None, "leaf-su1-r1", "eos/leaf-su1-r1.cfg"),
    ("eos-example", None, "leaf-su1-r2", "eos/leaf-su1-r2.cfg"),
    ("eos-example", None, "spine1", "eos/spine1.cfg"),
]


def _inventory(tmp: Path, name: str, target: str | None) -> Path:
    dst = tmp / f"{name}-{target or 'as-is'}"
    if not dst.exists():
        if target:
            retarget(name, target, dst, platform=keep)
        else:
            shutil.copytree(ROOT / "inventories" / name, dst)
    return dst


def _driver(inv: Path, switch: str, manifest: list | None = None) -> Driver:
    fabric = derive(load(inv))
    sw = fabric.switches[switch]
    return driver(sw.target, None, switch, render_switch(sw, fabric)[NOS[sw.target].intended],
                  options={"manifest": manifest} if manifest else {})


def _applied(drv: Driver, text: str) -> tuple[str, dict, dict]:
    """The running config after the plan is applied (as the device would hold it), and both as leaves."""
    sd = drv.scoped(text)
    if drv.target == "sonic":
        before = json.loads(text)
        after = jsonpatch.apply_patch(before, json_patch(before, apply_leaves(before, sd.sets, sd.removes)))
        return json.dumps(after), tree_leaves(before), tree_leaves(after)
    if drv.target == "nvue":
        from fabric.nos.nvue.driver import load_running

        before = load_running(text)
        after = apply_leaves(before, sd.sets, sd.removes)
        return json.dumps(after), tree_leaves(before), tree_leaves(after)
    keys = NOS[drv.target].setting_keys
    nodes = parse_text(text)
    after_text = render_text(apply_text(nodes, sd.sets, sd.removes, keys), indent="   ")
    return after_text, text_leaves(nodes, settings=keys), text_leaves(parse_text(after_text), settings=keys)


@pytest.mark.parametrize(("inv", "target", "switch", "fixture"), CASES, ids=[f"{c[3]}:{c[2]}" for c in CASES])
def test_plan_running_changes_only_the_owned_scope_converges_and_rolls_back(
        tmp_path: Path, inv: str, target: str | None, switch: str, fixture: str) -> None:
    drv = _driver(_inventory(tmp_path, inv, target), switch)
    text = (RUNNING / fixture).read_text()
    sd = drv.scoped(text)
    assert not sd.empty and sd.unmanaged > 0
    after_text, before, after = _applied(drv, text)
    outside = {p for p in set(before) | set(after) if p not in sd.owned and before.get(p) != after.get(p)}
    assert not outside, f"changed outside the owned scope: {sorted(outside)[:10]}"
    assert {p: v for p, v in before.items() if p not in sd.owned} == \
        {p: v for p, v in after.items() if p not in sd.owned}  # unmanaged: byte for byte the same values
    again = drv.scoped(after_text)
    assert again.empty, [f"{c.section}: {c.op} {c.line}" for c in again.changes[:10]]
    # `fabric rollback`: the recorded snapshot inside the recorded scope gives back the device as it was
    scope = sorted(list(p) for p in sd.owned)
    undo = driver(drv.target, None, switch, text, options={"scope": scope})
    _, _, back = _applied(undo, after_text)
    assert back == before


def test_sonic_keeps_platform_fields_and_buffer_defaults(tmp_path: Path) -> None:
    drv = _driver(_inventory(tmp_path, "h100-400g", "sonic"), "leaf-su1-r1")
    text = (RUNNING / "sonic" / "sn5600-2x400G.json").read_text()
    sd = drv.scoped(text)
    touched = {p[:3] if p[0] == "PORT" else p[:2] for p in set(sd.sets) | sd.removes}
    assert not any(p[0] == "PORT" and p[2] in ("lanes", "fec", "index", "alias") for p in touched)
    assert not any(p[0] in ("DEVICE_METADATA",) and p[2:3] in (("hwsku",), ("platform",), ("mac",))
                   for p in set(sd.sets) | sd.removes)
    assert not sd.removes  # a fresh platform config: nothing the tool rendered before, nothing to remove
    for table in ("AAA", "TACPLUS_SERVER", "NTP_SERVER", "SYSLOG_SERVER", "SNMP_COMMUNITY", "MGMT_INTERFACE",
                  "BUFFER_POOL", "FEATURE"):
        assert not any(p[0] == table for p in set(sd.sets) | sd.removes), table


def test_nvue_removes_what_an_earlier_apply_rendered_and_nothing_else(tmp_path: Path) -> None:
    """leaf-su1-r1.yaml still has swp33 (an older cabling plan, with BGP neighbours): with the manifest of
    the apply that created it, the plan removes it and marks it; without a manifest it is left alone."""
    inv = _inventory(tmp_path, "h100-400g", None)
    text = (RUNNING / "nvue" / "leaf-su1-r1.yaml").read_text()
    plain = _driver(inv, "leaf-su1-r1").scoped(text)
    assert not plain.removes
    from fabric.nos.nvue.driver import load_running

    tree = load_running(text)
    old = [list(p) for p in tree_leaves(tree) if any(str(x).startswith("swp33") for x in p)]
    assert old, "the fixture's leftover swp33 config"
    sd = _driver(inv, "leaf-su1-r1", manifest=old).scoped(text)
    assert {tuple(p) for p in old} <= sd.removes | set(sd.sets)
    assert any(c.earlier and "swp33" in c.section for c in sd.changes)
    assert all(any(str(x).startswith("swp33") for x in p) for p in sd.removes)  # nothing else goes
    assert set(sd.sets) == set(plain.sets)


def test_plan_running_cli_reports_missing_files_and_json(tmp_path: Path) -> None:
    inv = _inventory(tmp_path, "eos-example", None)
    d = tmp_path / "running"
    d.mkdir()
    shutil.copy(RUNNING / "eos" / "leaf-su1-r1.cfg", d / "leaf-su1-r1.cfg")
    (d / "spine1.cfg").write_text(_driver(inv, "spine1").intended)  # exactly the intent: unchanged
    p = subprocess.run([sys.executable, "-c", "from fabric.cli import main; main()", "plan", str(inv), "--running",
                        str(d), "--format", "json"], capture_output=True, text=True, cwd=ROOT, timeout=120,
                       env={"FABRIC_STATE": str(tmp_path / "state"), "PATH": "/usr/bin:/bin"})
    assert p.returncode == 1, p.stdout + p.stderr  # a switch without a file, like an unreachable one
    data = json.loads(p.stdout)
    devs = {x["device"]: x for x in data["devices"]}
    assert data["summary"] == {"changed": 1, "unchanged": 1, "no-file": 2}
    assert devs["spine2"]["detail"].endswith("spine2.cfg")
    assert devs["leaf-su1-r1"]["unmanaged"] > 40
    assert "~ random-detect ecn minimum-threshold 100000 bytes maximum-threshold 1500000 bytes max-mark-probability " \
           "100 → random-detect ecn minimum-threshold 150000 bytes maximum-threshold 1500000 bytes " \
           "max-mark-probability 100" in devs["leaf-su1-r1"]["sections"]["interface Ethernet1/1 / tx-queue 3"]
    assert devs["leaf-su1-r1"]["changed"] >= 8  # one ECN threshold per port, a change (old → new), not -/+
    assert not any(s.startswith(("username", "aaa", "management", "snmp", "logging", "ntp", "interface Management"))
                   for s in devs["leaf-su1-r1"]["sections"])
    assert not list((tmp_path / "state").glob("**/*")) if (tmp_path / "state").exists() else True


def test_sonic_patch_applied_to_the_running_config_is_yang_valid(tmp_path: Path) -> None:
    """The JSON Patch onto each platform's running CONFIG_DB (jsonpatch) → 0 violations, one checker run."""
    from tests.nos.sonic.test_yang import _check, _prerequisites, _report

    _prerequisites()
    files = []
    for inv, target, switch, fixture in CASES:
        if fixture.startswith("sonic/"):
            drv = _driver(_inventory(tmp_path, inv, target), switch)
            after, _, _ = _applied(drv, (RUNNING / fixture).read_text())
            path = tmp_path / "patched" / f"{inv}-{switch}" / "config_db.json"
            path.parent.mkdir(parents=True)
            path.write_text(after)
            files.append(str(path))
    violations = _check(*files)
    assert not violations, _report(violations)
