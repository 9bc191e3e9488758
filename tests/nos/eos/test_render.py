"""EOS parity: the tool's EOS renders compared in meaning with Arista's pyavd rendering the same intent.

Two fabrics: `inventories/eos-example` and a small generated one (`fabric generate gpu-rail --target eos --platform
7060x5 --breakout none`). Ours comes from the CLI (`fabric render INV -o DIR`); the same intent, read once through
`intent_of`, becomes eos_designs inputs (`avd_inputs`: eBGP underlay, `underlay_rfc5549`, no overlay, the same ASNs,
loopbacks, uplinks, one SVI per rail on the leaves, the QoS policy as a qos_profile plus custom structured config as
in bench/pyavd_compare.py, plus the `no priority` on DWRR queues that the bench leaves out) rendered by pyavd in ONE
subprocess of the side venv `.refs/avd-venv` (`make refs-avd`; tests/refs/pyavd_render.py). The project venv never
imports pyavd.

Both CLI texts are parsed into sections (`parse`) and each compared section is reduced to its meaning (`SECTIONS`):
values in bytes and seconds, peer groups resolved onto their neighbours, `qos profile`s expanded onto the interfaces
that use them. A difference that is on purpose is listed in `DELIBERATE` with its reason (and checked to still
occur); every other difference fails as `device: key: ours …, pyavd …`, followed by why the section matters.
"""

from __future__ import annotations

import json
import re
import subprocess
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

import pytest

from tests import inproc
from tests.conftest import ROOT, require

PYAVD_VERSION = "6.4.0"  # as bench/pyavd_compare.py; the Makefile's refs-avd target installs the same
AVD_PYTHON = ROOT / ".refs" / "avd-venv" / "bin" / "python"
AVD_SCRIPT = ROOT / "tests" / "refs" / "pyavd_render.py"
EOS_EXAMPLE = ROOT / "inventories" / "eos-example"
# 2 scalable units × 4 rails = 8 leaves, 2 spines, 16 hosts: small, but two SUs and several ASNs.
GENERATED = ["gpu-rail", "--target", "eos", "--platform", "7060x5", "--breakout", "none", "--gpus", "64",
             "--rails", "4", "--gpus-per-host", "4", "--hosts-per-su", "8", "--spines", "2"]
NOT_SET = "not set"


# ---------------------------------------------------------------------------------------------------------------
# The tool's intent. `intent_of` is the only code here that knows the package's internals; adapt it, nothing else,
# when `fabric/` moves.
# ---------------------------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Port:
    name: str
    kind: str  # "host" | "fabric"
    peer: str
    peer_port: str
    vlan: int | None
    speed: int  # Gb/s
    lanes: int
    lossless: bool
    address: str | None = None  # p2p31 addressing: the leaf side of a host port's /31


@dataclass(frozen=True)
class Svi:
    vlan: int
    name: str  # Vlan1001
    address: str  # 10.102.0.1/24
    label: str  # su1-rail1


@dataclass(frozen=True)
class Switch:
    name: str
    role: str  # "spine" | "leaf"
    platform: str
    loopback: str  # 10.254.2.1/32
    management: str  # 198.18.2.1/24
    asn: int
    max_paths: int
    timers: tuple[int, int]  # keepalive, hold
    mtu: int
    ports: tuple[Port, ...]
    svis: tuple[Svi, ...]
    neighbors: dict[str, int]  # BGP unnumbered: interface → remote ASN

    def kind_of(self, interface: str) -> str:
        if interface.startswith("Vlan"):
            return "svi"
        return next((f"{p.kind} port" for p in self.ports if p.name == interface), "other")


@dataclass(frozen=True)
class Qos:
    trust: str  # "dscp" | "pcp"
    dscp_tc: dict[int, int]  # all 64 DSCPs
    no_drop: tuple[int, ...]
    watchdog: dict[str, Any] | None  # detection_ms, restoration_ms, poll_ms, action
    strict: tuple[int, ...]
    dwrr: dict[int, int]  # TC → percent
    ecn: dict[int, tuple[int, int, int]]  # TC → (min bytes, max bytes, probability %)


@dataclass(frozen=True)
class Intent:
    fabric: str
    switches: tuple[Switch, ...]
    qos: Qos

    def switch(self, name: str) -> Switch:
        return next(s for s in self.switches if s.name == name)


