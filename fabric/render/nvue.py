"""NVIDIA Cumulus Linux (NVUE): one `set` tree, written both as `nv config patch` YAML and as `nv set` lines.

Both files are walks of the same tree in the same sorted order, so they cannot disagree. Paths follow the
Cumulus Linux 5.x docs and the nvue-reference (shared reference switch-qos.md §2).
"""

from __future__ import annotations

import re
import shlex
from functools import lru_cache
from typing import Any

from fabric.design.intent import FabricIntent, PortIntent, SwitchIntent
from fabric.model.platforms import PLATFORMS
from fabric.model.qos import PRESETS, QosPolicy
from fabric.render import Files, dumps_yaml

BRIDGE = "br_default"
VRF = "default"
ON = "on"
Tree = dict[str, Any]
# Fields of the policy that `nv set qos roce` fixes by itself (reference §2.1); if ours equal the
# nvidia-roce preset in all of them, `qos roce` says it all, otherwise every QoS object is explicit.
ROCE_FIELDS = ("trust", "dscp_to_priority", "default_priority", "priority_to_tc", "lossless_priorities",
               "ets_strict", "ets_dwrr", "ecn")
_SUBPORT = re.compile(r"^(swp\d+)s\d+$")


def roce_mode(q: QosPolicy) -> bool:
    preset = QosPolicy.model_validate(PRESETS["nvidia-roce"])
    return all(getattr(q, f) == getattr(preset, f) for f in ROCE_FIELDS)


def _put(tree: Tree, path: list[str], value: Any) -> None:
    node = tree
    for key in path[:-1]:
        node = node.setdefault(key, {})
    if isinstance(value, dict) and isinstance(node.get(path[-1]), dict):
        node[path[-1]].update(value)
    else:
        node[path[-1]] = value


def qos_tree(sw: SwitchIntent) -> Tree:
    q = sw.qos
    lossless = [p for p in sw.ports if p.lossless and q.lossless_priorities]
    cable = max((p.cable_m for p in lossless), default=None)
    t: Tree = {}
    if roce_mode(q):
        t["roce"] = {"mode": "lossless"}
        if cable is not None:
            t["roce"]["cable-length"] = cable
    else:
        t["mapping"] = {"default-global": {
            "trust": "l3" if q.trust == "dscp" else "l2",
            "dscp": {str(d): {"switch-priority": q.priority_of_dscp(d)} for d in range(64)}}}
        t["egress-queue-mapping"] = {"default-global": {"switch-priority": {
            str(p): {"traffic-class": q.tc_of_priority(p)} for p in range(8)}}}
        if q.lossless_priorities:
            pfc: Tree = {"switch-priority": {str(p): {} for p in sorted(q.lossless_priorities)},
                         "rx": "enable", "tx": "enable"}
            if cable is not None:
                pfc["cable-length"] = cable
            t["pfc"] = {"default-global": pfc}
        tcs: Tree = {}
        for tc in sorted(q.ets_strict):
            tcs[str(tc)] = {"mode": "strict"}
        for tc, weight in sorted(q.ets_dwrr.items()):
            tcs.setdefault(str(tc), {"mode": "dwrr", "bw-percent": weight})
        t["egress-scheduler"] = {"default-global": {"traffic-class": tcs}}
        t["congestion-control"] = {"default-global": {"traffic-class": {
            str(tc): {"min-threshold": e.min_bytes, "max-threshold": e.max_bytes,
                      "probability": e.probability, "ecn": "enable" if e.enabled else "disable"}
            for tc, e in sorted(q.ecn.items())}}}
    wd = q.pfc_watchdog
    if wd.enabled and lossless:
        t["pfc-watchdog"] = {"polling-interval": wd.poll_interval, "robustness": wd.robustness}
    return t


def _breakout(sw: SwitchIntent, p: PortIntent) -> tuple[str, Tree] | None:
    """(parent, link breakout tree) for a sub-port swpNsK; the split follows platform lanes / port lanes."""
    m = _SUBPORT.match(p.name)
    plat = PLATFORMS.get(sw.platform)
    if not m or plat is None:
        return None
    return m.group(1), {"link": {"breakout": {f"{plat.lanes // p.lanes}x": {"lanes-per-port": p.lanes}}}}


