"""RF309 (BGP unnumbered on both ends) looks ports and sessions up per switch: its findings equal those of the
plain (switch, port) lookups of `Context.port` on every kind of broken session — missing, pointing elsewhere,
numbered at either end, a wrong remote ASN, a peer that is no switch, a port of no name."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import pytest

from fabric.design.derive import Deriver
from fabric.lint.context import Context
from fabric.lint.rules.l3 import UnnumberedBothEnds
from fabric.model.load import load
from tests.oracles.lint_l3 import rf309
from tests.support.paths import ROOT


def _leaf(ctx: Context) -> str:
    return next(n for n, s in ctx.intent.switches.items() if s.role == "leaf")


def _drop(ctx: Context) -> None:
    ctx.intent.switches[_leaf(ctx)].bgp.neighbors.pop()


def _elsewhere(ctx: Context) -> None:
    sw = ctx.intent.switches[_leaf(ctx)]
    n = sw.bgp.neighbors[0]
    sw.bgp.neighbors[0] = dataclasses.replace(n, peer_port=sw.bgp.neighbors[-1].peer_port)


def _numbered(ctx: Context) -> None:
    sw = ctx.intent.switches[_leaf(ctx)]
    for p in sw.ports:
        if p.kind == "fabric":
            p.unnumbered = False
            break


def _numbered_peer(ctx: Context) -> None:
    n = ctx.intent.switches[_leaf(ctx)].bgp.neighbors[0]
    for p in ctx.intent.switches[n.peer].ports:
        if p.name == n.peer_port:
            p.unnumbered = False


def _asn(ctx: Context) -> None:
    ctx.intent.switches[_leaf(ctx)].bgp.neighbors[-1].remote_asn += 1


def _no_switch(ctx: Context) -> None:
    sw = ctx.intent.switches[_leaf(ctx)]
    sw.bgp.neighbors[0] = dataclasses.replace(sw.bgp.neighbors[0], peer="nowhere")


def _no_port(ctx: Context) -> None:
    sw = ctx.intent.switches[_leaf(ctx)]
    sw.bgp.neighbors[0] = dataclasses.replace(sw.bgp.neighbors[0], port="swp999")


CASES: list[Callable[[Context], None]] = [lambda _c: None, _drop, _elsewhere, _numbered, _numbered_peer, _asn,
                                          _no_switch, _no_port]


@pytest.mark.parametrize("inv", ["inventories/example", "inventories/eos-example",
                                 "tests/fixtures/inventories/irregular", "tests/fixtures/inventories/dgx-hgx-2su"])
@pytest.mark.parametrize("mutate", CASES, ids=lambda m: m.__name__.strip("_"))
def test_rf309_per_switch_lookups_find_what_the_plain_ones_find(inv: str, mutate: Callable[[Context], None]) -> None:
    loaded = load(ROOT / inv)
    ctx = Context(loaded, deriver=Deriver(loaded))
    mutate(ctx)
    rule = UnnumberedBothEnds()
    assert list(rule.check(ctx)) == list(rf309(rule, ctx))
    if mutate not in (CASES[0], _elsewhere):  # another port of the same peer can be a session back
        assert list(rule.check(ctx))


def test_rf301_finds_a_saved_port_speed_that_is_not_its_links(tmp_path) -> None:
    """`lint INV --configs DIR`: a saved render whose port runs at another speed than its link is one finding at
    that port's line, on the switch whose file says so, and only there (the port's speed looked up per device)."""
    import json

    from tests import inproc

    inv, out, running = tmp_path / "g512", tmp_path / "out", tmp_path / "running"
    assert inproc.fabric("generate", "gpu-rail", "--gpus", "512", "-o", str(inv)).returncode == 0
    assert inproc.fabric("render", str(inv), "-o", str(out)).returncode == 0
    running.mkdir()
    for patch in (out / "switches").glob("*/nvue-patch.yaml"):
        (running / f"{patch.parent.name}.yaml").write_text(patch.read_text())
    leaf = running / "leaf-su1-r1.yaml"
    lines = leaf.read_text().splitlines(keepends=True)
    at = next(i for i, ln in enumerate(lines) if ln.strip() == 'speed: "400G"')
    lines[at] = lines[at].replace("400G", "200G")
    leaf.write_text("".join(lines))
    port = next(ln.strip().rstrip(":") for ln in reversed(lines[:at]) if ln.startswith("      swp"))
    p = inproc.fabric("lint", str(inv), "--configs", str(running), "--select", "RF301", "--format", "json")
    found = [(f["object"], f["message"], f["file"], f["line"]) for f in json.loads(p.stdout)["findings"]]
    assert found == [("leaf-su1-r1", f"speed of {port}: expected 400G (the link's), found 200G", str(leaf),
                      lines.index(f"      {port}:\n") + 1)], p.stdout
