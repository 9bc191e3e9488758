"""Two labs of one inventory on one machine at once (lab instances): each converges, reachable from this machine at
its own addresses, its faults and its `lab down` its own."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.lab import FABRIC, ROOT, STATE_BASE, lab_links, lab_namespaces, require_lab

INV = "inventories/example"
pytestmark = [pytest.mark.root, pytest.mark.lab]


def _env(instance: str) -> dict[str, str]:
    return {**os.environ, "FABRIC_LAB_STATE": STATE_BASE, "FABRIC_LAB_INSTANCE": instance, "COLUMNS": "200"}


def _fabric(instance: str, *args: str, timeout: float = 240) -> subprocess.CompletedProcess[str]:
    return subprocess.run([FABRIC, *args], capture_output=True, text=True, timeout=timeout, env=_env(instance),
                          cwd=ROOT)


def _status(instance: str, *extra: str) -> tuple[int, dict]:
    p = _fabric(instance, "lab", "status", INV, "--format", "json", *extra)
    return p.returncode, json.loads(p.stdout)


def _names(instance: str) -> tuple[list[str], list[str]]:
    """The instance's namespaces and root-namespace links on this machine."""
    from fabric.lab.plan import netns_name, tag

    return lab_namespaces(netns_name("rf", "example", "", instance)), lab_links(f"rf-{tag('example', instance)}")


@pytest.fixture(scope="module")
def two_labs() -> Iterator[tuple[str, str]]:
    """The example inventory up twice at once, as two instances started together; both torn down on every exit."""
    require_lab()
    pair = (f"c{os.getpid() % 1000000}a", f"c{os.getpid() % 1000000}b")
    try:
        ups = [subprocess.Popen([FABRIC, "lab", "up", INV, "--timeout", "120"], env=_env(i), cwd=ROOT, text=True,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE) for i in pair]
        done = [(u.wait(300), *u.communicate()) for u in ups]
        assert all(rc == 0 for rc, _, _ in done), done
        yield pair
    finally:
        for i in pair:
            _fabric(i, "lab", "down", INV)
        for i in pair:
            assert _names(i) == ([], []), i


def test_both_converge_and_reach_every_rail(two_labs: tuple[str, str]) -> None:
    for i in two_labs:
        rc, data = _status(i)
        assert rc == 0 and data["ok"], (i, data["problems"])
        assert data["pings"] and all(p["ok"] for p in data["pings"])


def test_each_owns_its_names_and_management_subnet(two_labs: tuple[str, str]) -> None:
    from ipaddress import IPv4Interface

    from fabric.lab.plan import IFNAMSIZ

    a, b = (_names(i) for i in two_labs)
    assert len(a[0]) == len(b[0]) == 10 and not set(a[0]) & set(b[0])  # 6 switches, 4 hosts
    assert a[1] and b[1] and not set(a[1]) & set(b[1])
    assert max(len(x) for x in a[1] + b[1]) <= IFNAMSIZ
    routes = {}
    for i in two_labs:
        st = json.loads((Path(STATE_BASE) / f"example+{i}" / "state.json").read_text())
        routes[i] = IPv4Interface(st["bridge_address"]).network
        assert st["nodes"]["leaf-su1-r1"]["management_address"] == "198.18.0.3/24"  # the inventory's, inside
    assert not routes[two_labs[0]].overlaps(routes[two_labs[1]])
    assert not any(r.overlaps(IPv4Interface("198.18.0.3/24").network) for r in routes.values())


def test_ssh_and_plan_reach_their_own_lab(two_labs: tuple[str, str]) -> None:
    """Real ssh from this machine lands in the instance it was asked for; `plan --lab` finds its lab in sync."""
    seen = {}
    for i in two_labs:
        p = _fabric(i, "lab", "ssh", INV, "leaf-su1-r1", "--", "ip", "-br", "-4", "addr", "show", "eth0")
        assert p.returncode == 0, p.stderr
        seen[i] = p.stdout.split()[2:]
        assert "198.18.0.3/24" in seen[i] and len(seen[i]) == 2, seen[i]  # the inventory's and its access address
    assert seen[two_labs[0]][1] != seen[two_labs[1]][1]
    p = _fabric(two_labs[1], "plan", INV, "--lab")
    assert p.returncode == 0, p.stdout + p.stderr


def test_a_fault_in_one_does_not_show_in_the_other(two_labs: tuple[str, str]) -> None:
    faulty, healthy = two_labs
    p = _fabric(faulty, "lab", "fault", INV, "link", "leaf-su1-r1:swp5", "down")
    assert p.returncode == 0, p.stderr
    try:
        rc, data = _status(faulty, "--no-pings")
        assert rc == 1 and data["faults"], data
        rc, data = _status(healthy)
        assert rc == 0 and data["ok"] and data["faults"] == [], data["problems"]
    finally:
        p = _fabric(faulty, "lab", "fault", INV, "clear")
    assert p.returncode == 0, p.stdout + p.stderr


def test_down_of_one_leaves_the_other_up(two_labs: tuple[str, str]) -> None:
    gone, kept = two_labs
    p = _fabric(gone, "lab", "down", INV)
    assert p.returncode == 0 and "10 namespaces" in p.stdout, p.stdout + p.stderr
    assert _names(gone) == ([], [])
    rc, data = _status(kept)
    assert rc == 0 and data["ok"], data["problems"]
    p = _fabric(gone, "lab", "status", INV)
    assert p.returncode == 2 and f"instance '{gone}'" in p.stderr, p.stderr
