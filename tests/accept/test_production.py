"""The production path of acceptance, not the lab's: `fabric accept` on an inventory (no --lab) reaches its hosts
over the SSH transport (real sshd in a namespace, the inventory's key and known_hosts) and runs the real
perftest and nccl-tests command lines, judged by the stand-in tools of tests/standins/host.py, which refuse a
command line without the lossless class or with a NIC the host does not have and print the tools' real output
formats. mpirun runs nccl-tests with each rank's own NCCL environment and its `-J` JSON."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from ipaddress import IPv4Interface
from pathlib import Path

import pytest
import yaml

from tests.push.test_standins import FABRIC, _inventory, _prereq
from tests.standins.common import write_json
from tests.standins.harness import StandinNet, standins
from tests.support.paths import FIXTURES, ROOT

CATALOG = {"checks": [
    {"check": "rail-bandwidth", "input": {"rails": [1, 2], "seconds": 1, "quick": True, "timeout_s": 60}},
    {"check": "cross-su-bandwidth", "input": {"rails": [3], "seconds": 1, "quick": True, "timeout_s": 60}},
    {"check": "rail-latency", "input": {"rails": [1], "quick": True, "iterations": 100}},
    {"check": "nccl-allreduce", "input": {"launcher": "mpirun", "pairs": "none", "cluster": True, "timeout_s": 600}},
    {"check": "lossless-counters"}, {"check": "pfc-watchdog"}]}


@pytest.fixture(scope="module")
def fleet(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[StandinNet, Path, object]]:
    """lab-2su8r's four hosts (two scalable units, eight rails) as stand-in GPU hosts behind sshd."""
    from fabric.design.derive import derive
    from fabric.model.load import load

    _prereq()
    tmp = tmp_path_factory.mktemp("prod")
    inv = _inventory("lab-2su8r", tmp / "inv", tmp)
    fabric = derive(load(inv))
    hosts = {h.name: ("host", h.management_address.split("/")[0]) for h in fabric.hosts.values()}
    with standins(tmp, hosts) as net:
        for h in fabric.hosts.values():
            d = net.devices[h.name]
            write_json(d / "nics.json", [r.rdma for r in h.rails])
            for r in h.rails:
                hw = d / "sys" / "class" / "infiniband" / r.rdma / "ports" / "1" / "hw_counters"
                hw.mkdir(parents=True)
                for name in ("np_cnp_sent", "rp_cnp_handled", "out_of_sequence", "packet_seq_err"):
                    (hw / name).write_text("0\n")
        write_json(net.root / "addresses.json", {str(IPv4Interface(r.address).ip): h.name
                                                 for h in fabric.hosts.values() for r in h.rails})
        (tmp / "catalog.yaml").write_text(yaml.safe_dump(CATALOG))
        yield net, tmp, fabric


def _accept(net: StandinNet, tmp: Path, out: str, *args: str) -> tuple[int, dict]:
    env = {**os.environ, "FABRIC_STATE": str(tmp / "state"), "COLUMNS": "200", "FABRIC_LAB_STATE": str(tmp / "x")}
    env.pop("SSH_AUTH_SOCK", None)
    p = subprocess.run(net.argv([FABRIC, "accept", str(tmp / "inv"), "--catalog", str(tmp / "catalog.yaml"),
                                 "--format", "json", "-o", str(tmp / out), *args]),
                       capture_output=True, text=True, timeout=900, env=env, stdin=subprocess.DEVNULL)
    assert (tmp / out / "accept.json").exists(), p.stdout + p.stderr
    data = json.loads((tmp / out / "accept.json").read_text())
    return p.returncode, {r["name"]: r for r in data["results"]}


