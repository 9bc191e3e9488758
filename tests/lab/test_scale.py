"""The 2-SU × 8-rail lab across scalable units, cleanup after a crashed `up`, and the root check."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time

import pytest

from tests.support.lab import (
    FABRIC,
    ROOT,
    assert_nothing_left,
    env,
    fabric,
    lab_dir,
    lab_namespaces,
    netns_prefix,
    require_lab,
    status_json,
)

pytestmark = [pytest.mark.root, pytest.mark.lab]
INV = "inventories/lab-2su8r"


def test_two_su_eight_rails_converge_and_reach_across_sus() -> None:
    require_lab()
    try:
        fabric("lab", "up", INV, "--timeout", "120", check=True)
        rc, data = status_json(INV)
        assert rc == 0, data["problems"]
        leaves = [s for s in data["switches"] if s["role"] == "leaf"]
        assert len(leaves) == 16 and all(s["ecmp_min"] == 2 for s in leaves)
        across = [p for p in data["pings"] if not p["same_su"]]
        assert len(across) == 8 * 8 and all(p["ok"] for p in across)  # 8 rails × 8 ordered cross-SU pairs
        assert {p["rail"] for p in across} == set(range(1, 9))
    finally:
        fabric("lab", "down", INV, check=True)
        assert_nothing_left("lab-2su8r")


def test_down_cleans_up_after_a_crashed_up() -> None:
    require_lab()
    state = lab_dir("example") / "state.json"
    proc = subprocess.Popen([FABRIC, "lab", "up", "inventories/example"], env=env(), cwd=ROOT,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:  # crash once FRR is running on some switch
            if state.exists() and any(n["pids"] for n in json.loads(state.read_text())["nodes"].values()):
                break
            time.sleep(0.05)
        proc.send_signal(signal.SIGKILL)
        proc.wait(10)
        assert lab_namespaces(netns_prefix("example")), "the crashed up left nothing to clean (crashed too early?)"
    finally:
        p = fabric("lab", "down", "inventories/example")
        assert p.returncode == 0, p.stderr
        assert_nothing_left("example")
    again = fabric("lab", "down", "inventories/example", check=True)
    assert again.stdout.strip().endswith("nothing to remove")


def test_not_root_is_one_line_and_exit_2() -> None:
    if os.geteuid() != 0:
        p = fabric("lab", "status", "inventories/example")
    else:
        argv = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", FABRIC, "lab", "status",
                "inventories/example"]
        p = subprocess.run(argv, capture_output=True, text=True, env=env(), cwd=ROOT)
    assert p.returncode == 2, p.stderr
    assert p.stderr.strip().count("\n") == 0 and "needs root" in p.stderr
