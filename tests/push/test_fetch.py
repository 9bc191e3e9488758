"""`fabric fetch` and `fabric plan --detailed-exitcode`: against the lab (real sshd and FRR), and against
switches that cannot be reached (a network namespace of the test's own with no route, so nothing leaves
the machine)."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.lab import FABRIC, ROOT, env, lab_state, require_lab

NAME = "fetchlab"
LEAF = "leaf-su1-r1"


def _inventory(dst: Path) -> Path:
    shutil.copytree(ROOT / "inventories" / "example", dst)
    fab = dst / "fabric.yaml"
    fab.write_text(fab.read_text().replace("name: example", f"name: {NAME}")
                   + "lab:\n  prefix: fl\n  management: 198.18.94.0/24\n")
    addr = dst / "addressing.yaml"
    addr.write_text(addr.read_text().replace("198.18.0.0/24", "198.18.94.0/24"))
    return dst


def run(*args: str, netns: bool = False, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    argv = ["unshare", "-n", FABRIC, *args] if netns else [FABRIC, *args]
    return subprocess.run(argv, capture_output=True, text=True, timeout=timeout, cwd=ROOT,
                          env={**env(), "FABRIC_PASSWORD": "x"})


@pytest.fixture
def unreachable_inventory(tmp_path: Path) -> Path:
    """The example with access settings, its switches at 198.18.0.x — unroutable inside `unshare -n`."""
    require_lab()
    inv = tmp_path / "inv"
    shutil.copytree(ROOT / "inventories" / "example", inv)
    (tmp_path / "known_hosts").write_text("")
    (inv / "access.yaml").write_text(f"access:\n  username: admin\n  known_hosts: {tmp_path / 'known_hosts'}\n")
    return inv


@pytest.mark.root
def test_fetch_and_plan_say_which_switches_are_unreachable_and_fail_fast(unreachable_inventory: Path,
                                                                        tmp_path: Path) -> None:
    t0 = time.monotonic()
    p = run("fetch", str(unreachable_inventory), "-o", str(tmp_path / "out"), netns=True)
    assert time.monotonic() - t0 < 30
    assert p.returncode == 1
    for sw in ("spine1", "spine2", "leaf-su1-r1", "leaf-su1-r4"):
        assert f"{sw}: unreachable" in p.stderr  # reported as it happens, display or not
        assert "TCP connection to 198.18.0." in p.stdout
    # one line per switch: what happened, the address, the timeout
    assert re.search(r"TCP connection to 198\.18\.0\.\d+:22 failed within 10 s \(Network is unreachable\)", p.stdout)
    assert "saved 0 of 6 running configurations" in p.stdout
    assert "error: none of the 6 switches of example answered" in p.stderr
    assert not list((tmp_path / "out").iterdir())

    p = run("plan", str(unreachable_inventory), "--detailed-exitcode", "--format", "json", netns=True)
    assert p.returncode == 1
    assert json.loads(p.stdout)["summary"] == {"unreachable": 6}
    assert "error: none of the 6 switches of example answered" in p.stderr


@pytest.mark.root
@pytest.mark.parametrize(("argv", "kind", "count"), [
    (["counters"], "hosts and switches", 10),
    (["accept", "--quick", "-o", "{tmp}/accept"], "hosts", 4),
    (["hosts", "plan"], "hosts", 4),
    (["apply", "--yes"], "switches", 6),
])
def test_commands_that_reach_devices_name_the_unreachable_and_fail_in_seconds(
        unreachable_inventory: Path, tmp_path: Path, argv: list[str], kind: str, count: int) -> None:
    t0 = time.monotonic()
    args = [a.replace("{tmp}", str(tmp_path)) for a in argv]
    n = 2 if argv[0] == "hosts" else 1
    p = run(*args[:n], str(unreachable_inventory), *args[n:], netns=True)
    assert time.monotonic() - t0 < 30, "unreachable devices must be reported in seconds"
    assert p.returncode == 1, p.stdout + p.stderr
    for device in ("gpu-su1-01", "gpu-su1-04") if "hosts" in kind else ("spine1", "leaf-su1-r4"):
        assert f"{device}: unreachable" in p.stderr
    assert f"error: none of the {count} {kind} of example answered" in p.stderr


# A namespace where the switches' and hosts' addresses resolve to a veth whose peer drops everything: no
# error comes back, every connection attempt must run into its timeout (the slow case of a real outage).
BLACKHOLE = """set -e
ip link set lo up
ip link add v0 type veth peer name v1
ip addr add 198.18.0.254/24 dev v0
ip link set v0 up; ip link set v1 up
for i in $(seq 1 20); do ip neigh replace 198.18.0.$i lladdr 02:00:00:00:00:01 dev v0 nud permanent; done
exec "$@"
"""


def _blackholed(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["unshare", "-n", "sh", "-c", BLACKHOLE, "sh", FABRIC, *argv], capture_output=True,
                          text=True, timeout=120, cwd=ROOT, env={**env(), "FABRIC_PASSWORD": "x"})


@pytest.mark.root
def test_silent_switches_time_out_together_not_one_after_another(unreachable_inventory: Path,
                                                                 tmp_path: Path) -> None:
    t0 = time.monotonic()
    p = _blackholed("fetch", str(unreachable_inventory), "--timeout", "3", "--format", "json", "-o", str(tmp_path))
    wall = time.monotonic() - t0
    assert p.returncode == 1 and "answered" in p.stderr, p.stdout + p.stderr
    devices = json.loads(p.stdout)["devices"]
    assert {d["status"] for d in devices} == {"unreachable"} and len(devices) == 6
    assert all(2.5 < d["seconds"] < 10 for d in devices), devices  # each ran into its 3 s timeout
    assert wall < sum(d["seconds"] for d in devices), "the timeouts must run concurrently, not one after another"


@pytest.mark.root
def test_silent_hosts_and_switches_are_reported_within_seconds(unreachable_inventory: Path) -> None:
    t0 = time.monotonic()
    p = _blackholed("counters", str(unreachable_inventory))
    assert time.monotonic() - t0 < 30, "connect timeouts must be short and run concurrently"
    assert p.returncode == 1 and "answered" in p.stderr, p.stdout + p.stderr
    assert "spine1: unreachable" in p.stderr and "gpu-su1-01: unreachable" in p.stderr


def test_plan_detailed_exitcode_refuses_offline() -> None:
    p = subprocess.run([FABRIC, "plan", "inventories/example", "--offline", "--detailed-exitcode"],
                       capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert p.returncode == 2 and "error: --detailed-exitcode: expected a plan against the switches" in p.stderr
    help_text = subprocess.run([FABRIC, "plan", "--help"], capture_output=True, text=True, cwd=ROOT, timeout=60,
                               env={**env(), "COLUMNS": "200"}).stdout
    assert "exit 0 in sync, 3 changes pending, 1 a switch unreachable or failed, 2 bad input" in help_text


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    require_lab()
    inv = _inventory(tmp_path_factory.mktemp("fetchlab") / "inv")
    try:
        p = run("lab", "up", str(inv), "--timeout", "90", timeout=180)
        assert p.returncode == 0, p.stdout + p.stderr
        yield inv
    finally:
        assert run("lab", "down", str(inv)).returncode == 0


@pytest.mark.root
@pytest.mark.lab
def test_fetch_saves_every_switch_where_lint_reads_it_and_detailed_exitcode_tells_drift(lab: Path,
                                                                                       tmp_path: Path) -> None:
    out = tmp_path / "fetched"
    p = run("fetch", str(lab), "--lab", "-o", str(out))
    assert p.returncode == 0, p.stdout + p.stderr
    files = sorted(f.name for f in out.iterdir())
    assert files == sorted(f"{s}.conf" for s in ("spine1", "spine2", *(f"leaf-su1-r{r}" for r in range(1, 5))))
    text = (out / f"{LEAF}.conf").read_text()
    assert text.startswith("!\nfrr version") and "router bgp 65101" in text and "Building configuration" not in text
    assert "saved 6 of 6 running configurations" in p.stdout
    # running configs hold secrets: 0600 files in a 0700 directory; a symlink planted at a switch's file is
    # replaced, its target never written; a file where the directory should be is exit 2, no traceback
    assert (out.stat().st_mode & 0o777, (out / f"{LEAF}.conf").stat().st_mode & 0o777) == (0o700, 0o600)
    victim = tmp_path / "victim"
    victim.write_text("untouched\n")
    (out / f"{LEAF}.conf").unlink()
    (out / f"{LEAF}.conf").symlink_to(victim)
    assert run("fetch", str(lab), "--lab", "-o", str(out), "--limit", LEAF).returncode == 0
    assert victim.read_text() == "untouched\n" and not (out / f"{LEAF}.conf").is_symlink()
    p = run("fetch", str(lab), "--lab", "-o", str(victim))
    assert p.returncode == 2 and "expected a directory, found a file" in p.stderr and "Traceback" not in p.stderr

    # the saved files are what `lint --configs` reads (none recognised would be exit 2): the lab's FRR
    # matches the inventory's policy
    p = run("lint", str(lab), "--configs", str(out), "--format", "json")
    assert p.returncode == 0, p.stdout + p.stderr
    assert not [f for f in json.loads(p.stdout)["findings"] if f["severity"] != "info"]

    # without --lab the inventory's addresses are the lab's management bridge, but not its key: no silent
    # empty table, and the hint names the lab
    p = run("counters", str(lab), "--no-switches")
    assert p.returncode == 1 and "a lab of this fabric is running: add --lab" in p.stderr, p.stderr

    assert run("plan", str(lab), "--lab", "--detailed-exitcode").returncode == 0  # in sync
    # a drift inside what the tool owns (a hand prefix-list would be left alone, not drift)
    lab_state(NAME).vtysh(LEAF, "configure terminal", "router bgp 65101", "timers bgp 5 15")
    try:
        p = run("plan", str(lab), "--lab", "--detailed-exitcode")
        assert p.returncode == 3, p.stdout + p.stderr
        assert "1 changed, 5 unchanged" in p.stdout
        assert run("plan", str(lab), "--lab").returncode == 0  # without the flag: drift is no failure
        run("fetch", str(lab), "--lab", "-o", str(out), "--limit", LEAF)
        assert " timers bgp 5 15\n" in (out / f"{LEAF}.conf").read_text()
        # the rollout says its order before it changes anything
        p = subprocess.run([FABRIC, "apply", str(lab), "--lab", "--yes", "--settle", "1", "--postcheck-timeout", "8",
                            "--confirm-timer", "25"], capture_output=True, text=True, timeout=120, cwd=ROOT,
                           env={**env(), "FABRIC_STATE": str(tmp_path / "state")})
        assert p.returncode == 0, p.stdout + p.stderr
        order = p.stdout.index(f"  canary    {LEAF}\n")
        assert p.stdout.index("rollout: 1 switches in 1 steps") < order < p.stdout.index("1 applied")
        assert run("plan", str(lab), "--lab", "--detailed-exitcode").returncode == 0
    finally:
        lab_state(NAME).vtysh(LEAF, "configure terminal", "router bgp 65101", "timers bgp 3 9")


def test_rollout_order_is_printed_canary_then_batches() -> None:
    from rich.console import Console

    from fabric.cli.push import print_order
    from fabric.push.engine import batches

    console = Console(record=True, width=200)
    names = [f"leaf{i}" for i in range(1, 7)]
    print_order(batches(names, 1, "40%"), 1, console)
    assert console.export_text().splitlines() == [
        "rollout: 6 switches in 4 steps, each after the one before succeeded",
        "  canary    leaf1", "  batch 1   leaf2, leaf3", "  batch 2   leaf4, leaf5", "  batch 3   leaf6"]
    console = Console(record=True, width=200)
    print_order(batches(names[:2], 0, "1"), 0, console)
    assert console.export_text().splitlines()[1:] == ["  batch 1   leaf1", "  batch 2   leaf2"]


@pytest.mark.root
@pytest.mark.lab
def test_accept_names_an_unreachable_host_and_cannot_pass_without_it(lab: Path, tmp_path: Path) -> None:
    """One host's sshd gone (the last test on this lab): accept says so at once, the report fails on it."""
    import os
    import signal

    pidfile = lab_state(NAME).ssh_dir() / "sshd_gpu-su1-04.pid"
    os.kill(int(pidfile.read_text().split()[0]), signal.SIGTERM)
    # a check that runs on the hosts (bgp alone reads only the switches and would not need them)
    p = run("accept", str(lab), "--lab", "--via", "ssh", "--tags", "bgp,host-config", "-o", str(tmp_path),
            "--format", "json")
    assert p.returncode == 1, p.stdout + p.stderr
    assert "gpu-su1-04: unreachable" in p.stderr and "gpu-su1-01: unreachable" not in p.stderr
    results = json.loads((tmp_path / "accept.json").read_text())["results"]
    assert results[0]["check"] == "reachability" and results[0]["status"] == "fail"
    assert "1 of 4 did not: gpu-su1-04" in results[0]["message"]
    by_check = {r["check"]: r for r in results[1:]}
    assert by_check["bgp"]["status"] == "pass"  # judged on the switches, which all answered
    assert "gpu-su1-04" in json.dumps(by_check["host-config"])  # the host that did not answer is named
