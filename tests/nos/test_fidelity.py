"""On every target: what a NOS needs is decided in derivation, rendered in its own terms, and seen by lint.

- The tool's own output lints clean (0 errors, 0 warnings, intent and `--configs` together) for every shipped
  inventory, the shipped ones moved to other targets, and generated fabrics per target (breakouts, p2p31, the
  NVUE 5.9 and 5.15 forms, host-tagged VLANs).
- Host-tagged VLANs: the leaf port is a tagged member on every NOS; RF311 fails a host/leaf tagging mismatch in
  both modes.
- Graceful shutdown (RFC 8326) renders on every target and RF405 sees it in both modes (fabric.lint.configs.gshut
  has the meaning per NOS).
- NOS releases: a default per platform, declared per role or switch, validated against the NOS table.
- Facts: EOS's MTU ceiling, the host's `--cable_len` from `links:`, SONiC breakout modes from the platform data,
  PFC watchdog settings a NOS cannot render refused naming the field.

The independent references (SONiC YANG, pyavd, the NVUE path table) are tests/nos/sonic/test_yang.py,
tests/nos/eos/test_render.py and tests/nos/nvue/test_paths.py.
"""

from __future__ import annotations

import json
import re
import shlex
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from fabric.design.derive import derive
from fabric.lint.configs import load_configs
from fabric.lint.context import Context
from fabric.lint.engine import run
from fabric.model.load import load
from fabric.nos import NOS
from tests import inproc
from tests.nos.nvue import test_paths as nvue_paths
from tests.support.nos import keep, retarget
from tests.support.paths import ROOT

INVENTORIES = ROOT / "inventories"


def cli(*args: str, ok: bool = True) -> subprocess.CompletedProcess[str]:
    p = inproc.fabric(*args)  # in this process (tests.inproc)
    if ok:
        assert p.returncode == 0, f"fabric {' '.join(args)} exited {p.returncode}:\n{p.stdout}\n{p.stderr}"
    return p


def edit(path: Path, change: Any) -> None:
    doc = yaml.safe_load(path.read_text())
    change(doc)
    path.write_text(yaml.safe_dump(doc, sort_keys=False))


def tag_rails(doc: dict[str, Any]) -> None:
    """Every host NIC tags its rail's VLAN (addressing.vlan_base 1000 + rail)."""
    for nic in doc["hosts"]["defaults"]["nics"]:
        nic["vlan"] = 1000 + nic["rail"]


@dataclass(frozen=True)
class Case:
    name: str
    inventory: str = ""  # a shipped inventory, or
    generate: tuple[str, ...] = ()  # `fabric generate gpu-rail` arguments
    target: str = ""  # every role re-targeted to this NOS, on its own platform
    release: str | None = None  # and this release of it
    hosts_yaml: Any = None  # an edit of hosts.yaml
    expect: tuple[str, ...] = ()  # "rule item" findings the case has by design (what its NOS cannot run)


def gen(target: str, platform: str, breakout: str, *extra: str) -> tuple[str, ...]:
    return ("--gpus", "32", "--rails", "2", "--hosts-per-su", "4", "--gpus-per-host", "2", "--target", target,
            "--platform", platform, "--breakout", breakout, *extra)


CASES = [
    *(Case(name, inventory=name) for name in sorted(p.name for p in INVENTORIES.iterdir() if p.is_dir())),
    Case("h100-400g-sonic", inventory="h100-400g", target="sonic",
         expect=("RF111 switching.adaptive_routing",)),  # only NVUE renders AR
    Case("h100-400g-nvue-5.9", inventory="h100-400g", target="nvue", release="5.9"),
    Case("sonic-example-nvue", inventory="sonic-example", target="nvue"),
    Case("eos-example-frr", inventory="eos-example", target="frr"),
    Case("gen-sonic-sn5600-2x400G", generate=gen("sonic", "sn5600", "2x400G", "--speed", "400G")),
    Case("gen-sonic-sn4600c-p2p31", generate=gen("sonic", "sn4600c", "none", "--speed", "100G", "--mode", "p2p31")),
    Case("gen-nvue-sn5600-2x400G", generate=gen("nvue", "sn5600", "2x400G", "--speed", "400G")),
    Case("gen-nvue-sn4600c-p2p31", generate=gen("nvue", "sn4600c", "none", "--speed", "100G", "--mode", "p2p31")),
    Case("gen-eos-7060x5", generate=gen("eos", "7060x5", "none", "--speed", "400G")),
    Case("gen-frr", generate=gen("frr", "linux-frr", "none", "--speed", "400G")),
    *(Case(f"gen-{t}-tagged", generate=gen(t, p, "none", "--speed", s), hosts_yaml=tag_rails)
      for t, p, s in (("sonic", "sn5400", "400G"), ("nvue", "sn5400", "400G"), ("eos", "7060x5", "400G"),
                      ("frr", "linux-frr", "400G"))),
]


