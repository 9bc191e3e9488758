"""Apply lock, audit log, rollout batches, diff parsing and the CLI's refusals (no devices needed)."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from fabric.errors import UsageError
from fabric.nos.eos.driver import parse_session_diff
from fabric.nos.frr.driver import parse_reload_test
from fabric.push import engine, state
from fabric.targets.base import Change, DeviceDiff
from tests.conftest import ROOT

FABRIC = str(Path(sys.executable).with_name("fabric"))


@pytest.fixture(autouse=True)
def state_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("FABRIC_STATE", str(tmp_path / "state"))
    return tmp_path / "state"


def test_lock_is_exclusive_and_names_the_holder(state_env: Path) -> None:
    with state.apply_lock("f1") as path:
        held = json.loads(path.read_text())
        assert held["pid"] == os.getpid() and held["host"] == socket.gethostname()
        with pytest.raises(UsageError) as exc, state.apply_lock("f1"):
            pass
        msg = str(exc.value)
        assert "\n" not in msg and f"pid {os.getpid()}" in msg and "another apply of f1 is running" in msg
        with state.apply_lock("f2"):  # other fabrics are independent
            pass
        assert state.lock_held("f1")
    assert not state.lock_held("f1")
    with state.apply_lock("f1"):  # released: taken again
        pass


def test_a_stale_lock_is_taken_over(state_env: Path) -> None:
    dead = subprocess.Popen(["true"])
    dead.wait()
    path = state.state_dir("f1") / "apply.lock"
    path.write_text(json.dumps({"pid": dead.pid, "host": socket.gethostname(), "time": "t", "who": "x"}))
    with state.apply_lock("f1"):
        assert json.loads(path.read_text())["pid"] == os.getpid()


def test_cli_apply_refuses_while_locked(state_env: Path) -> None:
    env = {**os.environ, "FABRIC_STATE": str(state_env)}
    with state.apply_lock("example"):
        p = subprocess.run([FABRIC, "apply", "inventories/example", "--yes"], capture_output=True, text=True,
                           env=env, cwd=ROOT, stdin=subprocess.DEVNULL, timeout=60)
    assert p.returncode == 2
    assert p.stderr.count("\n") == 1 and "another apply of example is running" in p.stderr


def test_cli_apply_without_a_terminal_needs_yes(state_env: Path) -> None:
    p = subprocess.run([FABRIC, "apply", "inventories/example"], capture_output=True, text=True, cwd=ROOT,
                       stdin=subprocess.DEVNULL, timeout=60, env={**os.environ, "FABRIC_STATE": str(state_env)})
    assert p.returncode == 2 and p.stderr == "error: refusing to apply without --yes: no terminal to confirm on\n"
    assert not (state_env / "example" / "apply.lock").exists()


def test_audit_lines_never_carry_a_secret(state_env: Path) -> None:
    state.register_secret("hunter2-canary")
    state.audit("f1", state.AuditEntry(time=state.now(), who=state.who(), fabric="f1", device="leaf1", target="frr",
                                       action="apply", diff_digest="sha256:ab", added=1, removed=0,
                                       result="failed", detail="auth failed for password hunter2-canary"))
    text = (state_env / "f1" / "audit.jsonl").read_text()
    entry = json.loads(text)
    assert "hunter2-canary" not in text and entry["detail"].endswith("***")
    assert set(entry) >= {"time", "who", "device", "diff_digest", "result"}
    assert oct((state_env / "f1" / "audit.jsonl").stat().st_mode & 0o777) == "0o600"


def test_batches_canary_then_counts_or_percentages() -> None:
    devs = [f"d{i}" for i in range(10)]
    assert engine.batches(devs, 1, "3") == [["d0"], ["d1", "d2", "d3"], ["d4", "d5", "d6"], ["d7", "d8", "d9"]]
    assert [len(b) for b in engine.batches(devs, 2, "50%")] == [2, 4, 4]
    assert [len(b) for b in engine.batches(devs, 0, "100%")] == [10]
    assert engine.batches([], 1, "25%") == []


def test_frr_reload_output_parsed_per_section_without_noise() -> None:
    out = ("Lines To Delete\n===============\nno hostname vm\nrouter bgp 65101\n no timers bgp 5 15\n"
           "router bgp 65101\n address-family ipv4 unicast\n  no network 10.99.0.0/24\n\n"
           "Lines To Add\n============\nrouter bgp 65101\n no bgp ebgp-requires-policy\nrouter bgp 65101\n"
           " address-family ipv4 unicast\n  network 10.100.0.0/24\nhostname leaf\nservice integrated-vtysh-config\n"
           "no ip prefix-list HAND seq 5 permit 1.2.3.0/24\n")
    d = DeviceDiff(device="x", target="frr", changes=parse_reload_test(out, "service integrated-vtysh-config\n",
                                                                       "datacenter"))
    assert d.sections() == {
        "router bgp 65101": ["~ timers bgp 5 15 → timers bgp 3 9 (the `frr defaults datacenter` value)"],
        "router bgp 65101 / address-family ipv4 unicast": ["- network 10.99.0.0/24", "+ network 10.100.0.0/24"],
        "(global)": ["- ip prefix-list HAND seq 5 permit 1.2.3.0/24"],
    }
    assert d.added == 1 and d.changed == 1 and d.removed == 2 and d.digest.startswith("sha256:")


def test_owned_scope_sonic_keeps_platform_fields_and_tables_the_render_lacks() -> None:
    from fabric.targets.owned import apply_leaves, json_patch, scope, scoped_diff, tree_leaves

    running = {"PORT": {"Ethernet0": {"mtu": "1500", "fec": "rs", "lanes": "0,1,2,3"}, "Ethernet4": {"mtu": "9100"}},
               "NTP": {"global": {"src": "eth0"}}, "WRED_PROFILE": {"ROCE": {"ecn": "ecn_all", "old": "1"}}}
    intended = {"PORT": {"Ethernet0": {"mtu": "9100"}, "Ethernet8": {"mtu": "9100"}},
                "WRED_PROFILE": {"ROCE": {"ecn": "ecn_all"}},
                "BGP_GLOBALS_AF_NETWORK": {"default|ipv4_unicast|10.0.0.0/24": {}}}
    have, want = tree_leaves(running), tree_leaves(intended)
    owned = scope(want, have, ("WRED_PROFILE/*",), manifest=[("PORT", "Ethernet4", "mtu")])
    sd = scoped_diff(have, want, owned, lambda p, v: ("|".join(p[:2]), [f"{p[-1]}={v}"]),
                     earlier=[("PORT", "Ethernet4", "mtu")])
    patch = json_patch(running, apply_leaves(running, sd.sets, sd.removes))
    assert {"op": "replace", "path": "/PORT/Ethernet0/mtu", "value": "9100"} in patch
    assert {"op": "remove", "path": "/WRED_PROFILE/ROCE/old"} in patch  # a wholly owned profile
    assert {"op": "remove", "path": "/PORT/Ethernet4"} in patch  # rendered earlier, no longer in the inventory
    assert {"op": "add", "path": "/BGP_GLOBALS_AF_NETWORK",
            "value": {"default|ipv4_unicast|10.0.0.0/24": {}}} in patch
    assert not any(p["path"].startswith(("/NTP", "/PORT/Ethernet0/fec", "/PORT/Ethernet0/lanes")) for p in patch)
    assert sd.unmanaged == 3  # fec, lanes, NTP
    assert Change(section="PORT|Ethernet4", op="-", line="mtu=9100", earlier=True) in sd.changes


def test_owned_scope_text_replaces_a_setting_and_keeps_hand_lines() -> None:
    from fabric.nos.eos.driver import session_lines
    from fabric.targets.owned import parse_text, scope, scoped_diff, text_leaves

    running = ("username admin secret x\ninterface Ethernet1/1\n   mtu 1500\n   description hand\n"
               "   tx-queue 3\n      bandwidth percent 40\n      no priority\n"
               "ip route 192.0.2.0/24 Null0\nrouter bgp 65101\n   neighbor 10.9.9.9 remote-as 64600\n"
               "   neighbor swp1 remote-as 65000\n")
    intended = "interface Ethernet1/1\n   mtu 9214\n   tx-queue 3\n      no priority\nrouter bgp 65101\n" \
               "   neighbor swp1 remote-as 65000\n"
    have, want = text_leaves(parse_text(running)), text_leaves(parse_text(intended))
    sd = scoped_diff(have, want, scope(want, have, ("interface */tx-queue *",)),
                     lambda p, v: (" / ".join(p[:-1]), list(v)))
    assert [(c.section, c.op, c.old, c.line, c.foreign) for c in sd.changes] == [
        ("interface Ethernet1/1", "~", "mtu 1500", "mtu 9214", False),  # a change, old → new
        ("interface Ethernet1/1 / tx-queue 3", "-", "", "bandwidth percent 40", True)]  # never rendered
    assert session_lines(sd, have) == ["interface Ethernet1/1", "   no mtu 1500", "   mtu 9214",
                                       "interface Ethernet1/1", "   tx-queue 3", "      no bandwidth percent 40"]
    assert sd.unmanaged == 4  # username, description, ip route, the other BGP neighbour


def test_eos_session_diff_parsed_per_section() -> None:
    text = ("--- system:/running-config\n+++ session:/s-session-config\n@@ -1,4 +1,4 @@\n"
            " interface Ethernet1/1\n-   mtu 1500\n+   mtu 9216\n-ip route 192.0.2.0/24 Null0\n")
    assert DeviceDiff(device="x", target="eos", changes=parse_session_diff(text)).sections() == {
        "interface Ethernet1/1": ["- mtu 1500", "+ mtu 9216"], "(global)": ["- ip route 192.0.2.0/24 Null0"]}


def test_insecure_lab_is_refused_without_a_lab(state_env: Path, tmp_path: Path) -> None:
    """Host keys are skipped only for a running lab's own nodes, and the lab is used only with --lab."""
    env = {**os.environ, "FABRIC_STATE": str(state_env), "FABRIC_LAB_STATE": str(tmp_path / "no-lab")}
    for cmd in (["plan", "inventories/example", "--insecure-lab"], ["hosts", "plan", "inventories/example",
                                                                      "--insecure-lab"]):
        p = subprocess.run([FABRIC, *cmd], capture_output=True, text=True, env=env, cwd=ROOT,
                           stdin=subprocess.DEVNULL, timeout=60)
        assert p.returncode == 2, cmd
        assert p.stderr == ("error: --insecure-lab: expected --lab as well (host keys are skipped for the lab's own "
                            "nodes only), found it alone\n"), cmd
    if os.geteuid() == 0:
        p = subprocess.run([FABRIC, "plan", "inventories/example", "--lab", "--insecure-lab"], capture_output=True,
                           text=True, env=env, cwd=ROOT, stdin=subprocess.DEVNULL, timeout=60)
        assert p.returncode == 2
        assert p.stderr.startswith("error: no lab for fabric 'example'"), p.stderr


