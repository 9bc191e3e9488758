"""NVIDIA Cumulus Linux (NVUE): one `set` tree, written both as `nv config patch` YAML and as `nv set` lines.

Both files are walks of the same tree in the same sorted order, so they cannot disagree. Every path is in
the form NVIDIA documents for the switch's declared release (5.9 or 5.15, `SwitchIntent.release`); the table
of those forms with the page each comes from is tests/fixtures/nvue/paths.yaml, which the tests check every
render against.
"""

from __future__ import annotations

import re
import shlex
from collections import Counter
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from fabric.design.intent import FabricIntent, PortIntent, QosFacts, SwitchIntent
from fabric.fast.memo import Memo, made
from fabric.model.platforms import PLATFORMS
from fabric.nos import NOS
from fabric.render.files import Files, dot_id
from fabric.serialize import Fields, Shared, dumps_yaml

BRIDGE = "br_default"
VRF = "default"
PROFILE = "default-global"  # NVUE's profile that applies to every port
GSHUT_LIST = "GSHUT"
FABRIC_IN = "FABRIC-IN"
GSHUT = "65535:0"  # RFC 8326 GRACEFUL_SHUTDOWN; the docs do not show NVUE taking FRR's `graceful-shutdown` keyword
BFD_PROFILE = "FABRIC"
Tree = dict[str, Any]
_SUBPORT = re.compile(r"^(swp\d+)s\d+$")


@dataclass(frozen=True)
class Forms:
    """The words that differ between the Cumulus Linux releases the tool renders for.

    Source: tests/fixtures/nvue/paths.yaml (every path with its NVIDIA page); 5.15 renamed `ip address` to
    `ipv4 address` and `enable on|off` to `state enabled|disabled`, and moved BGP BFD to profiles."""

    ip: str  # interface address container
    on: tuple[str, str]  # (key, value) that turns a feature on: ("enable", "on") or ("state", "enabled")
    bfd_profiles: bool  # BGP BFD through `router bfd profile` (5.15) instead of per-neighbor `bfd enable on`


FORMS = {"5.9": Forms(ip="ip", on=("enable", "on"), bfd_profiles=False),
         "5.15": Forms(ip="ipv4", on=("state", "enabled"), bfd_profiles=True)}


def pfc_profiles(sw: SwitchIntent) -> tuple[int | None, dict[str, int]]:
    """(cable length of default-global, {profile: cable length}) for the lossless ports' cable lengths.

    NVUE sizes PFC headroom from a PFC profile's `cable-length`; one length for all ports would give the 5 m
    host ports the 40 m uplinks' headroom or the uplinks too little. default-global takes the most common
    length, every other length gets a profile `pfc-<m>m` applied to its ports."""
    counts = Counter(p.cable_m for p in sw.ports if p.pfc)
    if not counts:
        return None, {}
    default = max(sorted(counts), key=lambda m: counts[m])
    return default, {profile_name(m): m for m in sorted(counts) if m != default}


def profile_name(cable_m: int) -> str:
    return f"pfc-{cable_m}m"


def _pfc(q: QosFacts, cable: int) -> Tree:
    return {"switch-priority": {str(p): {} for p in q.lossless_priorities}, "rx": "enable", "tx": "enable",
            "cable-length": cable}


def qos_tree(sw: SwitchIntent, memo: Memo | None = None,
             cables: tuple[int | None, dict[str, int]] | None = None) -> Tree:
    """Every QoS object explicit. NVIDIA's `qos roce` shortcut is never used: it trusts PCP and DSCP and maps
    DSCP 24-31 to the lossless priority and 48-55 to the CNP one (paths.yaml `roce_lossless_defaults`), which no
    policy of this tool expresses (trust is dscp or pcp), so it would make AF3x/CS3 lossless on NVUE only.

    Switches with the same facts, cable lengths and watchdog share one tree (and its emitted text) in `memo`;
    `cables`: `pfc_profiles(sw)`, where the caller has it."""
    default_cable, profiles = cables if cables is not None else pfc_profiles(sw)
    watchdog = any(p.watchdog for p in sw.ports)
    return made(memo, sw.qos, ("nvue qos", default_cable, tuple(profiles.items()), watchdog),
                lambda: Shared(_qos_tree(sw.qos, default_cable, profiles, watchdog)))