def intent_of(inventory: Path) -> Intent:
    """Ports, peers, ASNs, loopbacks, SVIs and QoS numbers as the tool derives them (load + derive)."""
    from fabric.design.derive import derive
    from fabric.model.load import load

    fab = derive(load(inventory))
    switches: list[Switch] = []
    policies: list[Qos] = []
    for sw in fab.switches.values():
        q, wd = sw.qos, sw.qos.watchdog  # QosFacts: the numbers derivation decided (fabric.design.intent)
        policies.append(Qos(
            trust=q.trust,
            dscp_tc=dict(enumerate(q.dscp_to_tc)),
            no_drop=tuple(sorted(q.lossless_priorities)),
            watchdog={"detection_ms": wd.detection_ms, "restoration_ms": wd.restoration_ms,
                      "poll_ms": wd.poll_interval_ms, "action": wd.action} if wd is not None else None,
            strict=tuple(sorted(tc for tc, qu in q.queues.items() if qu.scheduler == "strict")),
            dwrr={tc: qu.weight for tc, qu in sorted(q.queues.items())
                  if qu.scheduler == "dwrr" and qu.weight is not None},
            ecn={tc: (e.min_bytes, e.max_bytes, e.probability) for tc, qu in sorted(q.queues.items())
                 if (e := qu.ecn) is not None and e.enabled},
        ))
        switches.append(Switch(
            name=sw.name, role=sw.role, platform=sw.platform, loopback=sw.loopback, management=sw.management,
            asn=sw.bgp.asn, max_paths=sw.bgp.max_paths, timers=(sw.bgp.keepalive, sw.bgp.hold), mtu=sw.mtu,
            ports=tuple(Port(name=p.name, kind=p.kind, peer=p.peer, peer_port=p.peer_port, vlan=p.vlan,
                             speed=p.speed, lanes=p.lanes, lossless=p.lossless, address=p.address)
                        for p in sw.ports),
            svis=tuple(Svi(vlan=s.vlan, name=s.name, address=s.address, label=f"su{s.su}-rail{s.rail}")
                       for s in sw.svis),
            neighbors={n.port: n.remote_asn for n in sw.bgp.neighbors},
        ))
        assert sw.target == "eos", f"{sw.name}: target {sw.target}, this test compares EOS renders"
    assert all(p == policies[0] for p in policies), "one QoS policy per fabric expected"
    return Intent(fabric=fab.name, switches=tuple(switches), qos=policies[0])


# ---------------------------------------------------------------------------------------------------------------
# The same intent as pyavd (eos_designs) inputs
# ---------------------------------------------------------------------------------------------------------------

PROFILE = "ROCE"
WATCHDOG_ACTION = {"drop": "drop", "forward": "no-drop"}  # EOS has no "alert": pyavd then renders no action
TRUST = {"dscp": "dscp", "pcp": "cos"}


def seconds(ms: int) -> str:
    return f"{ms / 1000:g}"


def dscp_lines(dscp_tc: dict[int, int]) -> list[str]:
    by_tc: dict[int, list[int]] = {}
    for dscp, tc in sorted(dscp_tc.items()):
        by_tc.setdefault(tc, []).append(dscp)
    return [f"{' '.join(map(str, dscps))} to traffic-class {tc}" for tc, dscps in sorted(by_tc.items())]


