"""The example fabric in the lab: convergence, ECMP, reachability, exec, real ssh, faults, cabling (real LLDP),
clean down."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import require
from tests.support.lab import (
    FABRIC,
    ROOT,
    assert_nothing_left,
    env,
    fabric,
    lab_state,
    require_lab,
    status_json,
)

INV = "inventories/example"
pytestmark = [pytest.mark.root, pytest.mark.lab]


@pytest.fixture(scope="module")
def lab() -> Iterator[None]:
    require_lab()
    try:
        fabric("lab", "up", INV, "--timeout", "90", check=True)
        yield
    finally:
        p = fabric("lab", "down", INV)
        assert p.returncode == 0, p.stderr
        assert_nothing_left("example")


def test_converged_with_full_ecmp(lab: None) -> None:
    rc, data = status_json(INV, "--no-pings")
    assert rc == 0, data["problems"]
    sws = {s["name"]: s for s in data["switches"]}
    assert len(sws) == 6
    for s in sws.values():
        assert s["sessions"] and all(x["state"] == "Established" for x in s["sessions"])
        assert s["missing"] == []
    for name in ("leaf-su1-r1", "leaf-su1-r2", "leaf-su1-r3", "leaf-su1-r4"):
        # other leaves' loopbacks and rail subnets via both spines
        assert sws[name]["ecmp_min"] == 2 and sws[name]["remote_prefixes"] == 6


def test_reachability_per_rail(lab: None) -> None:
    rc, data = status_json(INV)
    assert rc == 0, data["problems"]
    pings = data["pings"]
    assert len(pings) == 4 * 4 * 3  # rails × ordered host pairs
    assert all(p["ok"] for p in pings)
    assert {p["rail"] for p in pings} == {1, 2, 3, 4}


def test_reachability_is_one_prober_per_host_and_rail(lab: None) -> None:
    """`lab status` probes with one fping per source address (host × rail), not one ping per ordered pair and rail:
    counted from the real run's execve calls (strace -f)."""
    require(shutil.which("strace") is not None, "strace")
    with tempfile.NamedTemporaryFile(prefix="rf-strace-") as trace:
        p = subprocess.run(["strace", "-f", "-qq", "-e", "trace=execve", "-e", "signal=none", "-o", trace.name,
                            FABRIC, "lab", "status", INV, "--format", "json"], capture_output=True, text=True,
                           env=env(), cwd=ROOT, timeout=120)
        execs = Path(trace.name).read_text()
    assert p.returncode == 0, p.stdout + p.stderr
    assert len(json.loads(p.stdout)["pings"]) == 4 * 4 * 3
    assert execs.count('execve("/usr/bin/fping"') == 4 * 4  # hosts × rails
    assert 'execve("/usr/bin/ping"' not in execs


def test_a_downed_host_link_is_exactly_its_pairs_unreachable_under_cpu_load(lab: None) -> None:
    """gpu-su1-01's rail-1 cable down (its leaf's swp1) while every core is busy twice over: the pairs through that
    cable, both ways, are unreachable and every other pair answers (a loaded machine delays echo replies; it must not
    turn them into unreachable pairs)."""
    spinners = [subprocess.Popen(["sh", "-c", "while :; do :; done"]) for _ in range(2 * (os.cpu_count() or 1))]
    try:
        fabric("lab", "fault", INV, "link", "leaf-su1-r1:swp1", "down", check=True)
        rc, data = status_json(INV)
    finally:
        for s in spinners:
            s.kill()
            s.wait(5)
        fabric("lab", "fault", INV, "clear", check=True)
    assert rc == 1
    down = {(p["rail"], p["src"], p["dst"]) for p in data["pings"] if not p["ok"]}
    others = ["gpu-su1-02", "gpu-su1-03", "gpu-su1-04"]
    assert down == {(1, "gpu-su1-01", h) for h in others} | {(1, h, "gpu-su1-01") for h in others}
    assert sum(p["ok"] for p in data["pings"]) == 4 * 4 * 3 - 6
    assert "rail 1: gpu-su1-01 10.100.0.2 → gpu-su1-02 10.100.0.3 unreachable" in data["problems"]

