"""The owned-scope engine (fabric.targets.owned, `Driver.owned_scope`) gives what it gave before each side was read
once (tests/oracles/owned_scope.py): the same leaves, namesakes, scope, refusal and diff on every NOS.

Inputs: each NOS's shipped inventory against the real running configurations of tests/fixtures (the brownfield
corpus, the running fixtures: their SOURCE.md), a generated `gpu-rail` fabric's leaf and spine whose running
configuration is the render plus a real one's foreign configuration, and seeded random mutations of each: lines or
leaves dropped, added and changed, foreign neighbours, peer-group members, route-maps and community lists, another
clause of a rendered route-map, rendered names on foreign objects, settings that contradict a rendered port's.
Whole `scoped` runs twice, once with the oracle's functions in the drivers' and base's places.
"""

from __future__ import annotations

import json
import random
import re
from pathlib import Path
from typing import Any

import pytest

import fabric.nos.eos.driver as eos_driver
import fabric.nos.frr.driver as frr_driver
import fabric.nos.nvue.driver as nvue_driver
import fabric.nos.sonic.driver as sonic_driver
import fabric.targets.base as base
from fabric.design.derive import derive
from fabric.model.load import load
from fabric.nos import NOS
from fabric.render import render_switch
from fabric.targets import driver, owned
from fabric.targets.base import Driver, TargetError
from fabric.targets.owned import ScopedDiff, apply_leaves
from tests import inproc
from tests.oracles import owned_scope as oracle
from tests.support.brownfield import beside
from tests.support.nos import INVENTORY
from tests.support.paths import FIXTURES, INVENTORIES
from tests.support.timing import cpu_seconds

BROWNFIELD, RUNNING = FIXTURES / "brownfield", FIXTURES / "running"
# (nos, switch, running configuration file) of each NOS's shipped inventory (tests.support.nos.INVENTORY)
REAL = [
    *(("eos", p.stem, p) for d in ("brownfield", "running") for p in sorted((FIXTURES / d / "eos").glob("*.cfg"))),
    *(("frr", p.stem, p) for p in sorted((BROWNFIELD / "frr").rglob("*.conf"))),
    *(("nvue", p.stem, p) for d in ("brownfield", "running") for p in sorted((FIXTURES / d / "nvue").glob("*.yaml"))),
    *(("sonic", sw, BROWNFIELD / "sonic" / f) for sw in ("leaf-su1-r1", "spine1")
      for f in ("acs-msn2700-t1-dynamic.json", "mellanox-sn2700-t0-traditional.json",
                "mellanox-sn2700-t1-single-pool-traditional.json")),
    ("sonic", "leaf-su1-r1", RUNNING / "sonic" / "msn2700.json"),
]
PLATFORM = {"eos": "7060x5", "sonic": "sn5600", "nvue": "sn5600", "frr": "sn5600"}
FOREIGN = {"eos": "spine1.cfg", "frr": "spine2.conf", "nvue": "leaf-su1-r2.yaml", "sonic": "dell-s6000-tor.json"}
MUTATIONS = 6  # seeded mutations of each input
# where the drivers and base look the engine's functions up: the oracle's go there for the old answer
PLACES = [(base, n) for n in ("namesakes", "scope", "scoped_diff", "renumbered")] + [
    (eos_driver, "parse_text"), (eos_driver, "text_leaves"), (frr_driver, "parse_text"), (frr_driver, "text_leaves"),
    (frr_driver, "line_key"), (sonic_driver, "tree_leaves"), (sonic_driver, "scoped_diff"),
    (sonic_driver, "apply_leaves"), (nvue_driver, "tree_leaves")]


def _render(inv: Path, switch: str) -> Driver:
    fab = derive(load(inv))
    sw = fab.switches[switch]
    files = render_switch(sw, fab)
    return driver(sw.target, None, switch, files[NOS[sw.target].intended])


def _outcome(drv: Driver, text: str) -> Any:
    """`scoped`'s result as comparable values (the refusal's text where it refuses), worked out anew (not the result
    the driver kept from the last call: Driver.scoped_once)."""
    drv._last_scoped = None
    try:
        sd = drv.scoped(text)
    except TargetError as exc:
        return str(exc)
    return _diff(sd)


