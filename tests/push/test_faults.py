"""The fault suite of `fabric apply`, against the SONiC, NVUE and EOS SSH stand-ins.

Each test breaks one thing at the worst moment and asserts that every device ends as it was (or as the
operator chose) and that the next run says clearly what happened:
- the tool SIGKILLed between commit and confirm: the next plan warns, the next apply refuses, the
  device's confirm timer (SONiC: the tool's own device-side job) reverts, `apply --resume` reads it back
  and finishes the rollout; `fabric rollback` reverts a transaction still waiting;
- the tool sent SIGTERM mid-rollout: the committed change is rolled back, audited, exit 143;
- two applies at once: the second is refused by the lock the first holds;
- the session dropped after the commit, on every target: reconnected, the transaction read back and
  rolled back; with the switch unreachable the result is `pending` (not verified), never a guess;
- the session lost right after the switch confirmed: read back, reported `applied` (not a revert);
- a reply after the commit that is not what was expected (bgpd restarting): rolled back, no traceback;
- a read-only or full state directory: refused before any device is touched;
- a failed batch: the rollout stops and `--rollback-on-failure` returns the earlier batch;
- drain/undrain go through the same transaction.
(FRR against real FRR: tests/nos/frr/test_driver.py.)
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

from fabric.targets.owned import apply_leaves, tree_leaves
from tests.conftest import ROOT
from tests.push.test_standins import FABRIC, RUNNING, _inventory, _json, _prereq, eos, nvue, run
from tests.standins.common import read_json, write_json
from tests.standins.harness import StandinNet, seed, standins

FIXTURES = (eos, nvue)  # the stand-in fixtures, used through request.getfixturevalue

pytestmark = [pytest.mark.root]
LEAVES = ("leaf-su1-r1", "leaf-su1-r2")
# The device confirm timers, through the options users have (`apply --confirm-timer` ≥ --postcheck-timeout +
# --settle + 10). SLOW: a settle long enough to act on the committed change, a timer that still outlasts the next
# plan and refused apply, then fires (two tests wait for it); FAST: the tool confirms at once.
# (Under a loaded machine the next plan and apply take seconds each: SLOW's timer stays at 25 s.)
SLOW = ("--settle", "4", "--postcheck-timeout", "3", "--confirm-timer", "25")
FAST = ("--settle", "0.5", "--postcheck-timeout", "3", "--confirm-timer", "20")
LIMIT = ("--limit", ",".join(LEAVES))
# LONG: the tool, not the timer, acts. A dropped session can show only as a read timeout (60 s, fabric.targets.shell
# run), after which the tool reconnects and reads back: the timer outlasts both, or the device reverts first.
LONG = ("--settle", "4", "--postcheck-timeout", "3", "--confirm-timer", "120")


def _intents(inv: Path) -> dict[str, tuple[object, dict]]:
    from fabric.design.derive import derive
    from fabric.model.load import load
    from fabric.render import render_switch

    fabric = derive(load(inv))
    return {n: (fabric.switches[n], render_switch(fabric.switches[n], fabric)) for n in LEAVES}


@pytest.fixture
def sonic2(tmp_path: Path) -> Iterator[tuple[StandinNet, Path, Path]]:
    """Two SONiC leaves on the msn2700 running config, each with a hand change the apply reverts."""
    _prereq()
    inv = _inventory("sonic-example", tmp_path / "inv", tmp_path)
    intents = _intents(inv)
    devices = {n: ("sonic", sw.management.split("/")[0]) for n, (sw, _f) in intents.items()}
    with standins(tmp_path, devices) as net:
        for n, (_sw, files) in intents.items():
            intended = json.loads(files["config_db.json"])
            running = apply_leaves(json.loads((RUNNING / "sonic" / "msn2700.json").read_text()),
                                   tree_leaves(intended), ())
            key = next(iter(running["BGP_NEIGHBOR"]))
            running["BGP_NEIGHBOR"][key]["holdtime"] = "180"  # a hand change
            asn = int(intended["BGP_GLOBALS"]["default"]["local_asn"])
            # the second leaf's peers check the AS it configures for them too (its OPEN), the first's only their own
            seed(net.devices[n], "sonic", json.dumps(running),
                 {k.split("|")[1]: [asn, int(v["asn"])] if n == LEAVES[1] else asn
                  for k, v in intended["BGP_NEIGHBOR"].items()})
        yield net, inv, tmp_path / "state"


def _env(state: Path) -> dict[str, str]:
    e = {**os.environ, "FABRIC_STATE": str(state), "COLUMNS": "200", "FABRIC_LAB_STATE": str(state / "no-lab")}
    e.pop("SSH_AUTH_SOCK", None)
    return e


def _start(net: StandinNet, state: Path, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(net.argv([FABRIC, *args]), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=_env(state), cwd=ROOT, stdin=subprocess.DEVNULL, start_new_session=True)


def _job_state(d: Path) -> tuple[Path | None, str]:
    """The SONiC device-side job of the latest transaction and its state."""
    jobs = sorted((d / ".roce-fabric").glob("roce-fabric-*/state"), key=lambda p: p.stat().st_mtime)
    return (jobs[-1].parent, jobs[-1].read_text().strip()) if jobs else (None, "")


def _wait(cond, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not cond():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.1)


def _tool_pid(net: StandinNet, proc: subprocess.Popen[str]) -> int:
    """The fabric process itself (the child of `ip netns exec`, which execs it: the same pid)."""
    return proc.pid


def test_sigkill_mid_rollout_then_plan_apply_resume_and_rollback(sonic2: tuple[StandinNet, Path, Path]) -> None:
    net, inv, state = sonic2
    d = net.devices[LEAVES[0]]
    before = read_json(d / "running.json")
    proc = _start(net, state, "apply", str(inv), "--limit", LEAVES[0], "--yes", "--format", "json", *SLOW)
    try:
        _wait(lambda: _job_state(d)[1] == "waiting", 60, "the patch on the device")
        os.kill(_tool_pid(net, proc), signal.SIGKILL)  # no handler can run
        proc.wait(timeout=10)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert read_json(d / "running.json") != before  # committed, not confirmed
    assert (state / "sonic-example" / "records" / f"{LEAVES[0]}.pending.json").exists()

    p = run(net, "plan", str(inv), *LIMIT, "--format", "json", state=state)
    assert "did not finish" in p.stderr and f"{LEAVES[0]} (sonic): committed" in p.stderr, p.stderr
    p = run(net, "apply", str(inv), *LIMIT, "--yes", *FAST, state=state)
    assert p.returncode == 2 and "--resume" in p.stderr and LEAVES[0] in p.stderr, p.stdout + p.stderr
    assert _job_state(d)[1] == "waiting"  # the refusal touched nothing

    # the device-side timer reverts what the killed tool never confirmed
    _wait(lambda: _job_state(d)[1] == "reverted", 60, "the device's confirm timer")
    assert read_json(d / "running.json") == before and not (d / "startup.json").exists()

    # --resume reads the device back, reports it, then finishes the rollout
    p = run(net, "apply", str(inv), *LIMIT, "--resume", "--yes", "--format", "json", *FAST, state=state)
    res = _json(p)
    assert p.returncode == 0, p.stdout + p.stderr
    assert res[LEAVES[0]]["status"] == "applied" and res[LEAVES[1]]["status"] == "applied"
    audit = [json.loads(ln) for ln in (state / "sonic-example" / "audit.jsonl").read_text().splitlines()]
    assert ("resume", "reverted-by-timer") in {(e["action"], e["result"]) for e in audit if e["device"] == LEAVES[0]}
    assert not list((state / "sonic-example" / "records").glob("*.pending.json"))
    assert not (state / "sonic-example" / "journal.json").exists()

    # killed again while waiting: `fabric rollback` cancels the waiting transaction on the device
    applied = read_json(d / "running.json")
    running = dict(applied)
    key = next(iter(running["BGP_NEIGHBOR"]))
    running["BGP_NEIGHBOR"][key] = {**running["BGP_NEIGHBOR"][key], "holdtime": "180"}
    write_json(d / "running.json", running)
    proc = _start(net, state, "apply", str(inv), "--limit", LEAVES[0], "--yes", *SLOW)
    try:
        _wait(lambda: _job_state(d)[1] == "waiting", 60, "the second patch")
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)
    finally:
        if proc.poll() is None:
            proc.kill()
    p = run(net, "rollback", str(inv), LEAVES[0], "--yes", "--format", "json", *FAST, state=state)
    assert p.returncode == 0, p.stdout + p.stderr
    assert _json(p)[LEAVES[0]]["status"] == "rolled-back"
    assert _job_state(d)[1] == "reverted" and read_json(d / "running.json") == running


def test_sigterm_rolls_back_the_committed_change_and_audits(sonic2: tuple[StandinNet, Path, Path]) -> None:
    net, inv, state = sonic2
    d = net.devices[LEAVES[0]]
    before = read_json(d / "running.json")
    proc = _start(net, state, "apply", str(inv), *LIMIT, "--yes", "--format", "json", "--canary", "1", *SLOW)
    try:
        _wait(lambda: _job_state(d)[1] == "waiting", 60, "the patch on the device")
        os.kill(proc.pid, signal.SIGTERM)
        out, err = proc.communicate(timeout=90)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 143, out + err
    res = {x["device"]: x for x in json.loads(out)["devices"]}
    assert res[LEAVES[0]]["status"] == "rolled-back" and "SIGTERM" in res[LEAVES[0]]["detail"]
    assert res[LEAVES[1]]["status"] == "skipped"
    assert read_json(d / "running.json") == before and _job_state(d)[1] == "reverted"
    audit = [json.loads(ln) for ln in (state / "sonic-example" / "audit.jsonl").read_text().splitlines()]
    assert audit[-1]["device"] == LEAVES[0] and audit[-1]["result"] == "rolled-back"
    assert not list((state / "sonic-example" / "records").glob("*.pending.json"))


def test_two_applies_at_once_the_second_is_refused(sonic2: tuple[StandinNet, Path, Path]) -> None:
    """Both runs share the state directory (on several machines: a shared mount, see docs/plan-apply.md)."""
    from fabric.push import state as st

    net, inv, state = sonic2
    first = _start(net, state, "apply", str(inv), "--limit", LEAVES[0], "--yes", *SLOW)
    try:
        os.environ["FABRIC_STATE"], old = str(state), os.environ.get("FABRIC_STATE")
        try:
            _wait(lambda: st.lock_held("sonic-example"), 60, "the first apply's lock")
        finally:
            os.environ.pop("FABRIC_STATE") if old is None else os.environ.__setitem__("FABRIC_STATE", old)
        p = run(net, "apply", str(inv), *LIMIT, "--yes", *FAST, state=state)
        assert p.returncode == 2 and "another apply of sonic-example is running" in p.stderr, p.stderr
        assert f"pid {first.pid}" in p.stderr
        out, err = first.communicate(timeout=120)
        assert first.returncode == 0, out + err
    finally:
        if first.poll() is None:
            first.kill()
    assert run(net, "apply", str(inv), *LIMIT, "--yes", *FAST, state=state).returncode == 0  # released


def _session_pids(net: StandinNet) -> list[int]:
    """sshd's per-connection processes (children of the listener): killing them drops the sessions."""
    listener = int((net.root.parent / "sshd.pid").read_text())
    out = []
    for p in Path("/proc").iterdir():
        if p.name.isdigit():
            try:
                if int((p / "stat").read_text().rsplit(")", 1)[1].split()[1]) == listener:
                    out.append(int(p.name))
            except (OSError, IndexError, ValueError):
                continue
    return out


