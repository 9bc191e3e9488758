"""SONiC brownfield: the push onto real CONFIG_DBs nobody here wrote (tests/fixtures/brownfield/sonic/).

For each corpus config the SONiC driver's plan either refuses the switch with every reason (a platform the
inventory does not describe, ports it would make routed while VLAN/PortChannel members, pools the profiles
need) or changes only what it owns: every change is classified, the buffer model and the routing config mode
are never switched, PORT lanes/alias/index never rewritten, the result has no overlapping PG, is YANG-valid
(../shared/tools/sonic_yang_check.py) and plans empty.
"""

from __future__ import annotations

import copy
import json
import shutil
import subprocess
import sys
from pathlib import Path

import jsonpatch
import pytest
import yaml

from fabric.design.derive import derive
from fabric.model.load import load
from fabric.nos.sonic.brownfield import NEVER_PUSHED_META, PLATFORM_FIELDS, adapt, overlapping_pgs
from fabric.nos.sonic.driver import SonicDriver
from fabric.render import render_switch
from fabric.targets.base import TargetError
from fabric.targets.owned import apply_leaves, json_patch, tree_leaves
from tests.conftest import ROOT

CORPUS = ROOT / "tests" / "fixtures" / "brownfield" / "sonic"
# corpus file → (inventory platform, cabling speed) the switch is adopted with; None: a platform the tool has no
# port map for (the plan must refuse it)
ADOPT = {
    "acs-msn2700-t1-dynamic.json": ("msn2700", None),
    "mellanox-sn2700-t0-traditional.json": ("msn2700", None),
    "mellanox-sn2700-t1-single-pool-traditional.json": ("msn2700", None),
    "acs-msn4700-t1-dynamic.json": ("sn4700", "400G"),
    "dell-s6000-tor.json": None,
    "arista-7050cx3-t1-mock.json": None,
}
SWITCHES = ("leaf-su1-r1", "spine1")


def test_corpus_is_every_file_with_a_source() -> None:
    files = sorted(p.name for p in CORPUS.glob("*.json"))
    assert files == sorted(ADOPT) and len(files) >= 4
    source = (CORPUS / "SOURCE.md").read_text()
    assert all(f"`{f}`" in source for f in files)


def _inventory(tmp: Path, platform: str = "msn2700", speed: str | None = None, qos: dict | None = None) -> Path:
    dst = tmp / f"inv-{platform}-{speed}-{bool(qos)}"
    if not dst.exists():
        shutil.copytree(ROOT / "inventories" / "sonic-example", dst)
        fab = dst / "fabric.yaml"
        doc = yaml.safe_load(fab.read_text())
        for role in doc["roles"].values():
            role["platform"] = platform
        for link in doc["cabling"].values():
            link["speed"] = speed or link["speed"]
        fab.write_text(yaml.safe_dump(doc, sort_keys=False))
        if qos:
            q = dst / "qos.yaml"
            doc = yaml.safe_load(q.read_text())
            doc["qos"].update(qos)
            q.write_text(yaml.safe_dump(doc, sort_keys=False))
    return dst


def _driver(inv: Path, switch: str) -> SonicDriver:
    fabric = derive(load(inv))
    return SonicDriver(None, switch, render_switch(fabric.switches[switch], fabric)["config_db.json"])


def _patched(running: dict, drv: SonicDriver) -> dict:
    """CONFIG_DB after `config apply-patch` of the plan (the JSON Patch applied with the jsonpatch library)."""
    sd = drv.scoped(json.dumps(running))
    return jsonpatch.apply_patch(running, json_patch(running, apply_leaves(running, sd.sets, sd.removes)))


ADOPTED = [(f, sw) for f, a in ADOPT.items() if a for sw in SWITCHES]