def _diff(sd: ScopedDiff) -> tuple:
    return (list(sd.sets.items()), sorted(sd.removes), sd.changes, sorted(sd.owned), sd.unmanaged)


def _old(monkeypatch: pytest.MonkeyPatch, drv: Driver, text: str) -> Any:
    with monkeypatch.context() as m:
        for module, name in PLACES:
            m.setattr(module, name, getattr(oracle, name))
        m.setattr(Driver, "owned_scope", oracle.owned_scope)
        return _outcome(drv, text)


def _leaves(nos: str, text: str, which: Any) -> dict:
    """Both sides' leaves as the NOS reads them, by the engine `which` (owned or the oracle)."""
    if nos in ("eos", "frr"):
        return which.text_leaves(which.parse_text(text), settings=NOS[nos].setting_keys)
    tree = nvue_driver.load_running(text) if nos == "nvue" else json.loads(text)
    return which.tree_leaves(tree)


def _same(monkeypatch: pytest.MonkeyPatch, drv: Driver, text: str, rng: random.Random) -> None:
    nos = NOS[drv.target]
    assert _outcome(drv, text) == _old(monkeypatch, drv, text)
    running, intent = (_leaves(drv.target, t, owned) for t in (text, drv.intended))
    assert list(running.items()) == list(_leaves(drv.target, text, oracle).items())
    assert list(intent.items()) == list(_leaves(drv.target, drv.intended, oracle).items())
    if nos.no_renumber:
        assert owned.renumbered(text, drv.intended, nos.no_renumber) == oracle.renumbered(text, drv.intended,
                                                                                          nos.no_renumber)
    # an earlier apply's manifest: some of the intent's leaves and some of the device's
    manifest = set(rng.sample(sorted(intent), min(5, len(intent)))) | set(rng.sample(sorted(running),
                                                                                     min(5, len(running))))
    read = owned.reading(intent, running, nos.owned_whole, nos.owned_objects)
    for earlier in (set(), manifest):
        args = (intent, running, nos.owned_whole, earlier, nos.owned_objects)
        assert owned.namesakes(*args, read=read) == owned.namesakes(*args) == oracle.namesakes(*args)
        args = (*args, nos.owned_implied, nos.never_owned)
        mine = oracle.scope(*args)
        assert owned.scope(*args, read=read) == owned.scope(*args) == mine
        lines = LINES[drv.target]
        sd = owned.scoped_diff(running, intent, mine, lines, earlier=earlier)
        assert _diff(sd) == _diff(oracle.scoped_diff(running, intent, mine, lines, earlier=earlier))
        if nos.running_shape == "config_db":  # the tree a SONiC push is checked and patched with
            tree = json.loads(text)
            assert owned.apply_leaves(tree, sd.sets, sd.removes) == oracle.apply_leaves(tree, sd.sets, sd.removes)
            assert tree == json.loads(text)  # shared with the result, not changed
        elif nos.running_shape == "text":  # the file an FRR push hands frr-reload.py
            nodes, keys = owned.parse_text(text), nos.setting_keys
            assert owned.render_text(owned.apply_text(nodes, sd.sets, sd.removes, keys)) == owned.render_text(
                oracle.apply_text(nodes, sd.sets, sd.removes, keys))
            assert nodes == owned.parse_text(text)


LINES = {"eos": eos_driver._lines, "frr": frr_driver._lines, "sonic": sonic_driver._lines, "nvue": nvue_driver._lines}


