"""`fabric plan/apply/rollback` for SONiC, NVUE and EOS against SSH stand-ins (tests/standins).

The stand-ins are real sshd sessions in a test namespace running small programs that keep device
state in files and implement each OS's transactional commands; the tool reaches them through the
same netmiko code path (device types `linux`, `cumulus_linux`, `arista_eos`) as in production,
with host keys verified against a test known_hosts and a key from the inventory's `access`.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import ROOT, require
from tests.standins.common import read_json
from tests.standins.harness import StandinNet, seed, standins

pytestmark = [pytest.mark.root]
FABRIC = str(Path(os.sys.executable).with_name("fabric"))
CANARY = "s3cret-canary-4417"
LEAF = "leaf-su1-r1"
FAST = ("--settle", "0.5", "--postcheck-timeout", "3", "--confirm-timer", "20")


def _inventory(src: str, dst: Path, tmp: Path, *, target: str | None = None, asn: int | None = None) -> Path:
    shutil.copytree(ROOT / "inventories" / src, dst)
    fab = dst / "fabric.yaml"
    text = fab.read_text()
    if target:
        text = text.replace("target: frr", f"target: {target}")
    text += (f"access:\n  username: root\n  key_file: {tmp / 'id_ed25519'}\n"
             f"  known_hosts: {tmp / 'known_hosts'}\n")
    if asn:
        text += f"switches:\n  - {{name: {LEAF}, asn: {asn}}}\n"
    fab.write_text(text)
    return dst


def _intent(inv: Path):
    from fabric.design.derive import derive
    from fabric.model.load import load
    from fabric.render import render_switch

    fabric = derive(load(inv))
    sw = fabric.switches[LEAF]
    return sw, render_switch(sw, fabric)


def run(net: StandinNet, *args: str, state: Path, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "FABRIC_STATE": str(state), "FABRIC_PASSWORD": CANARY, "COLUMNS": "200",
           "FABRIC_LAB_STATE": str(state / "no-lab")}
    env.pop("SSH_AUTH_SOCK", None)
    return subprocess.run(net.argv([FABRIC, *args]), capture_output=True, text=True, timeout=timeout, env=env,
                          cwd=ROOT, stdin=subprocess.DEVNULL)


def _json(p: subprocess.CompletedProcess[str]) -> dict:
    assert p.stdout.strip().startswith("{"), p.stdout + p.stderr
    data = json.loads(p.stdout)
    return {d["device"]: d for d in data["devices"]}


def _prereq() -> None:
    require(os.geteuid() == 0, "root (network namespaces)")
    require(Path("/usr/sbin/sshd").exists(), "/usr/sbin/sshd (openssh-server)")


@pytest.fixture
def sonic(tmp_path: Path) -> Iterator[tuple[StandinNet, Path, Path]]:
    _prereq()
    inv = _inventory("sonic-example", tmp_path / "inv", tmp_path)
    sw, files = _intent(inv)
    with standins(tmp_path, {LEAF: ("sonic", sw.management.split("/")[0])}) as net:
        intended = json.loads(files["config_db.json"])
        running = json.loads(json.dumps(intended))
        running["BGP_NEIGHBOR"]["default|Ethernet16"]["holdtime"] = "180"  # a hand change
        running["PORT_QOS_MAP"] = {k: {**v, "pfc_enable": "3,4"} if "pfc_enable" in v else v
                                   for k, v in running["PORT_QOS_MAP"].items()}
        running["NTP_SERVER"] = {"192.0.2.123": {}}  # a table the intent does not own
        asn = int(intended["BGP_GLOBALS"]["default"]["local_asn"])
        seed(net.devices[LEAF], "sonic", json.dumps(running),
             {k.split("|")[1]: asn for k in intended["BGP_NEIGHBOR"]})
        yield net, inv, tmp_path / "state"


def test_sonic_plan_apply_checkpoint_and_rollback(sonic: tuple[StandinNet, Path, Path], tmp_path: Path) -> None:
    net, inv, state = sonic
    d = net.devices[LEAF]
    p = run(net, "plan", str(inv), "--limit", LEAF, "--format", "json", state=state)
    res = _json(p)[LEAF]
    assert res["status"] == "changed", res
    assert res["sections"]["BGP_NEIGHBOR|default|Ethernet16"] == ["- holdtime=180", "+ holdtime=9"]
    assert not any(s.startswith("NTP_SERVER") for s in res["sections"])
    before = read_json(d / "running.json")

    # an unreachable switch is reported, not fatal to the others; exit 1
    p = run(net, "plan", str(inv), "--limit", f"{LEAF},leaf-su1-r2", "--format", "json", state=state)
    res2 = _json(p)
    assert p.returncode == 1 and res2[LEAF]["status"] == "changed" and res2["leaf-su1-r2"]["status"] == "unreachable"
    assert json.loads(p.stdout)["summary"] == {"changed": 1, "unreachable": 1}

    # host keys are verified: an empty known_hosts makes the switch unreachable, nothing is sent
    strict = _inventory("sonic-example", tmp_path / "strict", tmp_path)
    (tmp_path / "empty_known_hosts").write_text("")
    fab = strict / "fabric.yaml"
    fab.write_text(fab.read_text().replace(str(tmp_path / "known_hosts"), str(tmp_path / "empty_known_hosts")))
    res3 = _json(run(net, "plan", str(strict), "--limit", LEAF, "--format", "json", state=state))[LEAF]
    assert res3["status"] == "unreachable" and "known_hosts" in res3["detail"], res3

    p = run(net, "apply", str(inv), "--limit", LEAF, "--yes", *FAST, state=state)
    assert p.returncode == 0, p.stdout + p.stderr
    after = read_json(d / "running.json")
    assert after["BGP_NEIGHBOR"]["default|Ethernet16"]["holdtime"] == "9"
    assert after["NTP_SERVER"] == before["NTP_SERVER"]
    assert read_json(d / "startup.json") == after  # confirmed: config save
    assert list((d / "checkpoints").glob("roce-fabric-*.json"))  # config checkpoint before the patch
    assert _json(run(net, "plan", str(inv), "--limit", LEAF, "--format", "json", state=state))[LEAF]["status"] \
        == "unchanged"

    # a wrong ASN: peers stay down → post-check fails → config rollback to the checkpoint
    bad = _inventory("sonic-example", tmp_path / "bad", tmp_path, asn=65199)
    p = run(net, "apply", str(bad), "--limit", LEAF, "--yes", "--format", "json", *FAST, state=state)
    res = _json(p)[LEAF]
    assert p.returncode == 1 and res["status"] == "rolled-back", res
    assert "BGP: expected ≥ 4 sessions established, actual 0" in res["detail"]
    assert read_json(d / "running.json") == after

    # fabric rollback: back to the state recorded before the last apply (the hand change)
    p = run(net, "rollback", str(inv), LEAF, "--yes", *FAST, state=state)
    assert p.returncode == 0, p.stdout + p.stderr
    assert read_json(d / "running.json") == before
    audit = (state / "sonic-example" / "audit.jsonl").read_text()
    assert CANARY not in audit + p.stdout + p.stderr
    assert [(e["action"], e["result"]) for e in map(json.loads, audit.splitlines())] == [
        ("apply", "applied"), ("apply", "rolled-back"), ("rollback", "applied")]


@pytest.fixture
def nvue(tmp_path: Path) -> Iterator[tuple[StandinNet, Path, Path]]:
    _prereq()
    inv = _inventory("example", tmp_path / "inv", tmp_path, target="nvue")
    sw, files = _intent(inv)
    import yaml

    tree = yaml.safe_load(files["nvue-patch.yaml"])[0]["set"]
    tree["interface"]["swp1"]["link"]["mtu"] = 1500  # a hand change
    tree["interface"]["swp1"]["link"]["fec"] = "rs"  # a leaf the intent does not have: a removal
    tree["interface"]["eth0"] = {"type": "eth"}  # an object the intent does not own: stays
    asn = tree["router"]["bgp"]["autonomous-system"]
    nbrs = tree["vrf"]["default"]["router"]["bgp"]["neighbor"]
    with standins(tmp_path, {LEAF: ("nvue", sw.management.split("/")[0])}) as net:
        seed(net.devices[LEAF], "nvue", json.dumps(tree), dict.fromkeys(nbrs, asn))
        yield net, inv, tmp_path / "state"


def _applied(d: Path) -> dict:
    meta = read_json(d / "meta.json")
    return read_json(d / "revisions" / f"{meta['applied']}.json")


def test_nvue_patch_apply_confirm_and_timer_expiry(nvue: tuple[StandinNet, Path, Path], tmp_path: Path) -> None:
    net, inv, state = nvue
    d = net.devices[LEAF]
    res = _json(run(net, "plan", str(inv), "--limit", LEAF, "--format", "json", state=state))[LEAF]
    assert res["status"] == "changed"
    assert res["sections"]["interface swp1 link"] == ["- fec: rs", "- mtu: 1500", "+ mtu: 9216"]
    assert not any(s.startswith("interface eth0") for s in res["sections"])

    p = run(net, "apply", str(inv), "--limit", LEAF, "--yes", *FAST, state=state)
    assert p.returncode == 0, p.stdout + p.stderr
    tree, meta = _applied(d), read_json(d / "meta.json")
    assert tree["interface"]["swp1"]["link"] == {"mtu": 9216, "speed": "100G"}
    assert tree["interface"]["eth0"] == {"type": "eth"}
    assert meta["confirm"] is None and meta["applied"] == 1  # patched revision 1, applied, confirmed
    assert _json(run(net, "plan", str(inv), "--limit", LEAF, "--format", "json", state=state))[LEAF]["status"] \
        == "unchanged"

    # a wrong ASN: the peers stay idle → --confirm-no → the previous revision is applied again
    bad = _inventory("example", tmp_path / "bad", tmp_path, target="nvue", asn=65199)
    res = _json(run(net, "apply", str(bad), "--limit", LEAF, "--yes", "--format", "json", *FAST, state=state))[LEAF]
    assert res["status"] == "rolled-back" and "BGP" in res["detail"], res
    assert _applied(d) == tree and read_json(d / "meta.json")["history"][-1]["how"] == "confirm-no"

    # the switch's own timer: an apply --confirm nobody confirms reverts by itself
    env = {**os.environ, "STANDIN_DEV": str(d), "PYTHONPATH": str(ROOT)}
    patch = tmp_path / "p.yaml"
    patch.write_text("- set:\n    interface:\n      swp2:\n        link:\n          mtu: 1500\n")
    for argv in (["config", "patch", str(patch)], ["config", "apply", "--confirm", "2s", "-y"]):
        subprocess.run([os.sys.executable, "-m", "tests.standins.nvue", "nv", *argv], env=env, check=True,
                       cwd=ROOT, capture_output=True)
    assert _applied(d)["interface"]["swp2"]["link"]["mtu"] == 1500
    deadline = time.monotonic() + 15
    while read_json(d / "meta.json")["confirm"] and time.monotonic() < deadline:
        time.sleep(0.2)
    assert _applied(d) == tree and read_json(d / "meta.json")["history"][-1]["how"] == "auto-rollback"


@pytest.fixture
def eos(tmp_path: Path) -> Iterator[tuple[StandinNet, Path, Path, str]]:
    from fabric.nos.eos.driver import config_lines

    _prereq()
    inv = _inventory("eos-example", tmp_path / "inv", tmp_path)
    sw, files = _intent(inv)
    lines = config_lines(files["running-config.cfg"])
    intended = "\n".join(lines) + "\n"
    hand = intended.replace("   mtu 9214\n", "   mtu 1500\n", 1) + "ip route 192.0.2.0/24 Null0\n"
    nbrs = [ln.split()[2] for ln in lines if ln.strip().startswith("neighbor interface")]
    with standins(tmp_path, {LEAF: ("eos", sw.management.split("/")[0])}) as net:
        seed(net.devices[LEAF], "eos", hand, dict.fromkeys(nbrs, sw.bgp.asn))
        yield net, inv, tmp_path / "state", intended


def test_eos_session_diffs_commit_timer_confirm_and_abort(eos: tuple[StandinNet, Path, Path, str],
                                                          tmp_path: Path) -> None:
    net, inv, state, intended = eos
    d = net.devices[LEAF]
    hand = (d / "running.cfg").read_text()
    res = _json(run(net, "plan", str(inv), "--limit", LEAF, "--format", "json", state=state))[LEAF]
    assert res["status"] == "changed", res["detail"]
    assert res["sections"]["interface Ethernet1/1"] == ["- mtu 1500", "+ mtu 9214"]
    assert res["sections"]["(global)"] == ["- ip route 192.0.2.0/24 Null0"]
    assert (d / "running.cfg").read_text() == hand and not list((d / "sessions").glob("*.cfg"))  # plan aborted

    p = run(net, "apply", str(inv), "--limit", LEAF, "--yes", *FAST, state=state)
    assert p.returncode == 0, p.stdout + p.stderr
    assert (d / "running.cfg").read_text() == intended and not (d / "pending.json").exists()

    bad = _inventory("eos-example", tmp_path / "bad", tmp_path, asn=65199)
    res = _json(run(net, "apply", str(bad), "--limit", LEAF, "--yes", "--format", "json", *FAST, state=state))[LEAF]
    assert res["status"] == "rolled-back" and "BGP" in res["detail"], res
    assert (d / "running.cfg").read_text() == intended  # configure session … abort restored it

    p = run(net, "rollback", str(inv), LEAF, "--yes", *FAST, state=state)
    assert p.returncode == 0, p.stdout + p.stderr
    assert (d / "running.cfg").read_text() == hand

    # commit timer expiry without confirmation: the switch rolls back by itself
    from tests.standins.eos import expire

    (d / "pending.json").write_text(json.dumps({"session": "x", "before": intended, "deadline": 0}))
    (d / "running.cfg").write_text("hostname broken\n")
    expire(d, "x", 0)
    assert (d / "running.cfg").read_text() == intended


def _fetched(net: StandinNet, inv: Path, state: Path, tmp_path: Path, suffix: str) -> str:
    """`fabric fetch` saves the switch as DIR/<switch><suffix>, which `lint --configs` reads (not exit 2)."""
    out = tmp_path / "fetched"
    p = run(net, "fetch", str(inv), "--limit", LEAF, "-o", str(out), state=state)
    assert p.returncode == 0, p.stdout + p.stderr
    assert [f.name for f in out.iterdir()] == [f"{LEAF}{suffix}"]
    lint = run(net, "lint", str(inv), "--configs", str(out), "--format", "json", state=state)
    assert lint.returncode in (0, 1) and json.loads(lint.stdout)["rules"], lint.stderr
    return (out / f"{LEAF}{suffix}").read_text()


def test_fetch_saves_sonic_as_show_runningconfiguration_all(sonic: tuple[StandinNet, Path, Path],
                                                           tmp_path: Path) -> None:
    net, inv, state = sonic
    saved = json.loads(_fetched(net, inv, state, tmp_path, ".json"))  # show runningconfiguration all
    assert saved == read_json(net.devices[LEAF] / "running.json")


def test_fetch_saves_nvue_as_nv_config_show_yaml(nvue: tuple[StandinNet, Path, Path], tmp_path: Path) -> None:
    import yaml

    net, inv, state = nvue
    saved = yaml.safe_load(_fetched(net, inv, state, tmp_path, ".yaml"))
    assert saved == _applied(net.devices[LEAF]) and saved["interface"]["swp1"]["link"]["mtu"] == 1500


def test_fetch_saves_eos_running_config(eos: tuple[StandinNet, Path, Path, str], tmp_path: Path) -> None:
    net, inv, state, _intended = eos
    saved = _fetched(net, inv, state, tmp_path, ".cfg")
    assert "   mtu 1500\n" in saved and "ip route 192.0.2.0/24 Null0" in saved
