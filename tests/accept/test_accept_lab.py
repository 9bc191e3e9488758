"""`fabric accept` and `fabric counters` against the namespace lab, for real: iperf3 stands in for
ib_write_bw and ping for ib_write_lat (veths have no RDMA) through the same runner and scheduler."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tests.support.lab import ACCEPT_LAB, fabric, lab_state

pytestmark = [pytest.mark.root, pytest.mark.lab]
NAME = ACCEPT_LAB
TIMED = ("rail-bandwidth", "rail-latency")  # checks whose verdict is a figure this machine's load moves


@pytest.fixture
def inv(accept_lab: str) -> str:
    """The example fabric under its own name, namespace prefix and management subnet (no clash with other labs on
    the machine), shared with tests/accept/checks/test_congestion_lab.py; always torn down, nothing left."""
    return accept_lab


def _leftover_tools() -> list[str]:
    """iperf3/ping processes still running in the lab's namespaces."""
    found = []
    for node in lab_state(NAME).nodes.values():
        pids = subprocess.run(["ip", "netns", "pids", node.netns], capture_output=True, text=True).stdout.split()
        for pid in pids:
            try:
                comm = Path(f"/proc/{pid}/comm").read_text().strip()
            except OSError:
                continue
            if comm in ("iperf3", "ping", "timeout"):
                found.append(f"{node.name}:{comm}")
    return found


def _accept(inv: str, out: Path, *args: str) -> tuple[int, dict]:
    rc, data, _ = _accept_out(inv, out, *args)
    return rc, data


def _accept_out(inv: str, out: Path, *args: str) -> tuple[int, dict, str]:
    p = fabric("accept", inv, "--lab", "--format", "json,junit,html", "-o", str(out), *args, timeout=240)
    assert (out / "accept.json").exists(), p.stdout + p.stderr
    assert "Traceback" not in p.stderr
    return p.returncode, json.loads((out / "accept.json").read_text()), p.stdout


def _by_name(data: dict) -> dict[str, dict]:
    return {r["name"]: r for r in data["results"]}


def test_healthy_lab_passes_and_skips_what_it_cannot_run(inv: str, tmp_path: Path) -> None:
    rc, data = _accept(inv, tmp_path)
    r = _by_name(data)
    bad = [x["name"] for x in data["results"] if x["status"] not in ("pass", "skipped")]
    slow = [m for name in bad for m in r[name].get("measurements", []) if not m["ok"]]
    if bad and set(bad) <= set(TIMED) and all(m["value"] is not None for m in slow):
        # measured, only past the limit: the lab's veths move bytes and echo pings with this machine's two CPUs, and
        # at the start of a whole test run (the VM booting, the control plane starting) one link in 48 fell under
        # the bandwidth floor in three of five runs (0.38-0.49 Gb/s) and one pair in 24 over the latency limit in
        # one CI run (5,050 us against 5,000); those checks once more, and that run decides
        rc, again = _accept(inv, tmp_path / "again", "--tags", ",".join(bad))
        r.update({name: _by_name(again)[name] for name in bad})
        data["results"] = [r[x["name"]] for x in data["results"]]
    assert rc == 0, [(x["name"], x["status"], x["message"]) for x in data["results"] if x["status"] != "pass"]
    for name in ("cabling", "host-config", "bgp", "rail-bandwidth", "rail-latency", "lossless-counters"):
        assert r[name]["status"] == "pass", r[name]
    bw = r["rail-bandwidth"]
    assert bw["rounds"] == 3 and len(bw["measurements"]) == 4 * 6 * 2  # rails × pairs × directions
    assert {m["tool"] for m in bw["measurements"]} == {"iperf3"}
    assert r["nccl-allreduce"]["status"] == "skipped" and "not found" in r["nccl-allreduce"]["message"]
    assert r["nccl-allreduce"]["rendered"]  # launcher files still written
    assert r["pfc-watchdog"]["status"] == "skipped"
    assert "heat" in (tmp_path / "accept.html").read_text()
    assert data["launchers"] == []  # nccl-tests did not run: the header names no launcher
    assert "<p>lab run, started " in (tmp_path / "accept.html").read_text()
    assert _leftover_tools() == []


