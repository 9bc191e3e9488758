"""NVUE YAML (`nv config show -o yaml` / `nv config patch`) → DeviceConfig.

`qos roce` enabled without explicit maps means NVIDIA's RoCE defaults (reference switch-qos.md §2.1)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fabric.lint.configs.gshut import GSHUT_VALUES, GshutConfig
from fabric.lint.configs.model import BgpNeighborConfig, DeviceConfig, PortConfig
from fabric.lint.view import Ecn, QosView
from fabric.model.qos import PRESETS
from fabric.model.running import nvue_document
from fabric.nos import row_of

_OFF = (False, "off", "disable", "disabled")


def _on(v: Any) -> bool:
    return v in (True, "on", "enable", "enabled") or v == {}


def _broken_out(link: dict[str, Any]) -> bool:
    bo = link.get("breakout")
    return isinstance(bo, dict) and any(str(mode) not in ("1x", "disabled") for mode in bo)


def _vlans(key: str) -> list[int]:
    lo, _, hi = key.partition("-")
    return list(range(int(lo), int(hi or lo) + 1)) if lo.isdigit() and (hi or lo).isdigit() else []


def _permits_gshut(rule: dict[str, Any]) -> bool:
    """A community-list rule permitting the GRACEFUL_SHUTDOWN community."""
    com = rule.get("community")
    coms = com if isinstance(com, dict | list) else [com]
    return rule.get("action", "permit") == "permit" and bool(GSHUT_VALUES & {str(c).lower() for c in coms})


def _gshut(tree: dict[str, Any]) -> GshutConfig:
    """`router policy` community lists and route maps (Optional BGP Configuration, BGP Community Lists)."""
    gs = GshutConfig()
    policy = ((tree.get("router") or {}).get("policy") or {})
    for name, cl in (policy.get("community-list") or {}).items():
        if any(_permits_gshut(rule or {}) for rule in ((cl or {}).get("rule") or {}).values()):
            gs.lists.add(str(name))
    for name, rm in (policy.get("route-map") or {}).items():
        for _n, rule in sorted(((rm or {}).get("rule") or {}).items(), key=lambda kv: int(kv[0])):
            if (rule or {}).get("action", "permit") == "permit":
                gs.entry(str(name)).append(_route_map_entry(rule or {}))
    return gs


def _route_map_entry(rule: dict[str, Any]) -> tuple[set[str], int | None]:
    """A permit rule of a route map: the community lists it matches, the local preference it sets."""
    match = (rule.get("match") or {}).get("community-list")
    pref = (rule.get("set") or {}).get("local-preference")
    return {str(match)} if match is not None else set(), int(pref) if isinstance(pref, int) else None


Line = Callable[..., int | None]  # (*key under the `set` tree) → its line


@dataclass
class _Qos:
    """The QoS the file configures, starting from NVIDIA's RoCE defaults where `qos roce` is on."""

    roce_on: bool
    dscp: dict[int, int] | None = None
    lossless: list[int] = field(default_factory=list)
    strict: list[int] = field(default_factory=list)
    dwrr: dict[int, int] = field(default_factory=dict)
    ecn: dict[int, Ecn] = field(default_factory=dict)
    p2tc: dict[int, int] = field(default_factory=dict)
    pfc_profiles: dict[str, list[int]] = field(default_factory=dict)

    @classmethod
    def of(cls, qos: dict[str, Any], dev: DeviceConfig, line: Line) -> _Qos:
        """Every `qos` section in the order NVUE applies them: roce defaults, mapping, pfc, egress-queue-mapping,
        egress-scheduler, congestion-control."""
        q = cls._roce(qos.get("roce"), dev, line)
        q._mapping(qos, dev, line)
        q._pfc(qos, dev, line)
        for _prof, m in (qos.get("egress-queue-mapping") or {}).items():
            for sp, v in ((m or {}).get("switch-priority") or {}).items():
                q.p2tc[int(sp)] = int(v.get("traffic-class"))
        q._scheduler(qos, dev, line)
        q._congestion(qos, dev, line)
        return q

    @classmethod
    def _roce(cls, roce: Any, dev: DeviceConfig, line: Line) -> _Qos:
        on = (roce is not None
              and (not isinstance(roce, dict) or roce.get("enable", "on") != "off")
              and (not isinstance(roce, dict) or roce.get("mode", "lossless") != "lossy"))
        if not on:
            return cls(roce_on=False)
        nv = PRESETS["nvidia-roce"]
        for k in ("dscp_map", "pfc", "ets", "ecn"):
            dev.lines[k] = line("qos", "roce") or 1
        return cls(roce_on=True, dscp=dict(nv["dscp_to_priority"]), lossless=list(nv["lossless_priorities"]),
                   strict=list(nv["ets_strict"]), dwrr=dict(nv["ets_dwrr"]),
                   ecn={tc: Ecn(True, e["min_bytes"], e["max_bytes"], e["probability"]) for tc, e in nv["ecn"].items()},
                   p2tc=dict(nv["priority_to_tc"]))

    def _mapping(self, qos: dict[str, Any], dev: DeviceConfig, line: Line) -> None:
        for prof, m in (qos.get("mapping") or {}).items():
            for d, v in ((m or {}).get("dscp") or {}).items():
                self.dscp = self.dscp if self.dscp is not None else {}
                self.dscp[int(d)] = int(v.get("switch-priority"))
                dev.lines["dscp_map"] = line("qos", "mapping", prof, "dscp") or 1

    def _pfc(self, qos: dict[str, Any], dev: DeviceConfig, line: Line) -> None:
        for prof, p in (qos.get("pfc") or {}).items():
            sp = (p or {}).get("switch-priority")
            if sp is None:
                continue
            self.pfc_profiles[str(prof)] = sorted(int(x) for x in (sp if isinstance(sp, dict | list) else [sp]))
            if prof == "default-global" or not self.lossless:
                self.lossless = self.pfc_profiles[str(prof)]
                dev.lines["pfc"] = line("qos", "pfc", prof, "switch-priority") or 1

    def _scheduler(self, qos: dict[str, Any], dev: DeviceConfig, line: Line) -> None:
        for prof, s in (qos.get("egress-scheduler") or {}).items():
            for key, v in ((s or {}).get("traffic-class") or {}).items():
                tc = int(key)
                self.strict = [t for t in self.strict if t != tc]
                self.dwrr.pop(tc, None)
                if v.get("mode") == "strict":
                    self.strict.append(tc)
                else:
                    self.dwrr[tc] = int(v.get("bw-percent", 0))
                dev.lines[f"ets.{tc}"] = _tc_line(line, "egress-scheduler", prof, tc)

    def _congestion(self, qos: dict[str, Any], dev: DeviceConfig, line: Line) -> None:
        for prof, c in (qos.get("congestion-control") or {}).items():
            for key, v in ((c or {}).get("traffic-class") or {}).items():
                tc = int(key)
                old = self.ecn.get(tc, Ecn(True, 0, 0, 100))
                self.ecn[tc] = Ecn(enabled=_on(v.get("ecn", "enable")),
                                   min_bytes=int(v.get("min-threshold", old.min_bytes)),
                                   max_bytes=int(v.get("max-threshold", old.max_bytes)),
                                   probability=int(v.get("probability", old.probability)))
                dev.lines[f"ecn.{tc}"] = _tc_line(line, "congestion-control", prof, tc)

    def port_pfc(self, profile: Any) -> list[int] | None:
        """A port's PFC: its own profile, else default-global (every port: QoS page, Port Groups), else `qos roce`."""
        default = self.pfc_profiles.get("default-global")
        if profile is not None:
            return self.pfc_profiles.get(str(profile))
        return default if default is not None else self.lossless if self.roce_on else None

    def view(self, name: str, dev: DeviceConfig) -> QosView | None:
        if self.dscp is None and not self.lossless:
            return None
        return QosView(name=name, dscp_to_priority=self.dscp, default_priority=0, priority_to_tc=self.p2tc,
                       lossless=sorted(self.lossless), strict_tcs=sorted(self.strict), dwrr=self.dwrr, ecn=self.ecn,
                       at=dev.at)


