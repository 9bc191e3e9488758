"""Brownfield push end to end on the EOS and NVUE stand-ins seeded with real configs.

The stand-ins hold a config of the corpus (tests/fixtures/brownfield/, SOURCE.md): Arista AVD's dc1-leaf1a
(MLAG, VXLAN/EVPN, VRFs in BGP, foreign peer groups, route-maps; hostname `dc1-leaf1a`) and the Cumulus
documentation's leaf01 (MLAG bonds on swp1/swp2, EVPN, peer group `underlay`). `fabric apply` changes only
what the tool owns — the hostname too, without losing the session's prompt — the plan after it is empty,
`drain`/`undrain` write and remove the release's own setting, and `fabric rollback` gives back the running
config byte for byte.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.brownfield.test_plan import CORPUS, FOREIGN
from tests.brownfield.test_plan import LEAF as LEAF_PATTERNS
from tests.push.test_standins import FAST, LEAF, _intent, _inventory, _json, _prereq, run
from tests.standins.harness import StandinNet, seed, standins

pytestmark = [pytest.mark.root]


@pytest.fixture
def eos_avd(tmp_path: Path) -> Iterator[tuple[StandinNet, Path, Path, str]]:
    _prereq()
    inv = _inventory("eos-example", tmp_path / "inv", tmp_path)
    sw, files = _intent(inv)
    text = (CORPUS / "eos" / f"{LEAF}.cfg").read_text()
    nbrs = [ln.split()[2] for ln in files["running-config.cfg"].splitlines()
            if ln.strip().startswith("neighbor interface")]
    with standins(tmp_path, {LEAF: ("eos", sw.management.split("/")[0])}) as net:
        seed(net.devices[LEAF], "eos", text, dict.fromkeys(nbrs, sw.bgp.asn))
        yield net, inv, tmp_path / "state", text


def test_eos_avd_leaf_apply_drain_undrain_rollback(eos_avd: tuple[StandinNet, Path, Path, str]) -> None:
    net, inv, state, seeded = eos_avd
    d = net.devices[LEAF]
    plan = _json(run(net, "plan", str(inv), "--limit", LEAF, "--format", "json", state=state))[LEAF]
    assert plan["status"] == "changed" and plan["removed"] == 0 and plan["never_rendered_removals"] == 0, plan
    assert "~ hostname dc1-leaf1a → hostname leaf-su1-r1" in plan["sections"]["(global)"]
    assert not any(s.startswith("router bgp") and any(i.startswith("-") for i in items)
                   for s, items in plan["sections"].items())

    p = run(net, "apply", str(inv), "--limit", LEAF, "--yes", *FAST, state=state)
    assert p.returncode == 0, p.stdout + p.stderr  # the hostname changed under the session: no rollback
    applied = (d / "running.cfg").read_text()
    assert "\nhostname leaf-su1-r1\n" in applied
    for pat in FOREIGN["eos"] + LEAF_PATTERNS[("eos", LEAF)]:
        assert re.search(pat, applied), pat
    again = _json(run(net, "plan", str(inv), "--limit", LEAF, "--format", "json", state=state))[LEAF]
    assert again["status"] == "unchanged", again

    p = run(net, "rollback", str(inv), LEAF, "--yes", *FAST, state=state)
    assert p.returncode == 0, p.stdout + p.stderr
    assert (d / "running.cfg").read_text() == seeded  # byte for byte the AVD config again

    assert run(net, "apply", str(inv), "--limit", LEAF, "--yes", *FAST, state=state).returncode == 0
    applied = (d / "running.cfg").read_text()
    p = run(net, "drain", str(inv), LEAF, "--yes", "--format", "json", "--interval", "0.2", *FAST, state=state)
    res = json.loads(p.stdout)
    assert p.returncode == 0 and res["status"] == "applied", p.stdout + p.stderr
    assert res["sections"] == {"maintenance / unit System": ["+ quiesce"]}
    assert "\nmaintenance\n   unit System\n      quiesce\n" in (d / "running.cfg").read_text()
    p = run(net, "undrain", str(inv), LEAF, "--yes", "--format", "json", "--interval", "0.2", *FAST, state=state)
    assert p.returncode == 0 and json.loads(p.stdout)["status"] == "applied", p.stdout + p.stderr
    assert "quiesce" not in (d / "running.cfg").read_text()


@pytest.fixture
def nvue_docs(tmp_path: Path) -> Iterator[tuple[StandinNet, Path, Path, dict]]:
    from fabric.nos.nvue.driver import load_running

    _prereq()
    inv = _inventory("h100-400g", tmp_path / "inv", tmp_path)
    sw, _files = _intent(inv)
    tree = load_running((CORPUS / "nvue" / f"{LEAF}.yaml").read_text())
    with standins(tmp_path, {LEAF: ("nvue", sw.management.split("/")[0])}) as net:
        seed(net.devices[LEAF], "nvue", json.dumps(tree), {})
        yield net, inv, tmp_path / "state", tree


def _applied_tree(d: Path) -> dict:
    meta = json.loads((d / "meta.json").read_text())
    return json.loads((d / "revisions" / f"{meta['applied']}.json").read_text())


def test_nvue_docs_leaf_refuses_bond_member_removal_then_applies_drains_and_rolls_back(
        nvue_docs: tuple[StandinNet, Path, Path, dict]) -> None:
    net, inv, state, seeded = nvue_docs
    d = net.devices[LEAF]
    p = run(net, "apply", str(inv), "--limit", LEAF, "--yes", "--format", "json", *FAST, state=state)
    res = _json(p)[LEAF]
    assert p.returncode == 1 and res["status"] == "error" and "--allow-unowned-removal" in res["detail"], res
    assert "interface bond1 bond member: swp1: {}" in res["detail"]
    assert _applied_tree(d) == seeded  # refused: the switch untouched

    p = run(net, "apply", str(inv), "--limit", LEAF, "--yes", "--allow-unowned-removal", *FAST, state=state)
    assert p.returncode == 0, p.stdout + p.stderr
    tree = _applied_tree(d)
    assert tree["system"]["hostname"] == LEAF  # the prompt changed with it; the session went on
    assert tree["vrf"]["default"]["router"]["bgp"]["peer-group"] == seeded["vrf"]["default"]["router"]["bgp"][
        "peer-group"]
    assert tree["interface"]["peerlink"] == seeded["interface"]["peerlink"] and tree["mlag"] == seeded["mlag"]
    assert "swp1" not in tree["interface"]["bond1"]["bond"].get("member", {})
    again = _json(run(net, "plan", str(inv), "--limit", LEAF, "--format", "json", state=state))[LEAF]
    assert again["status"] == "unchanged", again

    p = run(net, "rollback", str(inv), LEAF, "--yes", *FAST, state=state)
    assert p.returncode == 0, p.stdout + p.stderr
    assert _applied_tree(d) == seeded  # the docs' config again, bond members included

    p = run(net, "apply", str(inv), "--limit", LEAF, "--yes", "--allow-unowned-removal", *FAST, state=state)
    assert p.returncode == 0, p.stdout + p.stderr

    # a loaded machine took over 120 s for one drain here (two SSH sessions, a confirmed commit, counter reads)
    p = run(net, "drain", str(inv), LEAF, "--yes", "--format", "json", "--interval", "0.2", "--timeout", "10",
            *FAST, state=state, timeout=300)
    res = json.loads(p.stdout)
    assert p.returncode == 0 and res["status"] == "applied", p.stdout + p.stderr
    assert res["sections"] == {"router bgp": ["+ graceful-shutdown: enabled"]}  # 5.15 (SN5600): `enabled`
    assert _applied_tree(d)["router"]["bgp"]["graceful-shutdown"] == "enabled"
    p = run(net, "undrain", str(inv), LEAF, "--yes", "--format", "json", "--interval", "0.2", *FAST, state=state,
            timeout=300)
    assert p.returncode == 0, p.stdout + p.stderr
    assert "graceful-shutdown" not in _applied_tree(d)["router"]["bgp"]
