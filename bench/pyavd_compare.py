"""Per-device render time of Arista pyavd 6.4.0 next to ours, on comparable eBGP-unnumbered leaf/spine fabrics.

Backs (or refutes) the claim "per switch, our rendering is at least 10× faster than pyavd's ~70 ms per device".

- pyavd runs in its own virtual environment (default `~/.cache/roce-fabric/pyavd-venv`, override with env
  PYAVD_VENV), created and filled with `pip install pyavd==6.4.0` on first use, and is measured in a subprocess
  with that venv's python, so the project venv never sees pyavd. Inputs: 2 spines + N l3leafs (each its own
  bgp_as, one uplink to each spine), `underlay_routing_protocol: ebgp`, `underlay_rfc5549: true`,
  `overlay_routing_protocol: none`, platform 7060X5, one SVI VLAN per leaf, and the same RoCE QoS as ours
  (a qos_profile with PFC + ECN on every fabric port, DSCP map, PFC watchdog). Two variants: "+ servers" adds
  32 servers per leaf on access ports with the RoCE profile (what our leaves carry), "fabric only" has none (the
  setting of the ~70 ms figure). Timed per device: `get_device_structured_config` + `get_device_config`.
- Ours runs in this interpreter: a `fabric generate gpu-rail` inventory (EOS target, 7060x5, no breakout, 2 spines,
  N leaves × 32 hosts), `load` + `derive` (a warm-up run, then the median of `--rounds` runs, at least
  DERIVE_ROUNDS, as pyavd's per-device steps are timed after a warm-up), then `render_switch` timed per switch.
  The fabric-wide steps are reported as a per-switch share, because pyavd's structured-config step is its
  derivation: "switch derive share" is what the
  switch configs need (the checked topology, `Deriver(loaded)`, and every switch's intent) / switches — the EOS
  renderer reads no host intent; "whole derive share" adds every host's own intent (its netplan, NCCL and NIC
  settings, which pyavd does not produce) / switches. Likewise pyavd's fabric-wide validate + facts as a
  per-device share.

Both sides warm up on one leaf and one spine first, then time every device `--rounds` times.
Usage: `.venv/bin/python bench/pyavd_compare.py [--leaves 32] [--rounds 3]`.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

PYAVD_VERSION = "6.4.0"
HOSTS_PER_LEAF = 32  # fabric generate gpu-rail: one scalable unit = 32 hosts, one leaf per rail
DERIVE_ROUNDS = 9  # our load + derive runs in tens of ms: timed at least this often, the median reported

# Runs inside the pyavd venv: argv = leaves, rounds, host ports per leaf, servers per leaf (0 = fabric links only).
# Prints one JSON line on stdout.
PYAVD_SCRIPT = r'''
import copy, json, sys, time
import pyavd
from pyavd.api.schemas import AVDDesign

leaves_n, rounds, ports, servers = (int(a) for a in sys.argv[1:5])
ECN = {"ecn": {"threshold": {"units": "bytes", "min": 150000, "max": 1500000, "max_probability": 100}}}
ROCE = {
    "name": "ROCE", "trust": "dscp",
    "priority_flow_control": {"enabled": True, "priorities": [{"priority": 3, "no_drop": True}],
                              "watchdog": {"enabled": True}},
    "tx_queues": [{"id": 0, "bandwidth_percent": 50, "random_detect": ECN},
                  {"id": 3, "bandwidth_percent": 50, "random_detect": ECN},
                  {"id": 6, "priority": "priority strict"}],
}
DSCP = [" ".join(str(d) for d in range(lo, lo + 8) if d not in (26, 48)) + " to traffic-class 0"
        for lo in range(0, 64, 8)] + ["26 to traffic-class 3", "48 to traffic-class 6"]
spines = ["spine1", "spine2"]
leaves = [f"leaf{i}" for i in range(1, leaves_n + 1)]
fabric = {
    "fabric_name": "BENCH",
    "underlay_routing_protocol": "ebgp",
    "underlay_rfc5549": True,
    "overlay_routing_protocol": "none",
    "p2p_uplinks_mtu": 9214,
    "p2p_uplinks_qos_profile": "ROCE",
    "custom_structured_configuration_qos_profiles": [ROCE],
    "custom_structured_configuration_qos": {"map": {"dscp": DSCP}},
    "custom_structured_configuration_priority_flow_control": {
        "watchdog": {"action": "drop", "timeout": "0.2", "recovery_time": "0.2", "polling_interval": "0.1"}},
    "spine": {
        "defaults": {"platform": "7060X5", "bgp_as": "65000", "loopback_ipv4_pool": "10.255.0.0/24"},
        "nodes": [{"name": n, "id": i, "mgmt_ip": f"192.168.0.{i}/24"} for i, n in enumerate(spines, 1)],
    },
    "l3leaf": {
        "defaults": {"platform": "7060X5", "loopback_ipv4_pool": "10.255.1.0/24",
                     "vtep_loopback_ipv4_pool": "10.255.2.0/24", "uplink_switches": spines,
                     "uplink_interfaces": [f"Ethernet{ports + 1}/1", f"Ethernet{ports + 2}/1"]},
        "node_groups": [
            {"group": f"rack{i}", "bgp_as": str(65100 + i),
             "nodes": [{"name": n, "id": i, "mgmt_ip": f"192.168.1.{i}/24",
                        "uplink_switch_interfaces": [f"Ethernet{i}/1", f"Ethernet{i}/1"]}]}
            for i, n in enumerate(leaves, 1)],
    },
    "tenants": [{"name": "GPU", "vrfs": [{"name": "default", "svis": [
        {"id": 1001, "name": "rail", "enabled": True, "mtu": 9214,
         "nodes": [{"node": n, "ip_address": f"10.0.{i}.1/24"} for i, n in enumerate(leaves, 1)]}]}]}],
    "servers": [
        {"name": f"gpu-{li}-{h}", "adapters": [
            {"endpoint_ports": ["rail1"], "switch_ports": [f"Ethernet{h}/1"], "switches": [leaf],
             "mode": "access", "vlans": "1001", "qos_profile": "ROCE", "speed": "400g-8", "mtu": 9214}]}
        for li, leaf in enumerate(leaves, 1) for h in range(1, servers + 1)],
}
devices = spines + leaves
t0 = time.perf_counter()
validated = {}
for n in devices:
    res = pyavd.validate_inputs({**fabric, "type": "spine" if n in spines else "l3leaf"})
    problems = [f"{'.'.join(map(str, v.path))}: {v.message}" for v in res.validation_result.violations]
    problems += [f"{'.'.join(map(str, k.path))}: ignored eos_cli_config_gen key"
                 for k in res.validation_result.ignored_eos_config_keys]
    if problems or res.validated_data is None:
        sys.exit(f"pyavd input validation failed for {n}:\n  " + "\n  ".join(problems[:20]))
    validated[n] = res.validated_data
t1 = time.perf_counter()
facts = pyavd.get_avd_facts({n: AVDDesign._from_dict(copy.deepcopy(v)) for n, v in validated.items()})
t2 = time.perf_counter()


def one(n):
    t = time.perf_counter()
    design = AVDDesign._from_dict(copy.deepcopy(validated[n]))  # loading validated inputs: reported, not counted
    a = time.perf_counter()
    sc = pyavd.get_device_structured_config(n, design, facts)
    b = time.perf_counter()
    cfg = pyavd.get_device_config(sc)
    c = time.perf_counter()
    return (a - t) * 1e3, (b - a) * 1e3, (c - b) * 1e3, cfg.count("\n")


one(leaves[0]), one(spines[0])  # warm-up
samples = [one(n) for _ in range(rounds) for n in devices]
print(json.dumps({
    "pyavd": pyavd.__version__, "python": sys.version.split()[0], "devices": len(devices),
    "validate_s": t1 - t0, "facts_s": t2 - t1,
    "load_ms": [s[0] for s in samples], "structured_ms": [s[1] for s in samples], "config_ms": [s[2] for s in samples],
    "lines": sum(s[3] for s in samples) / len(samples),
}))
'''


@dataclass
class Row:
    tool: str
    devices: int
    samples_ms: list[float]

    @property
    def median(self) -> float:
        return statistics.median(self.samples_ms)

    @property
    def mean(self) -> float:
        return statistics.fmean(self.samples_ms)


@dataclass
class Ours:
    devices: int
    hosts: int
    roles: dict[str, int]
    load_s: float
    switches_s: float  # the checked topology and every switch's intent: what the switch configs need
    derive_s: float  # the whole fabric's intent, hosts included
    render_ms: list[float]
    lines: float


@dataclass
class Pyavd:
    pyavd: str
    python: str
    devices: int
    validate_s: float
    facts_s: float
    load_ms: list[float]
    structured_ms: list[float]
    config_ms: list[float]
    lines: float


def venv_python(venv: Path) -> Path:
    return venv / ("Scripts/python.exe" if os.name == "nt" else "bin/python")


def has_pyavd(python: Path) -> bool:
    check = f"import sys, pyavd; sys.exit(pyavd.__version__ != {PYAVD_VERSION!r})"
    return python.exists() and subprocess.run([str(python), "-c", check], capture_output=True).returncode == 0


def ensure_pyavd(venv: Path) -> Path | None:
    """The venv's python with pyavd==PYAVD_VERSION importable, creating/filling the venv if needed; None on failure."""
    python = venv_python(venv)
    if has_pyavd(python):
        print(f"pyavd {PYAVD_VERSION} found in {venv}")
        return python
    steps: list[tuple[str, list[str]]] = []
    if not python.exists():
        steps.append((f"creating virtual environment {venv}", [sys.executable, "-m", "venv", str(venv)]))
    steps.append((f"installing pyavd=={PYAVD_VERSION} into {venv} (pip install, may take a minute)",
                  [str(python), "-m", "pip", "install", "--disable-pip-version-check", "-q",
                   f"pyavd=={PYAVD_VERSION}"]))
    for what, cmd in steps:
        print(f"{what}: {' '.join(cmd)}", flush=True)
        try:
            done = subprocess.run(cmd, capture_output=True, text=True)
        except OSError as exc:
            print(f"pyavd could not be installed: {exc}")
            return None
        if done.returncode:
            tail = "\n    ".join((done.stderr or done.stdout).strip().splitlines()[-10:])
            print(f"pyavd could not be installed ({what} failed, exit {done.returncode}):\n    {tail}")
            return None
    if not has_pyavd(python):
        print(f"pyavd could not be installed: `import pyavd` still fails in {venv}")
        return None
    print(f"pyavd {PYAVD_VERSION} installed in {venv}")
    return python


