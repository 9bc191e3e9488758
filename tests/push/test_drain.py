"""`fabric drain` on every NOS row, in the form of each release the row renders for.

Every target's driver has a drain (`Driver.drained`): FRR `bgp graceful-shutdown`, SONiC BGP_GLOBALS
`graceful_shutdown`, NVUE `router bgp graceful-shutdown on` (5.9) / `enabled` (5.15), EOS maintenance mode
(`maintenance` / `unit System` / `quiesce`). The plan of a drain adds exactly that setting; the plan of an
undrain on the drained switch (its manifest: the drained intent) removes exactly that, marked as rendered
by an earlier apply, and nothing the tool never rendered. A drain through the device transaction on the SONiC
stand-in (tests/standins/sonic.py, seeded with the msn2700's real running config; frrcfgd, as the rendered
config_db.json runs it) reads what it needs once.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import yaml

from fabric.design.derive import derive
from fabric.model.load import load
from fabric.nos import NOS
from fabric.render import render_switch
from fabric.targets import driver, driver_class
from tests.conftest import ROOT
from tests.push.test_faults import FAST, LEAVES, LIMIT, run, sonic2  # noqa: F401  (sonic2: the fixture)
from tests.standins.harness import StandinNet
from tests.support.nos import INVENTORY

EXPECT = {  # (nos, release) → the drain's plan: {section: lines}
    ("eos", "4.32"): {"maintenance / unit System": ["+ quiesce"]},
    ("frr", "8.4"): {"router bgp {asn}": ["+ bgp graceful-shutdown"]},
    ("frr", "10.2"): {"router bgp {asn}": ["+ bgp graceful-shutdown"]},
    ("nvue", "5.9"): {"router bgp": ["+ graceful-shutdown: on"]},
    ("nvue", "5.15"): {"router bgp": ["+ graceful-shutdown: enabled"]},
    ("sonic", "202405"): {"BGP_GLOBALS|default": ["+ graceful_shutdown=true"]},
    ("sonic", "202411"): {"BGP_GLOBALS|default": ["+ graceful_shutdown=true"]},
}


def test_every_nos_row_has_a_drain_for_every_release() -> None:
    assert {(n.name, r) for n in NOS.values() for r in n.releases} == set(EXPECT)
    for name in NOS:
        assert "drained" not in getattr(driver_class(name), "__abstractmethods__", ())


def _intent(tmp: Path, nos: str, release: str) -> tuple[str, str, int]:
    dst = tmp / f"{nos}-{release}"
    shutil.copytree(ROOT / "inventories" / INVENTORY[nos], dst)
    fab = dst / "fabric.yaml"
    doc = yaml.safe_load(fab.read_text())
    for role in doc["roles"].values():
        role["release"] = release
    fab.write_text(yaml.safe_dump(doc, sort_keys=False))
    fabric = derive(load(dst))
    sw = fabric.switches["spine1"]
    assert sw.release == release
    return render_switch(sw, fabric)[NOS[nos].intended], sw.release, sw.bgp.asn


@pytest.mark.parametrize(("nos", "release"), sorted(EXPECT), ids=[f"{n}-{r}" for n, r in sorted(EXPECT)])
def test_drain_and_undrain_plan_the_release_specific_setting_only(tmp_path: Path, nos: str, release: str) -> None:
    intended, release, asn = _intent(tmp_path, nos, release)
    drained = driver_class(nos).drained(intended, release)
    running = {"nvue": _nvue_running, "sonic": _sonic_running}.get(nos, str)(intended)
    drain = driver(nos, None, "spine1", drained).scoped(running)
    want = {s.format(asn=asn): v for s, v in EXPECT[(nos, release)].items()}
    assert {c.section: [] for c in drain.changes} == {s: [] for s in want}
    assert {s: [c.text() for c in drain.changes if c.section == s] for s in want} == want
    # undrain: the plain intent, with the drained intent as what the last apply rendered
    on = {"nvue": _nvue_running, "sonic": _sonic_running}.get(nos, str)(drained)
    # a switch as shipped: its PORT table, DEVICE_METADATA (routing mode) and buffer pools, nothing of ours
    shipped = {k: v for k, v in json.loads(on).items() if k in ("PORT", "DEVICE_METADATA")} if nos == "sonic" else {}
    empty = _sonic_running(json.dumps(shipped)) if nos == "sonic" else ""
    manifest = sorted(list(p) for p in driver(nos, None, "spine1", drained).scoped(empty).sets)
    undrain = driver(nos, None, "spine1", intended, options={"manifest": manifest}).scoped(on)
    assert [c.op for c in undrain.changes] == ["-"] and undrain.changes[0].earlier
    assert not undrain.changes[0].foreign
    assert undrain.changes[0].text().startswith(want[next(iter(want))][0].replace("+ ", "- ", 1))


def _sonic_running(config_db: str) -> str:
    """The switch after the patch: the rendered CONFIG_DB beside the buffer pools its platform's image creates
    (the SONiC pre-flight refuses profiles pointing at a pool the switch lacks)."""
    real = json.loads((ROOT / "tests" / "fixtures" / "running" / "sonic" / "msn2700.json").read_text())
    return json.dumps({**json.loads(config_db), "BUFFER_POOL": real["BUFFER_POOL"]})


def _nvue_running(patch: str) -> str:
    """NVUE's applied tree after the patch (as `nv config show -o yaml` prints it)."""
    from fabric.targets.treediff import _merge

    tree: dict = {}
    for op in yaml.safe_load(patch):
        _merge(tree, op.get("set") or {})
    return yaml.safe_dump([{"set": tree}])


@pytest.mark.root
def test_a_drain_on_a_frrcfgd_switch_reads_its_running_config_once(
        sonic2: tuple[StandinNet, Path, Path]) -> None:  # noqa: F811
    """A drain asks the switch whether BGP is frrcfgd's (the drain is then BGP_GLOBALS graceful_shutdown) and diffs
    the drained intent against the running config: one read of it and one login serve both. The other reads are the
    apply's (the health before the change, the transaction's snapshot, the post-check's health), the other logins
    the counter samples before and after."""
    net, inv, state = sonic2
    d = net.devices[LEAVES[0]]
    assert run(net, "apply", str(inv), *LIMIT, "--yes", *FAST, state=state).returncode == 0
    reads, logins = d / "running-reads", d / "logins"
    before = (len(reads.read_text().splitlines()), len(logins.read_text().splitlines()))
    p = run(net, "drain", str(inv), LEAVES[0], "--yes", "--format", "json", "--interval", "0.2", *FAST, state=state)
    res = json.loads(p.stdout)
    assert p.returncode == 0 and res["status"] == "applied", p.stdout + p.stderr
    assert res["sections"] == {"BGP_GLOBALS|default": ["+ graceful_shutdown=true"]}
    after = (len(reads.read_text().splitlines()), len(logins.read_text().splitlines()))
    assert (after[0] - before[0], after[1] - before[1]) == (4, 3)  # reads of the running config, logins