def avd_inputs(intent: Intent) -> dict[str, Any]:
    """eos_designs inputs for the intent, plus each device's node type.

    MTU: pyavd gets `PLATFORM_L3_MTU` for fabric links, SVIs and access ports; tests/refs/pyavd_render.py replaces it
    with min(the inventory's MTU, AVD's own L3 MTU for the platform). So the reference renders what AVD considers the
    largest MTU the platform takes, never more than what the inventory asks for.
    """
    q = intent.qos
    queues = []
    for tc in sorted(set(q.strict) | set(q.dwrr) | set(q.ecn)):
        queue: dict[str, Any] = {"id": tc}
        if tc in q.strict:
            queue["priority"] = "priority strict"
        elif tc in q.dwrr:
            # `no priority` puts the queue in round-robin: without it the queue keeps EOS's default scheduling and
            # `bandwidth percent` ("proportion of the total bandwidth when scheduling is round-robin") does nothing.
            queue["priority"] = "no priority"
            queue["bandwidth_percent"] = q.dwrr[tc]
        if tc in q.ecn:
            lo, hi, prob = q.ecn[tc]
            queue["random_detect"] = {"ecn": {"threshold": {"units": "bytes", "min": lo, "max": hi,
                                                            "max_probability": prob}}}
        queues.append(queue)
    profile = {"name": PROFILE, "trust": TRUST[q.trust], "tx_queues": queues,
               "priority_flow_control": {"enabled": True,
                                         "priorities": [{"priority": p, "no_drop": True} for p in q.no_drop],
                                         "watchdog": {"enabled": q.watchdog is not None}}}
    watchdog: dict[str, Any] = {}
    if q.watchdog:
        watchdog = {"timeout": seconds(q.watchdog["detection_ms"]),
                    "recovery_time": seconds(q.watchdog["restoration_ms"]),
                    "polling_interval": seconds(q.watchdog["poll_ms"])}
        if q.watchdog["action"] in WATCHDOG_ACTION:
            watchdog["action"] = WATCHDOG_ACTION[q.watchdog["action"]]

    spines = [s for s in intent.switches if s.role == "spine"]
    leaves = [s for s in intent.switches if s.role == "leaf"]
    assert len(spines) + len(leaves) == len(intent.switches), "two tiers only (spine + leaf)"
    timers = {s.timers for s in intent.switches}
    paths = {s.max_paths for s in intent.switches}
    platforms = {s.platform.upper() for s in intent.switches}
    assert len(timers) == len(paths) == len(platforms) == 1, "fabric-wide BGP timers, maximum-paths and platform"
    mtu = intent.switches[0].mtu
    platform = platforms.pop()

    def node(sw: Switch, i: int) -> dict[str, Any]:
        return {"name": sw.name, "id": i, "bgp_as": str(sw.asn), "mgmt_ip": sw.management,
                "loopback_ipv4_address": sw.loopback.split("/")[0]}

    def leaf(sw: Switch, i: int) -> dict[str, Any]:
        up = [p for p in sw.ports if p.kind == "fabric"]
        assert all(p.lossless for p in up), f"{sw.name}: every fabric port is lossless in this design"
        # p2p31 addressing: a routed host port is one of the node's `l3_interfaces` (eos_designs node settings)
        routed = [{"name": p.name, "ip_address": p.address, "peer": p.peer, "peer_interface": p.peer_port,
                   "speed": f"{p.speed}g-{p.lanes}", "structured_config": {"mtu": "PLATFORM_L3_MTU"},
                   **({"qos_profile": PROFILE} if p.lossless else {})}
                  for p in sw.ports if p.kind == "host" and p.address is not None]
        return {**node(sw, i), "uplink_interfaces": [p.name for p in up], "uplink_switches": [p.peer for p in up],
                "uplink_switch_interfaces": [p.peer_port for p in up], **({"l3_interfaces": routed} if routed else {})}

    parallel = max((sum(1 for p in s.ports if p.kind == "fabric" and p.peer == sp.name) for s in leaves
                    for sp in spines), default=1)
    svis: dict[int, dict[str, Any]] = {}
    for sw in leaves:
        for s in sw.svis:
            svi = svis.setdefault(s.vlan, {"id": s.vlan, "name": s.label, "enabled": True, "mtu": "PLATFORM_L3_MTU",
                                           "nodes": []})
            svi["nodes"].append({"node": sw.name, "ip_address": s.address})
    servers: dict[str, list[dict[str, Any]]] = {}
    for sw in leaves:
        for p in sw.ports:
            if p.kind == "host" and p.address is None:
                assert p.vlan is not None, f"{sw.name} {p.name}: an access VLAN per rail (svi) or a /31 (p2p31)"
                servers.setdefault(p.peer, []).append({
                    "switches": [sw.name], "switch_ports": [p.name], "endpoint_ports": [p.peer_port],
                    "mode": "access", "vlans": str(p.vlan), "speed": f"{p.speed}g-{p.lanes}", "mtu": "PLATFORM_L3_MTU",
                    **({"qos_profile": PROFILE} if p.lossless else {})})
    uplink_speed = {f"{p.speed}g-{p.lanes}" for s in leaves for p in s.ports if p.kind == "fabric"}
    assert len(uplink_speed) == 1, "one fabric link speed"
    inputs = {
        "fabric_name": "PARITY",
        "underlay_routing_protocol": "ebgp",
        "underlay_rfc5549": True,
        "overlay_routing_protocol": "none",
        "p2p_uplinks_mtu": "PLATFORM_L3_MTU",
        "p2p_uplinks_qos_profile": PROFILE,
        "bgp_maximum_paths": paths.pop(),
        "bgp_peer_groups": {"ipv4_underlay_peers": {"structured_config": {"timers": "{} {}".format(*timers.pop())}}},
        "custom_structured_configuration_qos_profiles": [profile],
        "custom_structured_configuration_qos": {"map": {"dscp": dscp_lines(q.dscp_tc)}},
        "custom_structured_configuration_priority_flow_control": {"watchdog": watchdog} if watchdog else {},
        "spine": {"defaults": {"platform": platform, "loopback_ipv4_pool": "192.0.2.0/24"},
                  "nodes": [node(s, i) for i, s in enumerate(spines, 1)]},
        "l3leaf": {"defaults": {"platform": platform, "loopback_ipv4_pool": "192.0.2.0/24", "vtep": False,
                                "max_parallel_uplinks": parallel, "max_uplink_switches": len(spines),
                                "uplink_interface_speed": uplink_speed.pop(), "filter": {"only_vlans_in_use": True}},
                   "nodes": [leaf(s, i) for i, s in enumerate(leaves, 1)]},
        "tenants": [{"name": "FABRIC", "vrfs": [{"name": "default", "svis": list(svis.values())}]}],
        "servers": [{"name": name, "adapters": adapters} for name, adapters in servers.items()],
    }
    return {"inputs": inputs, "types": {s.name: "spine" if s.role == "spine" else "l3leaf" for s in intent.switches},
            "requested_mtu": mtu}


# ---------------------------------------------------------------------------------------------------------------
# EOS CLI text → sections
# ---------------------------------------------------------------------------------------------------------------

@dataclass
class Node:
    line: str
    children: list[Node] = field(default_factory=list)

    def lines(self, prefix: str = "") -> list[str]:
        return [c.line for c in self.children if c.line.startswith(prefix)]


@dataclass
class Eos:
    """A running-config as sections: top-level line → its child lines (3 spaces per level, `!` separators)."""

    top: list[Node]

    def lines(self, pattern: str) -> list[str]:
        return [n.line for n in self.top if re.fullmatch(pattern, n.line)]

    def sections(self, prefix: str) -> dict[str, Node]:
        return {n.line[len(prefix):].strip(): n for n in self.top if n.line.startswith(prefix)}

    @cached_property
    def interfaces(self) -> dict[str, Node]:
        return self.sections("interface ")

    @cached_property
    def profiles(self) -> dict[str, Node]:
        return self.sections("qos profile ")

    def effective(self, interface: str) -> list[Node]:
        """An interface's child nodes with any `service-profile` (a qos profile) expanded in place."""
        out: list[Node] = []
        for c in self.interfaces[interface].children if interface in self.interfaces else []:
            m = re.fullmatch(r"service-profile (\S+)", c.line)
            out += self.profiles[m.group(1)].children if m and m.group(1) in self.profiles else [c]
        return out

    @cached_property
    def bgp(self) -> Node:
        return next((n for n in self.top if n.line.startswith("router bgp ")), Node(""))