def measure_pyavd(python: Path, leaves: int, rounds: int, servers: int) -> Pyavd | None:
    cmd = [str(python), "-c", PYAVD_SCRIPT, str(leaves), str(rounds), str(HOSTS_PER_LEAF), str(servers)]
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode:
        print(f"pyavd measurement failed (exit {done.returncode}):\n    "
              + "\n    ".join(done.stderr.strip().splitlines()[-15:]))
        return None
    return Pyavd(**json.loads(done.stdout.strip().splitlines()[-1]))


def measure_ours(leaves: int, rounds: int) -> Ours:
    from fabric.design.derive import Deriver, derive
    from fabric.generate import GpuRailSpec, write
    from fabric.model.load import load
    from fabric.render import render_switch

    spec = GpuRailSpec(name="bench", gpus=leaves * HOSTS_PER_LEAF, rails=8, gpus_per_host=8,
                       hosts_per_su=HOSTS_PER_LEAF, spines=2, target="eos", platform="7060x5", breakout=None)
    load_s: list[float] = []
    switches_s: list[float] = []
    derive_s: list[float] = []
    with tempfile.TemporaryDirectory() as tmp:
        write(spec, Path(tmp) / "inv")
        for i in range(max(rounds, DERIVE_ROUNDS) + 1):  # the first is the warm-up: imports, first validations
            t0 = time.perf_counter()
            loaded = load(Path(tmp) / "inv")
            t1 = time.perf_counter()
            d = Deriver(loaded)
            for name in d.topo.switches:
                d.device(name)
            t2 = time.perf_counter()
            fabric = derive(loaded)
            t3 = time.perf_counter()
            if i:
                load_s.append(t1 - t0)
                switches_s.append(t2 - t1)
                derive_s.append(t3 - t2)
    switches = list(fabric.switches.values())
    for sw in (next(s for s in switches if s.role == "leaf"), next(s for s in switches if s.role == "spine")):
        render_switch(sw, fabric)  # warm-up: imports, template compilation
    samples: list[float] = []
    lines = 0
    for _ in range(rounds):
        for sw in switches:
            a = time.perf_counter()
            files = render_switch(sw, fabric)
            samples.append((time.perf_counter() - a) * 1e3)
            lines += sum(text.count("\n") for text in files.values())
    roles: dict[str, int] = {}
    for sw in switches:
        roles[sw.role] = roles.get(sw.role, 0) + 1
    return Ours(devices=len(switches), hosts=len(fabric.hosts), roles=roles, load_s=statistics.median(load_s),
                switches_s=statistics.median(switches_s), derive_s=statistics.median(derive_s),
                render_ms=samples, lines=lines / len(samples))


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--leaves", type=int, default=32, help="leaf switches per side, multiple of 8 (default 32)")
    parser.add_argument("--rounds", type=int, default=3, help="timed passes over every device (default 3)")
    args = parser.parse_args()
    if args.leaves % 8 or not 8 <= args.leaves <= 64:
        parser.error("--leaves must be a multiple of 8 between 8 and 64 (8 rails per scalable unit, 64-port spines)")
    if args.rounds < 1:
        parser.error("--rounds must be at least 1")

    venv = Path(os.environ.get("PYAVD_VENV") or Path.home() / ".cache" / "roce-fabric" / "pyavd-venv").expanduser()
    python = ensure_pyavd(venv)
    variants: dict[str, Pyavd] = {}
    if python:
        for label, servers in (("+ servers", HOSTS_PER_LEAF), ("fabric only", 0)):
            print(f"measuring pyavd ({label}) ...", flush=True)
            if (result := measure_pyavd(python, args.leaves, args.rounds, servers)) is not None:
                variants[label] = result
    print("measuring ours ...", flush=True)
    ours = measure_ours(args.leaves, args.rounds)

    n = ours.devices
    switch_share = ours.switches_s * 1e3 / n
    derive_share = ours.derive_s * 1e3 / n
    load_share = ours.load_s * 1e3 / n
    render = Row("ours: render_switch", n, ours.render_ms)
    ours_fair = Row("ours: render + switch derive share", n, [s + switch_share for s in render.samples_ms])
    ours_whole = Row("ours: render + whole derive share", n, [s + derive_share for s in render.samples_ms])
    ours_full = Row("ours: + load share (whole derive)", n, [s + load_share for s in ours_whole.samples_ms])
    rows = [render, ours_fair, ours_whole, ours_full]
    ratios: list[tuple[str, Row, Row]] = []

    print()
    print(f"ours : {n} switches {ours.roles} + {ours.hosts} hosts (EOS, 7060x5, rfc5549 eBGP), "
          f"{ours.lines:.0f} config lines/switch; medians after a warm-up: load {ours.load_s * 1e3:.1f} ms "
          f"(= {load_share:.2f} ms/switch), topology + switch intents {ours.switches_s * 1e3:.1f} ms "
          f"(= {switch_share:.2f} ms/switch), whole derive {ours.derive_s * 1e3:.1f} ms "
          f"(= {derive_share:.2f} ms/switch)")
    if not variants:
        print("pyavd: no figures (see above); only ours are printed")
    for label, avd in variants.items():
        m = avd.devices
        facts_share = avd.facts_s * 1e3 / m
        validate_share = avd.validate_s * 1e3 / m
        avd_fair = Row(f"pyavd {label}: structured + config", m,
                       [a + b for a, b in zip(avd.structured_ms, avd.config_ms, strict=True)])
        avd_full = Row(f"pyavd {label}: + facts + validate share", m,
                       [s + facts_share + validate_share for s in avd_fair.samples_ms])
        rows += [Row(f"pyavd {label}: structured config", m, avd.structured_ms),
                 Row(f"pyavd {label}: device config", m, avd.config_ms), avd_fair, avd_full]
        ratios += [(f"{label}, render only (structured + config / render_switch)", avd_fair, render),
                   (f"{label}, fair (structured + config / render + switch derive share)", avd_fair, ours_fair),
                   (f"{label}, whole derive (structured + config / render + whole derive share)", avd_fair,
                    ours_whole),
                   (f"{label}, end to end (+ facts + validate / + load share)", avd_full, ours_full)]
        print(f"pyavd {label}: {avd.pyavd} on Python {avd.python}, {m} devices, {avd.lines:.0f} config "
              f"lines/device; validate {avd.validate_s * 1e3:.1f} ms (= {validate_share:.2f} ms/device), "
              f"facts {avd.facts_s * 1e3:.1f} ms (= {facts_share:.2f} ms/device); "
              f"AVDDesign load {statistics.median(avd.load_ms):.2f} ms/device (median, not counted)")
    print(f"timed {args.rounds} round(s) over every device after a warm-up; ms per device")
    print()
    width = max(len(r.tool) for r in rows)
    print(f"{'tool':<{width}} {'devices':>7} {'median ms':>10} {'mean ms':>9}")
    for r in rows:
        print(f"{r.tool:<{width}} {r.devices:>7} {r.median:>10.2f} {r.mean:>9.2f}")
    if ratios:
        print()
        width = max(len(label) for label, _, _ in ratios)
        print(f"{'ratio pyavd / ours':<{width}} {'median':>8} {'mean':>8}")
        for label, theirs, mine in ratios:
            print(f"{label:<{width}} {theirs.median / mine.median:>7.1f}× {theirs.mean / mine.mean:>7.1f}×")
        fair = min(theirs.median / mine.median for label, theirs, mine in ratios if "fair" in label)
        print(f"claim 'per switch ≥ 10× faster than pyavd' (lowest fair median ratio {fair:.1f}×): "
              f"{'holds' if fair >= 10 else 'does NOT hold'}")
        for label, theirs, mine in ratios:
            if "fair" in label:
                ratio = theirs.median / mine.median
                print(f"goal '≥ 100× per EOS device counting our derive share' ({label.split(',')[0]}: "
                      f"{ratio:.1f}×): {'met' if ratio >= 100 else 'NOT met'}")


if __name__ == "__main__":
    main()
