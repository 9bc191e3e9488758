"""CPU per switch of the owned-scope engine (fabric.targets.owned) as a live `fabric plan` runs it: `driver.scoped`
of a brownfield running configuration, in process, per NOS.

Inputs: a `fabric generate gpu-rail --gpus 4096 --pods 2` fabric of each NOS (the platforms of bench/fleet_live.py),
its first leaf and first spine; each switch's running configuration is its own render plus the foreign
configuration of a real one (tests/fixtures/brownfield/<nos>, each folder's SOURCE.md): the text NOS get the corpus
file's sections appended (its `router bgp` under the render's ASN: the tool never renumbers), the tree NOS its
tables, entries and fields the render lacks. Printed: CPU ms per switch of `scoped` and of its owned parts
(`owned_scope`: namesakes and scope; `scoped_diff`), the rest being the reading of both sides.

    .venv/bin/python bench/owned_scope.py [--nos eos sonic nvue frr] [--repeat 20] [--rounds 3]
        [--baseline /work/main]

With `--baseline` each round times the other checkout's code and this one's alternately (each in a process of its
own, on the same inputs) and prints the ratios, and checks that both give the same diff and scope.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
PLATFORM = {"eos": "7060x5", "sonic": "sn5600", "nvue": "sn5600", "frr": "sn5600"}
CORPUS = ROOT / "tests" / "fixtures" / "brownfield"
FOREIGN = {"eos": {"leaf": "leaf-su1-r1.cfg", "spine": "spine1.cfg"},
           "frr": {"leaf": "leaf-su1-r2.conf", "spine": "spine2.conf"},
           "nvue": {"leaf": "leaf-su1-r2.yaml", "spine": "spine1.yaml"},
           "sonic": {"leaf": "arista-7050cx3-t1-mock.json", "spine": "dell-s6000-tor.json"}}
PHASES = ("scoped", "owned_scope", "scoped_diff")


# -- inputs (made once, by this checkout) ----------------------------------------------------------
def make_inputs(nos_list: list[str], where: Path) -> dict[str, dict[str, dict[str, Any]]]:
    """nos → role → the switch's name, render (intended), other rendered files and brownfield running config."""
    from fabric.access import InventorySite
    from fabric.design.derive import derive
    from fabric.model.inventory import Access
    from fabric.model.load import load as load_inventory
    from tests.support.brownfield import beside

    out: dict[str, dict[str, dict[str, Any]]] = {}
    for nos in nos_list:
        inv = where / nos
        subprocess.run([str(ROOT / ".venv" / "bin" / "fabric"), "generate", "gpu-rail", "--gpus", "4096", "--pods",
                        "2", "-o", str(inv), "--target", nos, "--platform", PLATFORM[nos], "--force"],
                       check=True, stdout=subprocess.DEVNULL)
        site = InventorySite(derive(load_inventory(inv)), Access(known_hosts=__file__))
        names = sorted(site.fabric.switches)
        out[nos] = {}
        for role in ("leaf", "spine"):
            name = next(n for n in names if site.fabric.switches[n].role == role)
            ep = site.switch(name)
            foreign = (CORPUS / nos / FOREIGN[nos][role]).read_text()
            out[nos][role] = {"name": name, "intended": ep.intended, "options": ep.options,
                              "running": beside(nos, ep.intended, foreign)}
    return out


# -- timing (in the checkout whose code is measured) -----------------------------------------------
def _timed(spent: dict[str, float], phase: str, fn: Any) -> Any:
    def wrapper(*args: Any, **kw: Any) -> Any:
        t0 = time.process_time()
        try:
            return fn(*args, **kw)
        finally:
            spent[phase] += time.process_time() - t0
    return wrapper