def materialize(case: Case, tmp: Path) -> Path:
    inv = tmp / "inv" / case.name
    if case.generate:
        cli("generate", "gpu-rail", "-o", str(inv), "--name", case.name, *case.generate)
    elif case.target:
        retarget(case.inventory, case.target, inv, platform=keep, release=case.release)
    else:
        shutil.copytree(INVENTORIES / case.inventory, inv)
    if case.hosts_yaml:
        edit(inv / "hosts.yaml", case.hosts_yaml)
    return inv


def findings(inv: Path, configs: Path | None = None) -> list[dict[str, Any]]:
    args = ["lint", str(inv), "--format", "json"] + (["--configs", str(configs)] if configs else [])
    p = cli(*args, ok=False)
    assert p.returncode in (0, 1), p.stdout + p.stderr
    doc = json.loads(p.stdout)
    return doc["findings"] if isinstance(doc, dict) else doc


def serious(found: list[dict[str, Any]]) -> list[str]:
    return [f"{f['rule']} {f['severity']} {f['object']}:{f['item']} {f['message']} ({f.get('file')}:{f.get('line')})"
            for f in found if f["severity"] in ("error", "warning") and not f.get("waived")]


# ------------------------------------------------------------------------------------------------ own output


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_own_output_lints_clean(case: Case, tmp_path: Path) -> None:
    """Render (every file, `--all`) and lint the inventory with its own configs: nothing an operator must fix."""
    inv = materialize(case, tmp_path)
    out = tmp_path / "render"
    cli("render", str(inv), "-o", str(out), "--all")
    assert any((out / "switches").iterdir())
    bad = serious(findings(inv, out))
    assert [b for b in bad if " ".join(b.split()[:3:2]).replace("switches:", "") not in case.expect] == [], \
        "\n".join(bad)
    assert len(bad) == len(case.expect), bad
    # NVUE: every path in the documented form of the switch's release (the table of tests/nos/nvue/test_paths.py)
    fabric = derive(load(inv))
    for sw in sorted((out / "switches").glob("*/nv-set.txt")):
        release = fabric.switches[sw.parent.name].release
        leaves = ((f"{sw.parent.name}:{n}", shlex.split(line)[2:])
                  for n, line in enumerate(sw.read_text().splitlines(), 1))
        problems = nvue_paths.check(leaves, release)
        assert not problems, nvue_paths.report(problems, release, f"{case.name} {sw.parent.name}")


# ------------------------------------------------------------------------------------------------ VLAN tagging


def _tagged(case_target: str, tmp: Path) -> tuple[Path, Path]:
    case = next(c for c in CASES if c.name == f"gen-{case_target}-tagged")
    inv = materialize(case, tmp)
    out = tmp / "render"
    cli("render", str(inv), "-o", str(out))
    return inv, out / "switches" / "leaf-su1-r1"


