"""`fabric plan` (live) and `fabric apply` of a one-knob change against a whole generated fabric of stand-in switches.

Each size is a `fabric generate gpu-rail` fabric of one NOS; every switch is served by the stand-in fleet
(tests.standins.fleet: one process, asyncssh, the stand-ins' own command code) at its management address in a
network namespace, seeded with its own render. The real CLI runs there, as a user runs it:

1. `fabric plan --all` with nothing to change (every switch read and diffed);
2. one knob changed in the inventory (qos ECN min threshold of the lossless class: every switch changes), `fabric
   plan` again, then `fabric apply --yes --canary 1 --batch 10%` (not FRR: its stand-in has no frr-reload.py).

Printed per step: wall and CPU seconds, the tool's peak RSS, threads and open descriptors, the cost per switch, and
what is open in the namespace (processes besides the fleet's server, TCP connections) before and after; the exponents
of wall time and of the tool's CPU from the smallest to the largest size last. `--faults P` makes P % of the switches
each refuse the login, hang after it, or answer noise, and prints how each step reported them.

    sudo nice .venv/bin/python bench/fleet_live.py [--nos nvue sonic eos frr] [--switches 224 448 896 1792]
        [--workers 64] [--faults 1] [--plan-only] [--outputs DIR]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.measure import FABRIC, ROOT, load, run

PLATFORM = {"nvue": ["--platform", "sn5600"], "sonic": ["--platform", "sn5600"], "eos": ["--platform", "7060x5"],
            "frr": ["--platform", "sn5600"]}  # FRR on a Spectrum white-box (linux-frr lacks the super-spine ports)
KNOB = "qos:\n  preset: nvidia-roce\n  ecn:\n    3: {min_bytes: 160000}\n"
FAST = ["--settle", "0", "--postcheck-timeout", "5", "--confirm-timer", "60"]
FAULTS = ("refuse-login", "hang", "garbage")
# switches → the `fabric generate gpu-rail` arguments that give them (all three tiers: pods of spines, super-spines)
SIZES = {224: ["--gpus", "4096", "--pods", "2"], 448: ["--gpus", "8192"], 896: ["--gpus", "16384"],
         1792: ["--gpus", "32768"]}


def generate(nos: str, switches: int, where: Path) -> Path:
    inv = where / f"{nos}-{switches}"
    subprocess.run([FABRIC, "generate", "gpu-rail", *SIZES[switches], "-o", str(inv), "--target", nos,
                    *PLATFORM[nos], "--force"], check=True, stdout=subprocess.DEVNULL)
    return inv


def endpoints(inv: Path) -> dict[str, Any]:
    """Every switch as `fabric plan` reaches it (its render, its management address)."""
    from fabric.access import InventorySite
    from fabric.design.derive import derive
    from fabric.model.inventory import Access
    from fabric.model.load import load as load_inventory

    site = InventorySite(derive(load_inventory(inv)), Access(known_hosts=__file__))
    return {name: site.switch(name) for name in site.fabric.switches}


def seed_all(devices: dict[str, Path], eps: dict[str, Any], nos: str) -> None:
    """Each device's running configuration: its own render (as after an earlier apply)."""
    from tests.standins.harness import seed_render

    for name, d in devices.items():
        seed_render(d, nos, eps[name].intended, eps[name].options["files"])