def test_session_dropped_after_commit_is_read_back_and_rolled_back(sonic2: tuple[StandinNet, Path, Path]) -> None:
    net, inv, state = sonic2
    d = net.devices[LEAVES[0]]
    before = read_json(d / "running.json")
    proc = _start(net, state, "apply", str(inv), "--limit", LEAVES[0], "--yes", "--format", "json", *LONG)
    try:
        _wait(lambda: _job_state(d)[1] == "waiting", 60, "the patch on the device")
        for pid in _session_pids(net):
            os.kill(pid, signal.SIGKILL)
        killed = time.monotonic()
        out, err = proc.communicate(timeout=90)
        took = time.monotonic() - killed
    finally:
        if proc.poll() is None:
            proc.kill()
    res = json.loads(out)["devices"][0]
    assert proc.returncode == 1 and res["status"] == "rolled-back", out + err
    # the loss is seen at once, not at the waiting command's 60 s read timeout (then a new session rolls back)
    assert took < 45, f"the apply ended {took:.0f} s after its session was killed"
    assert "connection lost" in res["detail"]
    assert read_json(d / "running.json") == before and _job_state(d)[1] == "reverted"


def test_switch_unreachable_after_commit_is_pending_not_a_guess(sonic2: tuple[StandinNet, Path, Path]) -> None:
    net, inv, state = sonic2
    d = net.devices[LEAVES[0]]
    before = read_json(d / "running.json")
    proc = _start(net, state, "apply", str(inv), "--limit", LEAVES[0], "--yes", "--format", "json", *SLOW)
    listener = int((net.root.parent / "sshd.pid").read_text())
    try:
        _wait(lambda: _job_state(d)[1] == "waiting", 60, "the patch on the device")
        os.kill(listener, signal.SIGSTOP)  # the management network is gone: no reconnect
        for pid in _session_pids(net):
            os.kill(pid, signal.SIGKILL)
        out, err = proc.communicate(timeout=120)
    finally:
        os.kill(listener, signal.SIGCONT)
        if proc.poll() is None:
            proc.kill()
    res = json.loads(out)["devices"][0]
    assert proc.returncode == 1 and res["status"] == "pending", out + err
    assert "not verified" in res["detail"] and "confirm timer" in res["detail"]
    assert (state / "sonic-example" / "records" / f"{LEAVES[0]}.pending.json").exists()
    _wait(lambda: _job_state(d)[1] == "reverted", 60, "the device's timer")
    assert read_json(d / "running.json") == before