def parse(text: str) -> Eos:
    root = Node("")
    stack: list[tuple[int, Node]] = [(-1, root)]
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith("!") or line == "end":
            continue
        indent = len(raw) - len(raw.lstrip(" "))
        while stack[-1][0] >= indent:
            stack.pop()
        node = Node(line)
        stack[-1][1].children.append(node)
        stack.append((indent, node))
    return Eos(root.children)


# ---------------------------------------------------------------------------------------------------------------
# Sections compared in meaning: each reduces a config to {key: value}
# ---------------------------------------------------------------------------------------------------------------

UNIT_BYTES = {"bytes": 1, "kbytes": 1000, "mbytes": 1000 * 1000}  # both sides render `bytes` today


def ports(sw: Switch) -> list[str]:
    return [p.name for p in sw.ports]


def by_kind(sw: Switch, per_port: dict[tuple[str, str], Any]) -> dict[str, Any]:
    """{(interface, aspect): value} → one key per interface kind and aspect when all those interfaces agree, else
    one key per interface: keeps a failure to a few lines per device."""
    groups: dict[str, dict[str, Any]] = {}
    for (iface, aspect), value in per_port.items():
        groups.setdefault(" ".join(x for x in (f"{sw.kind_of(iface)}s", aspect) if x), {})[iface] = value
    out: dict[str, Any] = {}
    for key, values in groups.items():
        if len({repr(v) for v in values.values()}) == 1:
            out[f"{key} (×{len(values)})"] = next(iter(values.values()))
        else:
            out.update({f"{key}: {iface}": v for iface, v in values.items()})
    return out


def dscp_to_tc(cfg: Eos, sw: Switch) -> dict[str, Any]:
    out: dict[str, Any] = {f"dscp {d}": f"{NOT_SET} (EOS default map)" for d in range(64)}
    for line in cfg.lines(r"qos map dscp .*"):
        m = re.fullmatch(r"qos map dscp ([\d ]+) to traffic-class (\d+)(?: drop-precedence \d+)?", line)
        assert m, f"unparsed: {line}"
        for d in m.group(1).split():
            out[f"dscp {d}"] = f"TC {m.group(2)}"
    return out


def qos_trust(cfg: Eos, sw: Switch) -> dict[str, Any]:
    out = {}
    for name in ports(sw):
        trust = [c.line for c in cfg.effective(name) if re.fullmatch(r"(no )?qos trust.*", c.line)]
        out[name, ""] = trust[-1] if trust else NOT_SET
    return by_kind(sw, out)


def pfc(cfg: Eos, sw: Switch) -> dict[str, Any]:
    out = {}
    for name in ports(sw):
        lines = [c.line for c in cfg.effective(name)]
        on = "priority-flow-control on" in lines
        no_drop = sorted(int(m.group(1)) for x in lines
                         if (m := re.fullmatch(r"priority-flow-control priority (\d) no-drop", x)))
        out[name, ""] = f"{'on' if on else 'off'}, no-drop priorities {no_drop}"
    return by_kind(sw, out)


def pfc_watchdog(cfg: Eos, sw: Switch) -> dict[str, Any]:
    out: dict[str, Any] = {k: NOT_SET for k in ("timeout", "recovery-time", "polling-interval", "action")}
    for line in cfg.lines(r"priority-flow-control pause watchdog .*"):
        if m := re.fullmatch(r"priority-flow-control pause watchdog default (timeout|recovery-time|polling-interval)"
                             r" (\S+)", line):
            out[m.group(1)] = f"{float(m.group(2)):g} s"
        elif m := re.fullmatch(r"priority-flow-control pause watchdog action (\S+)", line):
            out["action"] = m.group(1)
        else:
            out[line] = "rendered"
    ports_on = {(name, "watchdog"): any(c.line == "priority-flow-control pause watchdog" for c in cfg.effective(name))
                for name in ports(sw)}
    return {**out, **by_kind(sw, ports_on)}


def tx_queues(cfg: Eos, interface: str) -> dict[int, list[str]]:
    return {int(c.line.split()[-1]): c.lines() for c in cfg.effective(interface)
            if re.fullmatch(r"(uc-)?tx-queue \d", c.line)}


def ecn(cfg: Eos, sw: Switch) -> dict[str, Any]:
    out = {}
    for name in ports(sw):
        for tc, lines in tx_queues(cfg, name).items():
            value = NOT_SET
            for line in lines:
                m = re.fullmatch(r"random-detect ecn minimum-threshold (\d+) (\w+) maximum-threshold (\d+) (\w+)"
                                 r" max-mark-probability (\d+)(?: weight \d+)?", line)
                if m:
                    lo, hi = int(m.group(1)) * UNIT_BYTES[m.group(2)], int(m.group(3)) * UNIT_BYTES[m.group(4)]
                    value = f"min {lo} B, max {hi} B, {m.group(5)} %"
                elif line.startswith("random-detect ecn"):
                    value = line
            out[name, f"tx-queue {tc}"] = value
    return by_kind(sw, out)