def _qos_tree(q: QosFacts, default_cable: int | None, profiles: dict[str, int], watchdog: bool) -> Tree:
    t: Tree = {"mapping": {PROFILE: {
        "trust": "l3" if q.trust == "dscp" else "l2",
        "dscp": {str(d): {"switch-priority": prio} for d, prio in enumerate(q.dscp_to_priority)}}}}
    t["egress-queue-mapping"] = {PROFILE: {"switch-priority": {
        str(p): {"traffic-class": tc} for p, tc in enumerate(q.priority_to_tc)}}}
    if q.lossless_priorities and default_cable is not None:
        # Cumulus gives the whole buffer to the lossy pool until told otherwise (QoS page, Flow Control Buffers)
        t["traffic-pool"] = {"default-lossless": {"memory-percent": q.lossless_pool_percent},
                             "default-lossy": {"memory-percent": 100 - q.lossless_pool_percent}}
        t["pfc"] = {PROFILE: _pfc(q, default_cable), **{name: _pfc(q, m) for name, m in profiles.items()}}
    t["egress-scheduler"] = {PROFILE: {"traffic-class": {
        str(tc): {"mode": "strict"} if qu.scheduler == "strict" else {"mode": "dwrr", "bw-percent": qu.weight}
        for tc, qu in q.queues.items() if qu.scheduler}}}
    ecn: Tree = {str(tc): {"min-threshold": e.min_bytes, "max-threshold": e.max_bytes,
                           "probability": e.probability, "ecn": "enable" if e.enabled else "disable"}
                 for tc, qu in q.queues.items() if (e := qu.ecn) is not None}
    if "0" not in ecn:  # NVUE's default-global marks TC0 (QoS page, Congestion Control); the policy does not
        ecn["0"] = {"ecn": "disable"}
    t["congestion-control"] = {PROFILE: {"traffic-class": ecn}}
    wd = q.watchdog
    if wd is not None and watchdog:
        t["pfc-watchdog"] = {"polling-interval": wd.poll_interval_ms, "robustness": wd.robustness}
    return t


def _breakout(lanes: int, p: PortIntent, shared: dict[int, Shared]) -> Shared:
    """The link breakout entry of a sub-port's parent; the split follows platform lanes (`lanes`) / port lanes.
    Entries of one split are one `Shared` tree per switch (`shared`: port lanes → entry)."""
    entry = shared.get(p.lanes)
    if entry is None:
        entry = shared[p.lanes] = Shared({"link": {"breakout": {f"{lanes // p.lanes}x": {"lanes-per-port": p.lanes}}}})
    return entry


@lru_cache(maxsize=65536)
def _parent(port: str) -> str | None:
    """swp1 of the sub-port swp1s0; None for any other port."""
    m = _SUBPORT.match(port)
    return m.group(1) if m else None


def policy_tree(sw: SwitchIntent) -> Tree:
    """RFC 8326 receiver side: routes carrying GRACEFUL_SHUTDOWN get LOCAL_PREF 0 (Optional BGP Configuration,
    BGP Community Lists; FRR under NVUE does this by itself too, the explicit policy does not depend on it)."""
    return {"community-list": {GSHUT_LIST: {"rule": {"10": {"action": "permit", "community": GSHUT}}}},
            "route-map": {FABRIC_IN: {"rule": {
                "10": {"action": "permit", "match": {"community-list": GSHUT_LIST},
                       "set": {"local-preference": 0}},
                "20": {"action": "permit"}}}}}


def _port_common(p: PortIntent, profile: str | None, links: dict[tuple[int, int], Shared],
                 bridges: dict[tuple[int, bool], Shared], qoses: dict[tuple[str | None, bool], Shared],
                 port_router: Shared) -> Shared:
    """A port's entries that its neighbours share (link, bridge membership, QoS, adaptive routing, type), of
    subtrees built once per switch (`links`, `bridges`, `qoses`: emitted once)."""
    link = links.get((p.speed, p.mtu))
    if link is None:
        link = links[(p.speed, p.mtu)] = Shared({"speed": f"{p.speed}G", "mtu": p.mtu})
    it = Shared({"type": "swp", "link": link})
    if p.vlan is not None:
        bridge = bridges.get((p.vlan, p.tagged))
        if bridge is None:
            # a host that tags its rail VLAN needs a tagged member (VLAN-aware Bridge Mode page); `untagged
            # none` keeps its untagged frames out of the bridge's default VLAN
            member = {"vlan": {str(p.vlan): {}}, "untagged": "none"} if p.tagged else {"access": p.vlan}
            bridge = bridges[(p.vlan, p.tagged)] = Shared({"domain": {BRIDGE: member}})
        it["bridge"] = bridge
    qos = qoses.get((profile, p.watchdog))
    if qos is None:
        qos = qoses[(profile, p.watchdog)] = Shared()
        if profile is not None:
            qos["pfc"] = {"profile": profile}
        if p.watchdog:
            qos["pfc-watchdog"] = {"state": "enable"}  # nvue-reference: `qos pfc-watchdog state enable` (5.6+)
    if qos:
        it["qos"] = qos
    if p.adaptive_routing:
        it["router"] = port_router
    return it