@pytest.mark.parametrize("target", list(NOS))
def test_host_tagged_vlan_is_a_tagged_member_on_every_nos(target: str, tmp_path: Path) -> None:
    inv, leaf = _tagged(target, tmp_path)
    host_ports = [p for p in derive(load(inv)).switches["leaf-su1-r1"].ports if p.kind == "host"]
    assert host_ports and all(p.tagged and p.vlan == 1001 for p in host_ports)
    names = [p.name for p in host_ports]
    if target == "sonic":
        members = json.loads((leaf / "config_db.json").read_text())["VLAN_MEMBER"]
        assert {members[f"Vlan1001|{n}"]["tagging_mode"] for n in names} == {"tagged"}
    elif target == "nvue":
        tree = yaml.safe_load((leaf / "nvue-patch.yaml").read_text())[0]["set"]["interface"]
        for n in names:
            assert tree[n]["bridge"]["domain"]["br_default"] == {"vlan": {"1001": {}}, "untagged": "none"}
    elif target == "eos":
        text = (leaf / "running-config.cfg").read_text()
        for n in names:
            stanza = re.search(rf"^interface {re.escape(n)}\n((?:   .*\n)+)", text, re.M)
            assert stanza and "   switchport mode trunk\n   switchport trunk allowed vlan 1001\n" in stanza.group(1)
            assert "switchport access" not in stanza.group(1)
    else:
        text = (leaf / "interfaces.sh").read_text()
        for n in names:
            assert f"ip link add link {n} name {n}.1001 type vlan id 1001" in text
            assert f"ip link set dev {n}.1001 master vlan1001" in text
            assert f"ip link set dev {n} master" not in text


def test_rf311_host_leaf_tagging_mismatch(tmp_path: Path) -> None:
    """Intent: a host tagging another VLAN than its rail's, or tagging toward a routed (p2p31) port; configs: a
    leaf port left an access member where the host tags (adds the VLAN to the NAD)."""
    inv, leaf = _tagged("eos", tmp_path)
    wrong = tmp_path / "wrong"
    shutil.copytree(inv, wrong)
    edit(wrong / "hosts.yaml", lambda d: d["hosts"]["defaults"]["nics"][0].update(vlan=2001))
    hits = [f for f in findings(wrong) if f["rule"] == "RF311"]
    assert hits and hits[0]["severity"] == "error" and "rail VLAN 1001" in hits[0]["message"]
    assert hits[0]["file"].endswith("hosts.yaml") and hits[0]["line"]
    routed = tmp_path / "routed"
    shutil.copytree(inv, routed)
    edit(routed / "addressing.yaml", lambda d: d["addressing"].update(mode="p2p31"))
    assert any(f["rule"] == "RF311" and "routed" in f["message"] for f in findings(routed))
    # the leaf's config left as it was before the host started tagging: access members
    cfg = leaf / "running-config.cfg"
    text = cfg.read_text().replace("   switchport mode trunk\n   switchport trunk allowed vlan 1001\n",
                                   "   switchport access vlan 1001\n")
    cfg.write_text(text)
    hits = [f for f in findings(inv, leaf.parent.parent) if f["rule"] == "RF311"]
    assert hits and all(f["object"] == "leaf-su1-r1" and f["file"] == str(cfg) and f["line"] for f in hits)
    assert "found access VLAN 1001" in hits[0]["message"]


# ------------------------------------------------------------------------------------------------ gshut


GSHUT_LINES = {  # what the steady-state render must hold on each target (fabric.lint.configs.gshut)
    "sonic": ['"community_member": [\n', '"65535:0"', '"set_local_pref": "0"', '"route_map_in": [\n'],
    "nvue": ["community: '65535:0'", "local-preference: 0", "route-map: FABRIC-IN"],
    "eos": ["ip community-list GSHUT permit GSHUT", "   set local-preference 0", "   neighbor FABRIC send-community",
            "   neighbor FABRIC route-map FABRIC-IN in"],
    "frr": ["bgp community-list standard GSHUT permit graceful-shutdown", " set local-preference 0",
            "  neighbor FABRIC route-map FABRIC-IN in"],
}
INTENDED = {name: nos.intended for name, nos in NOS.items()}


def _gshut_case(target: str) -> Case:
    return {"sonic": CASES[[c.name for c in CASES].index("gen-sonic-sn5600-2x400G")],
            "nvue": CASES[[c.name for c in CASES].index("gen-nvue-sn5600-2x400G")],
            "eos": CASES[[c.name for c in CASES].index("gen-eos-7060x5")],
            "frr": CASES[[c.name for c in CASES].index("gen-frr")]}[target]


