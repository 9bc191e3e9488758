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
    "eos": ["show running-config", "show configuration sessions", "show ip bgp summary | json", "show bogus",
            # a session left pending with its lines (one refused), then listed and entered again
            "configure session probe", "interface Ethernet1/1", "   no mtu 1500", "   mtu 9300", "   mtu 9100",
            "   description probe", "end", "show configuration sessions", "configure session probe",
            "show session-config diffs", "end"],
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
    """Each device as tests/push/test_standins.py seeds it: the fixture's running config and a hand change."""
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
                "sessions": {p.name: p.read_text() for p in sorted((d / "sessions").glob("*.cfg"))}}
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


FAST = ("--settle", "0.5", "--postcheck-timeout", "3", "--confirm-timer", "20")
KNOB = "qos:\n  preset: nvidia-roce\n  ecn:\n    3: {min_bytes: 160000}\n"  # every switch's ECN threshold changes


def _census(net: Any, server: int) -> dict[str, int]:
    """What is open in the namespace: processes besides the fleet's server, TCP connections, the server's threads
    and descriptors."""
    pids = subprocess.run(["ip", "netns", "pids", net.netns], capture_output=True, text=True).stdout.split()
    tcp = subprocess.run(net.argv(["ss", "-Htn"]), capture_output=True, text=True).stdout.splitlines()
    status = Path(f"/proc/{server}/status").read_text()
    return {"processes": len([p for p in pids if int(p) != server]), "tcp": len(tcp),
            "threads": int(next(ln.split()[1] for ln in status.splitlines() if ln.startswith("Threads:"))),
            "descriptors": len(os.listdir(f"/proc/{server}/fd"))}


def _fabric(net: Any, *args: str, state: Path) -> tuple[subprocess.CompletedProcess[str], float]:
    env = {**os.environ, "FABRIC_STATE": str(state), "COLUMNS": "200", "FABRIC_LAB_STATE": str(state / "no-lab")}
    env.pop("SSH_AUTH_SOCK", None)
    t0 = time.monotonic()
    p = subprocess.run(net.argv([str(Path(sys.executable).with_name("fabric")), *args]), capture_output=True,
                       text=True, timeout=600, env=env, cwd=ROOT, stdin=subprocess.DEVNULL)
    return p, time.monotonic() - t0


def _devices(p: subprocess.CompletedProcess[str]) -> dict[str, dict[str, Any]]:
    assert p.stdout.strip().startswith("{"), p.stdout[-2000:] + p.stderr[-2000:]
    return {d["device"]: d for d in json.loads(p.stdout)["devices"]}


def test_fleet_faults_plan_reports_each_and_a_failed_canary_rolls_back(tmp_path: Path) -> None:
    """96 SONiC switches of a generated fabric, one refusing the login, one hanging after it, one answering noise:
    the plan reports each as its own one-line problem within the read timeout (`--timeout`: what happened, the
    address, the timeout) and plans the rest; an apply whose
    canary batch has a switch that refuses the patch stops there, and rolls the canaries it applied back; nothing
    is left open (processes, connections, the server's threads and descriptors)."""
    require(os.geteuid() == 0, "root (network namespaces)")
    from fabric.access import InventorySite
    from fabric.design.derive import derive
    from fabric.model.inventory import Access
    from fabric.model.load import load
    from tests.standins.harness import seed_render

    inv = tmp_path / "inv"
    subprocess.run([str(Path(sys.executable).with_name("fabric")), "generate", "gpu-rail", "--gpus", "2048",
                    "--target", "sonic", "--platform", "sn5600", "-o", str(inv)], check=True, capture_output=True)
    site = InventorySite(derive(load(inv)), Access(known_hosts=__file__))
    eps = {name: site.switch(name) for name in site.fabric.switches}
    names = list(eps)
    faulted = {names[10]: "refuse-login", names[40]: "hang", names[70]: "garbage"}
    canary = [n for n in names if n not in faulted][:3]
    state = tmp_path / "state"
    with standins(tmp_path, {n: ("sonic", ep.address) for n, ep in eps.items()}, server="fleet") as net:
        for name, ep in eps.items():
            seed_render(net.devices[name], "sonic", ep.intended, ep.options["files"])
        for name, fault in faulted.items():
            (net.devices[name] / "fault").write_text(fault)
        with (inv / "fabric.yaml").open("a") as f:
            f.write(f"access:\n  username: root\n  key_file: {net.key}\n  known_hosts: {net.known_hosts}\n")
        server = int((tmp_path / "fleet.ready").read_text())
        before = _census(net, server)

        p, seconds = _fabric(net, "plan", str(inv), "--format", "json", "--workers", "16", "--timeout", "20",
                             state=state)
        planned = _devices(p)
        assert p.returncode == 1 and seconds < 20 + 60  # the hung switch's read timeout (20 s), the rest around it
        for name, fault in faulted.items():
            assert planned[name]["status"] in ("unreachable", "error"), (fault, planned[name])
            assert "\n" not in planned[name]["detail"] and planned[name]["detail"], (fault, planned[name])
        # one line each: what happened, the address, the timeout (netmiko's own messages are paragraphs of advice)
        refused, hung = eps[names[10]].address, eps[names[40]].address
        assert planned[names[10]]["detail"] == f"{refused}:22 refused the SSH login (Authentication failed)"
        assert planned[names[40]]["detail"] == f"no reply from {hung}:22 within 20 s (the session stopped answering)"
        assert "expected" in planned[names[70]]["detail"]  # the noise is located and named as such
        assert {d["status"] for n, d in planned.items() if n not in faulted} == {"unchanged"}

        (inv / "qos.yaml").write_text(KNOB)
        (net.devices[canary[1]] / "refuse-patch").write_text("")  # its Generic Config Updater refuses the patch
        running = {n: read_json(d / "running.json") for n, d in net.devices.items()}
        p, _ = _fabric(net, "apply", str(inv), "--yes", "--canary", "3", "--batch", "25%", "--rollback-on-failure",
                       "--workers", "16", "--timeout", "20", "--format", "json", *FAST, state=state)
        applied = _devices(p)
        assert p.returncode == 1
        assert applied[names[40]]["detail"] == planned[names[40]]["detail"]  # the apply's plan waited as long
        refused = applied[canary[1]]  # its own transaction undid it: the patch never took
        assert refused["status"] == "rolled-back" and "apply-patch failed" in refused["detail"], refused
        for name in (canary[0], canary[2]):  # applied, then undone when their batch failed
            assert applied[name]["status"] == "rolled-back", applied[name]
            assert applied[name]["detail"].startswith("applied, then rolled back"), applied[name]
        rest = {applied[n]["status"] for n in names if n not in faulted and n not in canary}
        assert rest == {"skipped"}
        assert {n: read_json(d / "running.json") for n, d in net.devices.items()} == running
        deadline = time.monotonic() + 30  # the canaries' device-side jobs end once reverted
        while (after := _census(net, server)) != before and time.monotonic() < deadline:
            time.sleep(0.5)
        assert after == before