def set_tree(sw: SwitchIntent, memo: Memo | None = None) -> Tree:
    """Everything this fabric owns on the switch, as the NVUE `set` object tree, in the forms of its release
    (`memo`: the trees switches share, `qos_tree`)."""
    f = FORMS[sw.release]
    on = dict([f.on])
    n = sw.neighbor
    t: Tree = {"system": {"hostname": sw.name, "global": {"arp": {"base-reachable-time": n.aging_s},
                                                          "nd": {"base-reachable-time": n.aging_s}}}}
    ifaces: Tree = {"lo": {"type": "loopback", f.ip: {"address": {sw.loopback: {}}}}}
    cables = pfc_profiles(sw)
    profiles = cables[1]
    by_cable = {m: name for name, m in profiles.items()}
    # The subtrees that ports have in common are built once per switch and shared (Shared: emitted once).
    links: dict[tuple[int, int], Shared] = {}
    bridges: dict[tuple[int, bool], Shared] = {}
    qoses: dict[tuple[str | None, bool], Shared] = {}
    commons: dict[tuple[object, ...], Shared] = {}  # a port's entries but its description and address
    port_router = Shared({"adaptive-routing": dict(on)})
    breakouts: dict[int, Shared] = {}
    plat = PLATFORMS.get(sw.platform)
    own_keys = ("description",), ("description", f.ip)
    for p in sw.ports:
        # a sub-port swpNsK: its parent swpN gets the breakout (a parent that is also a port: the later wins `link`)
        if plat is not None and (parent := _parent(p.name)) is not None:
            entry = _breakout(plat.lanes, p, breakouts)
            old = ifaces.get(parent)
            ifaces[parent] = entry if old is None or old is entry else {**old, **entry}  # never change a Shared
        profile = by_cable[p.cable_m] if p.pfc and p.cable_m in by_cable else None
        key = (p.speed, p.mtu, p.vlan, p.tagged, profile, p.watchdog, p.adaptive_routing)
        common = commons.get(key)
        if common is None:
            common = commons[key] = _port_common(p, profile, links, bridges, qoses, port_router)
        if p.address:
            it = Fields(common, {"description": p.description, f.ip: {"address": {p.address: {}}}}, own_keys[1])
        else:
            it = Fields(common, {"description": p.description}, own_keys[0])
        old = ifaces.get(p.name)
        ifaces[p.name] = it if old is None else {**old, **it}
    for s in sw.svis:
        ifaces[s.name.lower()] = {"type": "svi", "vlan": s.vlan, f.ip: {"address": {s.address: {}}}}
    t["interface"] = ifaces
    if sw.svis:
        t["bridge"] = {"domain": {BRIDGE: {"vlan": {str(s.vlan): {} for s in sw.svis}}}}
    t["qos"] = qos_tree(sw, memo, cables)
    b = sw.bgp
    router: Tree = {"bgp": {"autonomous-system": b.asn, "router-id": b.router_id}}
    if b.graceful_shutdown and b.neighbors:
        router["policy"] = policy_tree(sw)
    if sw.adaptive_routing:
        router["adaptive-routing"] = dict(on)
    if b.bfd and f.bfd_profiles:
        router["bfd"] = {"state": "enabled", "profile": {BFD_PROFILE: {
            "detect-multiplier": b.bfd_detect_multiplier, "min-rx-interval": b.bfd_interval_ms,
            "min-tx-interval": b.bfd_interval_ms}}}
    t["router"] = router
    nb = Shared({"type": "unnumbered", "remote-as": "external",  # every neighbour's: one tree, emitted once
                 "timers": {"keepalive": b.keepalive, "hold": b.hold}})
    if b.bfd:
        nb["bfd"] = {"profile": BFD_PROFILE} if f.bfd_profiles else dict(on)
    if b.graceful_shutdown:
        nb["address-family"] = {"ipv4-unicast": {"policy": {"inbound": {"route-map": FABRIC_IN}}}}
    neighbors: Tree = {nb_.port: nb for nb_ in b.neighbors}
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
    """Append the lines of `tree` below `prefix`; a shared subtree's lines are its cached tails after `prefix`,
    appended as one text."""
    for key in sorted(tree):
        value = tree[key]
        path = f"{prefix} {_quote(str(key))}"
        if type(value) is Shared and value:
            tails = value.memo(_SET_TAILS, _tails)
            out.append(path + ("\n" + path).join(tails))
        elif isinstance(value, dict) and value:
            _set_lines(value, path, out)
        elif isinstance(value, dict):
            out.append(path)
        else:
            out.append(f"{path} {_quote(str(value))}")