def scheduling(cfg: Eos, sw: Switch) -> dict[str, Any]:
    out = {}
    for name in ports(sw):
        for tc, lines in tx_queues(cfg, name).items():
            bandwidth = [x for x in lines if x.startswith("bandwidth ")]
            value = ("strict priority" if "priority strict" in lines else "round-robin" if "no priority" in lines
                     else f"{NOT_SET} (the queue's EOS default)")
            if bandwidth:
                value += ", " + bandwidth[-1]
            out[name, f"tx-queue {tc}"] = value
    return by_kind(sw, out)


def mtu(cfg: Eos, sw: Switch) -> dict[str, Any]:
    out = {}
    for name in [*ports(sw), *(s.name for s in sw.svis)]:
        lines = [c.line for c in cfg.interfaces[name].children] if name in cfg.interfaces else []
        values = [x.split()[1] for x in lines if re.fullmatch(r"mtu \d+", x)]
        out[name, ""] = int(values[-1]) if values else f"{NOT_SET} (EOS default 1500)"
    return by_kind(sw, out)


def ip_routing(cfg: Eos, sw: Switch) -> dict[str, Any]:
    # EOS holds IPv4 routing as one setting; AVD's ip-routing template emits exactly one of these lines.
    return {"IPv4 routing (default VRF)": cfg.lines(r"(no )?ip routing( ipv6 interfaces)?") or NOT_SET}


def ipv6_routing(cfg: Eos, sw: Switch) -> dict[str, Any]:
    return {"ipv6 unicast-routing": bool(cfg.lines(r"ipv6 unicast-routing"))}


@dataclass(frozen=True)
class Neighbor:
    """One `neighbor interface` with everything its peer group gives it."""

    interface: str
    remote_as: str
    group: str | None
    attrs: tuple[str, ...]  # `neighbor <group or interface> …` router-bgp lines, the prefix stripped
    ipv4: tuple[str, ...]  # the same from `address-family ipv4`


def neighbors(cfg: Eos) -> dict[str, Neighbor]:
    bgp = cfg.bgp
    ipv4 = next((c for c in bgp.children if c.line == "address-family ipv4"), Node(""))
    out = {}
    for line in bgp.lines("neighbor interface "):
        m = re.fullmatch(r"neighbor interface (\S+)(?: peer-group (\S+))?(?: remote-as (\S+))?.*", line)
        assert m, f"unparsed: {line}"
        iface, group, remote = m.groups()

        def own(lines: list[str], iface: str = iface, group: str | None = group) -> tuple[str, ...]:
            keys = [k for k in (group, iface) if k]
            return tuple(x.split(" ", 2)[2] for x in lines if x.split(" ", 2)[1] in keys and len(x.split()) > 2)

        out[iface] = Neighbor(iface, remote or NOT_SET, group, own(bgp.lines("neighbor ")),
                              own(ipv4.lines("neighbor ")))
    return out


def attribute(n: Neighbor, pattern: str, lines: tuple[str, ...] | None = None) -> str:
    found = [x for x in (n.attrs if lines is None else lines) if re.fullmatch(pattern, x)]
    return found[-1] if found else NOT_SET


def bgp_unnumbered(cfg: Eos, sw: Switch) -> dict[str, Any]:
    m = re.fullmatch(r"router bgp (\d+)", cfg.bgp.line)
    out: dict[str, Any] = {"local AS": m.group(1) if m else NOT_SET,
                           "router-id": next(iter(cfg.bgp.lines("router-id ")), NOT_SET)}
    found = neighbors(cfg)
    for iface in sorted(set(sw.neighbors) | set(found)):
        n = found.get(iface)
        out[f"{iface} neighbour"] = f"remote-as {n.remote_as}" if n else "absent"
        lines = [c.line for c in cfg.interfaces[iface].children] if iface in cfg.interfaces else []
        out[f"{iface} routed (no switchport)"] = "no switchport" in lines
        out[f"{iface} ipv6 enable"] = "ipv6 enable" in lines
    groups = {n.group for n in found.values()}
    out["fabric neighbours share one peer group"] = len(groups) == 1 and None not in groups
    return out


def per_neighbor(cfg: Eos, sw: Switch, value: Callable[[Neighbor], str]) -> dict[str, Any]:
    """The distinct values over the fabric neighbours: one entry when they agree, as they should."""
    found = neighbors(cfg)
    values = sorted({value(found[i]) if i in found else "neighbour absent" for i in sw.neighbors})
    return {"fabric neighbours": values[0] if len(values) == 1 else values}


def next_hop_originate(cfg: Eos, sw: Switch) -> dict[str, Any]:
    default_on = "no bgp default ipv4-unicast" not in cfg.bgp.lines()

    def activated(n: Neighbor) -> str:
        explicit = attribute(n, r"(no )?activate", n.ipv4)
        return "yes" if explicit == "activate" or (explicit == NOT_SET and default_on) else "no"

    return {"ipv4 unicast activated": per_neighbor(cfg, sw, activated)["fabric neighbours"],
            "next-hop address-family ipv6 originate": per_neighbor(
                cfg, sw, lambda n: attribute(n, r"next-hop address-family ipv6.*", n.ipv4))["fabric neighbours"]}


