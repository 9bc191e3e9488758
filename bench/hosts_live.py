"""`fabric hosts plan` and `fabric hosts apply` through ansible-runner against a whole generated fabric of stand-in
GPU hosts.

Each size is a `fabric generate gpu-rail` fabric (8 GPUs a host); every host is served by the stand-in fleet
(tests.standins.fleet: one asyncssh process, Ansible's modules run by tests.standins.modules) at its management
address in a network namespace, its `fabric host plan|apply` answering with the real agent's report for that host
(tests.standins.hostagent: recorded once in a namespace with veth rails, then given each host's own values). The
real CLI runs there, as a user runs it:

1. `fabric hosts plan` of the fresh fleet (every host has changes);
2. `fabric hosts apply`;
3. `fabric hosts plan` again (nothing to change).

Printed per step: wall and CPU seconds (the tool with Ansible's processes it waited for), the tool's peak RSS, the
cost per host, the fleet's CPU (its server, the module runner and what they ran), and what is open in the namespace
(processes besides the fleet's, TCP connections) before and after; the exponent of wall time from the smallest to
the largest size last. `--forks` and `--strategy` take several values: each pair runs the first plan alone (a
sweep) unless one pair is given. `--faults P` makes P % of the hosts each refuse the login, hang after it, or
answer noise.

    sudo nice .venv/bin/python bench/hosts_live.py [--hosts 512 1024 2048 4096] [--forks 50] [--strategy linear]
        [--faults 1] [--plan-only] [--apply-max 1024]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.fleet_live import exponent, open_in, plant_faults
from bench.measure import FABRIC, ROOT, load, run

# hosts → the `fabric generate gpu-rail` arguments that give them
SIZES = {64: ["--gpus", "512"], 512: ["--gpus", "4096", "--pods", "2"], 1024: ["--gpus", "8192"],
         2048: ["--gpus", "16384"], 4096: ["--gpus", "32768"]}


def generate(hosts: int, where: Path) -> Path:
    inv = where / f"hosts-{hosts}"
    subprocess.run([FABRIC, "generate", "gpu-rail", *SIZES[hosts], "-o", str(inv), "--target", "sonic",
                    "--platform", "sn5600", "--force"], check=True, stdout=subprocess.DEVNULL)
    return inv


def fleet_cpu(server: int) -> float:
    """CPU seconds of the fleet's server, its module runner and what both waited for."""
    total = 0.0
    for pid in [server, *_children(server)]:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
        except OSError:
            continue
        total += sum(int(f) for f in fields[11:15]) / os.sysconf("SC_CLK_TCK")
    return total


