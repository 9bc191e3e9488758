"""The VM lab as the `--lab` Site (fabric.lab.site.lab_site, VmSite) without booting it: `fabric accept --lab
--dry-run` plans the checks on the fabric as the VM lab's state (vm.json) says the VM realizes it. The checks run in
a booted VM in tests/lab/test_vm.py."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest

from fabric.design.intent import FabricIntent
from fabric.lab import vm
from tests.conftest import require
from tests.lab.test_vm import NAME, vm_fabric
from tests.support.lab import FABRIC, ROOT

pytestmark = pytest.mark.root


def accept(inv: Path, state: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([FABRIC, "accept", str(inv), "--lab", *args], capture_output=True, text=True, timeout=120,
                          cwd=ROOT, env={**os.environ, "FABRIC_LAB_STATE": str(state), "COLUMNS": "200"})


def vm_state(tmp_path: Path) -> tuple[Path, Path, FabricIntent]:
    """The cut of the example the VM test boots, and a VM lab's state of it (vm.json) with no VM: (inventory, state
    base, fabric)."""
    require(os.geteuid() == 0, "root (fabric accept --lab)")
    inv, state = tmp_path / NAME, tmp_path / "state"
    fabric = vm_fabric(inv)
    leaf, rail, hosts = vm.lab_nodes(fabric)
    guest = state / vm.vm_dir(NAME).name  # <fabric>.vm, of this run's lab instance
    guest.mkdir(parents=True)
    vm.VmLab(fabric=NAME, dir=str(guest), pid=0, kernel="6.12", leaf=leaf, rail=rail, hosts=hosts,
             rate=vm.PORT_RATE).save()
    return inv, state, fabric


def test_accept_lab_plans_on_the_fabric_the_vm_lab_realizes(tmp_path: Path) -> None:
    """A VM lab's state and no namespace lab: every planned command is on the VM's leaf or one of its 4 hosts, on
    the rail the VM runs (the 2-rail fabric's rail 2 and its spine are not there), with the lab's stand-ins; the
    leaf's counters are read by the FRR driver (the snapshots of a run with a counter check). `--via ssh` is
    refused: the guest runs no sshd."""
    inv, state, fabric = vm_state(tmp_path)
    leaf, rail, hosts = vm.lab_nodes(fabric)
    p = accept(inv, state, "--quick", "--dry-run", "--tags", "incast,ets,rail-bandwidth,lossless-counters", "-o",
               str(tmp_path / "out"))
    assert p.returncode == 0, p.stdout + p.stderr
    where = re.findall(r"^  (?:round \S+ (?:reverse )?)?(\S+) \[(\w+)\]: (.*)$", p.stdout, re.M)
    assert {h for h, _, _ in where} == {leaf, *hosts}, p.stdout
    assert all("tc -s class show" in cmd for h, _, cmd in where if h == leaf), p.stdout
    rail_ips = {str(r.address).split("/")[0] for h in hosts for r in fabric.hosts[h].rails}
    used = set(re.findall(r"-B (\S+)", p.stdout))
    assert used and used <= rail_ips and all(f"rail{rail}" in c for h, role, c in where
                                             if role == "read" and h != leaf), p.stdout
    incast = p.stdout.split("== incast")[1].split("==")[0]
    assert incast.count("[client]: iperf3 -c 10.100.0.2 ") == 3, incast  # 3 senders into the first host
    bad = accept(inv, state, "--via", "ssh", "--tags", "incast")
    assert bad.returncode == 2 and "the VM lab's nodes run no sshd" in bad.stderr, bad.stderr


def test_accept_lab_plans_soft_roce_bandwidth_and_incast_streams_on_the_vm_lab(tmp_path: Path) -> None:
    """On a VM lab `fabric accept --lab` measures the rails with ib_write_bw over each host's own Soft-RoCE device
    (rxe1… in the lab's host order, the RoCEv2 IPv4 GID 1, the inventory's RoCE ToS), and the incast sends 4
    iperf3 streams per sender (enough to hold the receiver's queue above its marking threshold)."""
    inv, state, fabric = vm_state(tmp_path)
    _leaf, _rail, hosts = vm.lab_nodes(fabric)
    p = accept(inv, state, "--quick", "--dry-run", "--tags", "incast,rail-bandwidth", "-o", str(tmp_path / "out"))
    assert p.returncode == 0, p.stdout + p.stderr
    bw = p.stdout.split("== rail-bandwidth")[1].split("==")[0]
    where = re.findall(r"^  round \S+ (?:reverse )?(\S+) \[(\w+)\]: (.*)$", bw, re.M)
    assert len(where) == 8 and {h for h, _, _ in where} == set(hosts), bw  # 2 pairs, both ways, server and client
    tos = fabric.hosts[hosts[0]].nic_qos.roce_tos
    for host, _role, cmd in where:
        assert cmd.startswith(f"ib_write_bw -d rxe{hosts.index(host) + 1} -x 1 --tclass={tos} -F "), cmd
        assert "-s 65536 -q 2 " in cmd and cmd.split(" -p ")[1].split()[1:3] == ["-u", "18"], cmd
    incast = p.stdout.split("== incast")[1].split("==")[0]
    assert incast.count(" -P 4") == 3, incast