def _hosts_run(tmp: Path, server: str, inv: Path, intents: dict[str, str], addresses: dict[str, str],
               recorded: tuple[str, Any]) -> dict[str, Any]:
    """`fabric hosts plan`, `apply`, `plan` over four stand-in hosts served by `server`: the outputs, each host's
    state and intent shipped, and its SSH sessions."""
    from tests.standins.hostagent import seed_fleet

    names = sorted(intents)
    with standins(tmp, {n: ("host", addresses[n]) for n in names}, server=server) as net:  # type: ignore[arg-type]
        seed_fleet(net.devices, intents, recorded)
        site = inv.parent / f"inv-{server}"
        site.mkdir()
        for f in inv.iterdir():
            (site / f.name).write_text(f.read_text())
        with (site / "fabric.yaml").open("a") as f:
            f.write(f"access:\n  username: root\n  key_file: {net.key}\n  known_hosts: {net.known_hosts}\n")
        outputs = []
        for mode in ("plan", "apply", "plan"):
            p = subprocess.run(net.argv([str(Path(sys.executable).with_name("fabric")), "hosts", mode, str(site),
                                         "--limit", ":".join(names), "--remote-dir", str(tmp / "remote"),
                                         "--format", "json"]), capture_output=True, text=True, timeout=300)
            assert "Traceback" not in p.stderr, p.stderr[-3000:]
            outputs.append([p.returncode, json.loads(p.stdout)])
        return {"outputs": outputs,
                "state": {n: (d / "state").read_text() for n, d in net.devices.items()},
                "shipped": {n: (tmp / "remote" / f"{n}.json").read_text() for n in names},
                "sessions": {n: (d / "logins").read_text().splitlines() for n, d in net.devices.items()}}


def test_host_fleet_answers_as_the_sshd_standin_and_the_real_agent(tmp_path: Path) -> None:
    """Four GPU hosts of a generated fabric through the real `fabric hosts plan|apply|plan` (Ansible over SSH),
    served once by sshd (a process per command, the host's real `python3` running each module) and once by the
    fleet's one process: the same outputs, the same sessions, the same state and shipped intents. The agent's
    replies a host gets from another host's recorded reports are the real agent's for that host."""
    require(os.geteuid() == 0, "root (network namespaces)")
    require(Path("/usr/sbin/sshd").exists(), "/usr/sbin/sshd (openssh-server)")
    from tests.standins.hostagent import fleet_intents, record, replies

    inv = tmp_path / "inv"
    subprocess.run([str(Path(sys.executable).with_name("fabric")), "generate", "gpu-rail", "--gpus", "512",
                    "--target", "sonic", "--platform", "sn5600", "-o", str(inv)], check=True, capture_output=True)
    intents, addresses = fleet_intents(inv)
    template, other = "gpu-su1-01", "gpu-su2-17"
    recorded = (intents[template], record(intents[template], template))
    assert replies(*recorded, intents[other]) == record(intents[other], other)
    four = {n: intents[n] for n in ("gpu-su1-02", "gpu-su1-30", "gpu-su2-01", other)}
    sshd = _hosts_run(tmp_path / "sshd", "sshd", inv, four, addresses, recorded)
    fleet = _hosts_run(tmp_path / "fleet", "fleet", inv, four, addresses, recorded)
    assert fleet["outputs"] == sshd["outputs"]
    assert [rc for rc, _ in fleet["outputs"]] == [0, 0, 0]
    changed = [[h["changed"] for h in out["hosts"]] for _rc, out in fleet["outputs"]]
    assert all(c > 0 for c in changed[0] + changed[1]) and changed[2] == [0, 0, 0, 0]
    assert fleet["state"] == sshd["state"] == dict.fromkeys(four, "applied\n")
    assert fleet["shipped"] == sshd["shipped"] == four
    assert fleet["sessions"] == sshd["sessions"]