def _children(pid: int) -> list[int]:
    try:
        return [int(p) for p in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    except OSError:
        return []


def step(label: str, ns: str, argv: list[str], n: int, out: Path, server: int) -> dict[str, Any]:
    before, cpu0 = open_in(ns), fleet_cpu(server)
    with out.open("w") as f:
        fig = run(["ip", "netns", "exec", ns, *argv], stdout=f.fileno(), env={"COLUMNS": "200"})
    after, served = open_in(ns), fleet_cpu(server) - cpu0
    print(f"  {label}: {fig}; {fig.wall / n * 1000:.1f} ms and {fig.cpu / n * 1000:.1f} CPU-ms per host; the fleet "
          f"{served:.1f} CPU-s ({served / n * 1000:.1f} per host); open in the namespace before {before}, after "
          f"{after}; {load()}", flush=True)
    return {"wall": fig.wall, "cpu": fig.cpu, "rss": fig.rss_mib, "rc": fig.rc, "after": after}


def summarize(out: Path, planted: dict[str, str]) -> None:
    """The statuses, and how the run reported each planted fault."""
    try:
        hosts = {h["host"]: h for h in json.loads(out.read_text())["hosts"]}
    except (ValueError, KeyError):
        print(f"    no JSON result: {out.read_text()[-300:]!r}")
        return
    counts: dict[str, int] = {}
    for h in hosts.values():
        counts[h["status"]] = counts.get(h["status"], 0) + 1
    print(f"    {len(hosts)} hosts: {counts}")
    for name, fault in sorted(planted.items())[:6]:
        h = hosts.get(name, {})
        print(f"    {fault:<12} {name}: {h.get('status')}: {h.get('note', '')[:150]}")
    for h in [h for name, h in hosts.items() if name not in planted and h["status"] != "ok"][:4]:
        print(f"    no fault     {h['host']}: {h['status']}: {h['note'][:150]}")


def one_size(hosts: int, runs: list[tuple[int, str]], faults: float, tmp: Path, recorded: dict[str, Any],
             *, plan_only: bool) -> dict[str, Any]:
    from tests.standins.harness import standins
    from tests.standins.hostagent import fleet_intents, record, seed_fleet

    inv = generate(hosts, tmp)
    texts, addresses = fleet_intents(inv)
    first = next(iter(texts))
    if not recorded:
        recorded.update(template=(texts[first], record(texts[first], first)))
    n = len(texts)
    print(f"{n} hosts ({' '.join(SIZES[hosts])})", flush=True)
    res: dict[str, Any] = {"n": n}
    with standins(tmp / f"net-{hosts}", {name: ("host", addresses[name]) for name in texts}, server="fleet") as net:
        seed_fleet(net.devices, texts, recorded["template"])
        planted = plant_faults(net.devices, faults)
        with (inv / "fabric.yaml").open("a") as f:
            f.write(f"access:\n  username: root\n  key_file: {net.key}\n  known_hosts: {net.known_hosts}\n")
        server = int((net.root.parent / "fleet.ready").read_text())
        out = tmp / "out.json"
        for forks, strategy in runs:
            os.environ["ANSIBLE_STRATEGY"] = strategy
            common = [FABRIC, "hosts"]
            opts = [str(inv), "--forks", str(forks), "--remote-dir", str(tmp / "remote"), "--format", "json"]
            print(f" --forks {forks}, strategy {strategy}", flush=True)
            res["plan"] = step("plan, every host to change", net.netns, [*common, "plan", *opts], n, out, server)
            summarize(out, planted)
            if plan_only or len(runs) > 1:
                continue
            res["apply"] = step("apply", net.netns, [*common, "apply", *opts], n, out, server)
            summarize(out, planted)
            res["plan1"] = step("plan, nothing to change", net.netns, [*common, "plan", *opts], n, out, server)
            summarize(out, planted)
    return res


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--hosts", nargs="+", type=int, choices=sorted(SIZES), default=[512, 1024, 2048, 4096])
    ap.add_argument("--forks", nargs="+", type=int, default=[50])
    ap.add_argument("--strategy", nargs="+", choices=["linear", "free"], default=["linear"])
    ap.add_argument("--faults", type=float, default=0.0, help="percent of hosts for each fault")
    ap.add_argument("--plan-only", action="store_true", help="the first plan alone")
    ap.add_argument("--apply-max", type=int, default=4096, help="the first plan alone above this many hosts")
    args = ap.parse_args()
    if os.geteuid() != 0:
        print("bench/hosts_live.py needs root (a network namespace)", file=sys.stderr)
        return 2
    os.chdir(ROOT)
    runs = [(f, s) for f in args.forks for s in args.strategy]
    results: list[dict[str, Any]] = []
    recorded: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="hosts-live-") as tmp:
        for size in args.hosts:
            results.append(one_size(size, runs, args.faults, Path(tmp), recorded,
                                    plan_only=args.plan_only or size > args.apply_max))
    if len(results) > 1:
        first, last = results[0], results[-1]
        print(f"exponent of wall time {first['n']}→{last['n']} hosts: plan {exponent(first, last, 'plan')}, apply "
              f"{exponent(first, last, 'apply')}, unchanged plan {exponent(first, last, 'plan1')}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
