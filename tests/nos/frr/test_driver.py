"""`fabric plan` / `apply` / `rollback` end to end against the lab: real sshd, real FRR, real frr-reload.py.

The lab runs a copy of the example fabric under its own name, prefix and management subnet so it
never meets another test's lab. Each test leaves the switches at their intent.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from fabric.lab.state import instance, instance_key
from fabric.replies import json_replies
from tests.support.lab import FABRIC, ROOT, env, lab_state, require_lab

pytestmark = [pytest.mark.root, pytest.mark.lab]
NAME = "pushlab"
LEAF = "leaf-su1-r1"
CANARY = "s3cret-canary-7731"  # a password in the environment: must never reach output or audit


def _inventory(dst: Path, **switch_overrides: object) -> Path:
    shutil.copytree(ROOT / "inventories" / "example", dst)
    fab = dst / "fabric.yaml"
    text = fab.read_text().replace("name: example", f"name: {NAME}")
    text += "lab:\n  prefix: pl\n  management: 198.18.93.0/24\n"
    if switch_overrides:
        text += "switches:\n" + "".join(f"  - {{name: {n}, asn: {a}}}\n" for n, a in switch_overrides.items())
    fab.write_text(text)
    addr = dst / "addressing.yaml"
    addr.write_text(addr.read_text().replace("198.18.0.0/24", "198.18.93.0/24"))
    return dst


def run(*args: str, state: Path, timeout: float = 180, stdin: int | None = subprocess.DEVNULL
        ) -> subprocess.CompletedProcess[str]:
    e = {**env(), "FABRIC_STATE": str(state), "FABRIC_PASSWORD": CANARY}
    lab = ["--lab"] if args and args[0] in ("plan", "apply", "rollback") else []
    return subprocess.run([FABRIC, *args, *lab], capture_output=True, text=True, timeout=timeout, env=e, cwd=ROOT,
                          stdin=stdin)


def plan_json(inv: Path, state: Path, *extra: str) -> tuple[int, dict]:
    p = run("plan", str(inv), "--format", "json", *extra, state=state)
    assert p.stdout, p.stderr
    return p.returncode, json.loads(p.stdout)


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict]:
    require_lab()
    base = tmp_path_factory.mktemp("pushlab")
    inv = _inventory(base / "inv")
    state = base / "state"
    try:
        p = run("lab", "up", str(inv), "--timeout", "90", state=state)
        assert p.returncode == 0, p.stdout + p.stderr
        yield {"inv": inv, "state": state, "base": base}
    finally:
        p = run("lab", "down", str(inv), state=state)
        assert p.returncode == 0, p.stderr


def vtysh(*cmds: str) -> str:
    return lab_state(NAME).vtysh(LEAF, *cmds)


def hand_change() -> None:
    vtysh("configure terminal", "router bgp 65101", "timers bgp 5 15", "end",
          "configure terminal", "ip prefix-list HAND seq 5 permit 192.0.2.0/24")


def established(node: str = LEAF) -> int:
    data = json.loads(lab_state(NAME).vtysh(node, "show bgp summary json") or "{}")
    return sum(p.get("state") == "Established" for p in data.get("ipv4Unicast", {}).get("peers", {}).values())


def wait_established(n: int, timeout: float = 40) -> int:
    deadline = time.monotonic() + timeout
    while (got := established()) < n and time.monotonic() < deadline:
        time.sleep(1)
    return got


def records(state: Path) -> Path:
    """Where a lab apply keeps its records, audit log and lock: the lab's own name (this run's lab instance, `+lab`),
    never the production fabric's."""
    return state / f"{instance_key(NAME, instance())}+lab"


def audit_lines(state: Path) -> list[dict]:
    path = records(state) / "audit.jsonl"
    return [json.loads(ln) for ln in path.read_text().splitlines()] if path.exists() else []


FAST = ("--settle", "1", "--postcheck-timeout", "8", "--confirm-timer", "25")