# -- mutations --------------------------------------------------------------------------------------
def _text_mutation(text: str, intended: str, nos: str, rng: random.Random) -> str:
    """`text` with a few random edits: lines dropped, changed, repeated; foreign neighbours (some members of a rendered
    peer group, some with a rendered route-map), a foreign route-map and community list, another clause of a rendered
    route-map, a rendered neighbour's foreign setting, settings that contradict a rendered port's (EOS)."""
    lines = text.splitlines()
    pad = "   " if nos == "eos" else " "
    route_maps = re.findall(r"(?m)^route-map (\S+)", intended) or ["RM"]
    groups = re.findall(r"(?m)^\s+neighbor (\S+) peer[ -]group\s*$", intended) or ["PG"]
    peers = re.findall(r"(?m)^\s+neighbor (\d+\.\d+\.\d+\.\d+) ", intended) or ["192.0.2.1"]
    ports = [i for i, ln in enumerate(lines) if ln.startswith("interface Ethernet")]
    bgp = next((i for i, ln in enumerate(lines) if ln.startswith("router bgp ")), None)
    for _ in range(rng.randint(1, 4)):
        k, op = rng.randint(1, 250), rng.randrange(8)
        at = rng.randrange(len(lines)) if lines else 0
        if op == 0 and lines:
            del lines[at]
        elif op == 1 and lines and lines[at].split():
            lines[at] = lines[at].rsplit(" ", 1)[0] + f" {k}" if " " in lines[at].strip() else lines[at]
        elif op == 2 and lines:
            lines.insert(at, lines[at].rsplit(" ", 1)[0] + f" {k}" if " " in lines[at].strip() else lines[at])
        elif op == 3 and bgp is not None:
            group = " peer group" if nos == "eos" else " peer-group"
            lines[bgp + 1:bgp + 1] = [f"{pad}neighbor 192.0.2.{k} remote-as 65{k:03d}",
                                      f"{pad}neighbor 192.0.2.{k}{group} {rng.choice(groups)}",
                                      f"{pad}neighbor 192.0.2.{k} route-map {rng.choice(route_maps)} in",
                                      f"{pad}neighbor {rng.choice(peers)} description foreign-{k}"][:rng.randint(1, 4)]
        elif op == 4:
            lines += [f"route-map FOREIGN-{k} permit 10", f"{pad}match community CL-{k}", "!",
                      f"route-map {rng.choice(route_maps)} permit {900 + k}", f"{pad}set local-preference {k}", "!"]
        elif op == 5:
            name = rng.choice([f"CL-{k}", *route_maps])
            lines.append(f"ip community-list {name} permit 65000:{k}" if nos == "eos"
                         else f"bgp community-list standard {name} seq 5 permit 65000:{k}")
        elif op == 6 and bgp is not None:
            lines.insert(bgp + 1, f"{pad}redistribute connected route-map {rng.choice(route_maps)}")
        elif op == 7 and ports:
            lines.insert(rng.choice(ports) + 1, pad + rng.choice(
                ["no switchport", f"channel-group {k} mode active", "shutdown", "switchport mode trunk",
                 f"ip address 198.51.100.{k}/31", "switchport access vlan 10"]))
    return "\n".join(lines) + "\n"


def _tree_mutation(tree: dict, intended: dict, whole: tuple[str, ...], rng: random.Random) -> dict:
    """`tree` with a few random edits: leaves dropped and changed, an empty object, a foreign entry beside a rendered
    one, a rendered entry's name as a foreign leaf's value or an item of it, another key of a rendered entry, a field
    under an object the render keeps empty."""
    leaves = sorted(owned.tree_leaves(tree))
    mine = sorted(owned.tree_leaves(intended))
    names = sorted({entry[-1].split("|")[0] for entry in owned.whole_entries(mine, whole).values()})  # rendered objects
    sets, removes = {}, []
    for _ in range(rng.randint(1, 4)):
        k, op = rng.randint(1, 250), rng.randrange(7)
        p = rng.choice(leaves)
        if op == 0:
            removes.append(p)
        elif op == 1:
            sets[p] = f"{owned.tree_leaves(tree)[p]}{k}" if not isinstance(owned.tree_leaves(tree)[p], dict) else {}
        elif op == 2:
            sets[(*p[:-1], f"foreign-{k}")] = {}
        elif op == 3 and len(p) > 2:
            sets[(*p[:-2], f"FOREIGN-{k}", p[-1])] = "foreign"
        elif op == 4 and names:  # a foreign leaf that names a rendered object: its value, or an item of a list
            sets[(*p[:-1], f"uses-{k}")] = rng.choice([rng.choice(names), [f"other-{k}", rng.choice(names)]])
        elif op == 5:
            q = rng.choice(mine)
            if len(q) > 2:
                sets[(q[0], f"{q[1].split('|')[0]}|{900 + k}", q[-1])] = "foreign"
        elif op == 6 and (bare := [q for q, v in owned.tree_leaves(intended).items() if v == {}]):
            sets[(*rng.choice(bare), f"field-{k}")] = "foreign"  # a field under an object the render keeps empty
    return apply_leaves(tree, sets, removes)