@pytest.mark.parametrize("target", list(NOS))
def test_graceful_shutdown_on_every_target(target: str, tmp_path: Path) -> None:
    inv = materialize(_gshut_case(target), tmp_path)
    out = tmp_path / "render"
    cli("render", str(inv), "-o", str(out))
    for sw in ("leaf-su1-r1", "spine1"):
        text = (out / "switches" / sw / INTENDED[target]).read_text()
        if target == "nvue":
            text = yaml.safe_dump(yaml.safe_load(text), default_flow_style=False)
        missing = [x for x in GSHUT_LINES[target] if x not in text]
        assert not missing, f"{sw}: {missing}"
    cs = load_configs(out, Context(load(inv)))
    assert cs.devices and all(d.graceful_shutdown is True for d in cs.devices)
    # RF405 in --configs mode: the policy taken off one leaf
    leaf = out / "switches" / "leaf-su1-r1" / INTENDED[target]
    leaf.write_text(strip_gshut(target, leaf.read_text()))
    hits = [f for f in findings(inv, out) if f["rule"] == "RF405"]
    assert [f["object"] for f in hits] == ["leaf-su1-r1"], hits
    assert hits[0]["severity"] == "warning" and "no inbound policy" in hits[0]["message"]
    # and in intent mode: the inventory turning it off
    edit(inv / "switching.yaml", lambda d: d["switching"].setdefault("bgp", {}).update(graceful_shutdown=False))
    assert any(f["rule"] == "RF405" and f["file"].endswith("switching.yaml") for f in findings(inv))


def strip_gshut(target: str, text: str) -> str:
    if target == "sonic":
        db = json.loads(text)
        for af in db["BGP_NEIGHBOR_AF"].values():
            af.pop("route_map_in", None)
        return json.dumps(db, indent=2)
    if target == "nvue":
        docs = yaml.safe_load(text)
        for nb in docs[0]["set"]["vrf"]["default"]["router"]["bgp"]["neighbor"].values():
            nb.pop("address-family", None)
        return yaml.safe_dump(docs)
    drop = {"eos": "   neighbor FABRIC route-map FABRIC-IN in\n", "frr": "  neighbor FABRIC route-map FABRIC-IN in\n"}
    return text.replace(drop[target], "")


def test_eos_sends_communities_only_when_told() -> None:
    """EOS sends no communities without `send-community`: a drain could not announce GRACEFUL_SHUTDOWN."""
    from fabric.nos.eos.configs import parse

    text = ("ip community-list GSHUT permit GSHUT\n!\nroute-map FABRIC-IN permit 10\n   match community GSHUT\n"
            "   set local-preference 0\n!\nrouter bgp 65101\n   neighbor FABRIC peer group\n"
            "   neighbor FABRIC route-map FABRIC-IN in\n"
            "   neighbor interface Ethernet1/1 peer-group FABRIC remote-as 65000\n")
    dev = parse(Path("leaf.cfg"), "leaf", text)
    assert dev.graceful_shutdown is False and "communities not sent" in dev.graceful_shutdown_missing
    sending = text.replace("peer group\n", "peer group\n   neighbor FABRIC send-community\n")
    dev = parse(Path("leaf.cfg"), "leaf", sending)
    assert dev.graceful_shutdown is True


# ------------------------------------------------------------------------------------------------ breakouts


def test_rf106_silent_on_nvue_breakout_parents(tmp_path: Path) -> None:
    """A parent carrying only `link breakout 2x` is no lossless port (768 RF106 errors on h100-400g before)."""
    out = tmp_path / "render"
    cli("render", str(INVENTORIES / "h100-400g"), "-o", str(out))
    cs = load_configs(out)
    leaf = next(d for d in cs.devices if d.name == "leaf-su1-r1")
    assert "swp1" not in leaf.ports and "swp1s0" in leaf.ports and leaf.ports["swp1s0"].pfc == [3]
    assert not [f for f in run(None, cs, select=["RF106"]).findings]


