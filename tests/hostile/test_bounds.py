"""Numbers and sizes: every number has a range derivation and rendering can hold, sizes are refused
before the topology is built, and a problem of a shared default is reported once with the count of hosts."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from fabric.design.derive import derive
from fabric.errors import InputError
from fabric.model.load import load
from fabric.render import render_fabric
from tests.hostile.helpers import edited


def problems(inv: Path) -> list[str]:
    with pytest.raises(InputError) as exc:
        render_fabric(derive(load(inv)), k8s=False)
    return [str(p) for p in exc.value.problems]


@pytest.mark.parametrize(("file", "edit", "where"), [
    ("fabric.yaml", lambda d: d["cabling"]["host_leaf"].update(cable="9" * 400 + "m"), "cabling.host_leaf.cable"),
    ("fabric.yaml", lambda d: d["cabling"]["leaf_spine"].update(cable="99999999m"), "cabling.leaf_spine.cable"),
    ("fabric.yaml", lambda d: d["cabling"]["leaf_spine"].update(speed="99999G"), "cabling.leaf_spine.speed"),
    ("qos.yaml", lambda d: d["qos"].update(pfc_watchdog={"detection": "99999999s"}), "qos.pfc_watchdog.detection"),
    ("qos.yaml", lambda d: d["qos"].update(ecn={3: {"min_bytes": "9" * 400 + "MB"}}), "qos.ecn[3].min_bytes"),
    ("qos.yaml", lambda d: d["qos"].update(ecn={3: {"min_bytes": 10**30}}), "qos.ecn[3].min_bytes"),
    ("switching.yaml", lambda d: d["switching"]["neighbor"].update(aging="9999999999s"), "switching.neighbor.aging"),
    ("fabric.yaml", lambda d: d.update(switches=[{"name": "spine1", "asn": 2**40}]), "switches[0].asn"),
    ("addressing.yaml", lambda d: d["addressing"].update(loopbacks="255.255.255.255/32"), "addressing.loopbacks"),
    ("addressing.yaml", lambda d: d["addressing"].update(loopbacks=True), "addressing.loopbacks"),  # not 0.0.0.1/32
    ("addressing.yaml", lambda d: d["addressing"].update(rails=167772160), "addressing.rails"),
    ("hosts.yaml", lambda d: d["hosts"]["defaults"].update(dcqcn={"cc_params": {"rp_ai_rate": 2**70}}),
     "hosts.defaults.dcqcn.cc_params"),
])
def test_out_of_range_numbers_are_located(tmp_path: Path, file: str, edit: Any, where: str) -> None:
    got = problems(edited(tmp_path, file, edit))
    assert any(f": {where}" in p for p in got), got


def test_a_huge_fabric_is_refused_before_it_is_built(tmp_path: Path) -> None:
    inv = edited(tmp_path, "fabric.yaml", lambda d: d["topology"].update(scalable_units=4096, hosts_per_su=1024))
    t0 = time.monotonic()
    got = problems(inv)
    assert time.monotonic() - t0 < 2
    assert len(got) == 1 and "topology: expected a fabric of at most 65536 hosts" in got[0], got


def test_a_shared_default_is_reported_once_with_its_count(tmp_path: Path) -> None:
    def dup(d: dict[str, Any]) -> None:
        d["hosts"]["defaults"]["nics"] = [{"rail": 1, "rdma": f"mlx5_{i}", "netdev": "rail1"} for i in range(64)]
    got = [p for p in problems(edited(tmp_path, "hosts.yaml", dup)) if "twice" in p]
    assert len(got) == 63, len(got)  # one per duplicated entry, not per host
    assert got[0].endswith("found rail1 twice (from the shared default: 4 hosts)"), got[0]
    def many(d: dict[str, Any]) -> None:
        d["hosts"]["defaults"]["nics"] = [{"rail": 1, "rdma": "mlx5_0", "netdev": f"r{i}"} for i in range(65)]
    assert len(problems(edited(tmp_path, "hosts.yaml", many, name="many"))) == 1
