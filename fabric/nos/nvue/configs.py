"""NVUE YAML (`nv config show -o yaml` / `nv config patch`) → DeviceConfig.

`qos roce` enabled without explicit maps means NVIDIA's RoCE defaults (reference switch-qos.md §2.1)."""

from __future__ import annotations

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


def _gshut(tree: dict[str, Any]) -> GshutConfig:
    """`router policy` community lists and route maps (Optional BGP Configuration, BGP Community Lists)."""
    gs = GshutConfig()
    policy = ((tree.get("router") or {}).get("policy") or {})
    for name, cl in (policy.get("community-list") or {}).items():
        for rule in ((cl or {}).get("rule") or {}).values():
            rule = rule or {}
            com = rule.get("community")
            coms = com if isinstance(com, dict | list) else [com]
            if rule.get("action", "permit") == "permit" and GSHUT_VALUES & {str(c).lower() for c in coms}:
                gs.lists.add(str(name))
    for name, rm in (policy.get("route-map") or {}).items():
        for _n, rule in sorted(((rm or {}).get("rule") or {}).items(), key=lambda kv: int(kv[0])):
            rule = rule or {}
            if rule.get("action", "permit") != "permit":
                continue
            match = (rule.get("match") or {}).get("community-list")
            pref = (rule.get("set") or {}).get("local-preference")
            gs.entry(str(name)).append(({str(match)} if match is not None else set(),
                                        int(pref) if isinstance(pref, int) else None))
    return gs