def test_throttled_rail_is_detected_and_located(inv: str, tmp_path: Path) -> None:
    fabric("lab", "fault", inv, "throttle", "gpu-su1-03:rail2", "100mbit", check=True)
    try:
        rc, data, stdout = _accept_out(inv, tmp_path, "--quick", "--tags", "rail-bandwidth",
                                       "--scheduler", "slurm,kubernetes")
    finally:
        fabric("lab", "fault", inv, "clear", check=True)
    bw = _by_name(data)["rail-bandwidth"]
    assert rc == 1 and bw["status"] == "fail"
    bad = [m for m in bw["measurements"] if not m["ok"]]
    assert bad and all(m["rail"] == 2 and m["src"] == "gpu-su1-03" for m in bad)
    [loc] = bw["locations"]
    assert loc["rail"] == 2 and loc["hosts"] == ["gpu-su1-03"] and loc["suspects"] == []
    assert loc["rounds"] <= 3  # ⌈log2 4⌉ + 1
    assert "Located: host gpu-su1-03 rail 2" in bw["message"]
    assert any("leaf-su1-r2" in e for e in bw["evidence"])
    # the located host is handed to the scheduler: printed, not run (no --remediate)
    tail = stdout[stdout.index("remediation for"):]
    assert tail.startswith("remediation for 1 host(s) (slurm, kubernetes):")
    assert ("scontrol update NodeName=gpu-su1-03 State=DRAIN "
            "'Reason=roce-fabric: rail-bandwidth: rail 2 mlx5_1/rail2 failed'") in tail
    assert "undo: scontrol update NodeName=gpu-su1-03 State=RESUME" in tail
    assert "kubectl cordon -- gpu-su1-03" in tail
    assert "kubectl taint nodes --overwrite -- gpu-su1-03 fabric.roce.io/fault=rail2-rail-bandwidth:NoSchedule" in tail
    assert "undo: kubectl taint nodes -- gpu-su1-03 fabric.roce.io/fault:NoSchedule-" in tail
    assert "(printed only: --remediate runs them)" in tail and "gpu-su1-01" not in tail
    assert _leftover_tools() == []


def test_optics_reports_no_module_per_port_in_the_lab(inv: str) -> None:
    """veths have no pluggable module: every host NIC and switch port says so, nothing fails."""
    p = fabric("optics", inv, "--lab", "--format", "json", timeout=120)
    assert p.returncode == 0 and "Traceback" not in p.stderr, p.stdout + p.stderr
    rows = json.loads(p.stdout)
    hosts = [r for r in rows if r["side"] == "host"]
    assert len(hosts) == 4 * 4 and {r["status"] for r in rows} == {"no module"}
    r1 = next(r for r in hosts if (r["device"], r["port"]) == ("gpu-su1-01", "rail1"))
    assert (r1["nic"], r1["peer"], r1["where"]) == ("mlx5_0", "leaf-su1-r1:swp1", "gpu-su1-01 rail 1 mlx5_0/rail1")
    assert r1["reason"].startswith("no module (") and "not supported" in r1["reason"].lower()
    assert any(r["side"] == "switch" and r["device"].startswith("leaf-su1-r1") for r in rows)
    p = fabric("optics", inv, "--lab", timeout=120)
    assert p.returncode == 0 and "no module" in p.stdout and "ports:" in p.stdout


def test_downed_link_fails_cleanly(inv: str, tmp_path: Path) -> None:
    from fabric.design.derive import derive
    from fabric.model.load import load

    rail = next(r for r in derive(load(Path(inv))).hosts["gpu-su1-04"].rails if r.rail == 3)
    fabric("lab", "fault", inv, "link", f"{rail.leaf}:{rail.leaf_port}", "down", check=True)
    try:
        rc, data = _accept(inv, tmp_path, "--quick", "--tags", "rail-bandwidth,rail-latency,host-config")
    finally:
        fabric("lab", "fault", inv, "clear", check=True)
    r = _by_name(data)
    assert rc == 1
    assert all(x["status"] != "error" for x in data["results"]), data["results"]
    bw, lat = r["rail-bandwidth"], r["rail-latency"]
    assert bw["status"] == "fail" and lat["status"] == "fail"
    dead = [m for m in bw["measurements"] if not m["ok"]]
    assert dead and all(m["rail"] == 3 and "gpu-su1-04" in (m["src"], m["dst"]) for m in dead)
    assert all(m["value"] is None and m["detail"] for m in dead)
    assert bw["locations"][0]["hosts"] == ["gpu-su1-04"]
    junit = (tmp_path / "accept-junit.xml").read_text()
    assert "gpu-su1-04" in junit
    assert _leftover_tools() == []


def test_counters_reads_veth_statistics(inv: str) -> None:
    p = fabric("counters", inv, "--lab", "--format", "json", "--interval", "1", timeout=60)
    assert p.returncode == 0, p.stderr
    sample = json.loads(p.stdout)
    rows = sample["rows"]
    hosts = {(x["node"], x["port"]) for x in rows}
    assert ("gpu-su1-01", "rail1") in hosts and any(n.startswith("leaf-su1-r1") for n, _ in hosts)
    assert all("link" in x["exposed"] for x in rows)
    leaf = next(x for x in rows if x["node"] == "leaf-su1-r1" and x["port"] == "swp1")
    assert "queue" in leaf["exposed"] and set(leaf["queues_gbps"]) == {str(tc) for tc in range(8)}
    assert 0.5 < sample["seconds"] < 5 and sample["read_seconds"] > 0
    p = fabric("counters", inv, "--lab", "--watch", "1", "--count", "2", timeout=60)
    assert p.returncode == 0 and p.stdout.count("lossless counters, per second") == 2
    assert "queues Gb/s" in p.stdout
    # a read slower than the interval is said, with the span the rates are over
    p = fabric("counters", inv, "--lab", "--watch", "0.05", "--count", "1", "--workers", "1", timeout=60)
    assert p.returncode == 0 and "longer than the 0.05s interval" in p.stdout
