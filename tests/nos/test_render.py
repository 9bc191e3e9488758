"""Switch renderers (sonic, nvue, eos): golden files plus structural checks independent of them.

No SONiC/NVUE/EOS device exists here; the stand-ins are the documented schemas: CONFIG_DB table and
field names from the sonic-yang-models, NVUE `nv set` paths, EOS CLI as in Arista's AVD templates.
Refresh golden files with `UPDATE_GOLDEN=1 .venv/bin/pytest tests/nos/test_render.py` and review
the diff by hand before committing it.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import shlex
from functools import cache

import pytest
import yaml

from fabric.design.derive import derive
from fabric.design.intent import FabricIntent, SwitchIntent
from fabric.model.load import load
from fabric.nos.nvue.render import flatten, patch_yaml, set_lines, set_tree
from fabric.render import render_switch
from fabric.serialize import Fields, Shared, dumps_yaml
from tests.support.paths import GOLDEN, ROOT

GOLDEN = GOLDEN
UPDATE = os.environ.get("UPDATE_GOLDEN") == "1"

# (golden folder, inventory, forced target, devices)
CASES = [
    ("h100-400g", "h100-400g", None, ["leaf-su1-r1", "spine1"]),
    ("h100-400g-sonic", "h100-400g", "sonic", ["leaf-su1-r1", "spine1"]),
    ("sonic-example", "sonic-example", None, ["leaf-su1-r1", "spine1"]),
    ("eos-example", "eos-example", None, ["leaf-su1-r1", "spine1"]),
]


@cache
def fabric(inventory: str, target: str | None = None) -> FabricIntent:
    return derive(load(ROOT / "inventories" / inventory), target)


def switches(target: str) -> list[tuple[SwitchIntent, FabricIntent]]:
    out = []
    for _, inv, forced, _devs in CASES:
        f = fabric(inv, forced)
        out += [(sw, f) for sw in f.switches.values() if sw.target == target]
    return out


@pytest.mark.parametrize(("folder", "inventory", "target", "device"),
                         [(c[0], c[1], c[2], d) for c in CASES for d in c[3]])
def test_golden(folder: str, inventory: str, target: str | None, device: str) -> None:
    f = fabric(inventory, target)
    files = render_switch(f.switches[device], f)
    base = GOLDEN / folder / device
    for name, text in files.items():
        path = base / name
        if UPDATE:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
        assert path.exists(), f"missing golden {path}; run with UPDATE_GOLDEN=1 and review"
        assert text == path.read_text(), f"{path} differs from the render; review, then UPDATE_GOLDEN=1"
    assert sorted(p.name for p in base.iterdir()) == sorted(files)


def test_render_is_deterministic() -> None:
    f = fabric("h100-400g")
    sw = f.switches["leaf-su2-r8"]
    assert render_switch(sw, f) == render_switch(sw, f.model_copy(deep=True))


# -- SONiC ---------------------------------------------------------------------------------------
@pytest.mark.parametrize(("sw", "f"), switches("sonic"), ids=lambda x: getattr(x, "name", ""))
def test_sonic_structure(sw: SwitchIntent, f: FabricIntent) -> None:
    db = json.loads(render_switch(sw, f)["config_db.json"])
    q = sw.qos
    dscp = db["DSCP_TO_TC_MAP"]["ROCE"]
    assert sorted(int(d) for d in dscp) == list(range(64))
    assert dscp[str(q.roce_dscp)] == str(q.dscp_to_tc[q.roce_dscp]) == "3"
    assert dscp[str(q.cnp_dscp)] == "6"
    ports = {p.name: p for p in sw.ports}
    assert set(db["PORT"]) == set(ports)
    for name, p in ports.items():
        assert db["PORT"][name]["speed"] == str(p.speed * 1000)
        qm = db["PORT_QOS_MAP"][name]
        assert qm["pfc_enable"] == "3" and qm["pfcwd_sw_enable"] == "3"
        assert db["PFC_WD"][name] == {"action": "drop", "detection_time": "200", "restoration_time": "200"}
        prof = db["BUFFER_PROFILE"][db["BUFFER_PG"][f"{name}|3"]["profile"]]
        assert (int(prof["xon"]), int(prof["xoff"]), int(prof["size"])) == (
            p.headroom.xon, p.headroom.xoff, p.headroom.size)
        assert db["QUEUE"][f"{name}|3"] == {"scheduler": "ROCE_TC3", "wred_profile": "ROCE_TC3"}
    fabric_ports = {n for n, p in ports.items() if p.kind == "fabric"}
    assert {k.split("|")[1] for k in db["BGP_NEIGHBOR"]} == fabric_ports
    for port in fabric_ports:
        assert db["INTERFACE"][port] == {"ipv6_use_link_local_only": "enable"}
        assert db["BGP_NEIGHBOR"][f"default|{port}"]["capability_ext_nexthop"] == "true"
    assert db["SCHEDULER"]["ROCE_TC6"] == {"type": "STRICT"}
    assert {db["SCHEDULER"][f"ROCE_TC{t}"]["weight"] for t in (0, 3)} == {"50"}
    assert {k.split("|")[2] for k in db["BGP_GLOBALS_AF_NETWORK"]} == set(sw.bgp.networks)
    assert db["DEVICE_METADATA"]["localhost"]["frr_mgmt_framework_config"] == "true"


def test_sonic_numbers_from_reference() -> None:
    """SN5600 400G: 5 m → xon 19456 xoff 231424 size 250880; 40 m → 283648 / 303104 (reference §1.5)."""
    f = fabric("h100-400g", "sonic")
    db = json.loads(render_switch(f.switches["leaf-su1-r1"], f)["config_db.json"])
    assert db["BUFFER_PROFILE"]["pg_lossless_400000_5m_profile"] == {
        "pool": "ingress_lossless_pool", "xon": "19456", "xoff": "231424", "size": "250880",
        "dynamic_th": "0"}
    assert db["BUFFER_PROFILE"]["pg_lossless_400000_40m_profile"]["xoff"] == "283648"
    assert db["BUFFER_PROFILE"]["pg_lossless_400000_40m_profile"]["size"] == "303104"
    wred = db["WRED_PROFILE"]["ROCE_TC3"]
    assert (wred["green_min_threshold"], wred["green_max_threshold"], wred["green_drop_probability"],
            wred["ecn"]) == ("150000", "1500000", "100", "ecn_all")
    assert db["PFC_WD"]["GLOBAL"] == {"POLL_INTERVAL": "100"}


def test_sonic_override_and_p2p31() -> None:
    """sonic-example overrides only the TC3 ECN minimum (100KB) and uses /31 host ports with blackholes."""
    f = fabric("sonic-example")
    sw = f.switches["leaf-su1-r1"]
    db = json.loads(render_switch(sw, f)["config_db.json"])
    assert db["WRED_PROFILE"]["ROCE_TC3"]["green_min_threshold"] == "100000"
    assert db["WRED_PROFILE"]["ROCE_TC0"]["green_min_threshold"] == "150000"
    host = [p for p in sw.ports if p.kind == "host"]
    for p in host:
        assert f"{p.name}|{p.address}" in db["INTERFACE"]
    assert "VLAN" not in db
    assert set(db["STATIC_ROUTE"]) == {f"default|{n}" for n in sw.bgp.blackholes}


def test_sonic_dynamic_headroom() -> None:
    loaded = load(ROOT / "inventories" / "sonic-example")
    dynamic = loaded.qos.headroom.model_copy(update={"mode": "dynamic"})
    loaded.qos = loaded.qos.model_copy(update={"headroom": dynamic})
    f = derive(loaded)
    db = json.loads(render_switch(f.switches["leaf-su1-r1"], f)["config_db.json"])
    assert "BUFFER_PROFILE" not in db
    assert {v["profile"] for v in db["BUFFER_PG"].values()} == {"NULL"}
    assert db["LOSSLESS_TRAFFIC_PATTERN"]["AZURE"]["small_packet_percentage"] == "100"
    assert db["DEVICE_METADATA"]["localhost"]["buffer_model"] == "dynamic"


def test_sonic_sysctl() -> None:
    f = fabric("sonic-example")
    sw = f.switches["leaf-su1-r1"]
    text = render_switch(sw, f)["sysctl.conf"]
    assert f"net.ipv4.neigh.default.base_reachable_time_ms = {sw.neighbor.aging_s * 1000}" in text
    assert f"net.ipv4.neigh.default.gc_thresh3 = {sw.neighbor.gc_thresh3}" in text


# -- NVUE ----------------------------------------------------------------------------------------
def _yaml_leaves(node: object, prefix: tuple[str, ...] = ()) -> set[tuple[str, ...]]:
    if isinstance(node, dict) and node:
        return set().union(*(_yaml_leaves(v, (*prefix, str(k))) for k, v in node.items()))
    return {(*prefix, "" if isinstance(node, dict) else str(node))}


@pytest.mark.parametrize(("sw", "f"), switches("nvue"), ids=lambda x: getattr(x, "name", ""))
def test_nvue_patch_and_set_lines_agree(sw: SwitchIntent, f: FabricIntent) -> None:
    files = render_switch(sw, f)
    doc = yaml.safe_load(files["nvue-patch.yaml"])
    assert isinstance(doc, list) and len(doc) == 1 and list(doc[0]) == ["set"]
    from_yaml = _yaml_leaves(doc[0]["set"])
    from_lines = set()
    for line in files["nv-set.txt"].splitlines():
        words = shlex.split(line)
        assert words[:2] == ["nv", "set"]
        from_lines.add(tuple(words[2:]))
    # a leaf with a value is path+value; an empty node is the path alone
    norm_yaml = {p[:-1] if p[-1] == "" else p for p in from_yaml}
    assert norm_yaml == from_lines
    assert len(from_lines) == len(files["nv-set.txt"].splitlines())


@pytest.mark.parametrize(("sw", "f"), switches("nvue"), ids=lambda x: getattr(x, "name", ""))
def test_nvue_structure(sw: SwitchIntent, f: FabricIntent) -> None:
    """h100-400g on SN5600: rendered for 5.15 (the platform default), every QoS object explicit (NVIDIA's `qos
    roce` trusts PCP+DSCP and maps DSCP 24-31 to lossless: never the policy), one PFC profile per cable length."""
    t = set_tree(sw)
    assert sw.release == "5.15"
    assert "roce" not in t["qos"]
    pfc = t["qos"]["pfc"]
    default = pfc["default-global"]["cable-length"]
    assert {p.cable_m for p in sw.ports} == {pfc[name]["cable-length"] for name in pfc}
    assert t["qos"]["traffic-pool"] == {"default-lossless": {"memory-percent": 50},
                                        "default-lossy": {"memory-percent": 50}}
    assert t["qos"]["pfc-watchdog"] == {"polling-interval": 100, "robustness": 3}
    nbrs = t["vrf"]["default"]["router"]["bgp"]["neighbor"]
    assert set(nbrs) == {p.name for p in sw.ports if p.kind == "fabric"}
    assert all(n["remote-as"] == "external" for n in nbrs.values())
    assert all(n["address-family"]["ipv4-unicast"]["policy"]["inbound"]["route-map"] == "FABRIC-IN"
               for n in nbrs.values())
    for p in sw.ports:
        it = t["interface"][p.name]
        assert it["link"] == {"speed": f"{p.speed}G", "mtu": p.mtu}
        own = {} if p.cable_m == default else {"pfc": {"profile": f"pfc-{p.cable_m}m"}}
        assert it["qos"] == {"pfc-watchdog": {"state": "enable"}, **own}
        assert ("router" in it) == p.adaptive_routing
        if p.adaptive_routing:
            assert it["router"] == {"adaptive-routing": {"state": "enabled"}}
    assert sw.adaptive_routing and t["router"]["adaptive-routing"] == {"state": "enabled"}
    parents = {re.sub(r"s\d+$", "", p.name) for p in sw.ports}
    for parent in parents:
        assert t["interface"][parent]["link"]["breakout"] == {"2x": {"lanes-per-port": 4}}


def _plain(node: object) -> object:
    """The tree with every shared subtree a fresh plain dict (what the emitters' caches must not change)."""
    if isinstance(node, dict):
        return {k: _plain(v) for k, v in node.items()}
    if isinstance(node, list):
        return [_plain(v) for v in node]
    return node


def _reference_yaml(node: object, indent: str = "") -> str:
    """fabric.serialize's block YAML written the plain way: one recursion, every mapping sorted by str(key), no
    cached text, no fast paths (the emitter's documented format, to hold its shortcuts against)."""
    def scalar(v: object) -> str:
        if isinstance(v, bool):
            return "true" if v else "false"
        if v is None:
            return "null"
        if isinstance(v, (int, float)):
            return repr(v)
        s = str(v)
        plain = re.fullmatch(r"[A-Za-z_][A-Za-z0-9_./-]*", s) and s.lower() not in {
            "y", "n", "yes", "no", "on", "off", "true", "false", "null", "~"}
        return s if plain else json.dumps(s)

    out = []
    if isinstance(node, dict):
        for key in sorted(node, key=str):
            value = node[key]
            if isinstance(value, (dict, list)) and value:
                out.append(f"{indent}{scalar(key)}:\n" + _reference_yaml(value, indent + "  "))
            elif isinstance(value, (dict, list)):
                out.append(f"{indent}{scalar(key)}: {'{}' if isinstance(value, dict) else '[]'}\n")
            else:
                out.append(f"{indent}{scalar(key)}: {scalar(value)}\n")
    else:
        for item in node:  # type: ignore[attr-defined]
            if isinstance(item, (dict, list)) and item:
                inner = _reference_yaml(item, indent + "  ")
                out.append(f"{indent}- {inner[len(indent) + 2:]}")
            else:
                out.append(f"{indent}- {scalar(item)}\n")
    return "".join(out)


def _nvue_everywhere() -> list[SwitchIntent]:
    """Every switch of every example and fixture inventory, rendered as NVUE."""
    out = []
    for inv in [*sorted((ROOT / "inventories").iterdir()), *sorted((ROOT / "tests/fixtures/inventories").iterdir())]:
        if (inv / "fabric.yaml").exists():
            out += list(derive(load(inv), "nvue").switches.values())
    return out


def test_nvue_shared_subtrees_and_fast_paths_change_no_byte() -> None:
    """The patch YAML and `nv set` lines of every switch of every inventory are the plain walks' of the same tree
    without shared subtrees (the emitters cache a shared subtree's text and sort str keys without str()), and the
    YAML reads back as the tree."""
    switches = _nvue_everywhere()
    assert len(switches) > 50
    for sw in switches:
        tree = set_tree(sw)
        plain = _plain(tree)
        for _ in range(2):  # the second time from the shared subtrees' cached text
            text = patch_yaml(tree)
            assert text == _reference_yaml([{"set": plain}]) == dumps_yaml([{"set": plain}]), sw.name
            assert set_lines(tree) == set_lines(plain), sw.name  # type: ignore[arg-type]
        assert yaml.safe_load(text) == [{"set": plain}]
    assert set_lines({"a": Shared(), "b": Shared({"c": 1, "d": {}})}) == "nv set a\nnv set b c 1\nnv set b d\n"


def test_yaml_emitter_sorts_keys_as_text_whatever_their_type() -> None:
    """Mappings with int or mixed keys are sorted as text (10 before 9), like str keys; shared subtrees and
    mappings of shared and own entries (`Fields`) of every kind of key give the text of plain dicts at every
    depth."""
    common = Shared({"b": 1, 3: {}, "z": Shared({"q": "x"}), "yes": "no"})
    tree = {9: "a", 10: [1, {"z": None, "y": True}], "x": {"on": "off", "8": 1.5, 7: []},
            "s": Shared({3: {}, "k": Shared({"v": "two words"})}), "t": [Shared({"q": 1}), {}],
            "f": Fields(common, {"a": "own", "m": {"n": 1}, 5: "five", "zz": []}), "g": Fields(common, {"c": "on"}),
            "h": [Fields(common, {"0": None}), {"i": Fields(common, {})}]}
    text = dumps_yaml(tree)
    assert text == _reference_yaml(_plain(tree)) == dumps_yaml(_plain(tree))
    assert text == dumps_yaml(tree)  # again, from the cached text
    assert dumps_yaml({"deep": {"s": tree["s"]}}) == _reference_yaml(_plain({"deep": {"s": tree["s"]}}))
    assert text.index("10:") < text.index("9:")


def test_nvue_breakout_parent_that_is_also_a_port() -> None:
    """A breakout parent that is itself a port: whichever comes later sets its `link` (the tree as before the
    shared breakout entries), and the shared entry of the other parents is never changed."""
    f = fabric("h100-400g")
    sw = next(s for s in f.switches.values() if s.target == "nvue" and any(p.name.endswith("s0") for p in s.ports))
    sub = next(p for p in sw.ports if p.name.endswith("s0"))
    parent = sub.name[:-2]
    port = dataclasses.replace(sub, name=parent, description="the parent itself")
    first = set_tree(sw.model_copy(update={"ports": [port, *sw.ports]}))
    last = set_tree(sw.model_copy(update={"ports": [*sw.ports, port]}))
    breakout = {"breakout": {"2x": {"lanes-per-port": 4}}}
    assert first["interface"][parent]["link"] == breakout  # the sub-ports came later
    assert first["interface"][parent]["description"] == "the parent itself"
    assert last["interface"][parent]["link"] == {"speed": f"{port.speed}G", "mtu": port.mtu}
    others = {re.sub(r"s\d+$", "", p.name) for p in sw.ports} - {parent}
    for t in (first, last):
        assert others and all(t["interface"][o] == {"link": breakout} for o in others)


def test_nvue_explicit_qos_when_policy_differs() -> None:
    """A policy that `qos roce` cannot express is rendered as explicit objects, all 64 DSCPs mapped."""
    loaded = load(ROOT / "inventories" / "sonic-example")
    f = derive(loaded, "nvue")
    sw = f.switches["leaf-su1-r1"]
    t = set_tree(sw)
    assert "roce" not in t["qos"]
    dscp = t["qos"]["mapping"]["default-global"]["dscp"]
    assert len(dscp) == 64 and dscp["26"] == {"switch-priority": 3} and dscp["24"] == {"switch-priority": 0}
    cc = t["qos"]["congestion-control"]["default-global"]["traffic-class"]
    assert cc["3"] == {"min-threshold": 100000, "max-threshold": 1500000, "probability": 100, "ecn": "enable"}
    assert t["qos"]["pfc"]["default-global"]["switch-priority"] == {"3": {}}
    es = t["qos"]["egress-scheduler"]["default-global"]["traffic-class"]
    assert es == {"0": {"mode": "dwrr", "bw-percent": 50}, "3": {"mode": "dwrr", "bw-percent": 50},
                  "6": {"mode": "strict"}}
    lines = render_switch(sw, f)["nv-set.txt"].splitlines()
    assert "nv set qos mapping default-global dscp 26 switch-priority 3" in lines
    assert [p for p, _ in flatten(t)] == sorted([p for p, _ in flatten(t)])


# -- EOS -----------------------------------------------------------------------------------------
@pytest.mark.parametrize(("sw", "f"), switches("eos"), ids=lambda x: getattr(x, "name", ""))
def test_eos_structure(sw: SwitchIntent, f: FabricIntent) -> None:
    text = render_switch(sw, f)["running-config.cfg"]
    mapped: dict[int, int] = {}
    for m in re.finditer(r"^qos map dscp ([\d ]+) to traffic-class (\d)$", text, re.M):
        for d in m.group(1).split():
            assert int(d) not in mapped
            mapped[int(d)] = int(m.group(2))
    assert sorted(mapped) == list(range(64)) and mapped[26] == 3 and mapped[48] == 6
    lossless = [p for p in sw.ports if p.lossless]
    assert text.count("   priority-flow-control priority 3 no-drop\n") == len(lossless)
    assert text.count("random-detect ecn minimum-threshold 150000 bytes maximum-threshold 1500000 bytes "
                      "max-mark-probability 100") == 2 * len(sw.ports)
    for n in sw.bgp.neighbors:
        assert f"   neighbor interface {n.port} peer-group FABRIC remote-as {n.remote_asn}\n" in text
    assert "remote-as external" not in text
    assert "priority-flow-control pause watchdog default timeout 0.2\n" in text
    assert "priority-flow-control pause watchdog default polling-interval 0.1\n" in text
    assert f"arp aging timeout default {sw.neighbor.aging_s}\n" in text
    for s in sw.svis:
        assert f"interface {s.name}\n" in text and f"   ip address {s.address}\n" in text
        assert text.count(f"   switchport access vlan {s.vlan}\n") == len(s.members)
    for p in sw.ports:
        head = f"interface {p.name}\n   description {p.description}\n   mtu {p.mtu}\n"
        assert head + f"   speed {p.speed}g-{p.lanes}\n" in text