def bgp_timers(cfg: Eos, sw: Switch) -> dict[str, Any]:
    return per_neighbor(cfg, sw, lambda n: attribute(n, r"timers .*"))


def maximum_routes(cfg: Eos, sw: Switch) -> dict[str, Any]:
    return per_neighbor(cfg, sw, lambda n: attribute(n, r"maximum-routes .*").replace(NOT_SET, "not set (EOS default)"))


def maximum_paths(cfg: Eos, sw: Switch) -> dict[str, Any]:
    line = next(iter(cfg.bgp.lines("maximum-paths ")), "")
    m = re.fullmatch(r"maximum-paths (\d+)(?: ecmp (\d+))?", line)
    return {"maximum-paths": int(m.group(1)) if m else f"{NOT_SET} (EOS default 1)",
            "ecmp": int(m.group(2)) if m and m.group(2) else f"{NOT_SET} (platform maximum)"}


@dataclass(frozen=True)
class Section:
    extract: Callable[[Eos, Switch], dict[str, Any]]
    why: str


SECTIONS: dict[str, Section] = {
    "dscp-to-tc": Section(dscp_to_tc, "every DSCP must land in the class the hosts expect (RoCE DSCP → lossless TC, "
                          "CNP → strict TC, rest → TC0); pyavd: qos.map.dscp (eos_cli_config_gen qos.j2)"),
    "qos-trust": Section(qos_trust, "the DSCP map only applies on ports that trust DSCP; pyavd: qos_profiles[].trust"),
    "pfc": Section(pfc, "no-drop priorities must equal the hosts' `mlnx_qos --pfc`; pyavd: "
                   "qos_profiles[].priority_flow_control (qos-profiles.j2)"),
    "pfc-watchdog": Section(pfc_watchdog, "a stuck PFC storm must be broken on every lossless port; pyavd: "
                            "priority_flow_control.watchdog (priority-flow-control.j2) and the profile's watchdog"),
    "tx-queue-ecn": Section(ecn, "ECN marking thresholds drive DCQCN; pyavd: tx_queues[].random_detect.ecn "
                            "(ethernet-interface-tx-queues.j2)"),
    "tx-queue-scheduling": Section(scheduling, "ETS: CNP strict, RoCE and default DWRR shares; `bandwidth percent` "
                                   "only applies to a queue in round-robin (`no priority`: EOS CLI help quoted in "
                                   "aristanetworks/avd#1331; a hardware session diff in avd#6318 shows `no priority` "
                                   "as a non-default line); pyavd: tx_queues[].priority / bandwidth_percent"),
    "mtu": Section(mtu, "EOS takes `mtu` 68–9214 (arista.com/um-eos/eos-support-for-layer-3-mtu-on-"
                   "7280r37500r37800r3); cEOS refuses 9216 ('% Max MTU for Ethernet4 is 9194', ipspace/netlab#1890); "
                   "AVD's default p2p_uplinks_mtu is 9214 (avd PR #2844, 9194 on WAN platforms). A refused line fails "
                   "the whole configure-session commit"),
    "ip-routing": Section(ip_routing, "eos_designs sets ip_routing_ipv6_interfaces instead of ip_routing when "
                          "underlay_rfc5549 is on (pyavd _eos_designs/structured_config/base ip_routing) and the EOS "
                          "template emits one of the two lines, never both: rendering both is likely a permanent diff "
                          "against show running-config"),
    "ipv6-unicast-routing": Section(ipv6_routing, "without it EOS does not look for IPv6 link-local BGP neighbours, so "
                                    "no `neighbor interface` session comes up (blog.ipspace.net/2024/03/"
                                    "arista-interface-ebgp.html, cEOS 4.31.2F); eos_designs sets it whenever "
                                    "underlay_rfc5549 is on"),
    "bgp-unnumbered": Section(bgp_unnumbered, "`neighbor interface IF peer-group PG remote-as ASN` on a routed port "
                              "with `ipv6 enable` (AVD molecule evpn_underlay_rfc5549_overlay_ebgp); EOS has no "
                              "`remote-as external`"),
    "next-hop-originate": Section(next_hop_originate, "IPv4 prefixes over an IPv6 link-local session need an IPv6 next "
                                  "hop (RFC 8950): `neighbor PG next-hop address-family ipv6 originate` under "
                                  "address-family ipv4; pyavd underlay router_bgp with underlay_rfc5549"),
    "bgp-timers": Section(bgp_timers, "keepalive/hold from switching.bgp; pyavd: bgp_peer_groups.ipv4_underlay_peers"
                          ".structured_config.timers"),
    "maximum-paths": Section(maximum_paths, "ECMP width over all uplinks; pyavd: bgp_maximum_paths / bgp_ecmp"),
    "maximum-routes": Section(maximum_routes, "EOS limits routes per neighbour even when nothing is configured "
                              "(12,000 on the releases sonic-mgmt#4821 hit: the peer goes Idle(MaxPath)); AVD ≥ 6 "
                              "renders 256000 for the underlay peer group (aristanetworks/avd#4824, PR #6353). A rail "
                              "fabric at scale must not depend on the release's default"),
}


# ---------------------------------------------------------------------------------------------------------------
# Differences on purpose: each with its reason, each checked to still occur (so the list cannot rot)
# ---------------------------------------------------------------------------------------------------------------