@pytest.mark.parametrize("how", ["read-only", "full"])
def test_state_directory_unwritable_refuses_before_any_device(sonic2: tuple[StandinNet, Path, Path], tmp_path: Path,
                                                              how: str) -> None:
    net, inv, _state = sonic2
    d = net.devices[LEAVES[0]]
    before = read_json(d / "running.json")
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    prepare = (f"mkdir -p {mnt}/sonic-example && mount -o remount,ro {mnt}" if how == "read-only"
               else f"head -c 2M /dev/zero > {mnt}/fill 2>/dev/null;")
    script = (f"mount -t tmpfs -o size=1m tmpfs {mnt} && {prepare} "
              f"exec {' '.join(net.argv([FABRIC, 'apply', str(inv), *LIMIT, '--yes', *FAST]))}")
    if how == "read-only":
        script = script.replace(f"mount -o remount,ro {mnt} exec", f"mount -o remount,ro {mnt} && exec")
    p = subprocess.run(["unshare", "-m", "sh", "-c", script], capture_output=True, text=True, timeout=120,
                       env=_env(mnt), cwd=ROOT, stdin=subprocess.DEVNULL)
    assert p.returncode == 2, p.stdout + p.stderr
    assert p.stderr.startswith(f"error: state directory {mnt}/sonic-example: expected writable") and \
        "nothing was changed" in p.stderr, p.stderr
    assert read_json(d / "running.json") == before and not (d / "checkpoints").exists()