def set_tree(sw: SwitchIntent) -> Tree:
    """Everything this fabric owns on the switch, as the NVUE `set` object tree."""
    q = sw.qos
    wd_on = q.pfc_watchdog.enabled and bool(q.lossless_priorities)
    arp = {"base-reachable-time": sw.neighbor.aging_s}
    t: Tree = {"system": {"hostname": sw.name, "global": {"arp": arp}}}
    ifaces: Tree = {"lo": {"type": "loopback", "ip": {"address": {sw.loopback: {}}}}}
    for p in sw.ports:
        if (bo := _breakout(sw, p)) is not None:
            _put(ifaces, [bo[0]], bo[1])
        it: Tree = {"type": "swp", "description": p.description,
                    "link": {"speed": f"{p.speed}G", "mtu": p.mtu}}
        if p.vlan is not None:
            it["bridge"] = {"domain": {BRIDGE: {"access": p.vlan}}}
        if p.address:
            it["ip"] = {"address": {p.address: {}}}
        if p.lossless and wd_on:
            it["qos"] = {"pfc-watchdog": {}}
        if p.adaptive_routing:
            it["router"] = {"adaptive-routing": {"enable": ON}}
        _put(ifaces, [p.name], it)
    for s in sw.svis:
        ifaces[s.name.lower()] = {"type": "svi", "vlan": s.vlan, "ip": {"address": {s.address: {}}}}
    t["interface"] = ifaces
    if sw.svis:
        t["bridge"] = {"domain": {BRIDGE: {"vlan": {str(s.vlan): {} for s in sw.svis}}}}
    t["qos"] = qos_tree(sw)
    b = sw.bgp
    router: Tree = {"bgp": {"autonomous-system": b.asn, "router-id": b.router_id}}
    if sw.adaptive_routing:
        router["adaptive-routing"] = {"enable": ON}
    t["router"] = router
    neighbors: Tree = {}
    for n in b.neighbors:
        nb: Tree = {"type": "unnumbered", "remote-as": "external",
                    "timers": {"keepalive": b.keepalive, "hold": b.hold}}
        if b.bfd:
            nb["bfd"] = {"enable": ON}
        neighbors[n.port] = nb
    af: Tree = {"network": {n: {} for n in b.networks}, "multipaths": {"ebgp": b.max_paths}}
    t["vrf"] = {VRF: {"router": {"bgp": {"neighbor": neighbors, "address-family": {"ipv4-unicast": af}}}}}
    if b.blackholes:
        t["vrf"][VRF]["router"]["static"] = {n: {"via": {"blackhole": {}}} for n in b.blackholes}
    return t


def flatten(tree: Tree, prefix: tuple[str, ...] = ()) -> list[tuple[tuple[str, ...], str | None]]:
    """Leaves of the tree in YAML order (sorted keys): (path, value), value None for an empty node.

    The path-tuple form of `set_lines`, for callers that compare trees (tests, drift checks)."""
    out: list[tuple[tuple[str, ...], str | None]] = []
    for key in sorted(tree):
        value = tree[key]
        path = (*prefix, str(key))
        if isinstance(value, dict) and value:
            out += flatten(value, path)
        elif isinstance(value, dict):
            out.append((path, None))
        else:
            out.append((path, str(value)))
    return out


@lru_cache(maxsize=65536)
def _quote(word: str) -> str:
    return shlex.quote(word)


def _set_lines(tree: Tree, prefix: str, out: list[str]) -> None:
    for key in sorted(tree):
        value = tree[key]
        path = f"{prefix} {_quote(str(key))}"
        if isinstance(value, dict) and value:
            _set_lines(value, path, out)
        elif isinstance(value, dict):
            out.append(path)
        else:
            out.append(f"{path} {_quote(str(value))}")


def set_lines(tree: Tree) -> str:
    """`nv set …` lines, one per leaf of the tree, in the same order as the patch YAML."""
    out: list[str] = []
    _set_lines(tree, "nv set", out)
    return "\n".join(out) + "\n"


def patch_yaml(tree: Tree) -> str:
    return dumps_yaml([{"set": tree}])


def render(sw: SwitchIntent, fabric: FabricIntent) -> Files:
    tree = set_tree(sw)
    return {"nvue-patch.yaml": patch_yaml(tree), "nv-set.txt": set_lines(tree)}