@pytest.mark.parametrize(("name", "switch"), ADOPTED, ids=[f"{f}:{s}" for f, s in ADOPTED])
def test_plan_changes_only_what_it_owns_and_converges(tmp_path: Path, name: str, switch: str) -> None:
    platform, speed = ADOPT[name]  # type: ignore[misc]
    drv = _driver(_inventory(tmp_path, platform, speed), switch)
    running = json.loads((CORPUS / name).read_text())
    sd = drv.scoped(json.dumps(running))
    fit = adapt(json.loads(drv.intended), running)
    rendered, before = tree_leaves(fit.intent), tree_leaves(running)
    assert not sd.empty and sd.unmanaged > 0 and not fit.problems
    # every change, classified: a leaf the (fitted) render has, or an overlapping lossless PG it replaces
    kinds: dict[str, int] = {}
    for p in set(sd.sets) | sd.removes:
        kind = ("rendered" if p in rendered else "overlapping PG" if p in fit.owned and p[0] == "BUFFER_PG"
                else "foreign")
        kinds[kind] = kinds.get(kind, 0) + 1
        assert kind != "foreign", p
        assert not (p[0] == "DEVICE_METADATA" and p[-1] in NEVER_PUSHED_META), p
        assert not (p[0] == "PORT" and p[-1] in PLATFORM_FIELDS and p[1] in running["PORT"]), p
    assert all(p in rendered or p[0] == "BUFFER_PG" for p in sd.removes)
    assert kinds.get("overlapping PG"), "the corpus' 3-4 PGs are replaced, not kept beside the rendered 3"
    # shown as the replacement it is: one `~` per port, 3-4 → the rendered lossless PG, nothing marked foreign
    pgs = [c for c in sd.changes if c.section.startswith("BUFFER_PG|")]
    assert pgs and all(c.op == "~" and c.old.startswith("3-4 ") and c.line.startswith("3 ") and not c.foreign
                       for c in pgs), [c.text() for c in pgs]
    assert not [c for c in sd.changes if c.foreign]
    # the switch's BUFFER_PROFILEs are never changed (its pg_lossless_* of a rendered name is kept)
    assert not [p for p in sd.sets if p[0] == "BUFFER_PROFILE" and p[1] in running.get("BUFFER_PROFILE", {})]
    after = _patched(running, drv)
    assert not overlapping_pgs(after)
    meta_b, meta_a = running["DEVICE_METADATA"]["localhost"], after["DEVICE_METADATA"]["localhost"]
    assert {f: meta_a.get(f) for f in NEVER_PUSHED_META} == {f: meta_b.get(f) for f in NEVER_PUSHED_META}
    assert {p: v for p, v in tree_leaves(after).items() if p not in sd.owned} == \
        {p: v for p, v in before.items() if p not in sd.owned}  # everything else, value for value
    if meta_b.get("buffer_model") == "dynamic":  # headroom left to buffermgrd: PGs NULL, no static profile pushed
        assert {after["BUFFER_PG"][k]["profile"] for k in after["BUFFER_PG"] if k.endswith("|3")} == {"NULL"}
        assert not any(k.startswith(("pg_lossless_", "ROCE_")) and k not in running.get("BUFFER_PROFILE", {})
                       for k in after.get("BUFFER_PROFILE", {}))
    else:
        cables = after["CABLE_LENGTH"]["AZURE"]  # the name buffermgrd gives them (cfgmgr/buffermgr.cpp)
        assert all(v["profile"] == f"pg_lossless_{after['PORT'][k.split('|')[0]]['speed']}_{cables[k.split('|')[0]]}"
                   "_profile" for k, v in after["BUFFER_PG"].items() if k.endswith("|3"))
        assert {k: v for k, v in after["BUFFER_PROFILE"].items() if k in running["BUFFER_PROFILE"]} == \
            running["BUFFER_PROFILE"]
    assert "BGP_NEIGHBOR" not in after or after["BGP_NEIGHBOR"] == running.get("BGP_NEIGHBOR")  # bgpcfgd switch
    assert any("BGP not pushed" in n for n in drv.notes)
    again = drv.scoped(json.dumps(after))
    assert again.empty, [f"{c.section}: {c.op} {c.line}" for c in again.changes[:10]]


def test_patched_corpus_is_yang_valid(tmp_path: Path) -> None:
    from tests.nos.sonic.test_yang import _check, _prerequisites, _report

    _prerequisites()
    files = []
    for name, switch in ADOPTED:
        platform, speed = ADOPT[name]  # type: ignore[misc]
        after = _patched(json.loads((CORPUS / name).read_text()), _driver(_inventory(tmp_path, platform, speed),
                                                                          switch))
        path = tmp_path / "patched" / f"{name}-{switch}" / "config_db.json"
        path.parent.mkdir(parents=True)
        path.write_text(json.dumps(after))
        files.append(str(path))
    violations = _check(*files)
    assert not violations, _report(violations)


