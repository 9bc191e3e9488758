"""The stand-in fleet (tests.standins.fleet) answers as the sshd stand-ins do, so that it cannot drift from them.

The same four devices (SONiC, NVUE, EOS, FRR), seeded alike from tests/fixtures/running/, are served once by sshd
with a process per command and once by the fleet's one process; the real drivers then send both the same commands
and run the same transactions (a confirm timer left to expire, a rollback, a confirmed change). Every reply, every
diff and the device state after each step must be the same.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import ROOT, require
from tests.standins.common import read_json
from tests.standins.harness import seed, standins

pytestmark = [pytest.mark.root]
LEAF = "leaf-su1-r1"
RUNNING = ROOT / "tests" / "fixtures" / "running"
INVENTORY = {"sonic": "sonic-example", "nvue": "h100-400g", "eos": "eos-example", "frr": "example"}
ADDRESS = {"sonic": "10.99.0.1", "nvue": "10.99.0.2", "eos": "10.99.0.3", "frr": "10.99.0.4"}
COMMANDS = {
    "sonic": ["show runningconfiguration all", "vtysh -c 'show bgp summary json'", "TSC no-stats",
              "sysctl -n net.ipv4.neigh.default.gc_thresh1", "sudo -n config bogus", "show nothing",
              "sonic-db-cli STATE_DB HGETALL 'TRANSCEIVER_INFO|Ethernet0'"],
    "nvue": ["nv config show -o json", "nv config revision -o json", "nv show vrf default router bgp neighbor -o json",
             "nv config diff", "nv config history", "nv bogus"],
    "eos": ["show running-config", "show configuration sessions", "show ip bgp summary | json", "show bogus"],
    "frr": ["vtysh -c 'show running-config'", "vtysh -c 'show bgp summary json'", "vtysh -c 'bogus'",
            "ip -o link show lo"],
}


def _endpoints() -> dict[str, dict[str, Any]]:
    """The leaf of each NOS's example inventory as `fabric plan` reaches it, at this test's address."""
    from fabric.access import InventorySite
    from fabric.design.derive import derive
    from fabric.model.inventory import Access
    from fabric.model.load import load

    out = {}
    for kind, inv in INVENTORY.items():
        site = InventorySite(derive(load(ROOT / "inventories" / inv)), Access(known_hosts=__file__))
        out[kind] = site.switch(LEAF).model_copy(update={"address": ADDRESS[kind]}).model_dump()
    return out


def _seed(devices: dict[str, Path], endpoints: dict[str, dict[str, Any]]) -> None:
    """Each device as tests/test_push_standins.py seeds it: the fixture's running config and a hand change."""
    from fabric.nos.nvue.driver import load_running
    from fabric.targets.owned import apply_leaves, tree_leaves

    eos = (RUNNING / "eos" / f"{LEAF}.cfg").read_text().replace("   mtu 9214\n", "   mtu 1500\n", 1)
    seed(devices["eos"], "eos", eos, {})
    tree = load_running((RUNNING / "nvue" / "leaf-su1-r1.yaml").read_text())
    tree["interface"]["swp10s0"]["link"]["mtu"] = 1500
    seed(devices["nvue"], "nvue", json.dumps(tree), dict.fromkeys(tree["vrf"]["default"]["router"]["bgp"]["neighbor"],
                                                                  tree["router"]["bgp"]["autonomous-system"]))
    intended = json.loads(endpoints["sonic"]["intended"])
    running = apply_leaves(json.loads((RUNNING / "sonic" / "msn2700.json").read_text()), tree_leaves(intended), ())
    running["BGP_NEIGHBOR"]["default|Ethernet16"]["holdtime"] = "180"
    seed(devices["sonic"], "sonic", json.dumps(running), {})
    files = endpoints["frr"]["options"]["files"]
    (devices["frr"] / "running.conf").write_text(endpoints["frr"]["intended"])  # a change needs frr-reload.py
    kept = devices["frr"] / "etc-frr" / "roce-fabric"
    kept.mkdir(parents=True)
    for script in ("interfaces.sh", "qos.sh"):
        (kept / script).write_text(files[script])


def _state(d: Path, kind: str) -> Any:
    """What a device holds, without times and the tool's generated names."""
    if kind == "sonic":
        return {"running": read_json(d / "running.json"), "startup": read_json(d / "startup.json"),
                "checkpoints": len(list((d / "checkpoints").glob("*.json")))}
    if kind == "nvue":
        meta = read_json(d / "meta.json")
        return {"applied": read_json(d / "revisions" / f"{meta['applied']}.json"), "pending": meta["pending"],
                "confirm": bool(meta["confirm"]), "history": [(h["rev"], h["how"]) for h in meta["history"]]}
    if kind == "eos":
        return {"running": (d / "running.cfg").read_text(), "pending": (d / "pending.json").exists(),
                "sessions": sorted(p.name for p in (d / "sessions").glob("*.cfg"))}
    return {"running": (d / "running.conf").read_text()}