def test_plan_shows_a_hand_change_apply_restores_it_and_the_next_plan_is_empty(lab: dict) -> None:
    inv, state = lab["inv"], lab["state"]
    rc, data = plan_json(inv, state)
    assert rc == 0 and data["summary"] == {"unchanged": 6}, data
    hand_change()
    rc, data = plan_json(inv, state)
    dev = {d["device"]: d for d in data["devices"]}
    assert rc == 0 and dev[LEAF]["status"] == "changed"
    assert dev[LEAF]["sections"]["router bgp 65101"] == [  # a change, back to the datacenter default
        "~ timers bgp 5 15 → timers bgp 3 9 (the `frr defaults datacenter` value)"]
    assert "(global)" not in dev[LEAF]["sections"]  # a hand prefix-list is not the tool's: left alone
    assert all(d["status"] == "unchanged" for n, d in dev.items() if n != LEAF)
    table = run("plan", str(inv), state=state)
    assert "~ timers bgp 5 15 → timers bgp 3 9" in table.stdout and "1 changed, 5 unchanged" in table.stdout

    p = run("apply", str(inv), "--yes", *FAST, state=state)
    assert p.returncode == 0, p.stdout + p.stderr
    assert "1 applied, 5 unchanged" in p.stdout
    running = vtysh("show running-config")
    assert "HAND" in running and "timers bgp 5 15" not in running
    rc, data = plan_json(inv, state)
    assert rc == 0 and data["summary"] == {"unchanged": 6}
    entries = audit_lines(state)
    assert entries[-1]["device"] == LEAF and entries[-1]["result"] == "applied"
    assert entries[-1]["diff_digest"] == dev[LEAF]["digest"] and entries[-1]["changed"] == 1
    assert CANARY not in p.stdout + p.stderr + (records(state) / "audit.jsonl").read_text()
    assert not (state / NAME).exists()  # the production fabric's records are not the lab's

    # rollback restores the state recorded before that apply (the hand change), then apply again
    p = run("rollback", str(inv), LEAF, "--yes", *FAST, state=state)
    assert p.returncode == 0, p.stdout + p.stderr
    assert "timers bgp 5 15" in vtysh("show running-config")
    assert audit_lines(state)[-1]["action"] == "rollback"
    assert run("apply", str(inv), "--yes", *FAST, state=state).returncode == 0


def test_another_asn_on_the_switch_is_refused_and_nothing_changes(lab: dict) -> None:
    """The inventory gives the leaf another ASN than its `router bgp`: the tool never renumbers a router,
    so the plan is an error naming the running line and the apply leaves the switch as it was."""
    bad = _inventory(lab["base"] / "bad-asn", **{LEAF: 65199})
    state = lab["state"]
    assert wait_established(2) == 2
    before = vtysh("show running-config")
    p = run("apply", str(bad), "--limit", LEAF, "--yes", "--format", "json", *FAST, state=state)
    assert p.returncode == 1, p.stdout + p.stderr
    res = {d["device"]: d for d in json.loads(p.stdout)["devices"]}[LEAF]
    assert res["status"] == "error" and "router bgp 65101" in res["detail"], res
    assert vtysh("show running-config") == before
    assert wait_established(2) == 2
    _rc, data = plan_json(lab["inv"], state, "--limit", LEAF)
    assert data["summary"] == {"unchanged": 1}
    rc, data = plan_json(lab["inv"], state, "--limit", LEAF, "--insecure-lab")  # host keys not checked
    assert rc == 0 and data["summary"] == {"unchanged": 1}


def _sshd_pids(listener: int) -> list[int]:
    """The lab sshd of the node and its session processes (children, grandchildren)."""
    pids, todo = [listener], [listener]
    while todo:
        parent = todo.pop()
        for d in Path("/proc").iterdir():
            if d.name.isdigit():
                try:
                    ppid = int((d / "stat").read_text().rsplit(")", 1)[1].split()[1])
                except (OSError, IndexError, ValueError):
                    continue
                if ppid == parent and (d / "comm").read_text().strip().startswith("sshd"):
                    pids.append(int(d.name))
                    todo.append(int(d.name))
    return pids


