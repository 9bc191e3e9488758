"""SONiC renders checked against SONiC's own YANG models, an independent reference.

`../shared/tools/sonic_yang_check.py` validates a config_db.json the way `config apply-patch` does before it
touches a switch (sonic-yang-mgmt: translate CONFIG_DB to YANG data, libyang validates types, enums,
leafrefs, mandatory leaves). It runs in the side venv `.refs/yang-venv` that `make refs-yang` builds
(Debian libyang2-dev, PyPI cffi and libyang 2.7.1: the checker's degraded mode, which enumerates one error
per parse and stops a file at the first missing mandatory leaf).

What is rendered, always through the CLI (`fabric render`, `fabric generate gpu-rail`):
- inventories/sonic-example (MSN2700, 100G, no breakout);
- inventories/h100-400g with every role's target set to sonic (SN5600, 2x400G breakout);
- for each SONiC platform, a small generated fabric (64 GPUs: 8 hosts × 8 rails, 2 spines).

Two checks per render:
- merged: the render's fields set on top of the platform's realistic running CONFIG_DB
  (tests/fixtures/running/sonic/<base>.json, see SOURCE.md there), nothing removed — the config SONiC
  validates after the patch. Every table is checked here.
- standalone: the render alone, without the buffer tables. A rendered BUFFER_PROFILE can never be valid
  alone: its `pool` is a leafref to BUFFER_POOL, which the platform defines (buffers.json.j2) and the tool
  does not render; BUFFER_PG, BUFFER_QUEUE and the BUFFER_PORT_*_PROFILE_LIST tables point at those
  profiles. Those tables are validated merged only. Everything else (PORT with lanes, QoS maps, BGP,
  interfaces, PFC watchdog) must be valid on its own.

Merged validation also proves the tool's SONiC port names: a rendered PORT entry that the platform does not
have arrives without `lanes` and fails as a missing mandatory leaf.

Only one leaf and one spine of each fabric are rendered and validated (`render --only`): every leaf (and
every spine) of a fabric is rendered by the same code with the same ports in use, differing only in
addresses and names. Several files go to each checker run: about 15 s when the renders are valid; while
they are not, libyang 2 re-parses the whole config after each violation and the module takes about a minute.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests import inproc
from tests.conftest import ROOT, require
from tests.support.nos import keep, retarget

# The shared folder sits beside the checkout (CI: ../shared); ROCE_FABRIC_SHARED points elsewhere (worktrees).
SHARED = Path(os.environ.get("ROCE_FABRIC_SHARED", ROOT.parent / "shared"))
CHECKER = SHARED / "tools" / "sonic_yang_check.py"
YANG_PY = ROOT / ".refs" / "yang-venv" / "bin" / "python"
BASES = ROOT / "tests" / "fixtures" / "running" / "sonic"
PLATFORM_BOUND = ("BUFFER_PROFILE", "BUFFER_PG", "BUFFER_QUEUE", "BUFFER_PORT_INGRESS_PROFILE_LIST",
                  "BUFFER_PORT_EGRESS_PROFILE_LIST")
DEVICES = ("leaf-su1-r1", "spine1")


@dataclass(frozen=True)
class Case:
    name: str
    base: str  # tests/fixtures/running/sonic/<base>.json
    generate: tuple[str, ...] = ()  # `fabric generate gpu-rail` arguments; empty: a shipped inventory
    inventory: str = ""
    to_sonic: bool = False  # set every role's target to sonic


def _gpu_rail(platform: str, breakout: str, speed: str) -> tuple[str, ...]:
    return ("--gpus", "64", "--hosts-per-su", "8", "--spines", "2", "--target", "sonic", "--platform", platform,
            "--breakout", breakout, "--speed", speed)


CASES = [
    Case("sonic-example", "msn2700", inventory="sonic-example"),
    Case("h100-400g-sonic", "sn5600-2x400G", inventory="h100-400g", to_sonic=True),
    # one 800G port = one link, and the same switch broken out 2x400G as the GPU practice uses it
    Case("gen-sn5600", "sn5600", _gpu_rail("sn5600", "none", "800G")),
    Case("gen-sn5600-2x400G", "sn5600-2x400G", _gpu_rail("sn5600", "2x400G", "400G")),
    Case("gen-sn5400", "sn5400", _gpu_rail("sn5400", "none", "400G")),
    Case("gen-sn4700", "sn4700", _gpu_rail("sn4700", "none", "400G")),
    Case("gen-sn4600c", "sn4600c", _gpu_rail("sn4600c", "none", "100G")),
    Case("gen-msn2700", "msn2700", _gpu_rail("msn2700", "none", "100G")),
]


def fabric(*args: str) -> None:
    p = inproc.fabric(*args)  # in this process (tests.inproc)
    assert p.returncode == 0, f"fabric {' '.join(args)}: {p.stdout}{p.stderr}"


def _inventory(case: Case, tmp: Path) -> Path:
    inv = tmp / "inv" / case.name
    if case.generate:
        fabric("generate", "gpu-rail", "-o", str(inv), "--name", case.name, *case.generate)
        return inv
    if case.to_sonic:
        return retarget(case.inventory, "sonic", inv, platform=keep)
    shutil.copytree(ROOT / "inventories" / case.inventory, inv)
    return inv


def _check(*args: str) -> list[dict]:
    """Run the checker; its violations (JSON lines, notes dropped)."""
    p = subprocess.run([str(YANG_PY), str(CHECKER), "--json", "--no-notes", *args],
                       capture_output=True, text=True, timeout=300)
    assert p.returncode in (0, 1), f"sonic_yang_check setup error ({p.returncode}): {p.stderr}{p.stdout}"
    found = [json.loads(line) for line in p.stdout.splitlines() if line.startswith("{")]
    return [v for v in found if v["kind"] == "violation"]


def _prerequisites() -> None:
    require(CHECKER.is_file(), f"{CHECKER} (the shared folder beside the checkout)")
    require(YANG_PY.is_file(), f"{YANG_PY}: run `make refs-yang`")


@pytest.fixture(scope="module")
def results(tmp_path_factory: pytest.TempPathFactory) -> dict[tuple[str, str], list[dict]]:
    """(case, "standalone" | "merged") → the violations of its rendered config_db.json files."""
    _prerequisites()
    tmp = tmp_path_factory.mktemp("sonic-yang")
    files: dict[str, list[Path]] = {}
    only = [a for d in DEVICES for a in ("--only", d)]
    for case in CASES:
        out = tmp / "render" / case.name
        fabric("render", str(_inventory(case, tmp)), "-o", str(out), *only)
        files[case.name] = sorted(out.glob("switches/*/config_db.json"))
        assert len(files[case.name]) == len(DEVICES), f"{case.name}: no SONiC config_db.json for {DEVICES}"
    # standalone: copies without the platform-bound buffer tables, all in one run
    alone: dict[str, str] = {}
    for case in CASES:
        for f in files[case.name]:
            cfg = json.loads(f.read_text())
            dst = tmp / "standalone" / case.name / f.parent.name / "config_db.json"
            dst.parent.mkdir(parents=True)
            dst.write_text(json.dumps({t: v for t, v in cfg.items() if t not in PLATFORM_BOUND}))
            alone[str(dst)] = case.name
    out: dict[tuple[str, str], list[dict]] = {(c.name, m): [] for c in CASES for m in ("standalone", "merged")}
    for v in _check(*alone):
        out[(alone[v["file"]], "standalone")].append(v)
    # merged: one run per platform base
    for base in sorted({c.base for c in CASES}):
        owners = {str(f): c.name for c in CASES if c.base == base for f in files[c.name]}
        for v in _check("--merge-onto", str(BASES / f"{base}.json"), *owners):
            out[(owners[v["file"]], "merged")].append(v)
    return out


def _report(violations: list[dict]) -> str:
    kinds = Counter(f"{v['table']}/{v['field'] or '-'}: {v['msg'][:90]}" for v in violations)
    lines = [f"{n:5d} × {k}" for k, n in kinds.most_common()]
    lines += ["", *(" | ".join((Path(v["file"]).parent.name, v["table"], v["key"], v["field"], v["msg"]))
                    for v in violations[:40])]
    return "\n".join(lines)


@pytest.mark.parametrize("base", sorted({c.base for c in CASES}))
def test_platform_data_matches_base(base: str) -> None:
    """fabric/data/sonic/<platform>.json and the base's PORT table come from the same SONiC port map."""
    platform, _, mode = base.partition("-")
    data = json.loads((ROOT / "fabric" / "data" / "sonic" / f"{platform}.json").read_text())
    ports, modes = dict(data["ports"]), {p: e["mode"] for p, e in data["ports"].items()}
    if mode:  # every parent that has the mode is broken out; the others keep their default
        parent_of = {lane: p for p, e in data["ports"].items() for lane in e["lanes"].split(",")}
        children = data["breakout"][mode]
        for entry in children.values():
            parent = parent_of[entry["lanes"].split(",")[0]]
            ports.pop(parent, None)
            modes[parent] = entry["mode"]
        ports.update(children)
    running = json.loads((BASES / f"{base}.json").read_text())
    assert running["DEVICE_METADATA"]["localhost"]["hwsku"] == data["hwsku"]
    assert running["DEVICE_METADATA"]["localhost"]["platform"] == data["platform"]
    fields = ("lanes", "alias", "index", "speed", "subport", "fec")
    assert {p: {k: e.get(k) for k in fields} for p, e in running["PORT"].items()} == \
        {p: {k: e.get(k) for k in fields} for p, e in ports.items()}
    assert {p: e["brkout_mode"] for p, e in running["BREAKOUT_CFG"].items()} == modes


def test_checker_self_test() -> None:
    """The checker passes SONiC's own sample and catches each deliberate breakage of it."""
    _prerequisites()
    p = subprocess.run([str(YANG_PY), str(CHECKER), "--self-test"], capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stdout + p.stderr
    assert "self-test: 8 passed, 0 failed" in p.stdout, p.stdout


@pytest.mark.parametrize("base", sorted({c.base for c in CASES}))
def test_platform_base_is_valid(base: str) -> None:
    """Each realistic running config is itself valid, or merged results would prove nothing."""
    _prerequisites()
    violations = _check(str(BASES / f"{base}.json"))
    assert not violations, _report(violations)


@pytest.mark.parametrize("mode", ["standalone", "merged"])
@pytest.mark.parametrize("case", [c.name for c in CASES])
def test_sonic_render_is_yang_valid(results: dict[tuple[str, str], list[dict]], case: str, mode: str) -> None:
    violations = results[(case, mode)]
    assert not violations, f"{len(violations)} YANG violations ({mode}):\n{_report(violations)}"