def test_perftest_nccl_and_counters_over_ssh(fleet) -> None:
    net, tmp, fabric = fleet
    before = set(Path("/tmp").glob("roce-fabric-nccl.*")) | set(Path("/tmp").glob("nccl-allreduce*"))
    rc, r = _accept(net, tmp, "ok")
    # mpirun ran from a directory of its own on the head host (mktemp), removed afterwards: nothing at a fixed /tmp path
    assert set(Path("/tmp").glob("roce-fabric-nccl.*")) | set(Path("/tmp").glob("nccl-allreduce*")) == before
    failed = [m for v in r.values() for m in v.get("measurements", []) if not m.get("ok", True)]
    assert rc == 0, ({k: (v["status"], v["message"]) for k, v in r.items() if v["status"] != "pass"}, failed)
    bw = r["rail-bandwidth"]
    assert len(bw["measurements"]) == 2 * 2 * 2 and all(m["value"] == 392.5 for m in bw["measurements"])
    cross = r["cross-su-bandwidth"]["measurements"]
    assert cross and all(fabric.hosts[m["src"]].su != fabric.hosts[m["dst"]].su for m in cross)
    assert r["rail-latency"]["status"] == "pass" and r["rail-latency"]["measurements"][0]["unit"] == "us"
    nccl = r["nccl-allreduce"]
    assert nccl["status"] == "pass" and nccl["measurements"][0]["detail"].startswith("JSON")
    ranks = [json.loads(ln) for ln in (net.root / "nccl-ranks.log").read_text().splitlines()]
    order = sorted(fabric.hosts)
    gpus = fabric.hosts[order[0]].gpus
    assert sorted(x["rank"] for x in ranks) == list(range(gpus * len(order)))
    for x in ranks:  # each rank carries its own host's NCCL variables
        assert x["NCCL_IB_HCA"] == fabric.hosts[order[x["rank"] // gpus]].nccl_env["NCCL_IB_HCA"]
        assert x["NCCL_IB_TC"] == "106"
    assert r["lossless-counters"]["status"] == "pass" and "hw" in r["lossless-counters"]["message"]
    assert r["pfc-watchdog"]["status"] == "pass"


def test_slow_nic_located_and_pfc_storm_named(fleet) -> None:
    net, tmp, fabric = fleet
    slow = sorted(fabric.hosts)[1]
    dev = next(x.rdma for x in fabric.hosts[slow].rails if x.rail == 2)
    write_json(net.root / "speed.json", {f"{slow}:{dev}": 101.0})
    write_json(net.root / "storm.json", {slow: 3})
    try:
        rc, r = _accept(net, tmp, "bad", "--tags", "rail-bandwidth,pfc-watchdog")
    finally:
        (net.root / "speed.json").unlink()
        (net.root / "storm.json").unlink()
    assert rc == 1
    bw = r["rail-bandwidth"]
    assert bw["status"] == "fail" and [loc["hosts"] for loc in bw["locations"]] == [[slow]]
    assert {m["rail"] for m in bw["measurements"] if not m["ok"]} == {2}
    wd = r["pfc-watchdog"]
    assert wd["status"] == "fail" and all(m["src"] == slow for m in wd["measurements"] if not m["ok"])
    assert "tx_pause_storm_error_events=3" in wd["message"]


def test_a_perftest_that_could_not_time_its_run_is_run_again_then_reported(fleet) -> None:
    """`fabric accept` over SSH where two NICs' perftest clients fail their clock calibration (perftest's r² line,
    then zeros): the one that fails once is run again with a new server and measures; the one that fails twice is
    no result with perftest's r² and "run it again", never a link at 0 Gb/s."""
    net, tmp, fabric = fleet
    first, second = sorted(fabric.hosts)[:2]
    nic = {h: next(r.rdma for r in fabric.hosts[h].rails if r.rail == 1) for h in (first, second)}
    once, twice = net.root / f"uncalibrated-{first}-{nic[first]}", net.root / f"uncalibrated-{second}-{nic[second]}"
    once.write_text("1")
    twice.write_text("2")
    try:
        rc, r = _accept(net, tmp, "uncalibrated", "--tags", "rail-bandwidth")
    finally:
        once.unlink()
        twice.unlink()
    assert rc == 1 and r["rail-bandwidth"]["status"] == "fail", r
    sent = {(m["src"], m["rail"]): m for m in r["rail-bandwidth"]["measurements"]}
    assert sent[(first, 1)]["value"] == 392.5 and sent[(first, 1)]["ok"], sent[(first, 1)]
    bad = sent[(second, 1)]
    assert bad["value"] is None and not bad["ok"], bad
    assert bad["detail"].startswith("no result: ib_write_bw client:1: perftest.clock: expected a run perftest could "
                                    "time") and "found r² 0.668728" in bad["detail"] and "run it again" in bad["detail"]
    assert all(m["ok"] for k, m in sent.items() if k != (second, 1)), sent


def test_slurm_runner_submits_and_each_task_takes_its_nodes_env(tmp_path: Path) -> None:
    """`--launcher slurm` with an sbatch on PATH: the rendered script is submitted and waited for; every task
    sources its own node's NCCL variables (a mixed DGX/HGX job), rank 0's `-J` JSON is judged."""
    import sys

    from fabric.design.derive import derive
    from fabric.model.load import load

    inv = FIXTURES / "inventories" / "mixed-dgx-hgx"
    fabric = derive(load(inv))
    bindir, root = tmp_path / "bin", tmp_path / "root"
    bindir.mkdir()
    root.mkdir()
    for tool, module in (("sbatch", "slurm"), ("all_reduce_perf", "host all_reduce_perf")):
        (bindir / tool).write_text(f'#!/bin/sh\nexec {sys.executable} -m tests.standins.{module} "$@"\n')
        (bindir / tool).chmod(0o755)
    cat = tmp_path / "catalog.yaml"
    cat.write_text(yaml.safe_dump({"checks": [{"check": "nccl-allreduce", "input": {
        "launcher": "slurm", "pairs": "none", "cluster": True, "timeout_s": 600}}]}))
    env = {**os.environ, "PATH": f"{bindir}:{os.environ['PATH']}", "STANDIN_ROOT": str(root),
           "PYTHONPATH": str(ROOT)}
    p = subprocess.run([FABRIC, "accept", str(inv), "--catalog", str(cat), "--format", "json", "-o",
                        str(tmp_path / "out")], capture_output=True, text=True, timeout=900, env=env,
                       cwd=ROOT)
    assert (tmp_path / "out" / "accept.json").exists(), p.stdout + p.stderr
    data = json.loads((tmp_path / "out" / "accept.json").read_text())
    [nccl] = data["results"]
    assert p.returncode == 0 and nccl["status"] == "pass", (nccl, p.stderr[-800:])
    assert nccl["measurements"][0]["detail"].startswith("JSON")
    ranks = [json.loads(ln) for ln in (root / "nccl-ranks.log").read_text().splitlines()]
    order = sorted(fabric.hosts)
    assert len(ranks) == 8 * len(order)
    for x in ranks:
        assert x["NCCL_IB_HCA"] == fabric.hosts[order[x["rank"] // 8]].nccl_env["NCCL_IB_HCA"]
    assert {x["NCCL_IB_HCA"] for x in ranks} == {h.nccl_env["NCCL_IB_HCA"] for h in fabric.hosts.values()}
