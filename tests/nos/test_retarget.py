"""One fabric, any NOS. Every shipped inventory, with only `roles.<role>.target` and `platform` changed,
validates, lints and renders on every NOS: SONiC renders pass SONiC's YANG models (../shared/tools/
sonic_yang_check.py), NVUE renders use only documented NVUE paths (tests/fixtures/nvue/paths.yaml), EOS renders of
every switch match Arista's pyavd rendering the same intent section for section (tests/nos/eos/test_render.py's
sections and deliberate differences), and a link written with NOS-neutral ports (`12/2`) gets each NOS's own port
name."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest

from fabric.nos import NOS
from tests import inproc
from tests.conftest import ROOT, require
from tests.support.nos import platform_for, retarget

# every shipped inventory, and one written as engineers write them (anchors, merge keys, the preset's
# watchdog spelt out, per-link cable lengths, NOS-neutral ports, a mixed DGX/HGX fleet)
SOURCES = {p.name: p for p in (ROOT / "inventories").iterdir() if p.is_dir()} | {
    "dgx-hgx-2su": ROOT / "tests" / "fixtures" / "inventories" / "dgx-hgx-2su"}
INVENTORIES = sorted(SOURCES)

def fabric(*args: str, ok: tuple[int, ...] = (0,)) -> subprocess.CompletedProcess[str]:
    p = inproc.fabric(*args)  # in this process (tests.inproc)
    assert p.returncode in ok and "Traceback" not in p.stderr, (args, p.returncode, p.stdout[-3000:], p.stderr[-3000:])
    return p




@pytest.fixture(scope="module")
def renders(tmp_path_factory: pytest.TempPathFactory) -> dict[tuple[str, str], Path]:
    """(inventory, target) → its render (spines and the first leaf, with NVUE's nv-set.txt)."""
    tmp = tmp_path_factory.mktemp("retarget")
    out: dict[tuple[str, str], Path] = {}
    for name in INVENTORIES:
        for target in NOS:
            inv = retarget(name, target, tmp / "inv" / f"{name}-{target}")
            fabric("validate", str(inv))
            lint = json.loads(fabric("lint", str(inv), "--format", "json", ok=(0, 1)).stdout)
            errors = sorted(f["item"] for f in lint["findings"] if f["severity"] == "error" and not f["waived"])
            assert errors == [], (name, target, lint["findings"])
            dst = tmp / "render" / f"{name}-{target}"
            fabric("render", str(inv), "-o", str(dst), "--all", "--only", "spine1", "--only", "spine2",
                   "--only", _first_leaf(inv))
            out[(name, target)] = dst
    return out


def _first_leaf(inv: Path) -> str:
    rows = json.loads(fabric("explain", str(inv), "spine1", "ports[0].peer", "--format", "json").stdout)
    return rows[0]["value"]


@pytest.mark.parametrize("name", INVENTORIES)
@pytest.mark.parametrize("target", list(NOS))
def test_every_shipped_inventory_renders_on_every_nos(renders: dict[tuple[str, str], Path], name: str,
                                                      target: str) -> None:
    files = {p.name for p in renders[(name, target)].glob("switches/*/*")}
    assert set(NOS[target].files) <= files, (name, target, files)


def test_sonic_renders_pass_the_yang_models(renders: dict[tuple[str, str], Path]) -> None:
    from tests.nos.sonic.test_yang import PLATFORM_BOUND, _check, _prerequisites

    _prerequisites()
    alone = []
    for (_, target), out in renders.items():
        if target != "sonic":
            continue
        for f in sorted(out.glob("switches/*/config_db.json")):
            cfg = json.loads(f.read_text())
            dst = f.with_name("standalone.json")
            dst.write_text(json.dumps({t: v for t, v in cfg.items() if t not in PLATFORM_BOUND}))
            alone.append(str(dst))
    assert len(alone) == 3 * len(INVENTORIES)
    violations = _check(*alone)
    assert not violations, [(Path(v["file"]).parent.name, v["table"], v["key"], v["field"], v["msg"])
                            for v in violations[:20]]


def test_nvue_renders_use_documented_paths(renders: dict[tuple[str, str], Path]) -> None:
    from tests.nos.nvue.test_paths import Render, check, report

    for (name, target), out in renders.items():
        if target != "nvue":
            continue
        inv = SOURCES[name]
        platform = platform_for("nvue", re.search(r"platform: ([\w-]+)", (inv / "fabric.yaml").read_text())[1])
        release = NOS["nvue"].release_for(platform)
        render = Render(inv, out)
        problems = check(render.set_lines(), release) + check(render.patch_leaves(), release)
        assert not problems, report(problems, release, f"{name} on NVUE")


@pytest.fixture(scope="module")
def eos_parity(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """Every shipped inventory re-targeted to EOS: ours (every switch, rendered by the CLI) and pyavd's rendering of
    the same intent, through tests/nos/eos/test_render.py (one pyavd subprocess for all of them)."""
    from tests.nos.eos import test_render as avd

    require(avd.avd_python_ok(), f"pyavd {avd.PYAVD_VERSION} in {avd.AVD_PYTHON.parent.parent} (run `make refs-avd`)")
    tmp = tmp_path_factory.mktemp("retarget-eos")
    inventories = {name: retarget(name, "eos", tmp / "inv" / f"{name}-eos") for name in INVENTORIES}
    intents = {name: avd.intent_of(inv) for name, inv in inventories.items()}
    done = subprocess.run([str(avd.AVD_PYTHON), str(avd.AVD_SCRIPT)],
                          input=json.dumps({k: avd.avd_inputs(i) for k, i in intents.items()}),
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, f"pyavd failed:\n{done.stderr[-4000:]}"
    configs = json.loads(done.stdout)["configs"]
    return {name: avd.Fabric(intent=intents[name], ours=avd.render_ours(inv, tmp / "render" / name),
                             pyavd={d: avd.parse(t) for d, t in configs[name].items()}, pyavd_text=configs[name],
                             pyavd_l3_mtu=0) for name, inv in inventories.items()}


@pytest.mark.parametrize("name", INVENTORIES)
def test_eos_renders_match_pyavd(eos_parity: dict[str, Any], name: str) -> None:
    """Every switch of the re-targeted inventory, every section tests/nos/eos/test_render.py compares: a difference
    not in its DELIBERATE list fails as `device: section: key: ours …, pyavd …`."""
    from tests.nos.eos.test_render import SECTIONS, differences

    f = eos_parity[name]
    assert sorted(f.ours) == sorted(f.pyavd) == sorted(s.name for s in f.intent.switches)
    problems = [f"{sw.name}: {section}: {d}" for section, s in SECTIONS.items() for sw in f.intent.switches
                for d in differences(s.extract(f.ours[sw.name], sw), s.extract(f.pyavd[sw.name], sw))]
    assert not problems, "\n".join(problems[:40])


@pytest.mark.parametrize(("target", "platform", "names"), [
    ("nvue", "sn5600", ("swp60s1", "swp60s0")), ("eos", "7060x6", ("Ethernet60/5", "Ethernet60/1")),
    ("sonic", "sn5600", ("Ethernet476", "Ethernet472")), ("frr", "linux-frr", ("swp60s1", "swp60s0"))])
def test_a_nos_neutral_port_gets_each_nos_name(tmp_path: Path, target: str, platform: str,
                                               names: tuple[str, str]) -> None:
    """`leaf-su1-r1:60/2` is the second port of front-panel port 60's 2x400G breakout: NVUE swp60s1, EOS
    Ethernet60/5 (lanes 5-8), SONiC Ethernet<first lane> from the platform's port map; explain and the rendered
    file name it so."""
    inv = retarget("h100-400g", target, tmp_path / f"h100-400g-{target}")
    (inv / "links.yaml").write_text('links:\n  - {a: "leaf-su1-r1:60/2", b: "spine1:60/1", cable: 30m}\n')
    rows = json.loads(fabric("explain", str(inv), "leaf-su1-r1", "ports", "--format", "json").stdout)
    port = next(r["path"].removesuffix(".peer_port") for r in rows
                if r["path"].endswith(".peer_port") and r["value"] == names[1])
    assert {r["path"]: r["value"] for r in rows}[f"{port}.name"] == names[0]
    out = tmp_path / "out"
    fabric("render", str(inv), "-o", str(out), "--only", "leaf-su1-r1")
    assert names[0] in "".join(p.read_text() for p in (out / "switches" / "leaf-su1-r1").iterdir())


def test_a_neutral_port_the_platform_lacks_is_located(tmp_path: Path) -> None:
    inv = retarget("h100-400g", "nvue", tmp_path / "h100-400g-nvue")
    (inv / "links.yaml").write_text('links:\n  - {a: "leaf-su1-r1:65/1", b: "spine1:60", cable: 30m}\n')
    said = fabric("validate", str(inv), ok=(2,)).stderr
    assert f"{inv}/links.yaml:2: links[0].a: expected a port of leaf-su1-r1: front-panel 1-64, each broken out " \
           "into /1-/2 (sn5600, 2 ways), found leaf-su1-r1:65/1" in said, said
    assert f"{inv}/links.yaml:2: links[0].b: expected a port of spine1" in said, said


def nvue_uplinks(inv: Path) -> None:
    """leaf-su1-r1's twelve uplinks of the mixed fleet written the way an NVUE engineer writes them (swp19s0 …
    swp24s1, each spine's swp1s0 …: NVUE names a broken-out port's sub-ports swp<port>s0, s1 …, NVUE command
    reference, Profile-Based Configuration, docs.nvidia.com/networking-ethernet-software/nvue-reference/), measured
    at 50 m."""
    spines = [(f"spine{5 + i // 3}", f"swp{1 + i % 3 // 2}s{i % 3 % 2}") for i in range(12)]
    (inv / "links.yaml").write_text("links:\n" + "".join(
        f'  - {{a: "leaf-su1-r1:swp{19 + i // 2}s{i % 2}", b: "{peer}:{port}", cable: 50m}}\n'
        for i, (peer, port) in enumerate(spines)))


def test_an_nvue_inventorys_port_names_match_its_links(tmp_path: Path) -> None:
    """On NVUE those names are the leaf's own: the 50 m reach the generated uplinks (768 links, none added)."""
    inv = retarget("dgx-hgx-2su", "nvue", tmp_path / "dgx-hgx-2su-nvue")
    nvue_uplinks(inv)
    assert "768 links" in fabric("validate", str(inv)).stdout
    rows = json.loads(fabric("explain", str(inv), "leaf-su1-r1", "ports", "--format", "json").stdout)
    named = {r["path"].removesuffix(".name"): r["value"] for r in rows if r["path"].endswith(".name")}
    cable = {named[r["path"].removesuffix(".cable_m")]: r["value"] for r in rows if r["path"].endswith("].cable_m")}
    assert {cable[f"swp{n}s{k}"] for n in range(19, 25) for k in (0, 1)} == {"50"}, cable


# What the NOS names front-panel port 19's first 2x400G sub-port of an SN5600 (SONiC: sonic-buildimage's
# platform.json through BreakoutCfg, fabric/data/sonic/sn5600.json: Ethernet144, alias etp19a; EOS: lanes 1-4)
RETARGETED = {"sonic": ("Ethernet144", "Ethernet0"), "eos": ("Ethernet19/1", "Ethernet1/1")}


@pytest.mark.parametrize("target", sorted(RETARGETED))
def test_port_names_of_another_nos_are_located(tmp_path: Path, target: str) -> None:
    """The same inventory re-targeted by its one target line: each NVUE name is a located error naming the NOS
    whose name it is and what to write instead; lint, render and plan refuse with the same words, render writes
    nothing (no phantom `PORT swp19s0`)."""
    inv = retarget("dgx-hgx-2su", target, tmp_path / f"dgx-hgx-2su-{target}")
    nvue_uplinks(inv)
    said = fabric("validate", str(inv), ok=(2,)).stderr
    title = NOS[target].short
    leaf, spine = RETARGETED[target]
    assert f"error: {inv}/links.yaml:2: links[0].a: expected leaf-su1-r1's {title} port name '{leaf}' or the " \
           f"NOS-neutral '19/1' (its target is {title}), found 'swp19s0', NVUE's name for that port" in said, said
    assert f"error: {inv}/links.yaml:2: links[0].b: expected spine5's {title} port name '{spine}' or the " \
           f"NOS-neutral '1/1' (its target is {title}), found 'swp1s0', NVUE's name for that port" in said, said
    assert said.count("NVUE's name for that port") == 24, said
    out = tmp_path / "out"
    for command in (("lint",), ("render", "-o", str(out)), ("plan", "--offline")):
        assert fabric(command[0], str(inv), *command[1:], ok=(2,)).stderr == said, command
    assert not out.exists()


def test_a_port_name_no_port_has_is_located(tmp_path: Path) -> None:
    """A name in the target's own style that the platform lacks (SONiC's lanes start at 0, 4, 8 … on a 2x400G
    SN5600; it has 64 ports) is located with the names and numbers it has."""
    inv = retarget("dgx-hgx-2su", "sonic", tmp_path / "dgx-hgx-2su-sonic")
    (inv / "links.yaml").write_text('links:\n  - {a: "leaf-su1-r1:Ethernet146", b: "spine1:eth0"}\n')
    said = fabric("validate", str(inv), ok=(2,)).stderr
    has = "front-panel 1-64, each broken out into /1-/2 (sn5600, 2 ways), or its SONiC name, Ethernet0 to Ethernet508"
    assert f"{inv}/links.yaml:2: links[0].a: expected a port of leaf-su1-r1: {has}, found " \
           "leaf-su1-r1:Ethernet146" in said, said
    assert f"{inv}/links.yaml:2: links[0].b: expected a port of spine1: {has}, found spine1:eth0" in said, said


# The inventory the issue describes, as written (tests/fixtures/inventories/dgx-hgx-2su), then on every NOS with only
# the anchor that every role aliases changed: which spelt-out watchdog values each NOS runs as written (RF111
# silent), and which it cannot (RF111, waived in the inventory, with what the switch runs instead).
RF111_WATCHDOG = {
    "nvue": {"qos.pfc_watchdog.detection": "requested 200 ms, NVIDIA Cumulus Linux (NVUE) runs 300 ms",
             "qos.pfc_watchdog.restoration": "requested 200 ms, NVIDIA Cumulus Linux (NVUE) runs the switch's own"},
    "sonic": {}, "eos": {},
    "frr": {"qos.pfc_watchdog": "requested on (detection 200 ms), Linux white-box with FRR (what the lab runs) runs "
                                "off"},
}


@pytest.mark.parametrize("target", list(NOS))
def test_an_engineers_inventory_loads_as_written_on_every_nos(tmp_path: Path, target: str) -> None:
    from fabric.design.derive import derive
    from fabric.explain import explain
    from fabric.lint.context import Context
    from fabric.lint.engine import run
    from fabric.model.load import load

    inv = retarget("dgx-hgx-2su", target, tmp_path / f"dgx-hgx-2su-{target}")
    loaded = load(inv)
    fab = derive(loaded)
    assert (len(fab.switches), len(fab.hosts)) == (24, 48)
    # merge keys: the HGX entries take the anchor's NICs and management interface; a key in the entry wins
    hgx, last, dgx = fab.hosts["gpu-su2-13"], fab.hosts["gpu-su2-24"], fab.hosts["gpu-su2-12"]
    assert [r.netdev for r in hgx.rails][:2] == ["ens1np0", "ens2np0"] and hgx.management_interface == "eno1"
    assert last.management_interface == "eno8303" and [r.netdev for r in last.rails] == [r.netdev for r in hgx.rails]
    assert [r.rdma for r in dgx.rails] == [f"mlx5_{i}" for i in (0, 3, 4, 5, 6, 9, 10, 11)]
    # per-link cable lengths through NOS-neutral ports, on both ends and in the headroom
    leaf = fab.switches["leaf-su2-r1"]
    far = [p for p in leaf.ports if p.peer == "spine1"]
    assert [p.cable_m for p in far] == [80, 80, 80] and all(p.headroom.cable_m == 80 for p in far if p.headroom)
    assert [p.cable_m for p in fab.switches["leaf-su1-r1"].ports[:3]] == [3, 7, 5]
    assert sorted(p.cable_m for p in fab.switches["spine1"].ports if p.peer.startswith("leaf-su2-r")) == \
        [40] * 20 + [80] * 4
    # the spelt-out watchdog: RF111 only where the NOS cannot run it, waived with the inventory's reason
    findings = [f for f in run(Context(loaded), select=["RF111"]).findings if f.item.startswith("qos.")]
    said = {f.item: f.message for f in findings}
    assert sorted(said) == sorted(RF111_WATCHDOG[target]), said
    assert all(said[k].startswith(f"{k}: {v}") for k, v in RF111_WATCHDOG[target].items()), said
    assert all(f.waived and f.file.endswith("qos.yaml") and f.line == 7 for f in findings), findings
    rows = {p: v for p, v, _ in explain(loaded, fab.switches["leaf-su1-r1"], "effective")}
    effective = {"nvue": "300 ms", "sonic": "200 ms", "eos": "200 ms"}
    if target in effective:
        assert rows["effective.qos.pfc_watchdog.detection"] == effective[target], rows
    else:
        assert rows["effective.qos.pfc_watchdog"] == "off", rows