def descriptions(cfg: Eos) -> dict[str, list[str]]:
    return {k: v.lines("description ") for k, v in cfg.interfaces.items()}


def peer_groups(cfg: Eos) -> set[str]:
    return {n.group for n in neighbors(cfg).values() if n.group}


def has(cfg: Eos, pattern: str) -> bool:
    def walk(nodes: list[Node]) -> bool:
        return any(re.fullmatch(pattern, n.line) or walk(n.children) for n in nodes)
    return walk(cfg.top)


@dataclass(frozen=True)
class Deliberate:
    what: str
    reason: str
    occurs: Callable[[Eos, Eos], bool]  # (ours, pyavd) → the difference is still there


DELIBERATE: list[Deliberate] = [
    Deliberate("interface descriptions", "naming only (ours `peer:port`, AVD `P2P_peer_port` / `SERVER_host`); EOS "
               "does nothing with them", lambda o, a: descriptions(o) != descriptions(a)),
    Deliberate("BGP peer-group name", "FABRIC vs IPv4-UNDERLAY-PEERS; neighbours are compared through the group they "
               "resolve to", lambda o, a: peer_groups(o) != peer_groups(a)),
    Deliberate("QoS as `qos profile` + `service-profile` (pyavd) vs inline on each port (ours)", "the same per-port "
               "lines once the profile is expanded; inline keeps each owned port stanza self-contained",
               lambda o, a: has(a, r"service-profile \S+") and not has(o, r"service-profile \S+")),
    Deliberate("route origination: `network` statements (ours) vs `redistribute connected` (pyavd)",
               "not compared: the tool announces exactly the loopback and rail subnets it derived",
               lambda o, a: has(o, r"network \S+") != has(a, r"network \S+")),
    Deliberate("`no bgp default ipv4-unicast` (pyavd)", "both activate the fabric neighbours in address-family ipv4, "
               "which next-hop-originate compares", lambda o, a: has(a, "no bgp default ipv4-unicast")
               != has(o, "no bgp default ipv4-unicast")),
    Deliberate("`arp aging timeout default` (ours)", "neighbour aging from switching.neighbor; eos_designs has no "
               "input for it", lambda o, a: has(o, r"arp aging timeout .*") and not has(a, r"arp aging timeout .*")),
    Deliberate("AVD defaults and the management plane (pyavd)", "`no aaa root`, `no enable password`, `vlan "
               "internal order`, `transceiver qsfp default-mode`, `interface Management1` / `vrf instance MGMT` / "
               "`no ip routing vrf MGMT`, `spanning-tree mode none`, `update wait-install`, `send-community`, "
               "`no shutdown`, `switchport mode access`: design defaults of AVD or management config the tool does "
               "not own",
               lambda o, a: has(a, "no aaa root") and not has(o, "no aaa root")),
]


# ---------------------------------------------------------------------------------------------------------------
# Rendering both sides, once per module
# ---------------------------------------------------------------------------------------------------------------

@dataclass
class Fabric:
    intent: Intent
    ours: dict[str, Eos]
    pyavd: dict[str, Eos]
    pyavd_text: dict[str, str]
    pyavd_l3_mtu: int


def fabric_cli(*args: str) -> subprocess.CompletedProcess[str]:
    return inproc.fabric(*args, cwd=ROOT)


def render_ours(inventory: Path, out: Path) -> dict[str, Eos]:
    p = fabric_cli("render", str(inventory), "-o", str(out))
    assert p.returncode == 0, p.stderr
    return {d.name: parse((d / "running-config.cfg").read_text()) for d in sorted((out / "switches").iterdir())}


def avd_python_ok() -> bool:
    if not AVD_PYTHON.exists():
        return False
    check = f"import sys, pyavd; sys.exit(pyavd.__version__ != {PYAVD_VERSION!r})"
    return subprocess.run([str(AVD_PYTHON), "-c", check], capture_output=True).returncode == 0


