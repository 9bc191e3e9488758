"""`fabric plan --running DIR` on malformed saved running configs: each malformed file is one
located problem for its switch (file, and line where there is one), the other switches are still planned, and
no file ends in a traceback, a hang or memory past a bound (the process runs under RLIMIT_AS)."""

from __future__ import annotations

import functools
import json
import resource
import subprocess
import sys
from pathlib import Path

import pytest

from fabric.access import InventorySite, SwitchEndpoint
from fabric.model.load import load
from fabric.nos import NOS
from fabric.push.engine import plan_saved
from tests.conftest import ROOT
from tests.support.nos import INVENTORY

BAD = "leaf-su1-r1"
MEMORY = 2 << 30  # address space of the plan process
BOMB = "a: &a [x,x,x,x,x,x,x,x,x]\n" + "".join(
    f"{c}: &{c} [{','.join(['*' + p] * 9)}]\n" for p, c in zip("abcdefgh", "bcdefghi", strict=True))

CASES = [
    ("sonic", "deep", "[" * 100_000 + "]" * 100_000, "levels of nesting"),
    ("sonic", "list", "[1]", "a mapping of tables"),
    ("sonic", "table-list", '{"PORT": [1]}', "PORT: expected a mapping of keys"),
    ("sonic", "field-map", '{"PORT": {"Ethernet0": {"mtu": {"a": 1}}}}', "PORT.Ethernet0.mtu"),
    ("sonic", "broken", '{\n"PORT": {\n', "valid JSON"),
    ("sonic", "huge-int", '{"PORT": {"E0": {"mtu": ' + "9" * 5000 + "}}}", "valid JSON"),
    ("nvue", "set-list", "- set: [1]\n", "set"),
    ("nvue", "doc-int", "- 5\n", "a document"),
    ("nvue", "scalar", "5\n", "a mapping"),
    ("nvue", "alias-bomb", BOMB, "yaml"),
    ("nvue", "deep", "[" * 100_000 + "]" * 100_000, "nesting"),
    ("nvue", "tag", "- set: !!python/object:os.system {}\n", "yaml"),
    ("nvue", "hex-int", "- set:\n    mtu: 0x" + "f" * 5000 + "\n", "yaml"),
    ("eos", "deep", "".join(" " * i + "x\n" for i in range(3000)), "levels of indentation"),
    ("eos", "binary", b"router bgp 1\n \xff\xfe\n", "UTF-8"),
    ("frr", "deep", "".join(" " * i + "x\n" for i in range(3000)), "levels of indentation"),
    ("frr", "nul", "router bgp 1\n neighbor \x00 x\n", None),
]


def _limit() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY, MEMORY))


def _plan(inv: Path, running: Path) -> tuple[subprocess.CompletedProcess[str], dict]:
    fab = str(Path(sys.executable).parent / "fabric")
    p = subprocess.run([fab, "plan", str(inv), "--running", str(running), "--format", "json", "--limit", "leaf-su1-*"],
                       capture_output=True, text=True, timeout=120, preexec_fn=_limit)
    assert "Traceback" not in p.stderr, p.stderr[-2000:]
    return p, json.loads(p.stdout)


@functools.cache
def _endpoints(target: str) -> list[SwitchEndpoint]:
    from fabric.design.derive import derive

    loaded = load(ROOT / "inventories" / INVENTORY[target])
    site = InventorySite(derive(loaded), loaded.inv.access)
    return [site.switch(n) for n in site.fabric.switches if n.startswith("leaf-su1-")]


def _saved(tmp: Path, target: str) -> Path:
    running = tmp / "running"
    running.mkdir()
    for ep in _endpoints(target):
        (running / f"{ep.device}{NOS[ep.target].running_suffix}").write_text(ep.intended)
    return running


# the files that would hang or blow memory run in a `fabric plan` process under RLIMIT_AS; the rest in this one
SUBPROCESS = {"deep", "alias-bomb"}


@pytest.mark.parametrize(("target", "case", "text", "expected"), CASES, ids=[f"{c[0]}-{c[1]}" for c in CASES])
def test_a_malformed_saved_config_is_one_located_problem(tmp_path: Path, target: str, case: str,
                                                         text: str | bytes, expected: str | None) -> None:
    running = _saved(tmp_path, target)
    bad = running / f"{BAD}{NOS[target].running_suffix}"
    bad.write_bytes(text if isinstance(text, bytes) else text.encode())
    if case in SUBPROCESS:
        p, doc = _plan(ROOT / "inventories" / INVENTORY[target], running)
        by, rc = {d["device"]: d for d in doc["devices"]}, p.returncode
    else:
        by = {r.device: r.model_dump() for r in (plan_saved(ep, running) for ep in _endpoints(target))}
        rc = 1 if any(d["status"] == "error" for d in by.values()) else 0
    others = [d for n, d in by.items() if n != BAD]
    assert others and all(d["status"] in ("unchanged", "changed") for d in others), others
    if expected is None:  # text the NOS parser takes as it is: planned, no crash
        assert by[BAD]["status"] in ("unchanged", "changed", "error")
        return
    assert rc == 1 and by[BAD]["status"] == "error", by[BAD]
    assert by[BAD]["detail"].startswith(str(bad)) and expected.lower() in by[BAD]["detail"].lower(), by[BAD]


@pytest.mark.parametrize("target", ["sonic", "eos"])
def test_an_80_mb_file_is_refused_by_its_size(tmp_path: Path, target: str) -> None:
    running = _saved(tmp_path, target)
    bad = running / f"{BAD}{NOS[target].running_suffix}"
    with bad.open("w") as f:
        line = ('{"x": "' + "y" * 1000 + '"},\n') if target == "sonic" else ("x" * 1000 + "\n")
        for _ in range(80 * 1024):
            f.write(line)
    _, doc = _plan(ROOT / "inventories" / INVENTORY[target], running)
    (d,) = [d for d in doc["devices"] if d["device"] == BAD]
    assert d["status"] == "error" and "at most 32 MiB" in d["detail"], d
