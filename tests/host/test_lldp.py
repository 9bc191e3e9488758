"""`fabric host plan` checks this host's LLDP end: real lldpd daemons in a test namespace (one for the host on its
rail NICs, one standing for the leaf on the far end of rail1's veth), real `lldpctl`; the NIC's firmware LLDP agent
read from a real i40e `ethtool --show-priv-flags` output (tests/fixtures/ethtool/SOURCE.md) printed by a stand-in
ethtool, since a veth has no private flags."""

from __future__ import annotations

import json
import subprocess
import tempfile
import time
from pathlib import Path

import pytest

from fabric.host.lldp import priv_flags
from tests.support.host import FABRIC, example_intent, ip, namespace, need_root
from tests.support.paths import ROOT

pytestmark = pytest.mark.root
I40E = ROOT / "tests" / "fixtures" / "ethtool" / "i40e-show-priv-flags.txt"
RAILS = ("rail1", "rail2", "rail3", "rail4")


@pytest.fixture(autouse=True)
def _root() -> None:
    need_root()


def _script(path: Path, body: str) -> str:
    path.write_text(f"#!/bin/sh\n{body}\n")
    path.chmod(0o755)
    return str(path)


def _lldpd(ns: str, d: Path, name: str, ports: str) -> str:
    """Start lldpd in `ns` on `ports`; returns an lldpctl wrapper bound to its control socket."""
    conf = d / f"{name}.conf"
    conf.write_text(f"configure system hostname {name}\nconfigure system chassisid {name}\n"
                    "configure lldp tx-interval 1\n")
    sock, pid = d / f"{name}.sock", d / f"{name}.pid"
    subprocess.run(["ip", "netns", "exec", ns, "/usr/sbin/lldpd", "-u", str(sock), "-p", str(pid), "-O", str(conf),
                    "-I", ports], check=True, timeout=10)
    return _script(d / f"lldpctl-{name}", f'exec /usr/sbin/lldpctl -u {sock} "$@"')


def _plan(tmp_path: Path, ns: str, *extra: str) -> tuple[subprocess.CompletedProcess[str], dict]:
    intent = tmp_path / "host.json"
    intent.write_text(example_intent().model_dump_json())
    run = subprocess.run([FABRIC, "host", "plan", "--intent", str(intent), "--netns", ns, *extra, "--format", "json"],
                         capture_output=True, text=True, timeout=60)
    return run, json.loads(run.stdout)


def _lldp(report: dict) -> dict[str, dict]:
    return {i["target"]: i for i in report["items"] if i["section"] == "lldp"}


def test_plan_reports_lldpd_not_running_as_a_finding_not_a_failure(tmp_path: Path) -> None:
    dead = _script(tmp_path / "lldpctl", f'exec /usr/sbin/lldpctl -u {tmp_path}/no-lldpd.sock "$@"')
    with namespace() as ns:
        _, report = _plan(tmp_path, ns, "--lldpctl", dead)
        text = subprocess.run([FABRIC, "host", "plan", "--intent", str(tmp_path / "host.json"), "--netns", ns,
                               "--lldpctl", dead], capture_output=True, text=True, timeout=60).stdout
    item = _lldp(report)["lldpd"]
    assert item["status"] == "unchanged" and item["current"] == "not running"
    assert item["warning"].startswith("lldpd not running on gpu-su1-01: `fabric cabling` cannot read this host's end")
    assert "systemctl enable --now lldpd" in item["warning"] and item["warning"] in report["warnings"]
    assert all(i["status"] != "failed" for i in report["items"] if i["section"] == "lldp")
    assert "lldp     lldpd" in text and "WARNING: lldpd not running on gpu-su1-01" in text


def test_plan_lists_the_neighbour_lldpd_sees_per_rail_and_flags_a_silent_rail(tmp_path: Path) -> None:
    # lldpd's unprivileged half reaches its control socket only through directories others may enter
    with namespace() as ns, namespace(()) as leaf, tempfile.TemporaryDirectory(prefix="rf-lldp-") as tmp:
        d = Path(tmp)
        d.chmod(0o755)
        ip("-n", ns, "link", "set", "rail1p", "netns", leaf)
        ip("-n", leaf, "link", "set", "rail1p", "up")
        for nic in RAILS:
            ip("-n", ns, "link", "set", nic, "up")
        host = _lldpd(ns, d, "gpu-su1-01", ",".join(RAILS))
        _lldpd(leaf, d, "leaf-su1-r1", "rail1p")
        deadline = time.monotonic() + 20
        while "leaf-su1-r1" not in subprocess.run([host], capture_output=True, text=True).stdout:
            assert time.monotonic() < deadline, "the leaf's lldpd was never seen on rail1"
            time.sleep(0.5)
        _, report = _plan(tmp_path, ns, "--lldpctl", host)
    items = _lldp(report)
    assert items["lldpd"]["current"] == "running" and not items["lldpd"]["warning"]
    assert items["rail1"]["current"] == "leaf-su1-r1 rail1p" and not items["rail1"]["warning"]
    assert items["rail2"]["current"] == "none" and items["rail2"]["warning"] == "lldpd sees no neighbour on rail2"


def test_a_firmware_lldp_agent_on_the_nic_is_named_with_the_fix(tmp_path: Path) -> None:
    assert priv_flags(I40E.read_text())["disable-fw-lldp"] == "off"
    ethtool = _script(tmp_path / "ethtool", f'[ "$1" = --show-priv-flags ] && exec cat {I40E}\nexit 1')
    dead = _script(tmp_path / "lldpctl", "exit 1")
    with namespace() as ns:
        _, report = _plan(tmp_path, ns, "--lldpctl", dead, "--ethtool", ethtool)
    warning = _lldp(report)["lldpd"]["warning"]
    assert "rail1's firmware LLDP agent is on (private flag disable-fw-lldp off)" in warning
    assert "ethtool --set-priv-flags rail1 disable-fw-lldp on" in warning


def test_an_unreadable_lldpctl_reply_is_a_located_finding(tmp_path: Path) -> None:
    garbled = _script(tmp_path / "lldpctl", "echo '{\"lldp\": ['")
    with namespace() as ns:
        _, report = _plan(tmp_path, ns, "--lldpctl", garbled)
    item = _lldp(report)["lldpd"]
    assert item["current"] == "unreadable reply"
    assert item["warning"].startswith("lldpd's `lldpctl -f json` on gpu-su1-01 replied unreadably (valid JSON")