def test_sonic_breakout_the_platform_does_not_define_is_refused(tmp_path: Path) -> None:
    inv = tmp_path / "inv"
    cli("generate", "gpu-rail", "-o", str(inv), *gen("sonic", "sn5600", "2x400G", "--speed", "400G"))
    edit(inv / "fabric.yaml", lambda d: d["roles"]["leaf"].update(breakout="8x100G"))
    p = cli("render", str(inv), "-o", str(tmp_path / "out"), ok=False)
    assert p.returncode == 2
    assert re.search(r"fabric\.yaml:\d+: roles\.leaf\.breakout: expected a breakout mode SONiC defines for sn5600 "
                     r"\(ACS-SN5600: 2x400G, 4x200G\), found 8x100G", p.stdout + p.stderr), p.stdout + p.stderr
    assert (p.stdout + p.stderr).count("roles.leaf.breakout") == 1, "reported once for the role, not per switch"


def test_sonic_breakout_ports_carry_platform_lanes(tmp_path: Path) -> None:
    f = derive(load(materialize(CASES[[c.name for c in CASES].index("h100-400g-sonic")], tmp_path)))
    leaf = f.switches["leaf-su1-r1"]
    p0 = next(p for p in leaf.ports if p.name == "Ethernet4")
    assert p0.hw is not None and (p0.hw.lanes, p0.hw.alias, p0.hw.index, p0.hw.subport, p0.hw.fec) == \
        ("4,5,6,7", "etp1b", 1, 2, "rs")
    assert leaf.breakout["Ethernet0"] == "2x400G[200G,100G,50G,40G,25G,10G]"


# ------------------------------------------------------------------------------------------------ releases


def test_nvue_release_default_per_platform_and_declared(tmp_path: Path) -> None:
    f = derive(load(INVENTORIES / "h100-400g"))
    assert {s.release for s in f.switches.values()} == {"5.15"}  # SN5600
    inv = materialize(CASES[[c.name for c in CASES].index("sonic-example-nvue")], tmp_path)
    assert {s.release for s in derive(load(inv)).switches.values()} == {"5.9"}  # MSN2700: the ESR
    edit(inv / "fabric.yaml", lambda d: d.setdefault("switches", []).append({"name": "spine1", "release": "5.15"}))
    f = derive(load(inv))
    assert f.switches["spine1"].release == "5.15" and f.switches["spine2"].release == "5.9"
    rows = json.loads(cli("explain", str(inv), "spine1", "release", "--format", "json").stdout)
    assert "switches[0].release" in rows[0]["origin"] and "fabric.yaml:" in rows[0]["origin"]
    out = tmp_path / "out"
    cli("render", str(inv), "-o", str(out), "--all")
    assert "nv set interface lo ipv4 address" in (out / "switches" / "spine1" / "nv-set.txt").read_text()
    assert "nv set interface lo ip address" in (out / "switches" / "spine2" / "nv-set.txt").read_text()


def test_undeclared_release_is_refused_with_file_line(tmp_path: Path) -> None:
    inv = tmp_path / "inv"
    shutil.copytree(INVENTORIES / "h100-400g", inv)
    edit(inv / "fabric.yaml", lambda d: d["roles"]["leaf"].update(release="5.11"))
    p = cli("validate", str(inv), ok=False)
    assert p.returncode == 2
    assert re.search(r"fabric\.yaml:\d+: roles\.leaf\.release: expected one of the NVIDIA Cumulus Linux \(NVUE\) "
                     r"releases the tool renders for: 5\.9, 5\.15, found '5\.11'", p.stdout + p.stderr), p.stdout
    assert (p.stdout + p.stderr).count("roles.leaf.release") == 1


def test_the_lab_ignores_declared_releases() -> None:
    """The lab realizes every inventory on Linux/FRR: an NVUE release is no FRR release and is not checked."""
    f = derive(load(INVENTORIES / "h100-400g"), "frr")
    assert {s.release for s in f.switches.values()} == {NOS["frr"].releases[-1]}


# ------------------------------------------------------------------------------------------------ facts