def _take(fabric: str, state_dir: str, out: str, refused: str, others: int) -> None:
    """Take the lock; the holder keeps it until every other process was refused (so none can take it after the
    holder let go, however late the machine's load starts it), at most 60 s."""
    os.environ["FABRIC_STATE"] = state_dir
    try:
        with state.apply_lock(fabric):
            with open(out, "a") as f:
                f.write(f"{os.getpid()}\n")
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline and (
                    not os.path.exists(refused) or len(Path(refused).read_text().split()) < others):
                time.sleep(0.05)
    except UsageError:
        with open(refused, "a") as f:
            f.write(f"{os.getpid()}\n")


def test_a_stale_lock_taken_over_by_many_at_once_has_one_holder(state_env: Path, tmp_path: Path) -> None:
    """flock: whoever races for a stale lock, exactly one process holds it; no file to clean up."""
    import multiprocessing

    path = state.state_dir("f1") / "apply.lock"
    path.write_text(json.dumps({"pid": 999999, "host": "gone", "time": "t", "who": "x"}))
    got, refused = tmp_path / "got", tmp_path / "refused"
    ctx = multiprocessing.get_context("fork")
    procs = [ctx.Process(target=_take, args=("f1", str(state_env), str(got), str(refused), 5)) for _ in range(6)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(90)
    assert len(got.read_text().split()) == 1 and len(refused.read_text().split()) == 5


def test_an_audit_write_that_fails_after_the_change_is_reported_not_raised(
        state_env: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from fabric.access import SwitchEndpoint
    from fabric.push import engine
    from fabric.targets.base import Txn

    def full(*_a: object, **_k: object) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(state, "audit", full)
    ep = SwitchEndpoint(device="leaf1", target="frr", address="192.0.2.1", device_type="linux", intended="")
    res = engine.DeviceResult(device="leaf1", target="frr", status="applied")
    txn = Txn(device="leaf1", target="frr", started=0, snapshot="", committed=True)
    engine._settle("f1", ep, "apply", txn, res)
    assert res.status == "applied" and "No space left on device" in res.detail and "audit line missing" in res.detail


def test_sonic_standin_refuses_a_patch_that_fails_yang(tmp_path: Path) -> None:
    """As SONiC's config updater: the patched CONFIG_DB is validated first; invalid → nothing changes."""
    from tests.nos.sonic.test_yang import CHECKER, YANG_PY, _prerequisites
    from tests.standins.common import write_json

    _prerequisites()
    d = tmp_path / "dev"
    d.mkdir()
    running = (ROOT / "tests" / "fixtures" / "running" / "sonic" / "msn2700.json").read_text()
    (d / "running.json").write_text(running)
    write_json(d / "yang.json", {"python": str(YANG_PY), "checker": str(CHECKER)})
    patch = tmp_path / "p.json"
    env = {**os.environ, "STANDIN_DEV": str(d), "PYTHONPATH": str(ROOT)}
    outputs = []
    for ops, rc in (([{"op": "remove", "path": "/PORT/Ethernet0/lanes"}], 1),
                    ([{"op": "replace", "path": "/PORT/Ethernet0/mtu", "value": "9000"}], 0)):
        patch.write_text(json.dumps(ops))
        p = subprocess.run([sys.executable, "-m", "tests.standins.sonic", "config", "apply-patch", str(patch)],
                           capture_output=True, text=True, env=env, cwd=ROOT, timeout=300)
        assert p.returncode == rc, p.stdout + p.stderr
        outputs.append(p.stdout)
    assert "Given patch will produce invalid config" in outputs[0] and "lanes" in outputs[0]
    after = json.loads((d / "running.json").read_text())
    assert after["PORT"]["Ethernet0"]["lanes"] == "0,1,2,3" and after["PORT"]["Ethernet0"]["mtu"] == "9000"