def test_failed_batch_stops_and_rollback_on_failure_returns_the_earlier_batch(
        sonic2: tuple[StandinNet, Path, Path]) -> None:
    net, inv, state = sonic2
    first = net.devices[LEAVES[0]]
    before = read_json(first / "running.json")
    bad = inv.parent / "bad"
    shutil.copytree(inv, bad)
    fab = bad / "fabric.yaml"  # a wrong spine ASN: the second leaf's peers stay down, its post-check fails
    fab.write_text(fab.read_text() + "switches:\n  - {name: spine1, asn: 65199}\n  - {name: spine2, asn: 65199}\n")
    p = run(net, "apply", str(bad), *LIMIT, "--yes", "--format", "json", "--canary", "1", "--batch", "1",
            "--rollback-on-failure", *FAST, state=state)
    res = _json(p)
    assert p.returncode == 1, p.stdout + p.stderr
    assert res[LEAVES[1]]["status"] == "rolled-back" and "post-check failed" in res[LEAVES[1]]["detail"]
    assert res[LEAVES[0]]["status"] == "rolled-back" and "--rollback-on-failure" in res[LEAVES[0]]["detail"]
    assert read_json(first / "running.json") == before
    audit = [(e["device"], e["action"], e["result"]) for e in
             map(json.loads, (state / "sonic-example" / "audit.jsonl").read_text().splitlines())]
    assert audit == [(LEAVES[0], "apply", "applied"), (LEAVES[1], "apply", "rolled-back"),
                     (LEAVES[0], "rollback", "applied")]