_SET_TAILS = ("nv set",)  # Shared.memo's key for a subtree's line tails


def _tails(tree: Tree, _form: object = None) -> list[str]:
    """The lines of `tree` below an empty prefix (each starts with a space)."""
    out: list[str] = []
    _set_lines(tree, "", out)
    return out


def set_lines(tree: Tree) -> str:
    """`nv set …` lines, one per leaf of the tree, in the same order as the patch YAML."""
    out: list[str] = []
    _set_lines(tree, "nv set", out)
    return "\n".join(out) + "\n"


def patch_yaml(tree: Tree) -> str:
    return dumps_yaml([{"set": tree}])


_LAST: list[tuple[str, Tree]] = []  # the patch rendered last and its tree (`rendered_tree`)


def rendered_tree(patch: str) -> Tree | None:
    """The `set` tree of `patch` where it is the patch this process rendered last, so that the driver diffs
    the renderer's tree instead of reading its YAML again (`plan --running` renders, then diffs, each switch
    in turn). Read-only: subtrees are shared. tests/nos/nvue/test_driver.py checks that reading the patch
    gives this tree, keys of str only, on every example and fixture inventory."""
    if _LAST and (_LAST[0][0] is patch or _LAST[0][0] == patch):
        return _LAST[0][1]
    return None


def intended_tree(sw: SwitchIntent, fabric: FabricIntent, memo: Memo | None = None) -> Tree:
    """The tree `render` writes as the patch (what `rendered_tree` of that patch gives), without writing it."""
    return set_tree(sw, memo)


def intended_text(tree: Tree) -> str:
    """The patch `render` writes of its tree (`intended_tree`)."""
    return patch_yaml(tree)


def render(sw: SwitchIntent, fabric: FabricIntent, *, extras: bool = True,
           memo: Memo | None = None) -> Files:
    """The patch the push applies; with `extras`, the same tree as `nv set` lines for review."""
    tree = set_tree(sw, memo)
    patch = patch_yaml(tree)
    _LAST[:] = [(patch, tree)]
    return {"nvue-patch.yaml": patch,
            **({"nv-set.txt": set_lines(tree), "topology.dot": ptm_topology(sw, fabric)} if extras else {})}


def ptm_topology(sw: SwitchIntent, fabric: FabricIntent) -> str:
    """PTM's cabling plan of this switch, /etc/ptm.d/topology.dot: an undirected DOT graph of
    `"host":"port" -- "host":"port";` edges, one per cabled port (Cumulus Linux 5.9/5.15 user guide, "Prescriptive
    Topology Manager - PTM"). ptmd compares each port's LLDP neighbour with the edges of its own host name, by the
    neighbour's Port ID (`match_type=ifname`, its default); where the neighbour sends its MAC as Port ID (lldpd on a
    Linux host or white-box) the edge matches its port description (`match_type=portdescr`), which that lldpd fills
    with the interface name; a SONiC neighbour is named by the alias it sends. Only this switch's edges: ptmd reads
    no others, and a 32k-GPU fabric's whole plan would be 98,000 edges on every switch."""
    lines = [f"// PTM cabling plan of {dot_id(sw.name)}: /etc/ptm.d/topology.dot", "graph G {"]
    for port in sw.ports:
        if not port.peer or not port.peer_port:
            continue
        peer_port, attrs = _ptm_peer_port(port, fabric)
        lines.append(f"    {dot_id(sw.name)}:{dot_id(port.name)} -- {dot_id(port.peer)}:{dot_id(peer_port)}{attrs};")
    return "\n".join([*lines, "}", ""])


def _ptm_peer_port(port: PortIntent, fabric: FabricIntent) -> tuple[str, str]:
    """(the peer's port as its LLDP sends it, the edge's attributes)."""
    peer = fabric.switches.get(port.peer)
    sends = NOS[peer.target].lldp_port_id if peer else "mac"  # hosts run stock lldpd
    if sends == "mac":
        return port.peer_port, ' [LLDP="match_type=portdescr"]'
    if sends == "alias" and peer:
        hw = next((p.hw for p in peer.ports if p.name == port.peer_port and p.hw), None)
        return (hw.alias if hw else port.peer_port), ""
    return port.peer_port, ""