def parse(path: Path, name: str, text: str) -> DeviceConfig:
    doc, smap = nvue_document(path, text)
    dev = DeviceConfig(name=name, file=str(path), kind=row_of(__name__).name)
    tree: dict[str, Any] = {}
    base: tuple[Any, ...] = ()
    if isinstance(doc, list):
        for i, item in enumerate(doc):
            if isinstance(item, dict) and isinstance(item.get("set"), dict):
                tree, base = item["set"], (i, "set")
    elif isinstance(doc, dict):
        tree = doc.get("set", doc) if isinstance(doc.get("set", doc), dict) else {}
        base = ("set",) if "set" in doc else ()

    def line(*key: Any) -> int | None:
        return smap.where((*base, *key))[1]

    qos = tree.get("qos") or {}
    roce = qos.get("roce")
    nv = PRESETS["nvidia-roce"]
    roce_on = (
        roce is not None
        and (not isinstance(roce, dict) or roce.get("enable", "on") != "off")
        and (not isinstance(roce, dict) or roce.get("mode", "lossless") != "lossy")
    )
    dscp = dict(nv["dscp_to_priority"]) if roce_on else None
    lossless = list(nv["lossless_priorities"]) if roce_on else []
    strict, dwrr = (list(nv["ets_strict"]), dict(nv["ets_dwrr"])) if roce_on else ([], {})
    ecn = (
        {tc: Ecn(True, e["min_bytes"], e["max_bytes"], e["probability"]) for tc, e in nv["ecn"].items()}
        if roce_on
        else {}
    )
    p2tc = dict(nv["priority_to_tc"]) if roce_on else {}
    if roce_on:
        for k in ("dscp_map", "pfc", "ets", "ecn"):
            dev.lines[k] = line("qos", "roce") or 1
    for prof, m in (qos.get("mapping") or {}).items():
        for d, v in ((m or {}).get("dscp") or {}).items():
            dscp = dscp if dscp is not None else {}
            dscp[int(d)] = int(v.get("switch-priority"))
            dev.lines["dscp_map"] = line("qos", "mapping", prof, "dscp") or 1
    pfc_profiles: dict[str, list[int]] = {}
    for prof, p in (qos.get("pfc") or {}).items():
        sp = (p or {}).get("switch-priority")
        if sp is not None:
            pfc_profiles[str(prof)] = sorted(int(x) for x in (sp if isinstance(sp, dict | list) else [sp]))
            if prof == "default-global" or not lossless:
                lossless = pfc_profiles[str(prof)]
                dev.lines["pfc"] = line("qos", "pfc", prof, "switch-priority") or 1
    for _prof, m in (qos.get("egress-queue-mapping") or {}).items():
        for sp, v in ((m or {}).get("switch-priority") or {}).items():
            p2tc[int(sp)] = int(v.get("traffic-class"))
    for prof, s in (qos.get("egress-scheduler") or {}).items():
        for tc, v in ((s or {}).get("traffic-class") or {}).items():
            tc = int(tc)
            strict = [t for t in strict if t != tc]
            dwrr.pop(tc, None)
            if v.get("mode") == "strict":
                strict.append(tc)
            else:
                dwrr[tc] = int(v.get("bw-percent", 0))
            dev.lines[f"ets.{tc}"] = (
                line("qos", "egress-scheduler", prof, "traffic-class", tc)
                or line("qos", "egress-scheduler", prof, "traffic-class", str(tc))
                or 1
            )
    for prof, c in (qos.get("congestion-control") or {}).items():
        for tc, v in ((c or {}).get("traffic-class") or {}).items():
            tc = int(tc)
            old = ecn.get(tc, Ecn(True, 0, 0, 100))
            ecn[tc] = Ecn(
                enabled=_on(v.get("ecn", "enable")),
                min_bytes=int(v.get("min-threshold", old.min_bytes)),
                max_bytes=int(v.get("max-threshold", old.max_bytes)),
                probability=int(v.get("probability", old.probability)),
            )
            dev.lines[f"ecn.{tc}"] = (
                line("qos", "congestion-control", prof, "traffic-class", tc)
                or line("qos", "congestion-control", prof, "traffic-class", str(tc))
                or 1
            )
    default_pfc = pfc_profiles.get("default-global")
    for pname, ic in (tree.get("interface") or {}).items():
        if not isinstance(ic, dict) or not str(pname).startswith("swp"):
            continue
        link = ic.get("link") or {}
        if _broken_out(link) or str(link.get("state", "up")) == "down":
            continue  # a breakout parent carries no traffic itself (its sub-ports do); a port shut down none
        p = PortConfig(name=str(pname), line=line("interface", pname))
        if "mtu" in link:
            p.mtu = int(link["mtu"])
        if isinstance(link.get("speed"), str) and link["speed"].upper().endswith("G"):
            p.speed = int(link["speed"][:-1])
        q = ic.get("qos") or {}
        profile = (q.get("pfc") or {}).get("profile") if isinstance(q.get("pfc"), dict) else None
        # PFC: the port's own profile, else default-global (every port: QoS page, Port Groups), else `qos roce`
        p.pfc = (pfc_profiles.get(str(profile)) if profile is not None
                 else default_pfc if default_pfc is not None else lossless if roce_on else None)
        p.watchdog = "pfc-watchdog" in q and (q["pfc-watchdog"] or {}).get("state", "enable") not in _OFF
        ar = (ic.get("router") or {}).get("adaptive-routing") or {}
        if ar:
            p.adaptive_routing = _on(ar.get("enable", ar.get("state", "on")))
        for member in (((ic.get("bridge") or {}).get("domain") or {}).values()):
            if not isinstance(member, dict):
                continue
            if member.get("access") is not None:
                p.access_vlan = int(member["access"])
            if isinstance(member.get("vlan"), dict):
                p.tagged_vlans = [v for key in member["vlan"] for v in _vlans(str(key))]
        dev.ports[str(pname)] = p
    arp = (((tree.get("system") or {}).get("global") or {}).get("arp") or {}).get("base-reachable-time")
    if isinstance(arp, int):
        dev.arp_aging, dev.lines["arp_aging"] = (
            arp,
            line("system", "global", "arp", "base-reachable-time") or 1,
        )
    gs = _gshut(tree)
    bgp = (tree.get("router") or {}).get("bgp") or {}
    if "autonomous-system" in bgp and isinstance(bgp["autonomous-system"], int):
        dev.asn, dev.lines["bgp"] = bgp["autonomous-system"], line("router", "bgp", "autonomous-system") or 1
    vbgp = (((tree.get("vrf") or {}).get("default") or {}).get("router") or {}).get("bgp") or {}
    for peer, nc in (vbgp.get("neighbor") or {}).items():
        nc = nc or {}
        v4 = ((nc.get("address-family") or {}).get("ipv4-unicast") or {})
        if (rm := ((v4.get("policy") or {}).get("inbound") or {}).get("route-map")) is not None:
            gs.inbound[str(peer)] = str(rm)
        if nc.get("peer-group"):
            gs.groups[str(peer)] = str(nc["peer-group"])
        if ((v4.get("community-advertise") or {}) if isinstance(v4.get("community-advertise"), dict)
                else {}).get("regular") in _OFF:
            gs.no_send.add(str(peer))
        dev.neighbors.append(
            BgpNeighborConfig(
                peer=str(peer),
                remote_as=str(nc.get("remote-as", "")),
                interface=str(peer).startswith("swp"),
                line=line("vrf", "default", "router", "bgp", "neighbor", peer),
            )
        )
    if dev.asn is not None:
        # FRR under NVUE sends communities unless `community-advertise regular` is off
        dev.graceful_shutdown, dev.graceful_shutdown_missing = gs.verdict([n.peer for n in dev.neighbors], True)
        dev.lines["graceful_shutdown"] = dev.lines["bgp"]
    if dscp is not None or lossless:
        dev.qos = QosView(
            name=name,
            dscp_to_priority=dscp,
            default_priority=0,
            priority_to_tc=p2tc,
            lossless=sorted(lossless),
            strict_tcs=sorted(strict),
            dwrr=dwrr,
            ecn=ecn,
            at=dev.at,
        )
    return dev