def _nvue_waiting(d: Path) -> bool:
    return bool((read_json(d / "meta.json") or {}).get("confirm"))


def _eos_waiting(d: Path) -> bool:
    return (d / "pending.json").exists()


@pytest.mark.parametrize("target", ["nvue", "eos"])
def test_session_dropped_after_commit_on_nvue_and_eos(target: str, request: pytest.FixtureRequest) -> None:
    """The same fault as on SONiC (above) and FRR (nos/frr/test_driver.py): read back, rolled back."""
    from tests.push.test_standins import LEAF

    net, inv, state = request.getfixturevalue(target)[:3]
    d = net.devices[LEAF]
    snapshot = (lambda: read_json(d / "meta.json")["applied"]) if target == "nvue" else \
        (lambda: (d / "running.cfg").read_text())
    before = snapshot()
    proc = _start(net, state, "apply", str(inv), "--limit", LEAF, "--yes", "--format", "json", *LONG)
    try:
        _wait(lambda: (_nvue_waiting if target == "nvue" else _eos_waiting)(d), 60, "the commit on the device")
        for pid in _session_pids(net):
            os.kill(pid, signal.SIGKILL)
        killed = time.monotonic()
        out, err = proc.communicate(timeout=90)
        took = time.monotonic() - killed
    finally:
        if proc.poll() is None:
            proc.kill()
    res = json.loads(out)["devices"][0]
    assert proc.returncode == 1 and res["status"] == "rolled-back", out + err
    # the loss is seen at once, not at the waiting command's 60 s read timeout (then a new session rolls back)
    assert took < 45, f"the apply ended {took:.0f} s after its session was killed"
    assert "connection lost" in res["detail"] and res["detail"].endswith("rolled back")
    assert not (_nvue_waiting if target == "nvue" else _eos_waiting)(d)
    assert snapshot() == before if target == "eos" else read_json(d / "meta.json")["history"][-1]["how"] == "confirm-no"


def test_drain_and_undrain_through_the_transaction_on_sonic(sonic2: tuple[StandinNet, Path, Path]) -> None:
    """drain sets BGP_GLOBALS graceful_shutdown as a confirmed transaction (checkpoint, job, save) and measures the
    fabric ports before (the stand-in's queue counters carry 80 Mbit/s on TC3 until the drain) and after (quiet);
    undrain removes exactly that, shown as rendered by an earlier apply."""
    net, inv, state = sonic2
    d = net.devices[LEAVES[0]]
    assert run(net, "apply", str(inv), *LIMIT, "--yes", *FAST, state=state).returncode == 0
    applied = read_json(d / "running.json")
    sw, _files = _intents(inv)[LEAVES[0]]
    uplinks = [p.name for p in sw.ports if p.kind == "fabric"]
    assert uplinks
    write_json(d / "telemetry.json", {"routes": {}, "ports": {
        p: {"flow": {"tc": 3, "bps": 40e6, "since": time.time()}} for p in uplinks[:2]}})
    p = run(net, "drain", str(inv), LEAVES[0], "--yes", "--format", "json", "--interval", "3", *FAST, state=state)
    res = json.loads(p.stdout)
    assert p.returncode == 0 and res["status"] == "applied", p.stdout + p.stderr
    assert res["sections"] == {"BGP_GLOBALS|default": ["+ graceful_shutdown=true"]}
    assert res["fabric_ports"] == uplinks
    # two reads 3 s apart over ssh: the two flows' 80 Mbit/s, give or take how long each read takes on the switch
    assert 0.5 * 80e6 <= res["before_bps"] <= 1.5 * 80e6, res
    assert res["after_bps"] == 0 and res["quiet"] is True, res
    assert read_json(d / "running.json")["BGP_GLOBALS"]["default"]["graceful_shutdown"] == "true"
    assert read_json(d / "startup.json") == read_json(d / "running.json")  # confirmed: config save
    plan = _json(run(net, "plan", str(inv), *LIMIT, "--format", "json", state=state))[LEAVES[0]]
    assert plan["sections"] == {"BGP_GLOBALS|default": [
        "- graceful_shutdown=true  (rendered by an earlier apply, no longer in the inventory)"]}
    p = run(net, "undrain", str(inv), LEAVES[0], "--yes", "--format", "json", *FAST, state=state)
    assert p.returncode == 0 and json.loads(p.stdout)["status"] == "applied", p.stdout + p.stderr
    assert read_json(d / "running.json") == applied
    audit = [(e["action"], e["result"]) for e in
             map(json.loads, (state / "sonic-example" / "audit.jsonl").read_text().splitlines())]
    assert audit[-2:] == [("drain", "applied"), ("undrain", "applied")]