def test_the_kernel_neighbour_tables_hold_the_lab(lab: None) -> None:
    """Every namespace's ARP and NDP entries share one kernel table per family, limited machine-wide (gc_thresh3;
    past it the kernel drops packets to new neighbours, which `lab status` read as unreachable pairs): after every
    pair has been probed, the lab's real entries stay within what `lab up` sized the tables for."""
    from fabric.design.load import load_fabric
    from fabric.lab import neigh

    status_json(INV)  # every pair probed: every neighbour resolved
    st = lab_state("example")
    counts = {family: sum(len([ln for ln in subprocess.run(["ip", f"-{v}", "-n", n.netns, "neigh", "show"],
                                                           capture_output=True, text=True).stdout.splitlines()
                               if ln.strip()]) for n in st.nodes.values())
              for family, v in (("ipv4", 4), ("ipv6", 6))}
    bound = neigh.entries(load_fabric(ROOT / INV, target="frr").intent)
    for family, count in counts.items():
        limit = int(Path(f"/proc/sys/net/{family}/neigh/default/gc_thresh3").read_text())
        assert 0 < count <= bound and limit >= neigh.HEADROOM * bound, (family, count, bound, limit)

def test_exec_runs_in_node_namespace(lab: None) -> None:
    p = fabric("lab", "exec", INV, "spine1", "--", "ip", "-br", "link", "show", "swp4", check=True)
    assert p.stdout.startswith("swp4")
    p = fabric("lab", "exec", INV, "gpu-su1-01", "--", "false")
    assert p.returncode == 1
    # the docs' example as written (docs/lab.md): the node's own FRR, no --vty_socket
    p = fabric("lab", "exec", INV, "leaf-su1-r1", "--", "vtysh", "-c", "show bgp summary json", check=True)
    assert json.loads(p.stdout)["ipv4Unicast"]["as"] == 65101


def test_ssh_runs_a_command_over_real_ssh(lab: None) -> None:
    p = fabric("lab", "ssh", INV, "gpu-su1-02", "--", "ip", "-br", "addr", "show", "rail3", check=True)
    assert "10.100.2.3/24" in p.stdout
    p = fabric("lab", "ssh", INV, "leaf-su1-r2", "--", "vtysh", "-c", "show bgp summary json", check=True)
    assert json.loads(p.stdout)["ipv4Unicast"]["as"] == 65102


def test_link_down_shows_in_status_and_clears(lab: None) -> None:
    fabric("lab", "fault", INV, "link", "leaf-su1-r1:swp5", "down", check=True)
    try:
        time.sleep(1)
        rc, data = status_json(INV, "--no-pings")
        assert rc == 1
        sws = {s["name"]: s for s in data["switches"]}
        r1 = {x["neighbor"]: x["state"] for x in sws["leaf-su1-r1"]["sessions"]}
        assert r1["swp5"] != "Established" and r1["swp6"] == "Established"
        assert sws["leaf-su1-r2"]["ecmp_min"] == 1  # leaf-su1-r1's prefixes only via spine2 now
        assert data["faults"] == [{"kind": "link", "node": "leaf-su1-r1", "port": "swp5", "ifname": "swp5",
                                   "rate": None, "other": None, "was": [], "now": []}]
    finally:
        p = fabric("lab", "fault", INV, "clear", check=True)
    assert "converged again in" in p.stdout  # `clear` returns once BGP is back: nothing left to wait for
    rc, data = status_json(INV, "--no-pings")
    assert rc == 0 and data["ok"], data["problems"]
    assert data["faults"] == []