@pytest.fixture(scope="module")
def fabrics(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Fabric]:
    require(avd_python_ok(), f"pyavd {PYAVD_VERSION} in {AVD_PYTHON.parent.parent} (run `make refs-avd`)")
    tmp = tmp_path_factory.mktemp("eos-parity")
    generated = tmp / "generated-inv"
    p = fabric_cli("generate", *GENERATED, "-o", str(generated))
    assert p.returncode == 0, p.stderr
    inventories = {"eos-example": EOS_EXAMPLE, "generated": generated}
    intents = {k: intent_of(v) for k, v in inventories.items()}
    request = {k: avd_inputs(i) for k, i in intents.items()}
    done = subprocess.run([str(AVD_PYTHON), str(AVD_SCRIPT)], input=json.dumps(request), capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, f"pyavd failed:\n{done.stderr[-4000:]}"
    result = json.loads(done.stdout)
    assert result["pyavd"] == PYAVD_VERSION
    return {k: Fabric(intent=intents[k], ours=render_ours(inv, tmp / k),
                      pyavd={d: parse(t) for d, t in result["configs"][k].items()}, pyavd_text=result["configs"][k],
                      pyavd_l3_mtu=result["l3_mtu"][k]) for k, inv in inventories.items()}


def show(value: Any) -> str:
    return " | ".join(value) if isinstance(value, list) and all(isinstance(v, str) for v in value) else str(value)


def differences(ours: dict[str, Any], theirs: dict[str, Any]) -> list[str]:
    absent = "not rendered"
    keys = [*ours, *(k for k in theirs if k not in ours)]
    return [f"{k}: ours {show(ours.get(k, absent))}, pyavd {show(theirs.get(k, absent))}"
            for k in keys if ours.get(k, absent) != theirs.get(k, absent)]


# ---------------------------------------------------------------------------------------------------------------
# Tests
# ---------------------------------------------------------------------------------------------------------------

FABRICS = ["eos-example", "generated"]


@pytest.mark.parametrize("fabric", FABRICS)
def test_same_devices(fabrics: dict[str, Fabric], fabric: str) -> None:
    f = fabrics[fabric]
    assert sorted(f.ours) == sorted(f.pyavd) == sorted(s.name for s in f.intent.switches)


@pytest.mark.parametrize("section", list(SECTIONS))
@pytest.mark.parametrize("fabric", FABRICS)
def test_section_matches_pyavd(fabrics: dict[str, Fabric], fabric: str, section: str) -> None:
    f, s = fabrics[fabric], SECTIONS[section]
    problems: list[str] = []
    for sw in f.intent.switches:
        diff = differences(s.extract(f.ours[sw.name], sw), s.extract(f.pyavd[sw.name], sw))
        problems += [f"{sw.name}: {section}: {d}" for d in diff[:12]]
        if len(diff) > 12:
            problems.append(f"{sw.name}: {section}: … and {len(diff) - 12} more")
    assert not problems, "\n".join([*problems, f"why it matters: {s.why}"])


@pytest.mark.parametrize("fabric", FABRICS)
def test_deliberate_differences_still_occur(fabrics: dict[str, Fabric], fabric: str) -> None:
    f = fabrics[fabric]
    stale = [d.what for d in DELIBERATE if not any(d.occurs(f.ours[n], f.pyavd[n]) for n in f.ours)]
    assert not stale, f"no longer different, remove from DELIBERATE: {stale}"


# (section, a line pyavd renders for leaf-su1-r1 of eos-example, its replacement, whether the meaning changes):
# proves each section looks at what it claims to, and that unit and peer-group normalization hold.
MUTATIONS = [
    ("dscp-to-tc", "qos map dscp 26 to traffic-class 3", "qos map dscp 26 to traffic-class 4", True),
    ("qos-trust", "qos trust dscp", "qos trust cos", True),
    ("pfc", "priority-flow-control priority 3 no-drop", "priority-flow-control priority 4 no-drop", True),
    ("pfc-watchdog", "watchdog default timeout 0.2", "watchdog default timeout 0.3", True),
    ("pfc-watchdog", "watchdog default timeout 0.2", "watchdog default timeout 0.20", False),
    ("tx-queue-ecn", "minimum-threshold 150000 bytes", "minimum-threshold 160000 bytes", True),
    ("tx-queue-ecn", "minimum-threshold 150000 bytes", "minimum-threshold 150 kbytes", False),
    ("tx-queue-scheduling", "bandwidth percent 50", "bandwidth percent 40", True),
    ("tx-queue-scheduling", "priority strict", "no priority", True),
    ("tx-queue-scheduling", "      no priority\n", "", True),
    ("mtu", "mtu 9214", "mtu 9000", True),
    ("ip-routing", "ip routing ipv6 interfaces\n", "ip routing\n", True),
    ("ipv6-unicast-routing", "ipv6 unicast-routing\n", "", True),
    ("bgp-unnumbered", "remote-as 65020", "remote-as 65021", True),
    ("bgp-unnumbered", "IPv4-UNDERLAY-PEERS", "SOME-OTHER-NAME", False),
    ("next-hop-originate", "next-hop address-family ipv6 originate", "activate", True),
    ("bgp-timers", "timers 3 9", "timers 1 3", True),
    ("maximum-paths", "maximum-paths 64", "maximum-paths 64 ecmp 64", True),
    ("maximum-routes", "maximum-routes 256000", "maximum-routes 12000", True),
]


@pytest.mark.parametrize(("section", "old", "new", "changes"), MUTATIONS)
def test_a_changed_line_is_seen(fabrics: dict[str, Fabric], section: str, old: str, new: str, changes: bool) -> None:
    f = fabrics["eos-example"]
    sw = f.intent.switch("leaf-su1-r1")
    text = f.pyavd_text[sw.name]
    assert old in text, f"pyavd no longer renders {old!r}: update MUTATIONS"
    extract = SECTIONS[section].extract
    assert (extract(parse(text), sw) != extract(parse(text.replace(old, new)), sw)) == changes


def test_parser_reads_eos_nesting() -> None:
    cfg = parse("interface Ethernet1/1\n   mtu 9214\n   !\n   tx-queue 3\n      priority strict\n!\n"
                "qos profile P\n   qos trust dscp\n!\ninterface Ethernet2/1\n   service-profile P\n!\nend\n")
    assert cfg.interfaces["Ethernet1/1"].lines() == ["mtu 9214", "tx-queue 3"]
    assert [c.line for c in cfg.effective("Ethernet2/1")] == ["qos trust dscp"]
    assert tx_queues(cfg, "Ethernet1/1") == {3: ["priority strict"]}
