"""Brownfield: `fabric plan --running` on real running configs nobody here wrote (tests/fixtures/brownfield/,
each folder's SOURCE.md: Arista AVD example fabrics, Proxmox VE SDN's FRR, the Cumulus documentation's
`startup.yaml` examples).

For every corpus config, every change the plan makes is classified: a rendered setting added or changed
(old → new), a line an earlier apply rendered, or a removal of a device line that contradicts a rendered
setting — marked as never rendered by the tool, which `apply` refuses without --allow-unowned-removal.
Nothing outside the owned scope changes (every other leaf is byte for byte the same after the change), the
plan after the change is empty, and the recorded snapshot inside the recorded scope restores the device.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from fabric.targets import driver
from fabric.targets.base import TargetError
from fabric.targets.owned import parse_text
from tests.conftest import ROOT
from tests.push.test_plan_running import _applied, _driver, _inventory
from tests.support.nos import INVENTORY as NOS_INVENTORY

CORPUS = ROOT / "tests" / "fixtures" / "brownfield"
# SONiC's corpus has a module of its own: tests/nos/sonic/test_brownfield.py
INVENTORY = {nos: inv for nos, inv in NOS_INVENTORY.items() if nos != "sonic"}
SUFFIX = {"eos": ".cfg", "frr": ".conf", "nvue": ".yaml"}
CASES = [(nos, p.stem) for nos in sorted(INVENTORY) for p in sorted((CORPUS / nos).glob(f"*{SUFFIX[nos]}"))]
# what a running config keeps whatever the inventory says: (nos, pattern every file of the corpus matches)
PROXMOX = [r"neighbor VTEP peer-group", r"route-map MAP_VTEP_IN"]
FOREIGN = {
    "eos": [r"router bgp \d+\n(?:.*\n)*?\s+neighbor EVPN-OVERLAY-PEERS peer group", r"address-family evpn",
            r"redistribute connected route-map RM-CONN-2-BGP", r"route-map RM-CONN-2-BGP"],
    "frr": [r"address-family l2vpn evpn", r"advertise-all-vni", r"router bgp \d+ vrf \S+"],
    "nvue": [r"peer-group:\n\s+underlay:", r"remote-as: external"],
}
LEAF = {("eos", "leaf-su1-r1"): [r"\n   vrf VRF10\n", r"\n   vlan 11\n      rd ", r"channel-group 3 mode active",
                                 r"mlag configuration"],
        ("eos", "leaf-su1-r2"): [r"\n   vrf VRF11\n", r"neighbor MLAG-IPv4-UNDERLAY-PEER route-map RM-MLAG-PEER-IN in"],
        ("frr", "leaf-su1-r1"): [r"router bgp 65101 vrf vrf_myzone2", *PROXMOX],
        ("frr", "leaf-su1-r2"): [r"neighbor VTEP ebgp-multihop 10", r"ip protocol bgp route-map correct_src", *PROXMOX],
        ("frr", "leaf-su1-r3"): [r"\nlog syslog\n", r"log timestamp precision 6", r"route-map ALLOW_LOBR permit 20",
                                 r"ip route 203.0.113.0/24 blackhole"],
        ("frr", "spine1"): PROXMOX,
        ("frr", "spine2"): [r"neighbor BGP soft-reconfiguration inbound", *PROXMOX],
        ("nvue", "leaf-su1-r2"): [r"RED:", r"BLUE:"]}


def test_corpus_has_four_real_configs_per_nos_with_their_source() -> None:
    for nos in INVENTORY:
        files = list((CORPUS / nos).glob(f"*{SUFFIX[nos]}"))
        assert len(files) >= 4, nos
        source = (CORPUS / nos / "SOURCE.md").read_text()
        assert re.search(r"commit `[0-9a-f]{40}`", source), nos
        assert all(f.name in source for f in files), nos


@pytest.mark.parametrize(("nos", "switch"), CASES, ids=[f"{n}/{s}" for n, s in CASES])
def test_plan_on_a_real_config_changes_only_what_the_tool_owns(tmp_path: Path, nos: str, switch: str) -> None:
    text = (CORPUS / nos / f"{switch}{SUFFIX[nos]}").read_text()
    foreign = FOREIGN[nos] + LEAF.get((nos, switch), [])
    for pat in foreign:
        assert re.search(pat, text), f"the corpus file no longer holds {pat!r}"
    drv = _driver(_inventory(tmp_path, INVENTORY[nos], None), switch)
    sd = drv.scoped(text)
    # every change classified: a rendered setting added (+) or changed (~, old → new), or a removal marked as
    # a line the tool never rendered (a contradicting setting) or one an earlier apply rendered
    for c in sd.changes:
        assert c.op in ("+", "~", "-"), c
        if c.op == "-":
            assert c.foreign or c.earlier, f"an unmarked removal: {c.section}: {c.line}"
        if c.op == "~":
            assert c.old and c.old != c.line and not c.foreign
    # the foreign part: never changed, never removed (byte for byte the same leaves after the change)
    after_text, before, after = _applied(drv, text)
    outside = {p for p in set(before) | set(after) if p not in sd.owned and before.get(p) != after.get(p)}
    assert not outside, f"changed outside the owned scope: {sorted(outside)[:5]}"
    if nos != "nvue":  # text: the foreign sections are still in the file the device would hold
        for pat in foreign:
            assert re.search(pat, after_text), pat
    # BGP: no whole `router bgp`, every foreign neighbour / peer group / VRF instance stays
    gone = [c for c in sd.changes if c.op == "-" and "bgp" in c.section and not c.foreign]
    assert not gone, gone
    # converges
    again = drv.scoped(after_text)
    assert again.empty, [c.text() for c in again.changes[:10]]
    # `fabric rollback`: the recorded snapshot inside the recorded scope gives back the device as it was
    undo = driver(drv.target, None, switch, text, options={"scope": sorted(list(p) for p in sd.owned)})
    assert not any(c.foreign for c in undo.scoped(after_text).changes)
    _, _, back = _applied(undo, after_text)
    assert back == before


def test_removals_of_contradicting_settings_are_marked_and_counted() -> None:
    """The NVUE corpus leaves have ports in bonds that the inventory breaks out (swp1/swp2 of leaf01's bond1
    and bond2, swp3 of border01's bond3): the bond membership goes with the breakout, marked never rendered."""
    from fabric.targets.base import DeviceDiff

    inv = ROOT / "inventories" / "h100-400g"
    for switch, bonds in (("leaf-su1-r1", {"bond1": "swp1", "bond2": "swp2"}), ("leaf-su1-r2", {"bond3": "swp3"})):
        drv = _driver(inv, switch)
        sd = drv.scoped((CORPUS / "nvue" / f"{switch}.yaml").read_text())
        d = DeviceDiff(device=switch, target="nvue", changes=sd.changes)
        assert {(c.section, c.line) for c in d.foreign} == {(f"interface {b} bond member", f"{m}: {{}}")
                                                           for b, m in bonds.items()}
        assert all(c.text().endswith("(never rendered by the tool)") for c in d.foreign)


@pytest.mark.parametrize("nos", ["eos", "frr"])
def test_another_asn_on_the_device_is_a_located_error_not_a_renumbering(tmp_path: Path, nos: str) -> None:
    switch = "spine1"
    text = (CORPUS / nos / f"{switch}{SUFFIX[nos]}").read_text()
    asn = re.search(r"(?m)^router bgp (\d+)$", text).group(1)
    line = text.splitlines().index(f"router bgp {asn}") + 1
    other = text.replace(f"router bgp {asn}\n", "router bgp 64999\n", 1)
    drv = _driver(_inventory(tmp_path, INVENTORY[nos], None), switch)
    with pytest.raises(TargetError) as exc:
        drv.scoped(other)
    assert f"line {line}: `router bgp 64999` on the device, the inventory renders `router bgp {asn}`" in str(exc.value)
    assert "never renumbers" in str(exc.value)


def test_eos_port_settings_that_contradict_the_rendered_mode_go_with_it(tmp_path: Path) -> None:
    """A GPU port the inventory switches (`switchport access vlan`) that the device runs routed, in a
    port-channel and shut: `no switchport`, its `ip address`, `channel-group` and `shutdown` belong to the
    rendered setting (EOS command reference: `switchport`, `channel-group`, `shutdown`); an uplink rendered
    routed drops its `switchport mode trunk`. Each such removal is marked never rendered; the session puts the
    port into the rendered mode, and the next plan is empty."""
    from fabric.nos.eos.driver import leaves, session_lines

    drv = _driver(_inventory(tmp_path, "eos-example", None), "leaf-su1-r1")
    gpu, uplink = "Ethernet1/1", "Ethernet5/1"
    assert "switchport access vlan" in drv.intended.split(f"interface {gpu}\n")[1].split("!")[0]
    assert "no switchport" in drv.intended.split(f"interface {uplink}\n")[1].split("!")[0]
    running = (CORPUS / "eos" / "leaf-su1-r1.cfg").read_text().replace("interface Loopback0\n", (
        f"interface {gpu}\n   description old\n   no switchport\n   ip address 10.99.0.1/31\n"
        "   channel-group 7 mode active\n   shutdown\n!\n"
        f"interface {uplink}\n   switchport mode trunk\n   switchport trunk allowed vlan 10-20\n!\n"
        "interface Loopback0\n"), 1)
    sd = drv.scoped(running)
    foreign = {(c.section, c.line) for c in sd.changes if c.foreign}
    assert foreign == {(f"interface {gpu}", ln) for ln in ("no switchport", "ip address 10.99.0.1/31",
                                                           "channel-group 7 mode active", "shutdown")} | \
        {(f"interface {uplink}", ln) for ln in ("switchport mode trunk", "switchport trunk allowed vlan 10-20")}
    assert ("interface Ethernet1/1", "~", "description old") in {(c.section, c.op, c.old) for c in sd.changes}
    lines = session_lines(sd, leaves(running))
    for ln in ("   default switchport", "   no ip address 10.99.0.1/31", "   no channel-group 7 mode active",
               "   no shutdown", "   no switchport mode trunk", "   no switchport trunk allowed vlan 10-20"):
        assert ln in lines, ln
    after, _, _ = _applied(drv, running)
    assert drv.scoped(after).empty


def test_nvue_another_asn_is_an_error_too(tmp_path: Path) -> None:
    """The docs' spine01 as printed (ASN 65199) against spine1 of the inventory (65000)."""
    text = (CORPUS / "nvue" / "spine1.yaml").read_text().replace("autonomous-system: 65000", "autonomous-system: 65199")
    drv = _driver(_inventory(tmp_path, "h100-400g", None), "spine1")
    with pytest.raises(TargetError, match="autonomous-system 65199 on the device, the inventory renders 65000"):
        drv.scoped(text)


def _reload_test(tmp_path: Path, running: str, new: str) -> list:
    """FRR's own frr-reload.py --test of `new` against `running` (given with --input), read as the plan reads it."""
    import shutil
    import subprocess

    from fabric.nos.frr.driver import RELOAD, parse_reload_test
    from tests.conftest import require

    require(Path(RELOAD).exists() and shutil.which("vtysh") is not None, "FRR's frr-reload.py and vtysh")
    (tmp_path / "running.conf").write_text(running)
    (tmp_path / "new.conf").write_text(new)
    p = subprocess.run([RELOAD, "--test", "--stdout", "--input", str(tmp_path / "running.conf"),
                        str(tmp_path / "new.conf")], capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr[-500:]
    return parse_reload_test(p.stdout, "", "datacenter", new)


# leaf-su1-r2: `autort` is not FRR 8.4's
@pytest.mark.parametrize("switch", ["spine1", "spine2", "leaf-su1-r1", "leaf-su1-r3"])
def test_frr_reload_of_the_merged_file_removes_nothing(tmp_path: Path, switch: str) -> None:
    """What `fabric plan` runs on an FRR switch — frr-reload.py --test of the running config with only the owned
    lines changed — on the corpus (FRR's own frr-reload.py, the running config given with --input): additions
    and `~` changes only, the render's own negated settings (`no ipv6 nd suppress-ra`) read as additions."""
    drv = _driver(_inventory(tmp_path, "example", None), switch)
    text = (CORPUS / "frr" / f"{switch}.conf").read_text()
    changes = _reload_test(tmp_path, text, drv.merged(parse_text(text), drv.scoped(text)))
    assert [c.text() for c in changes if c.op == "-"] == []
    assert any(c.op == "+" and c.line == "no ipv6 nd suppress-ra" for c in changes)
    assert [c.op for c in changes if c.section.startswith("router bgp")].count("~") == 1  # the router-id


def test_frr_rollback_file_drops_a_list_entry_frr_numbered_itself(tmp_path: Path) -> None:
    """FRR shows `bgp community-list standard GSHUT seq 5 permit …` for the rendered line without `seq`: the
    file a rollback reloads leaves that entry out (found by the lab test on the Proxmox config)."""
    drv = _driver(_inventory(tmp_path, "example", None), "leaf-su1-r1")
    text = (CORPUS / "frr" / "leaf-su1-r1.conf").read_text()
    sd = drv.scoped(text)
    after = drv.merged(parse_text(text), sd).replace(
        "bgp community-list standard GSHUT permit graceful-shutdown",
        "bgp community-list standard GSHUT seq 5 permit graceful-shutdown")
    assert "GSHUT seq 5" in after
    undo = driver("frr", None, "leaf-su1-r1", text, options={"scope": sorted(list(p) for p in sd.owned)})
    assert "community-list" not in undo.merged(parse_text(after), undo.scoped(after))


NAMESAKE = CORPUS / "frr" / "namesake" / "leaf-su1-r1.conf"  # metal-stack's leaf: its own peer group FABRIC


def renamed(text: str) -> str:
    """The metal-stack config after its operator renamed its peer group, as the refusal asks."""
    return re.sub(r"\bFABRIC\b", "METAL", text)


def _plan(tmp_path: Path, switch: str, text: str) -> tuple[int, dict]:
    """`fabric plan example --running DIR --limit SWITCH --format json`, as a user runs it."""
    import json
    import subprocess
    import sys

    saved = tmp_path / "running"
    saved.mkdir(exist_ok=True)
    (saved / f"{switch}.conf").write_text(text)
    p = subprocess.run([str(Path(sys.executable).with_name("fabric")), "plan", str(ROOT / "inventories" / "example"),
                        "--running", str(saved), "--limit", switch, "--format", "json"],
                       capture_output=True, text=True, timeout=120)
    assert "Traceback" not in p.stderr, p.stderr
    return p.returncode, json.loads(p.stdout)["devices"][0]


def test_a_foreign_peer_group_with_the_tools_name_is_refused_naming_its_members(tmp_path: Path) -> None:
    """metal-stack's leaf holds its own peer group FABRIC: members swp31/swp32 the inventory does not cable,
    `remote-as external`, `timers 2 8`, EVPN activation. A name is not ownership: the plan is an error for that
    switch that names every line showing the group is someone else's (its members first), never a plan that
    strips the group's remote-as and EVPN and hands its members the tool's route-map. Once the operator renames
    the group, the tool adds its own FABRIC beside it and leaves the renamed group byte for byte."""
    text = NAMESAKE.read_text()
    rc, dev = _plan(tmp_path, "leaf-su1-r1", text)
    assert rc == 1 and dev["status"] == "error" and not dev["sections"], dev
    detail = dev["detail"]
    assert "`router bgp 65101 / FABRIC`" in detail and "not the tool's" in detail, detail
    shown = ["neighbor swp31 interface peer-group FABRIC", "neighbor swp32 interface peer-group FABRIC",
             "address-family l2vpn evpn: neighbor FABRIC activate", "address-family l2vpn evpn: neighbor FABRIC "
             "allowas-in 2", "neighbor FABRIC remote-as external", "neighbor FABRIC timers 2 8"]
    assert [detail.index(ln) for ln in shown] == sorted(detail.index(ln) for ln in shown), detail
    assert "FIREWALL" not in detail and "Rename or remove them on the switch first" in detail
    drv = _driver(_inventory(tmp_path, "example", None), "leaf-su1-r1")
    with pytest.raises(TargetError, match="not the tool's"):
        drv.scoped(text)  # what `apply` runs first, whatever --allow-unowned-removal says

    adopted = renamed(text)
    rc, dev = _plan(tmp_path, "leaf-su1-r1", adopted)
    assert rc == 0 and dev["status"] == "changed" and dev["never_rendered_removals"] == 0, dev
    after, before, after_leaves = _applied(drv, adopted)
    sd = drv.scoped(adopted)
    mine = {p for p in before if any("METAL" in e for e in p) or any("METAL" in ln for ln in before[p])}
    assert mine and all(after_leaves.get(p) == before[p] for p in mine)
    assert not any(c.op == "-" for c in sd.changes) and " neighbor FABRIC peer-group" in after


def test_a_route_map_with_the_tools_name_is_refused_a_clause_of_its_own_too(tmp_path: Path) -> None:
    """The same rule for every object the render names, here FRR's route-map: the metal-stack leaf (its group
    renamed) whose `LOOPBACKS` route-map were called FABRIC-IN would have the tool's clauses merged into the map its
    `redistribute connected` uses; refused, naming the redistribute lines and its own clause."""
    text = renamed(NAMESAKE.read_text()).replace("LOOPBACKS", "FABRIC-IN")
    drv = _driver(_inventory(tmp_path, "example", None), "leaf-su1-r1")
    with pytest.raises(TargetError) as exc:
        drv.scoped(text)
    msg = str(exc.value)
    assert "`route-map FABRIC-IN permit 10`" in msg and "redistribute connected route-map FABRIC-IN" in msg, msg
    assert "match interface lo" in msg


@pytest.mark.parametrize(("nos", "switch", "own"), [
    ("frr", "leaf-su1-r3", "bgp community-list standard GSHUT seq 5 permit 65000:1"),
    ("eos", "leaf-su1-r1", "ip community-list GSHUT permit 65000:1")])
def test_a_community_list_with_the_tools_name_is_refused(tmp_path: Path, nos: str, switch: str, own: str) -> None:
    """The community list the render names (GSHUT) held by the switch for its own route-map (FRR's topotest ToR,
    AVD's leaf: their route-map matching a GSHUT list of the operator's): changing the list would change that
    route-map; refused, naming the route-map's line and the list."""
    text = (CORPUS / nos / f"{switch}{SUFFIX[nos]}").read_text()
    rmap = re.search(r"(?m)^route-map (\S+) permit (\d+)$", text)
    assert rmap, "the corpus config holds a route-map"
    indent = "   " if nos == "eos" else " "
    text = text.replace(rmap.group(0), f"{own}\n{rmap.group(0)}\n{indent}match community GSHUT", 1)
    drv = _driver(_inventory(tmp_path, INVENTORY[nos], None), switch)
    with pytest.raises(TargetError) as exc:
        drv.scoped(text)
    assert "GSHUT" in str(exc.value) and "match community GSHUT" in str(exc.value), exc.value


def _never_touched(nos: str) -> list[str]:
    """The backticked items of the "never touched" cell of a target's row in the ownership table of the docs."""
    page = (ROOT / "docs" / "plan-apply.md").read_text()
    row = next(ln for ln in page.splitlines() if ln.startswith(f"| `{nos}` | its route maps"))
    return re.findall(r"`([^`]+)`", row.split(" | ")[2])


def test_frr_never_touched_comes_from_the_ownership_table(tmp_path: Path) -> None:
    """The "never touched" column of the FRR row of the ownership table (docs/plan-apply.md), read from the page:
    on every real FRR config of the corpus (and metal-stack's `log syslog warnings` leaf, its group renamed), no
    device setting an item names is in the owned scope unless the render holds that very line, and the plan
    changes none of them; each item is found on some config (the table names real settings). Each setting the
    NOS row declares never owned (`Nos.never_owned`) is an item of that cell, so the page and the code cannot
    drift apart."""
    from fabric.nos import NOS
    from fabric.targets.owned import text_leaves

    items = _never_touched("frr")
    assert "log" in items and "line vty" in items, items
    regex = {it: re.compile(re.escape(it).replace("<asn>", r"\S+").replace("…", ".*") + r"(\s|$)")
             for it in items}
    configs = {f"{sw}.conf": (sw, (CORPUS / "frr" / f"{sw}.conf").read_text()) for nos, sw in CASES if nos == "frr"}
    configs["namesake, renamed"] = ("leaf-su1-r1", renamed(NAMESAKE.read_text()))
    seen: set[str] = set()
    for name, (switch, text) in configs.items():
        drv = _driver(_inventory(tmp_path, "example", None), switch)
        sd = drv.scoped(text)
        intent = text_leaves(parse_text(drv.intended))
        for path, lines in text_leaves(parse_text(text)).items():
            for item, rx in regex.items():
                if any(rx.match(e) for e in (*path, *lines)):
                    seen.add(item)
                    assert path not in sd.owned or intent.get(path) == lines, (name, item, path, lines)
                    assert path not in set(sd.sets) | sd.removes, (name, item, path, lines)
    assert seen == set(regex), f"never-touched items no config holds: {set(regex) - seen}"
    for pattern in NOS["frr"].never_owned:
        assert pattern.removesuffix(" *") in items, pattern


def test_frr_reload_of_the_renamed_metal_stack_leaf_keeps_its_group_and_log(tmp_path: Path) -> None:
    """metal-stack's leaf, its peer group renamed as the refusal asks: the file the plan hands frr-reload.py is
    one FRR 8.4's own parser takes (`vtysh -C`), and FRR's frr-reload.py --test against the running file removes
    nothing and changes none of its lines: its group (METAL), members, EVPN and `log syslog warnings` stay."""
    import subprocess

    running = renamed(NAMESAKE.read_text())
    drv = _driver(_inventory(tmp_path, "example", None), "leaf-su1-r1")
    changes = _reload_test(tmp_path, running, drv.merged(parse_text(running), drv.scoped(running)))
    check = subprocess.run(["vtysh", "-C", "-f", str(tmp_path / "new.conf")], capture_output=True, text=True,
                           timeout=60)
    assert check.returncode == 0, check.stdout[-500:] + check.stderr[-500:]
    assert [c.text() for c in changes if c.op == "-"] == []
    assert [c.text() for c in changes if c.op == "~"] == ["~ bgp router-id 10.0.0.10 → bgp router-id 10.254.0.3"]
    assert not [c for c in changes if "METAL" in c.line or "log" in c.line or c.section.startswith("interface swp3")]


def test_frr_reload_deletion_of_a_negated_line_is_that_line(tmp_path: Path) -> None:
    """frr-reload.py prints the command that removes a line: `X` removes a running `no X`. A change of metal-stack's
    `no ipv6 nd suppress-ra` (swp31) to `ipv6 nd suppress-ra`, diffed by FRR's own frr-reload.py, reads
    `~ no ipv6 nd suppress-ra → ipv6 nd suppress-ra` — never `~ X → X`, a change whose two sides are equal."""
    running = NAMESAKE.read_text()
    new = running.replace("interface swp31\n ipv6 nd ra-interval 6\n no ipv6 nd suppress-ra",
                          "interface swp31\n ipv6 nd ra-interval 6\n ipv6 nd suppress-ra")
    assert new != running
    changes = _reload_test(tmp_path, running, new)
    assert [(c.section, c.text()) for c in changes] == [
        ("interface swp31", "~ no ipv6 nd suppress-ra → ipv6 nd suppress-ra")]


def test_frr_rollback_plan_removes_the_negated_line_it_added(tmp_path: Path) -> None:
    """`fabric rollback` on the Proxmox leaf after an apply: the undo removes the rendered `no ipv6 nd
    suppress-ra` of swp5/swp6 (frr-reload.py prints `ipv6 nd suppress-ra` to remove it); the plan says so,
    never that it removes `ipv6 nd suppress-ra`."""
    drv = _driver(_inventory(tmp_path, "example", None), "leaf-su1-r1")
    before = (CORPUS / "frr" / "leaf-su1-r1.conf").read_text()
    sd = drv.scoped(before)
    after = drv.merged(parse_text(before), sd)
    undo = driver("frr", None, "leaf-su1-r1", before, options={"scope": sorted(list(p) for p in sd.owned)})
    changes = _reload_test(tmp_path, after, undo.merged(parse_text(after), undo.scoped(after)))
    port = {c.text() for c in changes if c.section == "interface swp5"}
    assert "- no ipv6 nd suppress-ra" in port and "- ipv6 nd suppress-ra" not in port, port
    assert not [c for c in changes if c.op == "~" and c.old == c.line]
