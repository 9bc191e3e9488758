"""NVUE YAML (`nv config show -o yaml` / `nv config patch`) → DeviceConfig.

`qos roce` enabled without explicit maps means NVIDIA's RoCE defaults (reference switch-qos.md §2.1)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from fabric.lint.configs.model import BgpNeighborConfig, DeviceConfig, PortConfig
from fabric.lint.view import Ecn, QosView
from fabric.model.qos import PRESETS
from fabric.model.source import SourceMap, load_yaml


def _on(v: Any) -> bool:
    return v in (True, "on", "enable", "enabled") or v == {}


def parse(path: Path, name: str, _text: str) -> DeviceConfig:
    smap = SourceMap()
    doc = load_yaml(path, smap)
    dev = DeviceConfig(name=name, file=str(path), kind="nvue")
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
    for prof, p in (qos.get("pfc") or {}).items():
        sp = (p or {}).get("switch-priority")
        if sp is not None:
            lossless = sorted(int(x) for x in (sp if isinstance(sp, dict | list) else [sp]))
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
    for pname, ic in (tree.get("interface") or {}).items():
        if not isinstance(ic, dict) or not str(pname).startswith("swp"):
            continue
        p = PortConfig(name=str(pname), line=line("interface", pname))
        link = ic.get("link") or {}
        if "mtu" in link:
            p.mtu = int(link["mtu"])
        if isinstance(link.get("speed"), str) and link["speed"].upper().endswith("G"):
            p.speed = int(link["speed"][:-1])
        q = ic.get("qos") or {}
        p.pfc = lossless if (roce_on or "pfc" in q) else None
        p.watchdog = "pfc-watchdog" in q and (q["pfc-watchdog"] or {}).get("state", "enable") != "disable"
        ar = (ic.get("router") or {}).get("adaptive-routing") or {}
        if ar:
            p.adaptive_routing = _on(ar.get("enable", "on"))
        dev.ports[str(pname)] = p
    arp = (((tree.get("system") or {}).get("global") or {}).get("arp") or {}).get("base-reachable-time")
    if isinstance(arp, int):
        dev.arp_aging, dev.lines["arp_aging"] = (
            arp,
            line("system", "global", "arp", "base-reachable-time") or 1,
        )
    bgp = (tree.get("router") or {}).get("bgp") or {}
    if "autonomous-system" in bgp and isinstance(bgp["autonomous-system"], int):
        dev.asn, dev.lines["bgp"] = bgp["autonomous-system"], line("router", "bgp", "autonomous-system") or 1
    vbgp = (((tree.get("vrf") or {}).get("default") or {}).get("router") or {}).get("bgp") or {}
    for peer, nc in (vbgp.get("neighbor") or {}).items():
        nc = nc or {}
        dev.neighbors.append(
            BgpNeighborConfig(
                peer=str(peer),
                remote_as=str(nc.get("remote-as", "")),
                interface=str(peer).startswith("swp"),
                line=line("vrf", "default", "router", "bgp", "neighbor", peer),
            )
        )
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
