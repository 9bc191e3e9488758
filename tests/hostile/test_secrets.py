"""Secrets: `plan` masks the secret lines of running configs (fabric.secrets) and says it did; the
fleet's ansible-runner gets a scrubbed environment, so a run killed with SIGKILL leaves no secret on disk (a canary
in the environment), and SIGTERM removes its files; `--insecure-lab` needs `--lab`."""

from __future__ import annotations

import difflib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from fabric.cli.push import print_results
from fabric.nos.eos.driver import parse_session_diff
from fabric.push.engine import DeviceResult
from fabric.secrets import mask_line, scrubbed_env
from fabric.targets.base import DeviceDiff
from tests.hostile.helpers import EXAMPLE, ROOT

RUNNING = ROOT / "tests" / "fixtures" / "running" / "eos" / "leaf-su1-r1.cfg"
CANARY = "canary-7f3a9c1e"


@pytest.mark.parametrize(("line", "secret"), [
    ("username admin privilege 15 role network-admin secret sha512 $6$J8q5$7MpT", "$6$J8q5$7MpT"),
    ("enable secret 5 $1$abc$def", "$1$abc$def"),
    ("snmp-server community PLACEHOLDER-ro-community ro", "PLACEHOLDER-ro-community"),
    ("tacacs-server host 192.0.2.49 vrf MGMT key 7 545AA2CFFFA745B9FA8B", "545AA2CFFFA745B9FA8B"),
    ("   neighbor 10.0.0.1 password 7 0822455D0A16", "0822455D0A16"),
    ('"passkey": "hunter2",', "hunter2"),
    ("password: hunter2", "hunter2"),
    ("ntp authentication-key 1 md5 0 s3cret", "s3cret"),
])
def test_mask_line(line: str, secret: str) -> None:
    masked, hit = mask_line(line)
    assert hit and secret not in masked and "<masked>" in masked


@pytest.mark.parametrize("line", ["router bgp 65101", "   timers bgp 3 9", "   neighbor FABRIC send-community",
                                  "   neighbor FABRIC send-community extended", "interface Ethernet1/1",
                                  "sflow_key: 1", "   maximum-routes 256000"])
def test_plain_lines_are_kept(line: str) -> None:
    assert mask_line(line) == (line, False)


def _eos_result() -> tuple[DeviceResult, list[str]]:
    """A plan of the EOS running fixture that removes its users, community and TACACS key and adds a canary
    secret: the diff as EOS shows it (`show session-config diffs`, a unified diff)."""
    running = RUNNING.read_text().splitlines()
    secrets = [ln for ln in running if any(k in ln for k in (" secret ", "community", " key "))]
    intended = [ln for ln in running if ln not in secrets] + [f"snmp-server community {CANARY} rw"]
    diff = "\n".join(difflib.unified_diff(running, intended, lineterm=""))
    changes = parse_session_diff(diff)
    after = [ln.split()[[w in ("secret", "community", "key") for w in ln.split()].index(True) + 1:] for ln in secrets]
    hidden = [w for words in after for w in words if len(w) > 6] + [CANARY]
    assert len(hidden) == 6, hidden
    return DeviceResult(device="leaf-su1-r1", target="eos", status="changed",
                        diff=DeviceDiff(device="leaf-su1-r1", target="eos", changes=changes)), hidden


@pytest.mark.parametrize("fmt", ["table", "json"])
def test_plan_output_masks_secret_lines_and_says_so(capsys: pytest.CaptureFixture[str], fmt: str) -> None:
    result, hidden = _eos_result()
    print_results("plan", [result], fmt)
    out = capsys.readouterr().out
    assert not [s for s in hidden if s in out], out
    if fmt == "json":
        doc = json.loads(out)
        assert doc["masked_lines"] >= 5 and doc["devices"][0]["masked_lines"] == doc["masked_lines"]
    else:
        assert "secret lines masked" in out and "<masked>" in out


def test_the_fleet_environment_has_no_secret() -> None:
    env = scrubbed_env({"PATH": "/bin", "FABRIC_PASSWORD": CANARY, "AWS_SECRET_ACCESS_KEY": CANARY,
                        "ANSIBLE_VAULT_PASSWORD_FILE": "/x", "ANSIBLE_FORKS": "5", "SSH_AUTH_SOCK": "/s",
                        "LC_ALL": "C", "GITHUB_TOKEN": CANARY})
    assert env == {"PATH": "/bin", "ANSIBLE_FORKS": "5", "SSH_AUTH_SOCK": "/s", "LC_ALL": "C"}


