"""Helpers of the lab tests (no tests here): prerequisites (a failure under CI=true), CLI, leftovers."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
import yaml

from tests.support.paths import ROOT

FABRIC = str(Path(sys.executable).with_name("fabric"))
STATE_BASE = "/run/roce-fabric/test-lab"  # traversable by FRR's user, unlike pytest's tmp dirs


def require_lab() -> None:
    """Skip without root/FRR/sshd, except in CI where a missing prerequisite is a failure."""
    from fabric.lab.sh import missing_prerequisites

    problem = "not root" if os.geteuid() != 0 else ""
    if not problem:
        missing = missing_prerequisites()
        problem = f"missing {', '.join(missing)}" if missing else ""
    if problem:
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(f"lab prerequisite: {problem}")
        pytest.skip(f"lab prerequisite: {problem}")


def env() -> dict[str, str]:
    return {**os.environ, "FABRIC_LAB_STATE": STATE_BASE, "COLUMNS": "200"}


def fabric(*args: str, timeout: float = 180, check: bool = False) -> subprocess.CompletedProcess[str]:
    p = subprocess.run([FABRIC, *args], capture_output=True, text=True, timeout=timeout, env=env(), cwd=ROOT)
    if check and p.returncode != 0:
        raise AssertionError(f"fabric {' '.join(args)} exited {p.returncode}: {p.stdout}\n{p.stderr}")
    return p


def status_json(inventory: str, *extra: str) -> tuple[int, dict]:
    p = fabric("lab", "status", inventory, "--format", "json", *extra)
    return p.returncode, json.loads(p.stdout)


def lab_dir(fabric_name: str) -> Path:
    """The test state dir of a fabric's lab, of this run's lab instance (tests/conftest.py)."""
    from fabric.lab.state import instance, instance_key

    return Path(STATE_BASE) / instance_key(fabric_name, instance())


def lab_state(fabric_name: str):
    """The LabState of a test lab (read straight from the test state dir)."""
    from fabric.lab.state import LabState

    return LabState.model_validate_json((lab_dir(fabric_name) / "state.json").read_text())


def netns_prefix(fabric_name: str, prefix: str = "rf") -> str:
    """The start of every namespace name of the fabric's lab in this run's instance."""
    from fabric.lab.plan import netns_name
    from fabric.lab.state import instance

    return netns_name(prefix, fabric_name, "", instance())


def lab_namespaces(prefix: str = "rf-") -> list[str]:
    out = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    return [ln.split()[0] for ln in out.splitlines() if ln.startswith(prefix)]


def lab_processes(fabric_name: str) -> list[str]:
    """Running (non-zombie) processes whose command line points into the test state dir (of one fabric's lab: the
    VM lab's processes, in another group, may run beside it)."""
    from fabric.lab.sh import alive, cmdline

    mine = f"{lab_dir(fabric_name)}/"
    found = []
    for d in Path("/proc").iterdir():
        if d.name.isdigit() and mine in cmdline(int(d.name)) and alive(int(d.name)):
            found.append(f"{d.name} {cmdline(int(d.name))[:80]}")
    return found


def lab_links(prefix: str = "rf-") -> list[str]:
    out = subprocess.run(["ip", "-br", "link"], capture_output=True, text=True).stdout
    return [ln.split()[0].split("@")[0] for ln in out.splitlines() if ln.startswith(prefix)]


def assert_nothing_left(fabric_name: str, prefix: str = "rf") -> None:
    """No namespace, root-namespace link or process of this fabric's lab (namespace prefix `prefix`) remains.

    Scoped to the fabric and this run's lab instance (`rf-<fabric>@<instance>-…`, `rf-<tag>…`) because other
    test runs and engineers' labs on a shared machine create their own `rf…` namespaces.
    """
    from fabric.lab.plan import tag
    from fabric.lab.state import instance

    assert lab_namespaces(netns_prefix(fabric_name, prefix)) == []
    assert lab_processes(fabric_name) == []
    assert lab_links(f"{prefix}-{tag(fabric_name, instance())}") == []


@contextmanager
def example_lab(dst: Path, name: str, prefix: str, management: str) -> Iterator[str]:
    """inventories/example copied to `dst` under its own fabric name, namespace prefix and management subnet (no
    clash with other labs on the machine), brought up; its faults cleared and torn down on every exit."""
    shutil.copytree(ROOT / "inventories" / "example", dst)
    for file, section, key, value in (("fabric.yaml", "fabric", "name", name),
                                      ("addressing.yaml", "addressing", "management", management)):
        doc = yaml.safe_load((dst / file).read_text())
        doc[section][key] = value
        (dst / file).write_text(yaml.safe_dump(doc))
    (dst / "lab.yaml").write_text(yaml.safe_dump({"lab": {"prefix": prefix, "management": management}}))
    try:
        fabric("lab", "up", str(dst), "--timeout", "90", check=True)
        yield str(dst)
    finally:
        fabric("lab", "fault", str(dst), "clear")
        p = fabric("lab", "down", str(dst))
        assert p.returncode == 0, p.stderr


ACCEPT_LAB = "acclab"


def accept_lab(tmp: Path) -> Iterator[str]:
    """The lab of the accept modules (tests/accept/test_accept_lab.py, tests/accept/checks/test_congestion_lab.py):
    the example under its own name, prefix and management subnet, brought up once for both (tests/conftest.py
    `accept_lab`: each of their tests clears its faults), torn down with nothing left."""
    from tests.conftest import require

    require_lab()
    require(shutil.which("iperf3") is not None, "iperf3")
    try:
        with example_lab(tmp / ACCEPT_LAB, ACCEPT_LAB, "ac", "198.51.100.0/24") as inv:
            yield inv
    finally:
        assert_nothing_left(ACCEPT_LAB, "ac")