@pytest.mark.parametrize("name", [f for f, a in ADOPT.items() if a is None])
def test_foreign_platform_refused_with_every_reason(tmp_path: Path, name: str) -> None:
    """The two Broadcom test-bed dumps are refused, rightly: their platform (Dell S6000: Trident2; Arista
    7050CX3: Trident3) is none the tool has a port map and headroom data for (fabric/data/sonic: SONiC's Mellanox
    Spectrum maps; the headroom formula is Mellanox's), so PORT lanes and every headroom number would be another
    switch's; the ports the inventory routes are VLAN / PortChannel members there (SONiC's YANG refuses an
    INTERFACE on a member; freeing them is the operator's decision); and the T1 mock has no buffer pool at all,
    so no lossless profile can exist on it. Every reason is reported, and nothing is touched."""
    running = json.loads((CORPUS / name).read_text())
    drv = _driver(_inventory(tmp_path), "spine1")
    with pytest.raises(TargetError) as err:
        drv.scoped(json.dumps(running))
    why = str(err.value)
    assert why.startswith("pre-flight: DEVICE_METADATA|localhost platform: expected x86_64-mlnx_msn2700-r0")
    assert running["DEVICE_METADATA"]["localhost"]["platform"] in why
    member = "VLAN_MEMBER|Vlan1000|Ethernet4" if "s6000" in name else "PORTCHANNEL_MEMBER|PortChannel0002|Ethernet0"
    assert "INTERFACE: ports routed while VLAN or PortChannel members" in why and member in why
    assert ("pool: expected one of the switch's buffer pools (none)" in why) == ("7050cx3" in name)


def _variant(name: str, change) -> dict:
    running = json.loads((CORPUS / name).read_text())
    change(running)
    return running


PROFILE_40M = "pg_lossless_100000_40m_profile"


def _without_40m(db: dict) -> None:
    """The switch without its 100G/40m headroom profile (and the PGs pointing at it)."""
    del db["BUFFER_PROFILE"][PROFILE_40M]
    db["BUFFER_PG"] = {k: v for k, v in db["BUFFER_PG"].items() if v.get("profile") != PROFILE_40M}


def _problem(drv: SonicDriver, running: dict) -> str:
    with pytest.raises(TargetError) as err:
        drv.scoped(json.dumps(running))
    return str(err.value)


def test_preflight_refuses_what_sonic_refuses(tmp_path: Path) -> None:
    spine = _driver(_inventory(tmp_path), "spine1")
    # the switch's lossless ingress pool has another name: the render's profiles go in the pool its own lossless PGs
    # use (rendered for the pools the switch has), and SONiC takes the patch
    # (the switch without its own 100G/40m profile, which it would keep: the render's is pushed)
    def one_pool(db: dict) -> None:
        _without_40m(db)
        db["BUFFER_POOL"]["ingress_pool"] = db["BUFFER_POOL"].pop("ingress_lossless_pool")
        for prof in db["BUFFER_PROFILE"].values():
            prof["pool"] = "ingress_pool" if prof["pool"] == "ingress_lossless_pool" else prof["pool"]
    renamed = _variant("mellanox-sn2700-t0-traditional.json", one_pool)
    after = _patched(renamed, spine)
    assert after["BUFFER_PROFILE"][PROFILE_40M]["pool"] == "ingress_pool"
    assert any(f"lossless ingress pool ingress_pool: {PROFILE_40M}" in n for n in spine.notes)
    assert not overlapping_pgs(after) and spine.scoped(json.dumps(after)).empty
    # a switch without an ingress pool: a profile's pool must be a BUFFER_POOL (sonic-buffer-profile.yang), refused
    def no_ingress(db: dict) -> None:
        _without_40m(db)
        for name in [n for n, v in db["BUFFER_POOL"].items() if v["type"] == "ingress"]:
            del db["BUFFER_POOL"][name]
    assert f"BUFFER_PROFILE|{PROFILE_40M} pool: expected one of the switch's buffer pools " \
           "(egress_lossless_pool, egress_lossy_pool), found ingress_lossless_pool" \
        in _problem(spine, _variant("mellanox-sn2700-t0-traditional.json", no_ingress))
    # a port the inventory makes routed is still a PortChannel member on the switch
    def lag(db: dict) -> None:
        db["PORTCHANNEL"] = {"PortChannel0001": {"admin_status": "up", "mtu": "9100"}}
        db["PORTCHANNEL_MEMBER"] = {"PortChannel0001|Ethernet4": {}}
    assert "INTERFACE: ports routed while VLAN or PortChannel members (remove the membership on the switch, or give " \
           "the port another role in the inventory): Ethernet4 (PORTCHANNEL_MEMBER|PortChannel0001|Ethernet4)" \
        in _problem(spine, _variant("acs-msn2700-t1-dynamic.json", lag))
    # a dynamic render onto a traditional switch: no headroom numbers to give it, and no model flip
    dyn = _driver(_inventory(tmp_path, qos={"headroom": {"mode": "dynamic", "small_packet_percentage": 50}}),
                  "spine1")
    assert "DEVICE_METADATA|localhost buffer_model: the switch runs traditional" in \
        _problem(dyn, json.loads((CORPUS / "mellanox-sn2700-t0-traditional.json").read_text()))
    # …while onto a dynamic switch it is the render itself
    assert not dyn.scoped((CORPUS / "acs-msn2700-t1-dynamic.json").read_text()).empty