def measure(inputs: dict[str, dict[str, dict[str, Any]]], repeat: int) -> dict[str, Any]:
    """nos → phase → CPU ms per switch (mean over the roles and `repeat` runs), and each switch's result digest."""
    import fabric.nos.sonic.driver as sonic_driver
    import fabric.targets.base as base
    from fabric.targets import driver
    from fabric.targets.base import TargetError

    spent = dict.fromkeys(PHASES, 0.0)
    base.Driver.owned_scope = _timed(spent, "owned_scope", base.Driver.owned_scope)
    base.scoped_diff = _timed(spent, "scoped_diff", base.scoped_diff)
    sonic_driver.scoped_diff = _timed(spent, "scoped_diff", sonic_driver.scoped_diff)
    out: dict[str, Any] = {"code": str(Path(base.__file__).resolve().parents[2])}
    for nos, roles in inputs.items():
        digests = {}
        for sw in roles.values():  # once untimed: the imports and regex compilations a process does once
            with contextlib.suppress(TargetError):
                driver(nos, None, sw["name"], sw["intended"], options=sw["options"]).scoped(sw["running"])
        for k in spent:
            spent[k] = 0.0
        for sw in roles.values():
            for _ in range(repeat):
                drv = driver(nos, None, sw["name"], sw["intended"], options=sw["options"])
                t0 = time.process_time()
                try:
                    sd: Any = drv.scoped(sw["running"])
                except TargetError as exc:
                    sd = exc
                spent["scoped"] += time.process_time() - t0
            result = [str(sd)] if isinstance(sd, TargetError) else [
                [c.text() for c in sd.changes], sorted(sd.owned), sd.unmanaged, sorted(sd.removes),
                list(sd.sets.items())]
            digests[sw["name"]] = hashlib.sha256(json.dumps(result).encode()).hexdigest()[:16]
        runs = repeat * len(roles)
        out[nos] = {"ms": {k: 1000 * v / runs for k, v in spent.items()}, "digests": digests}
    return out


def child(checkout: Path, inputs: Path, repeat: int) -> dict[str, Any]:
    """`measure` run by `checkout`'s code in a process of its own."""
    code = ("import json, sys; sys.path.insert(0, sys.argv[1]); sys.path.insert(1, sys.argv[2]);"
            "from owned_scope import measure;"
            "print(json.dumps(measure(json.load(open(sys.argv[3])), int(sys.argv[4]))))")
    env = {**os.environ, "PYTHONPATH": str(checkout)}
    reply = subprocess.run([sys.executable, "-c", code, str(checkout), str(ROOT / "bench"), str(inputs), str(repeat)],
                           check=True, capture_output=True, text=True, env=env, cwd=checkout)
    out = json.loads(reply.stdout)
    if Path(out.pop("code")) != checkout.resolve():
        raise SystemExit(f"{checkout}: its process ran another checkout's code")
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--nos", nargs="+", default=["eos", "sonic", "nvue", "frr"], choices=sorted(PLATFORM))
    ap.add_argument("--repeat", type=int, default=20, help="runs of each switch per round")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--baseline", type=Path, help="another checkout (e.g. /work/main) to compare with")
    args = ap.parse_args()
    sys.path.insert(0, str(ROOT))  # tests.support for the inputs (the timed processes put their checkout first)
    with tempfile.TemporaryDirectory() as tmp:
        inputs = make_inputs(args.nos, Path(tmp))
        path = Path(tmp) / "inputs.json"
        path.write_text(json.dumps(inputs))
        for nos, roles in inputs.items():
            print(f"{nos}: " + ", ".join(f"{r} {sw['name']} ({len(sw['intended']):,} B rendered, "
                                         f"{len(sw['running']):,} B running)" for r, sw in roles.items()))
        sides = {"baseline": args.baseline.resolve(), "this": ROOT} if args.baseline else {"this": ROOT}
        runs: dict[str, list[dict[str, Any]]] = {side: [] for side in sides}
        for _ in range(args.rounds):
            for side, checkout in sides.items():
                runs[side].append(child(checkout, path, args.repeat))
    print(f"CPU ms per switch (process_time, best of {args.rounds} rounds of {args.repeat} runs per switch):")
    for nos in args.nos:
        best = {side: {ph: min(r[nos]["ms"][ph] for r in rs) for ph in PHASES} for side, rs in runs.items()}
        for side, ms in best.items():
            print(f"  {nos:5} {side:8} " + "  ".join(f"{ph} {ms[ph]:7.2f}" for ph in PHASES))
        if args.baseline:
            ratio = {ph: best["baseline"][ph] / best["this"][ph] if best["this"][ph] else 0 for ph in PHASES}
            same = all(r[nos]["digests"] == runs["baseline"][0][nos]["digests"] for rs in runs.values() for r in rs)
            print(f"  {nos:5} ratio    " + "  ".join(f"{ph} {ratio[ph]:6.2f}x" for ph in PHASES)
                  + f"  results {'identical' if same else 'DIFFER'}")


if __name__ == "__main__":
    main()