CHILD = """
import os, shutil, sys, tempfile
from pathlib import Path
import ansible_runner
from fabric.host.fleet import cleanup_on_signals, scrubbed_environ
pdd = Path(sys.argv[1])
(pdd / "project").mkdir(parents=True)
(pdd / "project" / "sleep.yml").write_text(
    "- hosts: localhost\\n  gather_facts: false\\n  tasks:\\n    - ansible.builtin.command: sleep 60\\n")
try:
    with scrubbed_environ(), cleanup_on_signals():
        r = ansible_runner.run(private_data_dir=str(pdd), playbook="sleep.yml", quiet=True,
                           envvars={"ANSIBLE_LOCAL_TEMP": str(pdd / "tmp")},
                           inventory="localhost ansible_connection=local")
finally:
    shutil.rmtree(pdd, ignore_errors=True)
sys.exit(3 if r.status == "canceled" else 0)  # ansible-runner turns SIGTERM into a cancelled run
"""


def _started(tmp_path: Path, pdd: Path) -> subprocess.Popen[bytes]:
    env = {**os.environ, "FABRIC_PASSWORD": CANARY, "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}"}
    proc = subprocess.Popen([sys.executable, "-c", CHILD, str(pdd)], env=env, cwd=ROOT, start_new_session=True,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 90
    while not list(pdd.glob("artifacts/*/command")) and time.monotonic() < deadline:
        assert proc.poll() is None, "the child ended before ansible-playbook started"
        time.sleep(0.2)
    assert list(pdd.glob("artifacts/*/command")), "ansible-runner wrote no command file"
    return proc


def test_a_killed_fleet_run_leaves_no_secret_on_disk(tmp_path: Path) -> None:
    pdd = tmp_path / "pdd"
    proc = _started(tmp_path, pdd)
    try:
        os.killpg(proc.pid, signal.SIGKILL)  # the child and its ansible-playbook: nothing can clean up
        proc.wait(timeout=30)
        files = [p for p in pdd.rglob("*") if p.is_file()]
        assert files and not [p for p in files if CANARY.encode() in p.read_bytes()]
        command = json.loads(next(pdd.glob("artifacts/*/command")).read_text())
        assert "FABRIC_PASSWORD" not in command["env"] and "PATH" in command["env"]
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)


def test_sigterm_removes_the_run_files(tmp_path: Path) -> None:
    pdd = tmp_path / "pdd"
    proc = _started(tmp_path, pdd)
    try:
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=60) == 3
        assert not pdd.exists()
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)


def test_stale_runs_of_dead_processes_are_removed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import tempfile

    from fabric.host import fleet

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    dead = subprocess.run(["true"], check=True)
    del dead
    stale, live = tmp_path / "fabric-hosts-999999999-abc", tmp_path / f"fabric-hosts-{os.getpid()}-abc"
    stale.mkdir()
    live.mkdir()
    fleet.remove_stale_runs()
    assert not stale.exists() and live.exists()


@pytest.mark.parametrize("command", ["plan", "apply"])
def test_hosts_insecure_lab_needs_lab(command: str) -> None:
    r = subprocess.run([sys.executable, "-c", "from fabric.cli.main import main; main()", "hosts", command,
                        str(EXAMPLE), "--insecure-lab"], capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert r.returncode == 2 and "--insecure-lab: expected --lab as well" in r.stderr, r.stderr


def test_a_running_lab_of_the_same_name_is_used_only_with_lab(monkeypatch: pytest.MonkeyPatch) -> None:
    """plan/apply/rollback and hosts open their site here: without --lab it is the inventory's devices even
    while a lab of the same fabric name is up."""
    from fabric.access import InventorySite
    from fabric.cli.site import open_site
    from fabric.lab import state
    from fabric.lab.state import LabState

    running = LabState(fabric="example", inventory=str(EXAMPLE), prefix="rf", state_dir="/nonexistent", phase="up")
    monkeypatch.setattr(state, "load_state", lambda *a, **k: running)
    _loaded, site = open_site(EXAMPLE)
    assert isinstance(site, InventorySite)