def test_eos_mtu_is_capped_to_the_nos_ceiling_and_explained(tmp_path: Path) -> None:
    """eos-example writes the 9214 EOS takes; 9216 written is capped, explained, and an RF111 warning."""
    inv = tmp_path / "eos"
    shutil.copytree(INVENTORIES / "eos-example", inv)
    text = (inv / "switching.yaml").read_text()
    (inv / "switching.yaml").write_text(re.sub(r"mtu: 9214.*", "mtu: 9216", text))
    for path in (INVENTORIES / "eos-example", inv):
        f = derive(load(path))
        assert {s.mtu for s in f.switches.values()} == {9214} == {p.mtu for s in f.switches.values()
                                                                 for p in s.ports}
    rows = json.loads(cli("explain", str(inv), "leaf-su1-r1", "mtu", "--format", "json").stdout)
    assert "capped to 9214" in rows[0]["origin"]
    found = json.loads(cli("lint", str(inv), "--select", "RF111", "--format", "json", ok=False).stdout)["findings"]
    assert [(f["severity"], f["message"].split(" (on ")[0]) for f in found] == [
        ("warning", "switching.mtu: requested 9216, Arista EOS runs 9214 (the largest MTU Arista EOS takes "
                    "(fabric.nos: mtu_max))")]
    assert {s.mtu for s in derive(load(INVENTORIES / "sonic-example")).switches.values()} == {9216}


def test_host_cable_len_follows_links(tmp_path: Path) -> None:
    """`links:` sets one host cable to 10 m: the leaf's PFC headroom, the host's `mlnx_qos --cable_len` and
    explain agree on 10 m; the other rails keep the cabling class's 5 m."""
    inv = tmp_path / "inv"
    shutil.copytree(INVENTORIES / "eos-example", inv)
    f0 = derive(load(inv))
    rail = f0.hosts["gpu-su1-01"].rails[0]
    (inv / "links.yaml").write_text(yaml.safe_dump({"links": [
        {"a": f"gpu-su1-01:{rail.netdev}", "b": f"{rail.leaf}:{rail.leaf_port}", "cable": "10m"}]}))
    f = derive(load(inv))
    host = f.hosts["gpu-su1-01"]
    assert [r.cable_m for r in host.rails] == [10] + [5] * (len(host.rails) - 1)
    port = next(p for p in f.switches[rail.leaf].ports if p.name == rail.leaf_port)
    assert port.cable_m == 10 and port.headroom is not None and port.headroom.cable_m == 10
    out = tmp_path / "out"
    cli("render", str(inv), "-o", str(out), "--only", "gpu-su1-01")
    script = (out / "hosts" / "gpu-su1-01" / "roce-setup.sh").read_text()
    assert f"qos -i {rail.netdev} --cable_len 10" in script
    assert len(re.findall(r"--cable_len 5\b", script)) == len(host.rails) - 1
    rows = json.loads(cli("explain", str(inv), "gpu-su1-01", "rails[0].cable_m", "--format", "json").stdout)
    assert rows[0]["value"] == "10" and "links[0]" in rows[0]["origin"] and "links.yaml:" in rows[0]["origin"]


WATCHDOG_DIFFERS = [  # (target, platform, override, what RF111 says the switch runs instead)
    ("nvue", "sn5400", "detection: 400ms", "qos.pfc_watchdog.detection: requested 400 ms, NVIDIA Cumulus Linux "
     "(NVUE) runs 300 ms (NVUE detects after poll_interval × robustness = 100 ms × 3)"),
    ("nvue", "sn5400", "action: forward", "qos.pfc_watchdog.action: requested forward, NVIDIA Cumulus Linux (NVUE) "
     "runs drop"),
    ("eos", "7060x5", "action: alert", "qos.pfc_watchdog.action: requested alert, Arista EOS runs EOS's default "
     "action (EOS has drop and no-drop, no alert-only action)"),
    ("eos", "7060x5", "detection: 205ms", "qos.pfc_watchdog.detection: requested 205 ms, Arista EOS runs 200 ms "
     "(EOS takes the timeout in seconds with 2 decimals: 0.2 s)"),
    # the preset's watchdog spelt out on a NOS without one: one finding for the whole watchdog
    ("frr", "linux-frr", "detection: 200ms, restoration: 200ms", "qos.pfc_watchdog: requested on (detection 200 ms), "
     "Linux white-box with FRR (what the lab runs) runs off (no PFC watchdog on this NOS (iproute2 dcb has none): "
     "nothing on the switch breaks a PFC storm)"),
]