def _frrcfgd(asn: str):
    def change(db: dict) -> None:
        db["DEVICE_METADATA"]["localhost"].update(frr_mgmt_framework_config="true",
                                                  docker_routing_config_mode="split-unified")
        db["BGP_GLOBALS"] = {"default": {"local_asn": asn, "router_id": "10.1.0.32"}}
        db["BGP_NEIGHBOR"] = {"default|10.0.0.57": {"asn": "64600", "name": "ARISTA01T1"}}  # a foreign neighbour
    return change


def test_frrcfgd_switch_gets_bgp_never_a_new_asn_or_routing_mode(tmp_path: Path) -> None:
    spine = _driver(_inventory(tmp_path), "spine1")
    asn = json.loads(spine.intended)["BGP_GLOBALS"]["default"]["local_asn"]
    assert "BGP_GLOBALS|default local_asn: expected " + asn + " (inventory), found 65100: the tool never renumbers" \
        in _problem(spine, _variant("acs-msn2700-t1-dynamic.json", _frrcfgd("65100")))
    running = _variant("acs-msn2700-t1-dynamic.json", _frrcfgd(asn))
    after = _patched(running, spine)
    assert after["BGP_NEIGHBOR"]["default|10.0.0.57"] == running["BGP_NEIGHBOR"]["default|10.0.0.57"]
    assert {k for k in after["BGP_NEIGHBOR"] if k.startswith("default|Ethernet")}  # the render's, unnumbered
    assert after["DEVICE_METADATA"]["localhost"]["docker_routing_config_mode"] == "split-unified"
    assert not any("BGP not pushed" in n for n in spine.notes)


def test_rollback_scope_skips_the_fitting(tmp_path: Path) -> None:
    """`fabric rollback` replays the recorded snapshot in the recorded scope, pre-flight and fitting aside."""
    running = json.loads((CORPUS / "acs-msn2700-t1-dynamic.json").read_text())
    drv = _driver(_inventory(tmp_path), "leaf-su1-r1")
    sd = drv.scoped(json.dumps(running))
    after = _patched(running, drv)
    undo = SonicDriver(None, "leaf-su1-r1", json.dumps(running), options={"scope": sorted(map(list, sd.owned))})
    back = undo.scoped(json.dumps(after))
    restored = jsonpatch.apply_patch(after, json_patch(after, apply_leaves(after, back.sets, back.removes)))
    assert restored == running