def _mutations(drv: Driver, text: str, seed: int) -> list[tuple[str, random.Random]]:
    out = [(text, random.Random(seed))]
    for i in range(MUTATIONS):
        rng = random.Random(seed * 1000 + i)
        if drv.target in ("eos", "frr"):
            out.append((_text_mutation(text, drv.intended, drv.target, rng), rng))
        elif drv.target == "nvue":
            tree = _tree_mutation(nvue_driver.load_running(text), nvue_driver.load_running(drv.intended),
                                  NOS["nvue"].owned_whole, rng)
            out.append((json.dumps(tree), rng))
        else:
            tree = _tree_mutation(json.loads(text), json.loads(drv.intended), NOS["sonic"].owned_whole, rng)
            out.append((json.dumps(tree), rng))
    return out


# -- the inputs -------------------------------------------------------------------------------------
@pytest.mark.parametrize(("nos", "switch", "path"), REAL, ids=[f"{n}:{p.parent.name}/{p.name}:{s}" for n, s, p in REAL])
def test_real_running_configs_and_their_mutations_give_what_they_gave(
        monkeypatch: pytest.MonkeyPatch, nos: str, switch: str, path: Path) -> None:
    drv = _render(INVENTORIES / INVENTORY[nos], switch)
    text = path.read_text()
    for i, (running, rng) in enumerate(_mutations(drv, text, sum(map(ord, f"{nos}{switch}{path.name}")))):
        try:
            _same(monkeypatch, drv, running, rng)
        except AssertionError as exc:
            raise AssertionError(f"mutation {i} of {path.name} on {switch} differs from the oracle") from exc


@pytest.mark.parametrize("nos", sorted(PLATFORM))
def test_a_generated_fabric_with_foreign_configuration_gives_what_it_gave(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path, nos: str) -> None:
    inv = tmp_path / "inv"
    assert inproc.fabric("generate", "gpu-rail", "--gpus", "512", "-o", str(inv), "--target", nos, "--platform",
                         PLATFORM[nos]).returncode == 0
    fab = derive(load(inv))
    for role in ("leaf", "spine"):
        switch = next(n for n in sorted(fab.switches) if fab.switches[n].role == role)
        drv = _render(inv, switch)
        for running in (drv.intended if nos != "nvue" else json.dumps(nvue_driver.load_running(drv.intended)),
                        beside(nos, drv.intended, (BROWNFIELD / nos / FOREIGN[nos]).read_text())):
            for i, (text, rng) in enumerate(_mutations(drv, running, len(running))):
                try:
                    _same(monkeypatch, drv, text, rng)
                except AssertionError as exc:
                    raise AssertionError(f"mutation {i} on {switch} differs from the oracle") from exc


def test_a_long_list_costs_in_proportion_to_its_entries() -> None:
    """An FRR prefix-list's entries are one setting (`seq N` dropped: `ip prefix-list PL permit`): eight times as
    many entries cost about eight times as much to plan, not sixty-four (each entry copied the entries before it)."""
    drv = _render(INVENTORIES / INVENTORY["frr"], "leaf-su1-r1")
    real = (BROWNFIELD / "frr" / "leaf-su1-r1.conf").read_text()

    def plan(entries: int) -> float:
        text = real + "".join(f"ip prefix-list CUSTOMERS seq {5 * (i + 1)} permit 10.{i // 256 % 256}."
                                      f"{i % 256}.0/24\n" for i in range(entries))
        assert not any("CUSTOMERS" in c.line for c in drv.scoped(text).changes)  # someone else's list: never touched
        return cpu_seconds(lambda: drv.scoped(text))

    plan(500)
    short, long = plan(3000), plan(24000)
    assert long < 16 * short + 0.05, f"{short * 1000:.0f} → {long * 1000:.0f} CPU-ms"