def _tc_line(line: Line, section: str, prof: Any, tc: int) -> int:
    return line("qos", section, prof, "traffic-class", tc) or line("qos", section, prof, "traffic-class", str(tc)) or 1


def _set_tree(doc: Any) -> tuple[dict[str, Any], tuple[Any, ...]]:
    """The `set` tree of a patch (a list of operations: the last `set`) or of `nv config show` (a mapping), and
    its key path in the document."""
    tree: dict[str, Any] = {}
    base: tuple[Any, ...] = ()
    if isinstance(doc, list):
        for i, item in enumerate(doc):
            if isinstance(item, dict) and isinstance(item.get("set"), dict):
                tree, base = item["set"], (i, "set")
    elif isinstance(doc, dict):
        tree = doc.get("set", doc) if isinstance(doc.get("set", doc), dict) else {}
        base = ("set",) if "set" in doc else ()
    return tree, base


def _port(pname: str, ic: dict[str, Any], q: _Qos, line: Line) -> PortConfig | None:
    """One swp port; None for a breakout parent (its sub-ports carry the traffic) or a port shut down."""
    link = ic.get("link") or {}
    if _broken_out(link) or str(link.get("state", "up")) == "down":
        return None
    p = PortConfig(name=pname, line=line("interface", pname))
    if "mtu" in link:
        p.mtu = int(link["mtu"])
    if isinstance(link.get("speed"), str) and link["speed"].upper().endswith("G"):
        p.speed = int(link["speed"][:-1])
    qos = ic.get("qos") or {}
    p.pfc = q.port_pfc((qos.get("pfc") or {}).get("profile") if isinstance(qos.get("pfc"), dict) else None)
    p.watchdog = "pfc-watchdog" in qos and (qos["pfc-watchdog"] or {}).get("state", "enable") not in _OFF
    ar = (ic.get("router") or {}).get("adaptive-routing") or {}
    if ar:
        p.adaptive_routing = _on(ar.get("enable", ar.get("state", "on")))
    _bridge(p, ic)
    return p