@pytest.mark.parametrize(("target", "platform", "override", "said"), WATCHDOG_DIFFERS,
                         ids=[f"{c[0]}-{c[2].split(':')[0]}" for c in WATCHDOG_DIFFERS])
def test_watchdog_setting_the_nos_cannot_express_is_a_lint_finding(target: str, platform: str, override: str,
                                                                   said: str, tmp_path: Path) -> None:
    """Not a load error — rendered as the NOS does it, and RF111 (error, waivable) says what the switch
    runs instead, computed."""
    inv = tmp_path / "inv"
    cli("generate", "gpu-rail", "-o", str(inv), *gen(target, platform, "none", "--speed", "400G"))
    (inv / "qos.yaml").write_text(f"qos:\n  preset: nvidia-roce\n  pfc_watchdog: {{{override}}}\n")
    cli("render", str(inv), "-o", str(tmp_path / "out"))
    p = cli("lint", str(inv), "--select", "RF111", "--format", "json", ok=False)
    found = json.loads(p.stdout)["findings"]
    assert p.returncode == 1 and [(f["rule"], f["severity"], f["line"]) for f in found] == [("RF111", "error", 3)]
    assert found[0]["message"].startswith(said) and found[0]["file"].endswith("qos.yaml"), found


@pytest.mark.parametrize(("target", "platform"), [("nvue", "sn5400"), ("sonic", "sn5400"), ("eos", "7060x5")])
def test_the_preset_spelt_out_is_silent_where_the_nos_runs_it(target: str, platform: str, tmp_path: Path) -> None:
    """The nvidia-roce watchdog written out: robustness is no SONiC or EOS setting (they detect by time) and
    is accepted there; NVUE runs poll 100 ms × robustness 3, so a detection of 300 ms is what it runs."""
    inv = tmp_path / "inv"
    cli("generate", "gpu-rail", "-o", str(inv), *gen(target, platform, "none", "--speed", "400G"))
    (inv / "qos.yaml").write_text("qos:\n  preset: nvidia-roce\n  pfc_watchdog: {detection: %s, restoration: "
                                  "200ms, action: drop, poll_interval: 100ms, robustness: 3}\n"
                                  % ("300ms" if target == "nvue" else "200ms"))
    p = cli("lint", str(inv), "--select", "RF111", "--format", "json", ok=False)
    msgs = [f["message"] for f in json.loads(p.stdout)["findings"]]
    want = ["qos.pfc_watchdog.restoration: requested 200 ms, NVIDIA Cumulus Linux (NVUE) runs the switch's own "
            "(NVUE has no restoration setting)"] if target == "nvue" else []
    assert [m.split(" (on ")[0] for m in msgs] == want, msgs


def test_watchdog_settings_the_nos_has_are_rendered(tmp_path: Path) -> None:
    """SONiC takes detection, restoration, action and the poll interval; EOS all but robustness and `alert`."""
    inv = tmp_path / "inv"
    cli("generate", "gpu-rail", "-o", str(inv), *gen("sonic", "sn5400", "none", "--speed", "400G"))
    (inv / "qos.yaml").write_text("qos:\n  preset: nvidia-roce\n  pfc_watchdog: {detection: 400ms, "
                                  "restoration: 800ms, action: alert, poll_interval: 50ms}\n")
    out = tmp_path / "out"
    cli("render", str(inv), "-o", str(out))
    wd = json.loads((out / "switches" / "leaf-su1-r1" / "config_db.json").read_text())["PFC_WD"]
    assert wd["GLOBAL"] == {"POLL_INTERVAL": "50"}
    assert {json.dumps(v, sort_keys=True) for k, v in wd.items() if k != "GLOBAL"} == {
        json.dumps({"action": "alert", "detection_time": "400", "restoration_time": "800"}, sort_keys=True)}
