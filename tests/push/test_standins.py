"""`fabric plan/apply/rollback` for SONiC, NVUE and EOS against SSH stand-ins (tests/standins).

The stand-ins are real sshd sessions in a test namespace running small programs that keep device
state in files and implement each OS's transactional commands; the tool reaches them through the
same netmiko code path (device types `linux`, `cumulus_linux`, `arista_eos`) as in production,
with host keys verified against a test known_hosts and a key from the inventory's `access`.

Each stand-in starts from a realistic running config (tests/fixtures/running/<nos>/: AAA, users,
management VRF, SNMP, syslog, NTP, LLDP, unused ports, platform port and buffer settings) with the
tool's fabric part from an earlier apply and a hand change; everything the tool does not own must
survive apply and rollback unchanged.
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

from fabric.targets.owned import apply_leaves, tree_leaves
from tests.conftest import ROOT, require
from tests.standins.common import read_json, write_json
from tests.standins.harness import StandinNet, seed, standins

RUNNING = ROOT / "tests" / "fixtures" / "running"

pytestmark = [pytest.mark.root]
FABRIC = str(Path(os.sys.executable).with_name("fabric"))
CANARY = "s3cret-canary-4417"
LEAF = "leaf-su1-r1"
FAST = ("--settle", "0.5", "--postcheck-timeout", "3", "--confirm-timer", "20")


def _inventory(src: str, dst: Path, tmp: Path, *, target: str | None = None, asn: int | None = None,
               spine_asn: int | None = None) -> Path:
    shutil.copytree(ROOT / "inventories" / src, dst)
    fab = dst / "fabric.yaml"
    text = fab.read_text()
    if target:
        text = text.replace("target: frr", f"target: {target}")
    text += (f"access:\n  username: root\n  key_file: {tmp / 'id_ed25519'}\n"
             f"  known_hosts: {tmp / 'known_hosts'}\n")
    if asn:
        text += f"switches:\n  - {{name: {LEAF}, asn: {asn}}}\n"
    if spine_asn:
        text += f"switches:\n  - {{name: spine1, asn: {spine_asn}}}\n  - {{name: spine2, asn: {spine_asn}}}\n"
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
    from tests.nos.sonic.test_yang import CHECKER, YANG_PY, _prerequisites

    _prerequisites()
    with standins(tmp_path, {LEAF: ("sonic", sw.management.split("/")[0])}) as net:
        intended = json.loads(files["config_db.json"])
        base = json.loads((RUNNING / "sonic" / "msn2700.json").read_text())  # the platform's CONFIG_DB, site config
        running = apply_leaves(base, tree_leaves(intended), ())  # + the fabric part of an earlier apply
        running["BGP_NEIGHBOR"]["default|Ethernet16"]["holdtime"] = "180"  # a hand change
        running["PORT_QOS_MAP"] = {k: {**v, "pfc_enable": "3,4"} if "pfc_enable" in v else v
                                   for k, v in running["PORT_QOS_MAP"].items()}
        running.setdefault("NTP_SERVER", {})["192.0.2.123"] = {}  # in a table the intent does not own
        asn = int(intended["BGP_GLOBALS"]["default"]["local_asn"])
        seed(net.devices[LEAF], "sonic", json.dumps(running),
             {k.split("|")[1]: [asn, int(v["asn"])] for k, v in intended["BGP_NEIGHBOR"].items()})
        write_json(net.devices[LEAF] / "yang.json", {"python": str(YANG_PY), "checker": str(CHECKER)})
        yield net, inv, tmp_path / "state"


def _unowned(cfg: dict, intended: dict) -> dict:
    """CONFIG_DB without the fields the render sets (what the tool must never change)."""
    return {p: v for p, v in tree_leaves(cfg).items() if p not in tree_leaves(intended)}


def test_sonic_plan_apply_checkpoint_and_rollback(sonic: tuple[StandinNet, Path, Path], tmp_path: Path) -> None:
    net, inv, state = sonic
    d = net.devices[LEAF]
    p = run(net, "plan", str(inv), "--limit", LEAF, "--format", "json", state=state)
    res = _json(p)[LEAF]
    assert res["status"] == "changed", res
    assert res["sections"]["BGP_NEIGHBOR|default|Ethernet16"] == ["~ holdtime=180 → holdtime=9"]  # a change
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

    logins = len((d / "logins").read_text().splitlines())
    p = run(net, "apply", str(inv), "--limit", LEAF, "--yes", *FAST, state=state)
    assert p.returncode == 0, p.stdout + p.stderr
    # one login: the plan's session carries the transaction (tests/standins/device.py counts the sessions)
    assert len((d / "logins").read_text().splitlines()) == logins + 1
    after = read_json(d / "running.json")
    assert after["BGP_NEIGHBOR"]["default|Ethernet16"]["holdtime"] == "9"
    intended = json.loads(_intent(inv)[1]["config_db.json"])
    assert _unowned(after, intended) == _unowned(before, intended)  # AAA, NTP, PORT lanes/fec, buffers … kept
    assert after["NTP_SERVER"] == before["NTP_SERVER"] and after["PORT"]["Ethernet0"]["lanes"] == "0,1,2,3"
    assert read_json(d / "startup.json") == after  # confirmed: config save
    assert list((d / "checkpoints").glob("roce-fabric-*.json"))  # config checkpoint before the patch
    assert _json(run(net, "plan", str(inv), "--limit", LEAF, "--format", "json", state=state))[LEAF]["status"] \
        == "unchanged"

    # a different local ASN: the tool never renumbers a router, the pre-flight refuses it, nothing changes
    renumber = _inventory("sonic-example", tmp_path / "renumber", tmp_path, asn=65199)
    p = run(net, "apply", str(renumber), "--limit", LEAF, "--yes", "--format", "json", *FAST, state=state)
    res = _json(p)[LEAF]
    assert p.returncode == 1 and res["status"] == "error", res
    assert "pre-flight: BGP_GLOBALS|default local_asn: expected 65199 (inventory), found" in res["detail"]
    assert read_json(d / "running.json") == after
    # the spines' ASN wrong in the inventory: peers stay down → post-check fails → config rollback to the checkpoint
    bad = _inventory("sonic-example", tmp_path / "bad", tmp_path, spine_asn=65199)
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
    from fabric.nos.nvue.driver import load_running

    _prereq()
    inv = _inventory("h100-400g", tmp_path / "inv", tmp_path)
    sw, _files = _intent(inv)
    tree = load_running((RUNNING / "nvue" / "leaf-su1-r1.yaml").read_text())  # system, users, mgmt VRF, SNMP…
    tree["interface"]["swp10s0"]["link"]["mtu"] = 1500  # a hand change
    asn = tree["router"]["bgp"]["autonomous-system"]
    nbrs = tree["vrf"]["default"]["router"]["bgp"]["neighbor"]
    with standins(tmp_path, {LEAF: ("nvue", sw.management.split("/")[0])}) as net:
        seed(net.devices[LEAF], "nvue", json.dumps(tree), dict.fromkeys(nbrs, asn))
        yield net, inv, tmp_path / "state"


def _unowned_tree(tree: dict, intent: dict) -> dict:
    """Leaves the tool does not own: neither rendered nor an empty object the render fills."""
    want = tree_leaves(intent)
    filled = {p[:i] for p in want for i in range(1, len(p))}
    return {p: v for p, v in tree_leaves(tree).items() if p not in want and p not in filled}


def _nv(d: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "STANDIN_DEV": str(d), "PYTHONPATH": str(ROOT)}
    return subprocess.run([os.sys.executable, "-m", "tests.standins.nvue", "nv", *argv], env=env, cwd=ROOT,
                          capture_output=True, text=True, check=True)


def _applied(d: Path) -> dict:
    meta = read_json(d / "meta.json")
    return read_json(d / "revisions" / f"{meta['applied']}.json")


def test_sonic_optics_out_of_threshold_lane_located(sonic: tuple[StandinNet, Path, Path]) -> None:
    """`fabric optics` reads xcvrd's STATE_DB through the SONiC driver; the values are the real Arista
    QDD-400G-XDR4 reading (tests/fixtures/optics/ethtool_m_qsfpdd_cmis_arista_xdr4.txt) in xcvrd's fields,
    with lane 2 receiving -10.5 dBm (below the module's -8.9 dBm low alarm)."""
    from fabric.design.derive import derive
    from fabric.model.load import load

    net, inv, state = sonic
    port = next(p for p in derive(load(inv)).switches[LEAF].ports if p.kind == "host")
    dom = {"temperature": "70.49", "voltage": "3.2186", "tx1power": "2.03", "tx2power": "2.17", "tx3power": "2.13",
           "tx4power": "1.58", "rx1power": "3.52", "rx2power": "-10.5", "rx3power": "2.65", "rx4power": "2.6",
           "tx1bias": "83.806", "tx2bias": "81.878", "tx3bias": "72.9", "tx4bias": "110.1"}
    thr = {"temphighalarm": "75.0", "templowalarm": "-5.0", "temphighwarning": "70.0", "templowwarning": "0.0",
           "rxpowerhighalarm": "5.5", "rxpowerlowalarm": "-8.9", "rxpowerhighwarning": "4.5",
           "rxpowerlowwarning": "-6.9", "txbiashighalarm": "130.0", "txbiaslowalarm": "10.0"}
    info = {"type": "QSFP-DD Double Density 8X Pluggable Transceiver", "manufacturer": "Arista Networks",
            "model": "QDD-400G-XDR4", "serial": "XKT242211481", "hardware_rev": "41"}
    (net.devices[LEAF] / "state_db.json").write_text(json.dumps({
        f"TRANSCEIVER_INFO|{port.name}": info, f"TRANSCEIVER_DOM_SENSOR|{port.name}": dom,
        f"TRANSCEIVER_DOM_THRESHOLD|{port.name}": thr}))
    p = run(net, "optics", str(inv), "--limit", LEAF, "--no-hosts", "--format", "json", state=state)
    assert p.returncode == 1 and "Traceback" not in p.stderr, p.stdout + p.stderr
    rows = {r["port"]: r for r in json.loads(p.stdout)}
    bad = rows.pop(port.name)
    assert bad["status"] == "alarm" and bad["where"] == f"{LEAF}:{port.name}"
    assert (bad["peer"], bad["cable_m"], bad["link"]) == (f"{port.peer}:{port.peer_port}", port.cable_m, "host")
    texts = [i["text"] for i in bad["issues"]]
    assert "Rx power lane 2 -10.5 dBm below low alarm -8.9 dBm" in texts
    assert "temperature 70.49 °C above high warning 70 °C" in texts
    assert {r["status"] for r in rows.values()} == {"no module"}
    assert {r["reason"] for r in rows.values()} == {"no module (no TRANSCEIVER_INFO in STATE_DB)"}


def test_nvue_patch_apply_confirm_and_timer_expiry(nvue: tuple[StandinNet, Path, Path], tmp_path: Path) -> None:
    import yaml

    net, inv, state = nvue
    d = net.devices[LEAF]
    before = _applied(d)
    intent = yaml.safe_load(_intent(inv)[1]["nvue-patch.yaml"])[0]["set"]
    res = _json(run(net, "plan", str(inv), "--limit", LEAF, "--format", "json", state=state))[LEAF]
    assert res["status"] == "changed"
    assert res["sections"]["interface swp10s0 link"] == ["~ mtu: 1500 → mtu: 9216"]
    assert not any(s.startswith(("system aaa", "system ssh-server", "service", "vrf mgmt", "interface eth0",
                                 "interface swp64", "vrf default router bgp neighbor 10.250.0.1",
                                 "vrf default router static")) for s in res["sections"])
    assert res["unmanaged"] > 50

    # another operator's pending revision is never detached: the apply refuses, the revision stays
    patch = tmp_path / "other.yaml"
    patch.write_text("- set:\n    system:\n      message:\n        post-login: other operator\n")
    _nv(d, "config", "patch", str(patch))
    p = run(net, "apply", str(inv), "--limit", LEAF, "--yes", "--format", "json", *FAST, state=state)
    res = _json(p)[LEAF]
    assert p.returncode == 1 and res["status"] == "failed" and "pending revision" in res["detail"], res
    assert "post-login" in _nv(d, "config", "diff").stdout and _applied(d) == before
    _nv(d, "config", "detach")

    p = run(net, "apply", str(inv), "--limit", LEAF, "--yes", *FAST, state=state)
    assert p.returncode == 0, p.stdout + p.stderr
    tree, meta = _applied(d), read_json(d / "meta.json")
    assert tree["interface"]["swp10s0"]["link"]["mtu"] == 9216
    assert _unowned_tree(tree, intent) == _unowned_tree(before, intent)  # byte for byte the same values
    assert meta["confirm"] is None and meta["history"][-1]["how"] == "apply"
    assert _json(run(net, "plan", str(inv), "--limit", LEAF, "--format", "json", state=state))[LEAF]["status"] \
        == "unchanged"
    history = _nv(d, "config", "history").stdout
    assert history.splitlines()[0].startswith("Rev ID") and " CLI " in history

    # another ASN: never a renumbering — an error, the switch untouched (`--confirm-no` after a failed
    # post-check: test_push_faults.test_session_dropped_after_commit_on_nvue_and_eos)
    bad = _inventory("h100-400g", tmp_path / "bad", tmp_path, asn=65199)
    res = _json(run(net, "apply", str(bad), "--limit", LEAF, "--yes", "--format", "json", *FAST, state=state))[LEAF]
    assert res["status"] == "error" and "never renumbers" in res["detail"], res
    assert _applied(d) == tree

    # fabric rollback: the owned leaves back to the recorded state, the rest untouched
    p = run(net, "rollback", str(inv), LEAF, "--yes", *FAST, state=state)
    assert p.returncode == 0, p.stdout + p.stderr
    assert _applied(d) == before

    # the switch's own timer: an apply --confirm nobody confirms reverts by itself
    patch = tmp_path / "p.yaml"
    patch.write_text("- set:\n    interface:\n      swp11s0:\n        link:\n          mtu: 1500\n")
    _nv(d, "config", "patch", str(patch))
    _nv(d, "config", "apply", "--confirm", "2s", "-y")
    assert _applied(d)["interface"]["swp11s0"]["link"]["mtu"] == 1500
    deadline = time.monotonic() + 15
    while read_json(d / "meta.json")["confirm"] and time.monotonic() < deadline:
        time.sleep(0.2)
    assert _applied(d) == before and read_json(d / "meta.json")["history"][-1]["how"] == "auto-rollback"


@pytest.fixture
def eos(tmp_path: Path) -> Iterator[tuple[StandinNet, Path, Path, str]]:
    _prereq()
    inv = _inventory("eos-example", tmp_path / "inv", tmp_path)
    sw, files = _intent(inv)
    fixture = (RUNNING / "eos" / f"{LEAF}.cfg").read_text()  # AAA, users, Management1, SNMP, logging, NTP…
    assert "interface Ethernet1/1\n   description" in fixture and "   mtu 9214\n" in fixture
    hand = fixture.replace("   mtu 9214\n", "   mtu 1500\n", 1) + "ip route 192.0.2.0/24 Null0\n"  # hand changes
    nbrs = [ln.split()[2] for ln in files["running-config.cfg"].splitlines()
            if ln.strip().startswith("neighbor interface")]
    with standins(tmp_path, {LEAF: ("eos", sw.management.split("/")[0])}) as net:
        seed(net.devices[LEAF], "eos", hand, dict.fromkeys(nbrs, sw.bgp.asn))
        yield net, inv, tmp_path / "state", files["running-config.cfg"]


def _eos_unowned(text: str, intended: str) -> dict:
    from fabric.nos.eos.driver import leaves
    from fabric.targets import driver

    owned = driver("eos", None, LEAF, intended).scoped(text).owned
    return {p: v for p, v in leaves(text).items() if p not in owned}


def _eos_leaves(text: str) -> dict:
    from fabric.nos.eos.driver import leaves

    return leaves(text)


def test_eos_session_diffs_commit_timer_confirm_and_abort(eos: tuple[StandinNet, Path, Path, str],
                                                          tmp_path: Path) -> None:
    net, inv, state, intended = eos
    d = net.devices[LEAF]
    hand = (d / "running.cfg").read_text()
    res = _json(run(net, "plan", str(inv), "--limit", LEAF, "--format", "json", state=state))[LEAF]
    assert res["status"] == "changed", res["detail"]
    assert res["sections"]["interface Ethernet1/1"] == ["~ mtu 1500 → mtu 9214"]
    assert "- ip route 192.0.2.0/24 Null0" not in res["sections"].get("(global)", [])  # a hand route is kept
    assert not any(s.startswith(("username", "aaa", "management", "snmp", "logging", "ntp", "daemon",
                                 "interface Management1", "tacacs")) for s in res["sections"])
    assert (d / "running.cfg").read_text() == hand and not list((d / "sessions").glob("*.cfg"))  # plan: no session

    p = run(net, "apply", str(inv), "--limit", LEAF, "--yes", *FAST, state=state)
    assert p.returncode == 0, p.stdout + p.stderr
    applied = (d / "running.cfg").read_text()
    assert not (d / "pending.json").exists() and "ip route 192.0.2.0/24 Null0" in applied
    assert _eos_unowned(applied, intended) == _eos_unowned(hand, intended)  # every unmanaged line kept
    assert _json(run(net, "plan", str(inv), "--limit", LEAF, "--format", "json", state=state))[LEAF]["status"] \
        == "unchanged"

    bad = _inventory("eos-example", tmp_path / "bad", tmp_path, asn=65199)
    res = _json(run(net, "apply", str(bad), "--limit", LEAF, "--yes", "--format", "json", *FAST, state=state))[LEAF]
    # another ASN is never a renumbering: a located error, the switch untouched (the abort after a
    # failed post-check: test_push_faults.test_session_dropped_after_commit_on_nvue_and_eos)
    assert res["status"] == "error" and "never renumbers" in res["detail"] and "router bgp 65121" in res["detail"], res
    assert (d / "running.cfg").read_text() == applied

    p = run(net, "rollback", str(inv), LEAF, "--yes", *FAST, state=state)
    assert p.returncode == 0, p.stdout + p.stderr
    assert _eos_leaves((d / "running.cfg").read_text()) == _eos_leaves(hand)

    # commit timer expiry without confirmation: the switch rolls back by itself
    from tests.standins.eos import expire

    (d / "pending.json").write_text(json.dumps({"session": "x", "before": applied, "deadline": 0}))
    (d / "running.cfg").write_text("hostname broken\n")
    expire(d, "x", 0)
    assert (d / "running.cfg").read_text() == applied


def test_eos_rejected_lines_abort_the_session(eos: tuple[StandinNet, Path, Path, str], tmp_path: Path) -> None:
    """What EOS rejects (an MTU above 9214, an unknown command) fails the transaction before any commit."""
    net, _inv, _state, intended = eos
    d = net.devices[LEAF]
    hand = (d / "running.cfg").read_text()
    code = (
        "import sys\n"
        "from fabric.access import Credentials, SwitchEndpoint\n"
        "from fabric.targets.base import TargetError\n"
        "from fabric.targets.session import close, open_driver\n"
        f"cred = Credentials(username='root', key_file={str(tmp_path / 'id_ed25519')!r}, "
        f"known_hosts={str(tmp_path / 'known_hosts')!r})\n"
        "for bad in sys.argv[2:]:\n"
        "    ep = SwitchEndpoint(device='leaf-su1-r1', target='eos', address=sys.argv[1], device_type='arista_eos',\n"
        "                        intended=open(bad).read())\n"
        "    drv = open_driver(ep, cred)\n"
        "    try:\n"
        "        drv.begin()\n"
        "        print('ACCEPTED')\n"
        "    except TargetError as exc:\n"
        "        print('REJECTED', exc)\n"
        "    finally:\n"
        "        close(drv)\n")
    mtu, unknown = tmp_path / "mtu.cfg", tmp_path / "unknown.cfg"
    mtu.write_text(intended.replace("   mtu 9214\n", "   mtu 9216\n", 1))
    unknown.write_text(intended + "interface Ethernet1/1\n   flux-capacitor enable\n")
    addr = d.name
    p = subprocess.run(net.argv([os.sys.executable, "-c", code, addr, str(mtu), str(unknown)]), capture_output=True,
                       text=True, timeout=120, cwd=ROOT)
    lines = [ln for ln in p.stdout.splitlines() if ln.startswith(("REJECTED", "ACCEPTED"))]
    assert len(lines) == 2 and all(ln.startswith("REJECTED") and "% Invalid input" in ln for ln in lines), \
        p.stdout + p.stderr
    assert "9216" in lines[0] and "flux-capacitor" in lines[1]
    assert (d / "running.cfg").read_text() == hand and not list((d / "sessions").glob("*.cfg"))


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
    assert saved == _applied(net.devices[LEAF]) and saved["interface"]["swp10s0"]["link"]["mtu"] == 1500


def test_fetch_saves_eos_running_config(eos: tuple[StandinNet, Path, Path, str], tmp_path: Path) -> None:
    net, inv, state, _intended = eos
    saved = _fetched(net, inv, state, tmp_path, ".cfg")
    assert "   mtu 1500\n" in saved and "ip route 192.0.2.0/24 Null0" in saved