def plant_faults(devices: dict[str, Path], percent: float) -> dict[str, str]:
    """`percent` of the switches for each fault, spread over the fabric (the first ones are the canary's)."""
    names = sorted(devices)
    each = max(1, round(len(names) * percent / 100)) if percent else 0
    step = max(1, len(names) // (each * len(FAULTS) + 1)) if each else 1
    planted = {}
    for i, name in enumerate(names[step::step][: each * len(FAULTS)]):
        planted[name] = FAULTS[i % len(FAULTS)]
        (devices[name] / "fault").write_text(planted[name])
    return planted


def open_in(ns: str) -> dict[str, int]:
    """Processes in the namespace besides the fleet's server (and its `ip netns exec`), and TCP connections."""
    pids = subprocess.run(["ip", "netns", "pids", ns], capture_output=True, text=True).stdout.split()
    procs = [p for p in pids if "tests.standins.fleet" not in Path(f"/proc/{p}/cmdline").read_text(errors="replace")]
    conns = subprocess.run(["ip", "netns", "exec", ns, "ss", "-Htn"], capture_output=True, text=True).stdout
    return {"processes": len(procs), "tcp": len(conns.splitlines())}


class Peaks:
    """The tool's peak thread and descriptor counts, sampled every 50 ms (bench.measure.run's `watch`); its processes
    looked up every second (pgrep reads every process's command line, thousands with the fleet's shells: every
    50 ms it took 6 % of the machine from what is measured)."""

    def __init__(self, inv: str) -> None:
        self.threads = self.fds = 0
        self.inv = inv
        self.pids: list[str] = []
        self.looked = -1.0

    def __call__(self, t: float) -> None:
        if t - self.looked >= 1:
            self.pids, self.looked = self._pids(), t
        for pid in self.pids:
            try:
                status = Path(f"/proc/{pid}/status").read_text()
                threads = int(next(ln.split()[1] for ln in status.splitlines() if ln.startswith("Threads:")))
                self.threads = max(self.threads, threads)
                self.fds = max(self.fds, len(os.listdir(f"/proc/{pid}/fd")))
            except (OSError, StopIteration):
                pass

    def _pids(self) -> list[str]:
        return subprocess.run(["pgrep", "-f", f"bin/fabric (plan|apply) {self.inv} "], capture_output=True,
                              text=True).stdout.split()


def server_cpu(pid: int) -> float:
    """CPU seconds the fleet's server has used, with the shells it started and waited for (and what they ran)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    return sum(int(f) for f in fields[11:15]) / os.sysconf("SC_CLK_TCK")


def keep(out: Path, where: Path | None, name: str) -> None:
    """The step's JSON output without its times (`seconds`), for a comparison with another checkout's."""
    if where is None:
        return
    try:
        doc = json.loads(out.read_text())
    except ValueError:
        doc = {"not JSON": out.read_text()}
    for d in doc.get("devices", []):
        d.pop("seconds", None)
    where.mkdir(parents=True, exist_ok=True)
    (where / f"{name}.json").write_text(json.dumps(doc, indent=2) + "\n")


def step(label: str, ns: str, argv: list[str], n: int, env: dict[str, str], out: Path, server: int) -> dict[str, Any]:
    before, cpu0 = open_in(ns), server_cpu(server)
    peaks = Peaks(argv[2])
    with out.open("w") as f:
        fig = run(["ip", "netns", "exec", ns, *argv], stdout=f.fileno(), env=env, watch=peaks)
    after, served = open_in(ns), server_cpu(server) - cpu0
    print(f"  {label}: {fig}; {fig.wall / n * 1000:.1f} ms and {fig.cpu / n * 1000:.1f} CPU-ms per switch; "
          f"threads ≤ {peaks.threads}, descriptors ≤ {peaks.fds}; the fleet (server and shells) {served:.1f} "
          f"CPU-s ({served / n * 1000:.1f} per switch); open in the namespace before {before}, after {after}; {load()}",
          flush=True)
    return {"wall": fig.wall, "cpu": fig.cpu, "rss": fig.rss_mib, "rc": fig.rc, "after": after}


def summarize(out: Path, planted: dict[str, str]) -> None:
    """How the plan or apply reported each planted fault (its status and first words)."""
    try:
        devices = {d["device"]: d for d in json.loads(out.read_text())["devices"]}
    except (ValueError, KeyError):
        return
    counts: dict[str, int] = {}
    for d in devices.values():
        counts[d["status"]] = counts.get(d["status"], 0) + 1
    print(f"    statuses: {counts}")
    for name, fault in sorted(planted.items())[:6]:
        print(f"    {fault:<12} {name}: {_why(devices.get(name, {}))}")
    unplanted = [d for name, d in devices.items() if name not in planted and d["status"] in ("error", "failed")]
    for d in unplanted[:4]:
        print(f"    no fault   {d['device']}: {_why(d)}")


def _why(d: dict[str, Any]) -> str:
    return f"{d.get('status')}: {' '.join(str(d.get('error') or d.get('detail') or '').split())[:160]}"


def one_size(nos: str, size: int, workers: int, faults: float, tmp: Path, *, plan_only: bool,
             outputs: Path | None = None) -> dict[str, Any]:
    from tests.standins.harness import standins

    inv = generate(nos, size, tmp)
    eps = endpoints(inv)
    n = len(eps)
    print(f"{nos}, {n} switches ({' '.join(SIZES[size])}), --workers {workers}", flush=True)
    with standins(tmp / f"net-{nos}-{size}", {name: (nos, ep.address) for name, ep in eps.items()},
                  server="fleet") as net:
        seed_all(net.devices, eps, nos)
        planted = plant_faults(net.devices, faults)
        with (inv / "fabric.yaml").open("a") as f:
            f.write(f"access:\n  username: root\n  key_file: {net.key}\n  known_hosts: {net.known_hosts}\n")
        server = int((net.root.parent / "fleet.ready").read_text())
        env = {"FABRIC_STATE": str(tmp / f"state-{nos}-{size}"), "COLUMNS": "200"}
        common = [str(inv), "--workers", str(workers)]
        res = {"n": n}
        out = tmp / "out.json"
        res["plan"] = step("plan, nothing to change", net.netns, [FABRIC, "plan", *common, "--format", "json"], n,
                           env, out, server)
        summarize(out, planted)
        keep(out, outputs, f"{nos}-{n}-plan")
        if plan_only:
            return res
        (inv / "qos.yaml").write_text(KNOB)
        res["plan1"] = step("plan, one knob changed", net.netns, [FABRIC, "plan", *common, "--format", "json"], n,
                            env, out, server)
        summarize(out, planted)
        keep(out, outputs, f"{nos}-{n}-plan1")
        if nos != "frr":
            res["apply"] = step("apply --canary 1 --batch 10%", net.netns,
                                [FABRIC, "apply", *common, "--yes", "--canary", "1", "--batch", "10%",
                                 "--format", "json", *FAST], n, env, out, server)
            summarize(out, planted)
            keep(out, outputs, f"{nos}-{n}-apply")
    return res


def exponent(small: dict[str, Any], large: dict[str, Any], key: str, figure: str = "wall") -> str:
    """How `figure` (wall, cpu) of step `key` grows with the switches: the exponent of a power law through both."""
    if key not in small or key not in large:
        return "-"
    return f"{math.log(large[key][figure] / small[key][figure]) / math.log(large['n'] / small['n']):.2f}"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nos", nargs="+", default=["nvue", "sonic", "eos", "frr"])
    ap.add_argument("--switches", nargs="+", type=int, choices=sorted(SIZES), default=sorted(SIZES))
    ap.add_argument("--workers", type=int, default=64)
    ap.add_argument("--faults", type=float, default=0.0, help="percent of switches for each fault")
    ap.add_argument("--plan-only", action="store_true", help="the first plan alone")
    ap.add_argument("--outputs", type=Path, help="keep each step's JSON output here, without its times (to compare "
                    "with another checkout's: PYTHONPATH=<its root> runs its fabric)")
    args = ap.parse_args()
    if os.geteuid() != 0:
        print("bench/fleet_live.py needs root (a network namespace)", file=sys.stderr)
        return 2
    os.chdir(ROOT)
    for nos in args.nos:
        results = []
        with tempfile.TemporaryDirectory(prefix="fleet-live-") as tmp:
            for size in args.switches:
                results.append(one_size(nos, size, args.workers, args.faults, Path(tmp), plan_only=args.plan_only,
                                        outputs=args.outputs))
        if len(results) > 1:
            first, last = results[0], results[-1]
            for figure, what in (("wall", "wall time"), ("cpu", "the tool's CPU")):
                plan, plan1, apply = (exponent(first, last, key, figure) for key in ("plan", "plan1", "apply"))
                print(f"{nos}: exponent of {what} {first['n']}→{last['n']} switches: plan {plan}, changed plan "
                      f"{plan1}, apply {apply}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