def probe(spec_file: str) -> None:
    """Inside the stand-ins' namespace: each device's replies, diffs and transactions through the real drivers, as
    JSON on stdout."""
    from fabric.access import Credentials, SwitchEndpoint
    from fabric.targets import shell
    from fabric.targets.session import close, open_driver

    spec = json.loads(Path(spec_file).read_text())
    cred = Credentials(**spec["cred"])
    out: dict[str, Any] = {}
    for kind, raw in spec["endpoints"].items():
        ep = SwitchEndpoint(**raw)
        drv = open_driver(ep, cred, timeout=20)
        steps: list[Any] = []
        try:
            for cmd in COMMANDS[kind]:
                steps.append([cmd, drv.conn.send_command(cmd) if kind == "eos" else shell.run(drv.conn, cmd)])
            steps.append(["diff", drv.diff().model_dump(mode="json")])
            if kind != "frr":
                steps += _transactions(drv)
        finally:
            close(drv)
        out[kind] = steps
    print(json.dumps(out))


def _transactions(drv: Any) -> list[Any]:
    """A commit left to its confirm timer, a commit rolled back, a commit confirmed; the diff after each."""
    steps: list[Any] = []
    txn = drv.begin()
    drv.commit(txn, 3)
    time.sleep(8)
    steps.append(["expired", drv.txn_state(txn) if drv.target == "sonic" else ""])
    steps.append(["diff after expiry", drv.diff().model_dump(mode="json")])
    txn = drv.begin()
    drv.commit(txn, 60)
    drv.rollback(txn)
    steps.append(["diff after rollback", drv.diff().model_dump(mode="json")])
    txn = drv.begin()
    drv.commit(txn, 60)
    drv.confirm(txn)
    steps.append(["diff after confirm", drv.diff().model_dump(mode="json")])
    return steps


def _serve(tmp: Path, server: str, endpoints: dict[str, dict[str, Any]]) -> dict[str, Any]:
    with standins(tmp, {kind: (kind, ADDRESS[kind]) for kind in ADDRESS}, server=server) as net:  # type: ignore[arg-type]
        _seed(net.devices, endpoints)
        spec = tmp / "spec.json"
        spec.write_text(json.dumps({"endpoints": endpoints, "cred": {
            "username": "root", "key_file": str(net.key), "known_hosts": str(net.known_hosts)}}))
        p = subprocess.run(net.argv([sys.executable, "-c", "import sys, tests.standins.test_fleet as t; "
                                     "t.probe(sys.argv[1])", str(spec)]),
                           capture_output=True, text=True, cwd=ROOT, timeout=600,
                           env={**os.environ, "PYTHONPATH": str(ROOT)})
        assert p.returncode == 0, p.stderr[-3000:]
        replies = json.loads(p.stdout)
        return {"replies": replies, "state": {kind: _state(d, kind) for kind, d in net.devices.items()},
                "logins": {kind: (d / "logins").read_text().count("\n") for kind, d in net.devices.items()}}


def test_fleet_answers_and_changes_state_as_the_sshd_standins(tmp_path: Path) -> None:
    require(os.geteuid() == 0, "root (network namespaces)")
    require(Path("/usr/sbin/sshd").exists(), "/usr/sbin/sshd (openssh-server)")
    endpoints = _endpoints()
    sshd = _serve(tmp_path / "sshd", "sshd", endpoints)
    fleet = _serve(tmp_path / "fleet", "fleet", endpoints)
    for kind in ADDRESS:
        for want, got in zip(sshd["replies"][kind], fleet["replies"][kind], strict=True):
            assert got == want, f"{kind}: {want[0]}"
        assert fleet["state"][kind] == sshd["state"][kind], kind
    assert fleet["logins"] == sshd["logins"]
    # the transactions did what they say: the expired and the rolled-back change were undone, the confirmed one holds
    for kind in ("sonic", "nvue", "eos"):
        diffs = {step: data["changes"] for step, data in fleet["replies"][kind] if step.startswith("diff")}
        assert diffs["diff"] and diffs["diff after expiry"] == diffs["diff after rollback"] == diffs["diff"], kind
        assert diffs["diff after confirm"] == [], kind
    assert [how for _rev, how in fleet["state"]["nvue"]["history"]] == ["apply", "auto-rollback", "apply",
                                                                       "confirm-no", "apply"]