def test_plan_running_reports_refusals_and_notes_per_switch(tmp_path: Path) -> None:
    inv = _inventory(tmp_path)
    d = tmp_path / "running"
    d.mkdir()
    shutil.copy(CORPUS / "dell-s6000-tor.json", d / "leaf-su1-r1.json")
    shutil.copy(CORPUS / "acs-msn2700-t1-dynamic.json", d / "spine1.json")
    p = subprocess.run([sys.executable, "-c", "from fabric.cli import main; main()", "plan", str(inv), "--running",
                        str(d), "--format", "json"], capture_output=True, text=True, cwd=ROOT, timeout=120,
                       env={"FABRIC_STATE": str(tmp_path / "state"), "PATH": "/usr/bin:/bin"})
    data = json.loads(p.stdout)
    devs = {x["device"]: x for x in data["devices"]}
    assert p.returncode == 1
    assert devs["leaf-su1-r1"]["status"] == "error" and "platform: expected x86_64-mlnx_msn2700-r0" in \
        devs["leaf-su1-r1"]["detail"] and not devs["leaf-su1-r1"]["sections"]
    assert devs["spine1"]["status"] == "changed" and "buffer model dynamic (the switch's)" in devs["spine1"]["detail"]
    # the overlapping key is replaced by the rendered one (PG 4 stops being lossless with pfc_enable 4): one
    # change old → new, no PG beside an overlapping one, no removal needing --allow-unowned-removal
    assert devs["spine1"]["sections"]["BUFFER_PG|Ethernet0"] == ["~ 3-4 profile=NULL → 3 profile=NULL"]
    assert not any(k.startswith("BUFFER_PG|Ethernet0|") for k in devs["spine1"]["sections"])
    assert not any("never rendered" in ln for v in devs["spine1"]["sections"].values() for ln in v)
    assert "PORT_QOS_MAP|Ethernet0" in devs["spine1"]["sections"]
    assert not any(s.startswith("DEVICE_METADATA") and "buffer_model" in " ".join(v)
                   for s, v in devs["spine1"]["sections"].items())


def test_deepcopy_keeps_the_render(tmp_path: Path) -> None:
    """adapt never changes the intent it is given (the driver fits it again on every plan)."""
    drv = _driver(_inventory(tmp_path), "spine1")
    intent = json.loads(drv.intended)
    keep = copy.deepcopy(intent)
    adapt(intent, json.loads((CORPUS / "acs-msn2700-t1-dynamic.json").read_text()))
    assert intent == keep


def test_sysctl_conf_is_diffed_with_the_config_db(tmp_path: Path) -> None:
    """The rendered sysctl.conf is part of the plan: the kernel's values and the persisted file, per leaf."""
    from fabric.nos.sonic.driver import SYSCTL, SYSCTL_FILE, parse_sysctl

    fabric = derive(load(_inventory(tmp_path)))
    files = render_switch(fabric.switches["leaf-su1-r1"], fabric)
    drv = SonicDriver(None, "leaf-su1-r1", files["config_db.json"], options={"files": {"sysctl.conf": files[
        "sysctl.conf"]}})
    want = parse_sysctl(files["sysctl.conf"])
    per_if = [k for k in want if ".default." not in k]
    assert per_if  # the routed host ports (p2p31) by name
    running = json.loads((CORPUS / "acs-msn2700-t1-dynamic.json").read_text())
    # the kernel as SONiC boots it (90-sonic.conf), one rendered interface missing, no file of ours
    kernel = {k: "1800000" if "reachable" in k else "4096" for k in want if k != per_if[0]}
    sd = drv.scoped(json.dumps({**running, SYSCTL: kernel}))
    lines = [f"{c.op} {c.line}" for c in sd.changes if c.section == SYSCTL]
    aging = want["net.ipv4.neigh.default.base_reachable_time_ms"]
    key = "net.ipv4.neigh.default.base_reachable_time_ms"
    assert f"~ {key} = 1800000 → {key} = {aging}" in [c.text() for c in sd.changes if c.section == SYSCTL]
    assert any(ln.startswith(f"+ persisted in /etc/sysctl.d/95-roce-fabric.conf: {len(want)} settings") for ln in lines)
    assert not any(per_if[0] in ln for ln in lines)  # an interface the kernel lacks inherits neigh.default
    after = apply_leaves({**running, SYSCTL: kernel}, sd.sets, sd.removes)
    assert after[SYSCTL][SYSCTL_FILE] == files["sysctl.conf"]
    assert drv.scoped(json.dumps(after)).empty
    saved = drv.scoped(json.dumps(running))  # plan --running: a saved config_db has no kernel settings
    assert not any(c.section == SYSCTL for c in saved.changes)
    assert drv.notes[0].startswith("sysctl.conf not compared: a saved config_db holds no kernel settings")


LOOKUP = CORPUS / "mellanox-sn2700-pg_profile_lookup.ini"  # the traditional switch's hwsku's (SOURCE.md)
HEADROOM_CASES = [(sw, keep) for sw in SWITCHES for keep in (True, False)]


