"""Switch state and counters on real NOSes, through the push drivers and the SSH stand-ins (real sshd, real
netmiko, the NOSes' documented output formats: tests/standins/telemetry.py): the `bgp` check (sessions and
ECMP width) and `fabric counters` (queues, PFC per priority, ECN-marked, watchdog) for SONiC, NVUE and EOS."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.push.test_standins import FABRIC, LEAF, _intent, _inventory, _prereq
from tests.standins.common import write_json
from tests.standins.harness import StandinNet, seed, standins
from tests.support.paths import ROOT

TELEMETRY = {"queues": {"3": {"bytes": 7_340_032_000, "packets": 1_792_000, "drops": 0, "ecn": 4242},
                        "0": {"bytes": 1_000_000, "packets": 1000, "drops": 17, "ecn": 0}},
             "pfc": {"3": {"rx": 120, "tx": 35}}, "wd": {"3": {"stuck": 2, "recovered": 2}}}


def _run(net: StandinNet, *args: str, tmp: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "FABRIC_STATE": str(tmp / "state"), "COLUMNS": "200", "FABRIC_LAB_STATE": str(tmp / "nolab")}
    env.pop("SSH_AUTH_SOCK", None)
    return subprocess.run(net.argv([FABRIC, *args]), capture_output=True, text=True, timeout=120, env=env,
                          stdin=subprocess.DEVNULL)


@pytest.fixture(params=["sonic", "nvue", "eos"])
def device(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[str, StandinNet, Path, object]]:
    """One rail leaf of each NOS behind the stand-in sshd, its BGP peers up and its routes as designed."""
    from fabric.design.bgp import expectation
    from fabric.design.derive import derive
    from fabric.model.load import load

    kind = request.param
    _prereq()
    src, target = {"sonic": ("sonic-example", None), "nvue": ("example", "nvue"), "eos": ("eos-example", None)}[kind]
    inv = _inventory(src, tmp_path / "inv", tmp_path, target=target)
    sw, files = _intent(inv)
    fabric = derive(load(inv))
    want = expectation(fabric.switches[LEAF], fabric)
    port = next(p.name for p in sw.ports if p.kind == "host")
    running = {"sonic": files.get("config_db.json"), "eos": files.get("running-config.cfg")}.get(kind)
    if kind == "nvue":
        import yaml

        running = json.dumps(yaml.safe_load(files["nvue-patch.yaml"])[0]["set"])
    peers = {n.port: sw.bgp.asn for n in sw.bgp.neighbors}
    if kind == "sonic":
        peers = {k.split("|")[1]: sw.bgp.asn for k in json.loads(running)["BGP_NEIGHBOR"]}
    elif kind == "eos":
        from fabric.nos.eos.driver import config_lines

        lines = config_lines(running)
        running = "\n".join(lines) + "\n"
        peers = {ln.split()[2]: sw.bgp.asn for ln in lines if ln.strip().startswith("neighbor interface")}
    with standins(tmp_path, {LEAF: (kind, sw.management.split("/")[0])}) as net:
        d = net.devices[LEAF]
        seed(d, kind, running, peers)
        write_json(d / "telemetry.json", {"ports": {port: TELEMETRY},
                                          "routes": {p: want.ecmp or 1 for p in sorted(want.learned)}})
        yield kind, net, d, (port, want)


def test_counters_read_every_nos_into_the_same_names(device, tmp_path: Path) -> None:
    kind, net, _d, (port, _want) = device
    p = _run(net, "counters", str(tmp_path / "inv"), "--no-hosts", "--format", "json", "--interval", "0.2",
             tmp=tmp_path)
    # only LEAF has a stand-in: the others are named unreachable and the exit is 1, the rows still come
    gone = [ln for ln in p.stderr.splitlines() if ln.startswith("unreachable: ")]
    assert p.returncode == 1 and len(gone) == 1 and "spine1" in gone[0] and LEAF not in gone[0], p.stdout + p.stderr
    rows = {(r["node"], r["port"]): r for r in json.loads(p.stdout)["rows"]}
    assert (LEAF, port) in rows and "queue" in rows[(LEAF, port)]["exposed"]
    # --watch: a sample a line (JSON Lines), each line parsed whole; the notes stay on stderr
    p = _run(net, "counters", str(tmp_path / "inv"), "--no-hosts", "--format", "json", "--watch", "0.3", "--count",
             "2", tmp=tmp_path)
    samples = [json.loads(line) for line in p.stdout.splitlines()]
    assert len(samples) == 2 and all((LEAF, port) in {(r["node"], r["port"]) for r in s["rows"]} for s in samples)
    # the raw counters, through the driver over netmiko/sshd, in the common names
    probe = ("import json, sys; from pathlib import Path; from fabric.cli.site import open_site; "
             "from fabric.accept.counters import switch_snapshot; "
             f"_, site = open_site(Path({str(tmp_path / 'inv')!r})); "
             f"print(json.dumps(switch_snapshot(site, {LEAF!r})))")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop("SSH_AUTH_SOCK", None)
    got = subprocess.run(net.argv([sys.executable, "-c", probe]), capture_output=True, text=True, timeout=60, env=env)
    cs = json.loads(got.stdout or "{}").get(port, {})
    assert cs.get("queue:3:tx_bytes") == 7_340_032_000 or kind == "eos", (kind, got.stderr[-500:], cs)
    assert cs.get("queue:0:drops") == 17, cs
    marks = cs.get("queue:3:ecn_marked", cs.get("port:ecn_marked"))
    assert marks == 4242, cs
    if kind == "eos":  # EOS counts PFC frames per port
        assert cs["pfc:all:rx_pause"] == 120 and cs["pfc:all:tx_pause"] == 35
        assert cs["pfcwd:3:storm_detected"] == 2 and cs["pfcwd:3:storm_restored"] == 2
    else:
        assert cs["pfc:3:rx_pause"] == 120 and cs["pfc:3:tx_pause"] == 35 and cs["pfc:0:rx_pause"] == 0
    assert cs["pfcwd:3:storm_detected"] == 2  # every NOS reports the watchdog's storms per queue


def test_bgp_check_reads_sessions_and_ecmp(device, tmp_path: Path) -> None:
    kind, net, d, (_port, want) = device
    p = _run(net, "accept", str(tmp_path / "inv"), "--tags", "bgp", "--format", "json", "-o", str(tmp_path / "r"),
             tmp=tmp_path)
    data = json.loads((tmp_path / "r" / "accept.json").read_text())
    [m] = [m for m in data["results"][0]["measurements"] if m["src"] == LEAF]
    if kind == "nvue":  # NVUE: sessions only (its RIB is not read)
        assert m["ok"] and "routes not read" in m["detail"], m
    else:
        assert m["ok"] and m["value"] == want.ecmp and m["threshold"] == want.ecmp, m
        # one uplink lost: the width drops, named with the switch
        write_json(d / "telemetry.json", {"ports": {}, "routes": {p: (want.ecmp or 1) - 1 for p in want.learned}})
        _run(net, "accept", str(tmp_path / "inv"), "--tags", "bgp", "--format", "json", "-o", str(tmp_path / "r2"),
             tmp=tmp_path)
        data = json.loads((tmp_path / "r2" / "accept.json").read_text())
        [m] = [m for m in data["results"][0]["measurements"] if m["src"] == LEAF]
        assert not m["ok"] and f"ECMP width {(want.ecmp or 1) - 1}, expected {want.ecmp}" in m["detail"]
    assert p.returncode in (0, 1)


def test_cabling_check_names_the_cables_to_swap(device, tmp_path: Path) -> None:
    """The leaf's LLDP through its driver (SONiC `show lldp table`, NVUE `nv show interface <swp> lldp -o json`,
    EOS `show lldp neighbors detail | json`) with two host cables swapped at the leaf: the check names the swap,
    and the traffic checks after it do not run."""
    from fabric.design.load import load_deriver
    from tests.support import lldp_outputs as L

    kind, net, d, _ = device
    topo = load_deriver(tmp_path / "inv").topo
    one, two = [ln for ln in topo.links if ln.b == LEAF and ln.kind == "host-leaf"][:2]
    cables = L.swap_far(L.hall(topo), (LEAF, one.b_port), (LEAF, two.b_port))
    ext = L.EXT[kind]
    (d / f"lldp.{ext}").write_text(L.RENDER[ext](topo, L.neighbours(cables)[LEAF]))
    # the engine as `fabric accept` runs it, over the stand-in's sshd: the switches only (the hosts have no
    # stand-in), then a check of the post phase that the failed cabling check keeps from running
    probe = ("import json; from pathlib import Path; from fabric.cli.site import open_site; "
             "from fabric.accept import catalog as cat, engine; "
             f"_, site = open_site(Path({str(tmp_path / 'inv')!r})); "
             "checks = cat.build(cat.Catalog.model_validate({'checks': [{'check': 'cabling', 'input': "
             "{'hosts': False}}, {'check': 'pfc-watchdog'}]})); "
             "print(json.dumps([r.model_dump(mode='json') for r in engine.run(site, checks).results]))")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop("SSH_AUTH_SOCK", None)
    got = subprocess.run(net.argv([sys.executable, "-c", probe]), capture_output=True, text=True, timeout=120, env=env)
    assert got.returncode == 0, got.stderr[-2000:]
    results = {r["name"]: r for r in json.loads(got.stdout)}
    swap = (f"{one.a} NIC 1 is in {LEAF}:{two.b_port}, expected {LEAF}:{one.b_port}; {two.a} NIC 1 is in "
            f"{LEAF}:{one.b_port} — swap these two cables")
    assert results["cabling"]["status"] == "fail" and swap in results["cabling"]["message"], results["cabling"]
    assert results["pfc-watchdog"]["status"] == "skipped"
    assert results["pfc-watchdog"]["message"].startswith("not run: cabling failed")