def test_killing_sshd_mid_apply_leaves_the_device_as_it_was(lab: dict) -> None:
    from fabric.lab import daemons

    inv, state = lab["inv"], lab["state"]
    st = lab_state(NAME)
    hand_change()
    before = vtysh("show running-config")
    work = Path(st.state_dir) / "push" / LEAF
    seen = {p.parent for p in work.glob("txn-*/state")}
    e = {**env(), "FABRIC_STATE": str(state), "FABRIC_PASSWORD": CANARY}
    proc = subprocess.Popen([FABRIC, "apply", str(inv), "--lab", "--limit", LEAF, "--yes", "--format", "json",
                             "--settle", "4", "--postcheck-timeout", "2", "--confirm-timer", "16"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=e, cwd=ROOT,
                            stdin=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 60
        job = None
        while job is None and time.monotonic() < deadline:  # the change is on the device, post-check running
            job = next((p.parent for p in work.glob("txn-*/state")
                        if p.parent not in seen and p.read_text().strip() == "waiting"), None)
            time.sleep(0.05)
        assert job is not None, "the apply never reached the device"
        for pid in _sshd_pids(st.nodes[LEAF].pids["sshd"]):
            os.kill(pid, signal.SIGKILL)
        out, _errs = proc.communicate(timeout=120)
        res = json.loads(out)["devices"][0]
        assert proc.returncode == 1
        assert res["status"] == "pending", res  # the switch cannot be reached: not verified, never guessed
        assert all(w in res["detail"] for w in ("connection lost", "confirm timer", "not verified"))
        deadline = time.monotonic() + 40
        while (job / "state").read_text().strip() != "reverted" and time.monotonic() < deadline:
            time.sleep(0.5)
        assert (job / "state").read_text().strip() == "reverted"
        assert vtysh("show running-config") == before
        assert audit_lines(state)[-1]["result"] == "pending"
    finally:
        if proc.poll() is None:
            proc.kill()
        st = lab_state(NAME)
        st.nodes[LEAF].pids["sshd"] = daemons.start_sshd(st, LEAF)
        st.save()
    p = run("apply", str(inv), "--yes", *FAST, state=state)
    assert p.returncode == 2 and "--resume" in p.stderr, p.stdout + p.stderr  # the unsettled transaction first
    p = run("apply", str(inv), "--yes", "--resume", "--format", "json", *FAST, state=state)
    assert p.returncode == 0, p.stdout + p.stderr
    assert "timers bgp 5 15" not in vtysh("show running-config")
    assert ("resume", "reverted-by-timer") in {(e["action"], e["result"]) for e in audit_lines(state)}


def _path_to(prefix: str) -> tuple[int, list[int]]:
    """On LEAF: the ECMP width of `prefix` and the local preference of each of its BGP paths (one vtysh)."""
    docs = json_replies(vtysh(f"show bgp ipv4 unicast {prefix} json", f"show ip route {prefix} json"), "vtysh")
    data, routes = (*docs, {}, {})[:2]
    prefs = sorted(int(p.get("locPrf", 100)) for p in data.get("paths", []))
    route = routes.get(prefix, [{}])[0]
    return sum(1 for nh in route.get("nexthops", []) if nh.get("active")), prefs


def test_drain_a_spine_moves_ecmp_away_and_undrain_brings_it_back(lab: dict) -> None:
    """Real FRR: `fabric drain spine1` (bgp graceful-shutdown) → the leaves' routes via spine1 get
    LOCAL_PREF 0 and ECMP to another leaf's loopback narrows from 2 paths to 1; undrain restores both."""
    inv, state = lab["inv"], lab["state"]
    remote = "10.254.0.4/32"  # leaf-su1-r2's loopback, reached from LEAF through spine1 and spine2
    assert wait_established(2) == 2
    deadline = time.monotonic() + 30
    while _path_to(remote)[0] != 2 and time.monotonic() < deadline:
        time.sleep(1)
    width, prefs = _path_to(remote)
    assert width == 2 and prefs == [100, 100], (width, prefs)
    p = run("drain", str(inv), "spine1", "--lab", "--yes", "--format", "json", "--interval", "0.5",
            "--threshold", "1000000", "--timeout", "30", *FAST, state=state)
    res = json.loads(p.stdout)
    assert p.returncode == 0 and res["status"] == "applied", p.stdout + p.stderr
    assert res["sections"] == {"router bgp 65000": ["+ bgp graceful-shutdown"]}
    assert res["before_bps"] is not None and res["after_bps"] is not None and res["quiet"] is True
    deadline = time.monotonic() + 30
    while _path_to(remote)[0] != 1 and time.monotonic() < deadline:
        time.sleep(1)
    width, prefs = _path_to(remote)
    assert width == 1 and prefs == [0, 100], (width, prefs)  # the path via spine1: LOCAL_PREF 0
    p = run("undrain", str(inv), "spine1", "--lab", "--yes", "--format", "json", "--interval", "0.5", *FAST,
            state=state)
    assert p.returncode == 0 and json.loads(p.stdout)["status"] == "applied", p.stdout + p.stderr
    deadline = time.monotonic() + 30
    while _path_to(remote)[0] != 2 and time.monotonic() < deadline:
        time.sleep(1)
    assert _path_to(remote)[0] == 2
    assert [e["action"] for e in audit_lines(state)][-2:] == ["drain", "undrain"]


def test_brownfield_frr_keeps_vrf_bgp_evpn_route_maps_and_foreign_peer_group(lab: dict) -> None:
    """Real FRR 8.4 seeded with a config nobody here wrote — Proxmox VE SDN's `frr.conf`
    (tests/fixtures/brownfield/frr/leaf-su1-r1.conf: two VRF BGP instances, EVPN `advertise-all-vni`,
    route-maps MAP_VTEP_IN/OUT, the iBGP peer group VTEP with its neighbours), loaded with frr-reload.py as an
    operator would. `apply` adds the fabric and changes its own settings only: vtysh still shows every foreign
    line and BGP to both spines comes up; the next plan is empty; `rollback` gives back the running config
    byte for byte. The switch goes back to the lab's config afterwards."""
    from fabric.nos.frr.driver import clean_running

    inv, state = lab["inv"], lab["state"]
    st = lab_state(NAME)
    d = st.frr_dir(LEAF)
    original = clean_running(vtysh("show running-config"))

    def load(text: str) -> None:
        f = d / "brownfield-seed.conf"
        f.write_text(text)
        p = st.run(LEAF, ["/usr/lib/frr/frr-reload.py", "--reload", "--stdout", "--bindir", "/usr/bin", "--confdir",
                          str(d), "--rundir", str(d), "--vty_socket", str(d), str(f)], timeout=120)
        assert p.returncode == 0, p.stdout + p.stderr

    foreign = ["vrf vrf_myzone\n vni 1000\nexit-vrf", "vrf vrf_myzone2\n vni 1001\nexit-vrf",
               "router bgp 65101 vrf vrf_myzone\n", "router bgp 65101 vrf vrf_myzone2\n",
               " neighbor VTEP peer-group\n", " neighbor VTEP remote-as 65101\n", " neighbor VTEP bfd\n",
               " neighbor 192.168.0.2 peer-group VTEP\n", " neighbor 192.168.0.3 peer-group VTEP\n",
               " address-family l2vpn evpn\n  neighbor VTEP activate\n  neighbor VTEP route-map MAP_VTEP_IN in\n"
               "  neighbor VTEP route-map MAP_VTEP_OUT out\n  advertise-all-vni\n",
               "route-map MAP_VTEP_IN permit 1\n", "route-map MAP_VTEP_OUT permit 1\n", " coalesce-time 1000\n"]
    try:
        load((ROOT / "tests" / "fixtures" / "brownfield" / "frr" / f"{LEAF}.conf").read_text())
        seeded = vtysh("show running-config")
        for line in foreign:
            assert line in seeded, line
        rc, data = plan_json(inv, state, "--limit", LEAF)
        assert rc == 0, data
        dev = data["devices"][0]
        assert dev["status"] == "changed" and dev["removed"] == 0 and dev["never_rendered_removals"] == 0, dev
        p = run("apply", str(inv), "--limit", LEAF, "--yes", *FAST, state=state)
        assert p.returncode == 0, p.stdout + p.stderr
        after = vtysh("show running-config")
        for line in foreign:
            assert line in after, line
        assert " neighbor FABRIC peer-group\n" in after and wait_established(2) == 2
        _rc, data = plan_json(inv, state, "--limit", LEAF)
        assert data["devices"][0]["status"] == "unchanged", data
        p = run("rollback", str(inv), LEAF, "--yes", *FAST, state=state)
        assert p.returncode == 0, p.stdout + p.stderr
        assert vtysh("show running-config") == seeded
    finally:
        load(original)
        assert wait_established(2) == 2


def test_interfaces_sh_goes_in_the_transaction_and_rollback_puts_it_back(lab: dict) -> None:
    """Everything rendered is pushed: a change of the neighbour aging is a change of the rendered
    interfaces.sh only; the plan shows its lines, apply runs it on the switch with frr.conf (the SVI's
    base_reachable_time_ms in the switch's namespace), the next plan is empty, and `fabric rollback` runs the undo
    written before it ran: the old value is back and the original inventory plans empty again."""
    inv, state = lab["inv"], lab["state"]
    aged = lab["base"] / "aged"
    if not aged.exists():
        shutil.copytree(inv, aged)
        sw = aged / "switching.yaml"
        sw.write_text(sw.read_text().replace("aging: 300s", "aging: 120s"))
    key = "net.ipv4.neigh.vlan1001.base_reachable_time_ms"

    def value() -> str:
        st = lab_state(NAME)
        return subprocess.run(st.ns_argv(LEAF, ["sysctl", "-n", key]), capture_output=True, text=True,
                              timeout=15).stdout.strip()

    assert value() == "300000"
    rc, data = plan_json(aged, state, "--limit", LEAF)
    dev = data["devices"][0]
    assert rc == 0 and dev["status"] == "changed", dev
    assert list(dev["sections"]) == ["interfaces.sh"], dev["sections"]
    assert f"+ sysctl -qw {key}=120000" in dev["sections"]["interfaces.sh"]
    assert any(ln.startswith(f"- sysctl -qw {key}=300000") for ln in dev["sections"]["interfaces.sh"])
    p = run("apply", str(aged), "--limit", LEAF, "--yes", *FAST, state=state)
    assert p.returncode == 0, p.stdout + p.stderr
    assert value() == "120000"
    rc, data = plan_json(aged, state, "--limit", LEAF)
    assert rc == 0 and data["summary"] == {"unchanged": 1}, data
    p = run("rollback", str(inv), LEAF, "--yes", *FAST, state=state)
    assert p.returncode == 0, p.stdout + p.stderr
    assert value() == "300000"
    rc, data = plan_json(inv, state, "--limit", LEAF)
    assert rc == 0 and data["summary"] == {"unchanged": 1}, data