def test_throttle_recorded_tbf_present_and_slow(lab: None) -> None:
    fabric("lab", "fault", INV, "throttle", "gpu-su1-01:rail1", "10mbit", check=True)
    server = None
    try:
        _, data = status_json(INV, "--no-pings")
        assert data["faults"][0]["kind"] == "throttle" and data["faults"][0]["rate"] == "10mbit"
        q = fabric("lab", "exec", INV, "gpu-su1-01", "--", "tc", "qdisc", "show", "dev", "rail1", check=True)
        assert "tbf" in q.stdout and "10Mbit" in q.stdout
        # bounded iperf3 over rail 1: the throttled host's egress stays near the tbf rate
        st = lab_state("example")
        server = subprocess.Popen(st.ns_argv("gpu-su1-02", ["iperf3", "-s", "-1", "-B", "10.100.0.3"]),
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(0.5)
        c = st.run("gpu-su1-01", ["iperf3", "-c", "10.100.0.3", "-B", "10.100.0.2", "-t", "2", "-J"],
                   timeout=20)
        bps = json.loads(c.stdout)["end"]["sum_received"]["bits_per_second"]
        assert 0 < bps < 20e6, bps
    finally:
        if server:
            server.kill()
            server.wait(5)
        fabric("lab", "fault", INV, "clear", check=True)
    q = fabric("lab", "exec", INV, "gpu-su1-01", "--", "tc", "qdisc", "show", "dev", "rail1", check=True)
    assert "tbf" not in q.stdout


def test_bad_fault_arguments_are_usage_errors(lab: None) -> None:
    p = fabric("lab", "fault", INV, "throttle", "gpu-su1-01:rail1", "fast")
    assert p.returncode == 2 and "expected a tc rate" in p.stderr
    p = fabric("lab", "fault", INV, "link", "nosuch:swp1", "down")
    assert p.returncode == 2 and "no node 'nosuch'" in p.stderr


def test_second_up_refused(lab: None) -> None:
    p = fabric("lab", "up", INV)
    assert p.returncode == 2 and "lab down" in p.stderr


# -- cabling: lldpd in every namespace, cable faults, `fabric cabling --lab` ---------------------------------------
HOST_NICS = ("gpu-su1-01 NIC 1 is in leaf-su1-r2:swp1, expected leaf-su1-r1:swp1; gpu-su1-01 NIC 2 is in "
             "leaf-su1-r1:swp1 — NICs 1 and 2 of gpu-su1-01 are crossed: swap these two cables")
LEAF_PORTS = ("gpu-su1-02 NIC 3 is in leaf-su1-r4:swp2, expected leaf-su1-r3:swp2; gpu-su1-02 NIC 4 is in "
              "leaf-su1-r3:swp2 — NICs 3 and 4 of gpu-su1-02 are crossed: swap these two cables")
UPLINKS = ("leaf-su1-r1:swp5 is in spine2:swp1, expected spine1:swp1; leaf-su1-r1:swp6 is in spine1:swp1 — swap "
           "these two cables")
PULLED = "leaf-su1-r3:swp6 — spine2:swp3: no neighbour on either end (cable out, or the link down)"


def _cabling(expected: set[str], timeout: float = 20) -> tuple[int, set[str], dict]:
    """`fabric cabling --lab` until its faults are `expected` (LLDP settles within its TTL, 4 s) or `timeout`."""
    deadline = time.monotonic() + timeout
    while True:
        p = fabric("cabling", INV, "--lab", "--format", "json")
        assert p.returncode in (0, 1), p.stderr
        data = json.loads(p.stdout)
        found = {f["message"] for f in data["faults"]}
        if found == expected or time.monotonic() > deadline:
            return p.returncode, found, data
        time.sleep(1)


def _converged(timeout: float = 30) -> tuple[int, dict]:
    """`lab status --no-pings` once every session is up and ECMP full again, or at `timeout`."""
    deadline = time.monotonic() + timeout
    while True:
        rc, data = status_json(INV, "--no-pings")
        if rc == 0 or time.monotonic() > deadline:
            return rc, data
        time.sleep(1)


def test_the_healthy_lab_is_all_ok_in_cabling_read_live(lab: None) -> None:
    rc, found, data = _cabling(set())
    assert rc == 0 and found == set()
    assert data["counts"]["ok"] == 24 and data["read"] == 10 and data["unread"] == []
    p = fabric("cabling", INV, "--lab", check=True)
    assert p.stdout.strip() == "24 links: 24 ok; LLDP read from 10 of 10 devices"
    # the node's own lldpd, its inventory name sent as system name, on the cable ports only
    p = fabric("lab", "exec", INV, "leaf-su1-r1", "--", "lldpcli", "show", "neighbors", "ports", "swp1", check=True)
    assert "SysName:      gpu-su1-01" in p.stdout and "PortDescr:    rail1" in p.stdout
    p = fabric("lab", "exec", INV, "gpu-su1-01", "--", "lldpcli", "show", "interfaces", check=True)
    assert "Interface:    rail1" in p.stdout and "eth0" not in p.stdout


UPLINK_NODES = ("leaf-su1-r1", "spine1", "spine2")
# What FRR 8.4 logs when an interface it knows by name changes under it: zebra's ifindex of a name taken by another
# device (set_ifindex: "interface rename detected … results are uncertain"), bgpd told of a name it never had. Cable
# faults that renamed port devices left both, and once, under load, spine1 without leaf-su1-r1's prefixes. (A device
# deleted and made again leaves bgpd an address deletion of the old ifindex, "INTERFACE_ADDRESS_DEL: Cannot find IF
# 6": no name in doubt.)
FRR_CONFUSED = ("renamed from", "INTERFACE_STATE: Cannot find IF")
def _ports(node: str) -> dict[str, str]:
    """ifname → MAC of the node's cable ports (`ip -j link` in its namespace)."""
    p = fabric("lab", "exec", INV, node, "--", "ip", "-j", "link", "show", check=True)
    return {x["ifname"]: x["address"] for x in json.loads(p.stdout) if x["ifname"].startswith("swp")}


def _frr_logs(node: str) -> list[str]:
    d = Path(lab_state("example").frr_dir(node))
    return [(d / f"{daemon}.log").read_text() for daemon in ("zebra", "bgpd")]


def test_crossed_uplinks_keep_bgp_up_and_only_cabling_names_them(lab: None) -> None:
    ports = {n: _ports(n) for n in UPLINK_NODES}
    logs = {n: [len(x) for x in _frr_logs(n)] for n in UPLINK_NODES}
    fabric("lab", "fault", INV, "cross-uplinks", "leaf-su1-r1:swp5", "leaf-su1-r1:swp6", check=True)
    try:
        rc, found, _ = _cabling({UPLINKS})
        assert rc == 1 and found == {UPLINKS}
        # BGP unnumbered comes up again with whichever spine is at the port: sessions and ECMP as the model has them
        rc, data = _converged()
        assert rc == 0, data["problems"]
        assert data["faults"][0]["kind"] == "cross-uplinks" and data["faults"][0]["other"] == "leaf-su1-r1:swp6"
    finally:
        fabric("lab", "fault", INV, "clear", check=True)
    assert _cabling(set())[:2] == (0, set())
    # each port is the same device as before, as on a switch whose cables were moved: its name and MAC kept, FRR
    # never saw an interface renamed or a name move to another device
    assert {n: _ports(n) for n in UPLINK_NODES} == ports
    for n in UPLINK_NODES:
        new = "".join(text[start:] for text, start in zip(_frr_logs(n), logs[n], strict=True))
        assert not [ln for ln in new.splitlines() if any(w in ln for w in FRR_CONFUSED)], (n, new)


def test_cable_faults_are_named_with_their_fix_and_gate_acceptance(lab: None, tmp_path: Path) -> None:
    fabric("lab", "fault", INV, "swap-cables", "gpu-su1-01:rail1", "gpu-su1-01:rail2", check=True)
    fabric("lab", "fault", INV, "swap-cables", "leaf-su1-r3:swp2", "leaf-su1-r4:swp2", check=True)
    p = fabric("lab", "fault", INV, "pull", "spine2:swp3", check=True)
    assert p.stdout.strip() == "cable pulled out of spine2:swp3 (fault recorded)"
    try:
        rc, found, _ = _cabling({HOST_NICS, LEAF_PORTS, PULLED})
        assert rc == 1 and found == {HOST_NICS, LEAF_PORTS, PULLED}
        # the port a cable was pulled out of is still there, up, without carrier
        p = fabric("lab", "exec", INV, "spine2", "--", "ip", "-br", "link", "show", "swp3", check=True)
        assert "NO-CARRIER" in p.stdout and ",UP" in p.stdout
        p = fabric("accept", INV, "--lab", "--quick", "--tags", "cabling,rail-latency", "--format", "json",
                   "-o", str(tmp_path), timeout=120)
        assert p.returncode == 1, p.stderr
        results = json.loads((tmp_path / "accept.json").read_text())["results"]
        assert [r["name"] for r in results] == ["cabling", "rail-latency"]
        assert results[0]["status"] == "fail" and PULLED in results[0]["message"]
        assert {m["detail"] for m in results[0]["measurements"] if not m["ok"]} == {HOST_NICS, LEAF_PORTS, PULLED}
        assert results[1]["status"] == "skipped" and results[1]["message"].startswith("not run: cabling failed")
    finally:
        p = fabric("lab", "fault", INV, "clear", check=True)
    assert "3 faults cleared" in p.stdout and "converged again in" in p.stdout
    assert _cabling(set())[:2] == (0, set())
    rc, data = status_json(INV)  # every port configured again: sessions, ECMP and every rail's pings as before
    assert rc == 0 and data["ok"], data["problems"]


def test_a_ports_link_and_throttle_faults_hold_when_a_cable_fault_makes_its_device_again(lab: None) -> None:
    """A cable fault makes both ends' devices again: leaf-su1-r1:swp1, taken down before, stays down, and
    gpu-su1-01's throttled rail1 keeps its tbf, until `clear` undoes all three (in either order of the faults)."""
    fabric("lab", "fault", INV, "link", "leaf-su1-r1:swp1", "down", check=True)
    fabric("lab", "fault", INV, "throttle", "gpu-su1-01:rail1", "10mbit", check=True)
    fabric("lab", "fault", INV, "swap-cables", "gpu-su1-01:rail1", "gpu-su1-01:rail2", check=True)
    try:
        p = fabric("lab", "exec", INV, "leaf-su1-r1", "--", "ip", "-br", "link", "show", "swp1", check=True)
        assert " DOWN " in f" {p.stdout} ", p.stdout
        q = fabric("lab", "exec", INV, "gpu-su1-01", "--", "tc", "qdisc", "show", "dev", "rail1", check=True)
        assert "tbf" in q.stdout and "10Mbit" in q.stdout, q.stdout
    finally:
        p = fabric("lab", "fault", INV, "clear", check=True)
    assert "3 faults cleared" in p.stdout, p.stdout
    p = fabric("lab", "exec", INV, "leaf-su1-r1", "--", "ip", "-br", "link", "show", "swp1", check=True)
    assert ",UP" in p.stdout or " UP " in f" {p.stdout} ", p.stdout
    q = fabric("lab", "exec", INV, "gpu-su1-01", "--", "tc", "qdisc", "show", "dev", "rail1", check=True)
    assert "tbf" not in q.stdout, q.stdout
    rc, data = status_json(INV, "--no-pings")
    assert rc == 0 and data["ok"], data["problems"]


def test_bad_cable_faults_are_usage_errors(lab: None) -> None:
    p = fabric("lab", "fault", INV, "swap-cables", "leaf-su1-r1:swp5", "leaf-su1-r1:swp1")
    assert p.returncode == 2 and "swap-cables: expected a host cable at leaf-su1-r1:swp5, found a cable between two " \
        "switches (leaf-su1-r1:swp5 — spine1:swp1)" in p.stderr, p.stderr
    p = fabric("lab", "fault", INV, "cross-uplinks", "leaf-su1-r1:swp1", "gpu-su1-01:rail1")
    assert p.returncode == 2 and "found leaf-su1-r1:swp1 and gpu-su1-01:rail1 are the two ends of one cable" in p.stderr
    p = fabric("lab", "fault", INV, "pull", "spine2:swp99")
    assert p.returncode == 2 and "spine2 has no lab port 'swp99'" in p.stderr
    assert status_json(INV, "--no-pings")[1]["faults"] == []


# -- discover: the running lab drafted back into an inventory ------------------------------------------------------
def _tree(root: Path) -> dict[str, list[str]]:
    return {str(p.relative_to(root)): p.read_text().splitlines() for p in sorted(root.rglob("*")) if p.is_file()}


def _differences(original: Path, draft: Path) -> list[str]:
    """`path: original line != draft line` for each line the two renders differ in (and files on one side only)."""
    a, b = _tree(original), _tree(draft)
    out = [f"{path}: only in {'original' if path in a else 'draft'}" for path in sorted(set(a) ^ set(b))]
    for path in sorted(set(a) & set(b)):
        out += [f"{path}: {x!r} != {y!r}" for x, y in zip(a[path], b[path], strict=False) if x != y]
        if len(a[path]) != len(b[path]):
            out.append(f"{path}: {len(a[path])} lines != {len(b[path])}")
    return out


# What the draft cannot know, and so renders differently (docs/discover.md "What is read, and what is guessed"): the
# management network's prefix (not in LLDP of the cable ports nor in a switch config: the draft keeps 198.18.0.0/16,
# the example has a /24), and the host link speed (frr.conf sets no port speed: the draft guesses 400G, the example
# has 100G). Each host file differs in those lines only; every switch file is equal.
EXPLAINED_DRAFT = ("management_address", "198.18.0.", '"speed"', "G to leaf-")


def test_discover_drafts_the_running_lab_back(lab: None, tmp_path: Path) -> None:
    """`fabric discover` on what the running lab shows: each node's lldpd (`lldpctl -f json`, as a host's or an FRR
    switch's operator saves it) and the switches' running configs (`fabric fetch --lab`)."""
    lldp, running, draft = tmp_path / "lldp", tmp_path / "running", tmp_path / "draft"
    lldp.mkdir()
    assert _cabling(set())[:2] == (0, set())  # every cable seen from both ends before its LLDP is saved
    for node in lab_state("example").nodes:
        p = fabric("lab", "exec", INV, node, "--", "lldpctl", "-f", "json", check=True)
        (lldp / f"{node}.lldpctl").write_text(p.stdout)
    fabric("fetch", INV, "--lab", "-o", str(running), check=True)
    p = fabric("discover", "--lldp", str(lldp), "--running", str(running), "-o", str(draft), "--name", "example",
               check=True)
    assert "4 hosts, 6 switches, 24 links" in p.stdout, p.stdout
    assert fabric("validate", str(draft)).returncode == 0
    for inv, out in ((INV, tmp_path / "original"), (str(draft), tmp_path / "again")):
        fabric("render", inv, "-o", str(out), check=True)
    differences = _differences(tmp_path / "original", tmp_path / "again")
    assert not [d for d in differences if d.startswith("switches/")], differences
    assert [d for d in differences if not any(k in d for k in EXPLAINED_DRAFT)] == [], differences
    # against the lab's switches themselves, the draft changes nothing
    p = fabric("plan", str(draft), "--lab", "--format", "json", timeout=120)
    assert p.returncode == 0, p.stderr
    switches = {n for n, x in lab_state("example").nodes.items() if x.kind == "switch"}
    assert {d["device"]: d["status"] for d in json.loads(p.stdout)["devices"]} == dict.fromkeys(switches, "unchanged")
