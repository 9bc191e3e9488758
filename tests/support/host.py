"""Shared helpers of the host tests (tests/host/) (no tests here): namespaces, prerequisites, intents."""

from __future__ import annotations

import itertools
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path

import pytest

from fabric.design.intent import HostIntent
from tests.support.paths import ROOT

sys.path.insert(0, str(ROOT / "tests" / "fixtures" / "sysfs"))
from prepared import MLNX_QOS, Nic, build

__all__ = ["MLNX_QOS", "Nic", "build"]
FABRIC = str(Path(sys.executable).parent / "fabric")
_count = itertools.count()


def need(ok: bool, why: str) -> None:
    """Skip when a prerequisite is missing; with CI=true that is a failure instead."""
    if not ok:
        if os.environ.get("CI") == "true":
            pytest.fail(f"prerequisite missing in CI: {why}")
        pytest.skip(why)


def need_root() -> None:
    need(os.geteuid() == 0 and shutil.which("ip") is not None, "needs root and iproute2 (network namespaces)")


def ip(*args: str, check: bool = True) -> str:
    return subprocess.run(["ip", *args], check=check, capture_output=True, text=True).stdout


def ipj(ns: str, *args: str) -> list[dict]:
    """`ip -j` output; an empty list when ip has nothing to show (e.g. a table that does not exist)."""
    run = subprocess.run(["ip", "-j", "-n", ns, *args], capture_output=True, text=True)
    return json.loads(run.stdout) if run.returncode == 0 and run.stdout.strip() else []


def sysctl(ns: str, key: str) -> str:
    return (
        (Path("/proc/sys") / key).read_text().strip()
        if ns == ""
        else subprocess.run(
            ["ip", "netns", "exec", ns, "cat", f"/proc/sys/{key}"], check=True, capture_output=True, text=True
        ).stdout.strip()
    )


@contextmanager
def namespace(nics: tuple[str, ...] = ("rail1", "rail2", "rail3", "rail4")) -> Iterator[str]:
    """A fresh network namespace with a veth pair per rail NIC (`railN` ↔ `railNp`); always deleted."""
    name = f"rfh{os.getpid() % 100000}x{next(_count)}{os.urandom(2).hex()}"
    ip("netns", "add", name)
    try:
        for nic in nics:
            ip("-n", name, "link", "add", nic, "type", "veth", "peer", "name", f"{nic}p")
        yield name
    finally:
        kill_namespace_processes(name)
        ip("netns", "del", name, check=False)


def kill_namespace_processes(ns: str) -> None:
    """Stop every process left in a test namespace (e.g. sshd sessions kept by SSH ControlPersist)."""
    for pid in ip("netns", "pids", ns, check=False).split():
        with suppress(ProcessLookupError, ValueError):
            os.kill(int(pid), 15)


def example_intent(host: str = "gpu-su1-01") -> HostIntent:
    from fabric.design.derive import derive
    from fabric.model.load import load

    return derive(load(ROOT / "inventories" / "example")).hosts[host]


def tagged(intent: HostIntent, rail: int = 1, vlan: int = 1001) -> HostIntent:
    """The intent with rail `rail` tagged on the host side (ifname netdev.vlan), sysctls renamed."""
    rails = []
    for r in intent.rails:
        if r.rail == rail:
            old = r.ifname
            r = r.model_copy(update={"vlan": vlan, "ifname": f"{r.netdev}.{vlan}"})
        rails.append(r)
    new = next(r.ifname for r in rails if r.rail == rail)
    sysctls = {k.replace(f"/conf/{old}/", f"/conf/{new}/"): v for k, v in intent.sysctls.items()}
    return intent.model_copy(update={"rails": rails, "sysctls": sysctls})