@pytest.fixture
def sonic_bgpcfgd(tmp_path: Path) -> Iterator[tuple[StandinNet, Path, Path, list[str]]]:
    """One SONiC leaf as a stock image runs it: bgpcfgd (no frr_mgmt_framework_config; the msn2700 base, TSA off in
    BGP_DEVICE_GLOBAL|STATE) with BGP neighbours in bgpcfgd's form (the S6000 ToR dump's BGP_NEIGHBOR, a real
    switch's), and traffic on two fabric ports."""
    _prereq()
    inv = _inventory("sonic-example", tmp_path / "inv", tmp_path)
    sw, _files = _intents(inv)[LEAVES[0]]
    uplinks = [p.name for p in sw.ports if p.kind == "fabric"]
    with standins(tmp_path, {LEAVES[0]: ("sonic", sw.management.split("/")[0])}) as net:
        running = json.loads((RUNNING / "sonic" / "msn2700.json").read_text())
        tor = json.loads((ROOT / "tests" / "fixtures" / "brownfield" / "sonic" / "dell-s6000-tor.json").read_text())
        running["BGP_NEIGHBOR"] = tor["BGP_NEIGHBOR"]
        d = net.devices[LEAVES[0]]
        seed(d, "sonic", json.dumps(running), {})
        write_json(d / "telemetry.json", {"routes": {}, "ports": {
            p: {"flow": {"tc": 3, "bps": 40e6, "since": time.time()}} for p in uplinks[:2]}})
        yield net, inv, tmp_path / "state", uplinks


def test_drain_on_a_bgpcfgd_switch_is_sonics_traffic_shift(
        sonic_bgpcfgd: tuple[StandinNet, Path, Path, list[str]]) -> None:
    """bgpcfgd drops BGP_GLOBALS graceful_shutdown: the drain is TSA (BGP_DEVICE_GLOBAL|STATE tsa_enabled, checked
    with TSC, saved), the traffic leaves the fabric ports; again: already in Maintenance; undrain is TSB."""
    net, inv, state, uplinks = sonic_bgpcfgd
    d = net.devices[LEAVES[0]]
    before = read_json(d / "running.json")
    p = run(net, "drain", str(inv), LEAVES[0], "--yes", "--format", "json", "--interval", "3", *FAST, state=state)
    res = json.loads(p.stdout)
    assert p.returncode == 0 and res["status"] == "applied", p.stdout + p.stderr
    assert res["detail"] == ("TSA (the switch runs bgpcfgd): System Mode: Normal -> Maintenance; "
                             "TSC: System Mode: Maintenance; config saved")
    assert res["sections"] == {} and res["fabric_ports"] == uplinks
    assert 0.5 * 80e6 <= res["before_bps"] <= 1.5 * 80e6 and res["after_bps"] == 0 and res["quiet"] is True, res
    drained = read_json(d / "running.json")
    assert drained["BGP_DEVICE_GLOBAL"]["STATE"] == {**before["BGP_DEVICE_GLOBAL"]["STATE"], "tsa_enabled": "true"}
    assert {t: v for t, v in drained.items() if t != "BGP_DEVICE_GLOBAL"} == \
        {t: v for t, v in before.items() if t != "BGP_DEVICE_GLOBAL"}  # nothing else: no push of the intent
    assert read_json(d / "startup.json") == drained  # survives a reboot in maintenance
    p = run(net, "drain", str(inv), LEAVES[0], "--yes", "--format", "json", "--interval", "0.5", *FAST, state=state)
    again = json.loads(p.stdout)
    assert p.returncode == 0 and again["status"] == "unchanged", p.stdout + p.stderr
    assert again["detail"].startswith("TSA (the switch runs bgpcfgd): System is already in Maintenance; TSC: System "
                                      "Mode: Maintenance")
    p = run(net, "undrain", str(inv), LEAVES[0], "--yes", "--format", "json", *FAST, state=state)
    res = json.loads(p.stdout)
    assert p.returncode == 0 and res["status"] == "applied", p.stdout + p.stderr
    assert res["detail"].startswith("TSB (the switch runs bgpcfgd): System Mode: Maintenance -> Normal")
    assert read_json(d / "running.json") == before
    audit = [(e["action"], e["result"]) for e in
             map(json.loads, (state / "sonic-example" / "audit.jsonl").read_text().splitlines())]
    assert audit == [("drain", "applied"), ("undrain", "applied")]