@pytest.mark.parametrize(("switch", "keep"), HEADROOM_CASES,
                         ids=[f"{s}-{'its-profiles' if k else 'no-40m-profile'}" for s, k in HEADROOM_CASES])
def test_traditional_headroom_survives_buffermgrd(tmp_path: Path, switch: str, keep: bool) -> None:
    """On the traditional model buffermgrd points every lossless PG at pg_lossless_<speed>_<cable>_profile when a
    port's speed, cable length or pfc_enable changes, as the plan does, and for every port when it starts
    (tests/standins/buffermgrd.py, after cfgmgr/buffermgr.cpp): what the plan leaves survives it and plans empty
    again. The real MSN2700 switch keeps its own profiles of those names; one it lacks is the render's, with the
    inventory's headroom, which buffermgrd then reuses instead of its pg_profile_lookup.ini row."""
    from tests.standins.buffermgrd import read_lookup, speed_update

    lookup = read_lookup(LOOKUP.read_text())
    drv = _driver(_inventory(tmp_path), switch)
    running = _variant("mellanox-sn2700-t0-traditional.json", (lambda db: None) if keep else _without_40m)
    after = _patched(running, drv)
    rewritten = speed_update(after, lookup)
    lossless = [k for k in after["BUFFER_PG"] if k.endswith("|3")]
    assert lossless and all(("100000", after["CABLE_LENGTH"]["AZURE"][k.split("|")[0]]) in lookup for k in lossless)
    # buffermgrd acts on these ports: a PG pointing at any other profile name is taken back
    other = copy.deepcopy(after)
    other["BUFFER_PG"][lossless[0]]["profile"] = "ROCE_pg_lossless_100000_5m_profile"
    assert speed_update(other, lookup)["BUFFER_PG"][lossless[0]] == after["BUFFER_PG"][lossless[0]]
    assert rewritten == after
    manifest = sorted(list(p) for p in drv.fitted)  # what the apply records for the next plan
    again = SonicDriver(None, switch, drv.intended, options={"manifest": manifest}).scoped(json.dumps(rewritten))
    assert again.empty, [c.text() for c in again.changes[:10]]
    if keep:  # its own profiles of the rendered names: kept, and the plan says whose headroom the ports get
        assert rewritten["BUFFER_PROFILE"] == running["BUFFER_PROFILE"]
        assert any(n.startswith(f"BUFFER_PROFILE|{PROFILE_40M} kept: the switch's own (xon 19456, xoff 29696, "
                                "size 19456)") for n in drv.notes), drv.notes
    else:  # the render's, in place of the ini's row
        mine = adapt(json.loads(drv.intended), running).intent["BUFFER_PROFILE"][PROFILE_40M]
        assert rewritten["BUFFER_PROFILE"][PROFILE_40M] == mine
        assert mine["xoff"] != lookup[("100000", "40m")]["xoff"]


def test_a_qos_map_with_the_tools_name_used_by_another_port_is_refused(tmp_path: Path) -> None:
    """SONiC's own T1 dump (acs-msn2700-t1-dynamic) whose operator had a DSCP_TO_TC_MAP called ROCE, the name the
    tool gives its map, on a port the inventory does not cable: rewriting that map would change that port's QoS,
    so the plan refuses the switch and names the port's field; nothing is patched."""
    name = "acs-msn2700-t1-dynamic.json"
    drv = _driver(_inventory(tmp_path, *(ADOPT[name] or ("msn2700", None))), SWITCHES[0])
    doc = json.loads((CORPUS / name).read_text())
    other = next(p for p in sorted(doc["PORT"]) if p not in json.loads(drv.intended)["PORT_QOS_MAP"])
    doc.setdefault("PORT_QOS_MAP", {}).setdefault(other, {})["dscp_to_tc_map"] = "ROCE"
    doc.setdefault("DSCP_TO_TC_MAP", {})["ROCE"] = {"0": "1", "8": "1"}
    with pytest.raises(TargetError) as exc:
        drv.scoped(json.dumps(doc))
    assert "`DSCP_TO_TC_MAP / ROCE` is used by" in str(exc.value), exc.value
    assert f"PORT_QOS_MAP|{other}: dscp_to_tc_map=ROCE" in str(exc.value), exc.value