def _bridge(p: PortConfig, ic: dict[str, Any]) -> None:
    """The port's bridge domain membership: its access VLAN, its tagged VLANs."""
    for member in (((ic.get("bridge") or {}).get("domain") or {}).values()):
        if not isinstance(member, dict):
            continue
        if member.get("access") is not None:
            p.access_vlan = int(member["access"])
        if isinstance(member.get("vlan"), dict):
            p.tagged_vlans = [v for key in member["vlan"] for v in _vlans(str(key))]


def _neighbor_policy(gs: GshutConfig, peer: str, nc: dict[str, Any]) -> None:
    """A neighbour's inbound route map, peer group, and whether it sends communities."""
    v4 = ((nc.get("address-family") or {}).get("ipv4-unicast") or {})
    if (rm := ((v4.get("policy") or {}).get("inbound") or {}).get("route-map")) is not None:
        gs.inbound[peer] = str(rm)
    if nc.get("peer-group"):
        gs.groups[peer] = str(nc["peer-group"])
    advertise = v4.get("community-advertise")
    if (advertise if isinstance(advertise, dict) else {}).get("regular") in _OFF:
        gs.no_send.add(peer)


def _bgp(tree: dict[str, Any], dev: DeviceConfig, line: Line) -> None:
    """The ASN, the neighbours of the default VRF, and whether graceful shutdown is honoured and sent."""
    gs = _gshut(tree)
    bgp = (tree.get("router") or {}).get("bgp") or {}
    if "autonomous-system" in bgp and isinstance(bgp["autonomous-system"], int):
        dev.asn, dev.lines["bgp"] = bgp["autonomous-system"], line("router", "bgp", "autonomous-system") or 1
    vbgp = (((tree.get("vrf") or {}).get("default") or {}).get("router") or {}).get("bgp") or {}
    for peer, nc in (vbgp.get("neighbor") or {}).items():
        nc = nc or {}
        _neighbor_policy(gs, str(peer), nc)
        dev.neighbors.append(BgpNeighborConfig(peer=str(peer), remote_as=str(nc.get("remote-as", "")),
                                               interface=str(peer).startswith("swp"),
                                               line=line("vrf", "default", "router", "bgp", "neighbor", peer)))
    if dev.asn is not None:
        # FRR under NVUE sends communities unless `community-advertise regular` is off
        dev.graceful_shutdown, dev.graceful_shutdown_missing = gs.verdict([n.peer for n in dev.neighbors], True)
        dev.lines["graceful_shutdown"] = dev.lines["bgp"]


def parse(path: Path, name: str, text: str) -> DeviceConfig:
    doc, smap = nvue_document(path, text)
    tree, base = _set_tree(doc)
    dev = DeviceConfig(name=name, file=str(path), kind=row_of(__name__).name)

    lines = smap.lines

    def line(*key: Any) -> int | None:
        loc = (*base, *key)
        hit = dict.get(lines, loc)  # the common case first: the line of this very path (no alias, no ancestor)
        return hit[1] if hit is not None else smap.where(loc)[1]

    q = _Qos.of(tree.get("qos") or {}, dev, line)
    for pname, ic in (tree.get("interface") or {}).items():
        if isinstance(ic, dict) and str(pname).startswith("swp") and (p := _port(str(pname), ic, q, line)):
            dev.ports[str(pname)] = p
    arp = (((tree.get("system") or {}).get("global") or {}).get("arp") or {}).get("base-reachable-time")
    if isinstance(arp, int):
        dev.arp_aging, dev.lines["arp_aging"] = arp, line("system", "global", "arp", "base-reachable-time") or 1
    _bgp(tree, dev, line)
    dev.qos = q.view(name, dev)
    return dev