def test_a_drain_that_cannot_act_says_so(sonic_bgpcfgd: tuple[StandinNet, Path, Path, list[str]]) -> None:
    """A bgpcfgd switch without BGP neighbours: TSC says `No external neighbors`, TSA would have nothing to isolate;
    the drain is an error (exit 1), the switch untouched, nothing saved, never `applied`."""
    net, inv, state, _uplinks = sonic_bgpcfgd
    d = net.devices[LEAVES[0]]
    running = read_json(d / "running.json")
    del running["BGP_NEIGHBOR"]
    write_json(d / "running.json", running)
    p = run(net, "drain", str(inv), LEAVES[0], "--yes", "--format", "json", "--interval", "0.5", *FAST, state=state)
    res = json.loads(p.stdout)
    assert p.returncode == 1 and res["status"] == "error", p.stdout + p.stderr
    assert res["detail"].startswith("TSC: System Mode: No external neighbors: the switch runs bgpcfgd and has no BGP "
                                    "neighbour with an outbound route map for TSA to isolate")
    assert res["detail"].endswith("device unchanged") and res["quiet"] is None
    assert read_json(d / "running.json") == running and not (d / "startup.json").exists()
    p = run(net, "drain", str(inv), LEAVES[0], "--yes", *FAST, state=state)
    assert p.returncode == 1 and "drain error: TSC: System Mode: No external neighbors" in p.stdout, p.stdout


def test_an_unexpected_reply_after_commit_rolls_back_without_a_traceback(
        sonic2: tuple[StandinNet, Path, Path]) -> None:
    """Not a transport error: the post-check's `show bgp summary json` is not JSON (bgpd restarting)."""
    net, inv, state = sonic2
    d = net.devices[LEAVES[0]]
    before = read_json(d / "running.json")
    proc = _start(net, state, "apply", str(inv), "--limit", LEAVES[0], "--yes", "--format", "json", *LONG)
    try:
        _wait(lambda: _job_state(d)[1] == "waiting", 60, "the patch on the device")
        (d / "bgpd-restarting").write_text("")
        out, err = proc.communicate(timeout=90)
    finally:
        if proc.poll() is None:
            proc.kill()
    res = json.loads(out)["devices"][0]
    assert proc.returncode == 1 and res["status"] == "rolled-back", out + err
    assert "Traceback" not in err and res["detail"].endswith("rolled back")
    assert read_json(d / "running.json") == before and _job_state(d)[1] == "reverted"
    assert not list((state / "sonic-example" / "records").glob("*.pending.json"))


def test_session_lost_right_after_the_switch_confirmed_is_reported_applied(request: pytest.FixtureRequest) -> None:
    """EOS: the confirming `configure session … commit` goes through, then the session drops before the
    tool sees the prompt. Read back: no timer pending, the change in place → `applied`, not a revert."""
    from tests.push.test_standins import LEAF

    net, inv, state = request.getfixturevalue("eos")[:3]
    d = net.devices[LEAF]
    (d / "drop-after-commit").write_text("")
    p = run(net, "apply", str(inv), "--limit", LEAF, "--yes", "--format", "json", *FAST, state=state)
    res = _json(p)[LEAF]
    assert p.returncode == 0 and res["status"] == "applied", p.stdout + p.stderr
    assert "connection lost" in res["detail"] and "had confirmed the change" in res["detail"]
    assert not (d / "pending.json").exists() and not (d / "drop-after-commit").exists()
    assert _json(run(net, "plan", str(inv), "--limit", LEAF, "--format", "json", state=state))[LEAF]["status"] \
        == "unchanged"
    assert (state / "eos-example" / "records" / f"{LEAF}.json").exists()  # the record of a confirmed apply
