"""SONiC config_db.json → DeviceConfig (DSCP map, PFC, ECN/WRED, schedulers, PFC watchdog, MTU, VLAN members, BGP,
graceful shutdown), plus the neighbour aging of the sysctl.conf rendered beside it."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from fabric.lint.configs.gshut import GSHUT_VALUES, GshutConfig
from fabric.lint.configs.model import BgpNeighborConfig, DeviceConfig, PortConfig
from fabric.lint.view import Ecn, QosView
from fabric.model.jsonlines import JsonLines
from fabric.nos import row_of

_PFC_WD = {"detection": "detection_time", "restoration": "restoration_time"}  # knob key → PFC_WD field (ms)


def _ints(csv: str) -> list[int]:
    return sorted(int(x) for x in str(csv).replace(" ", "").split(",") if x.isdigit())


def _ref(value: object) -> str:
    """A reference field: `AZURE`, or the `[DSCP_TO_TC_MAP|AZURE]` form of SONiC before 202012 (db_migrator 3.0.1)."""
    v = str(value or "")
    return v[1:-1].rpartition("|")[2] if v.startswith("[") and v.endswith("]") else v


Line = Callable[..., int | None]  # (*key of the config_db tree) → its line


def parse(path: Path, name: str, text: str) -> DeviceConfig:
    jl = JsonLines(text)
    db: dict[str, Any] = jl.value if isinstance(jl.value, dict) else {}
    dev = DeviceConfig(name=name, file=str(path), kind=row_of(__name__).name)

    def line(*key: str) -> int | None:
        return jl.lines.get(tuple(key))

    dscp = _dscp_map(db, dev, line)
    pfc_all = _ports(db, dev, line)
    strict, dwrr, ecn = _queues(db, dev, line)
    if db.get("PORT_QOS_MAP") or db.get("DSCP_TO_TC_MAP", {}):
        dev.qos = QosView(name=name, dscp_to_priority=dscp, default_priority=1 if dscp is None else 0,
                          priority_to_tc={}, lossless=sorted(pfc_all), strict_tcs=sorted(strict), dwrr=dwrr, ecn=ecn,
                          at=dev.at)
    _bgp(db, dev, line)
    _vlan_members(db, dev)
    if dev.asn is not None:
        dev.graceful_shutdown, dev.graceful_shutdown_missing = _gshut(db).verdict(
            [n.peer for n in dev.neighbors], True)  # FRR (frrcfgd) sends communities unless send_community none
        dev.lines["graceful_shutdown"] = dev.lines["bgp"]
    aging = _sysctl_aging(path.parent / "sysctl.conf")
    if aging is not None:
        dev.arp_aging, dev.arp_aging_at = aging
    return dev


def _dscp_map(db: dict[str, Any], dev: DeviceConfig, line: Line) -> dict[int, int] | None:
    """The one DSCP_TO_TC_MAP every port binds in PORT_QOS_MAP; None (and why, in `default_dscp_map`) where the
    NOS default applies or the bindings differ."""
    pqm, maps = db.get("PORT_QOS_MAP", {}), db.get("DSCP_TO_TC_MAP", {})
    bound = sorted({_ref(v.get("dscp_to_tc_map", "")) for v in pqm.values() if isinstance(v, dict)})
    map_name = bound[0] if len(bound) == 1 else ""
    if not bound or "" in bound:
        dev.default_dscp_map = "ports without dscp_to_tc_map in PORT_QOS_MAP (the NOS default AZURE map applies)"
        dev.lines["dscp_map"] = line("PORT_QOS_MAP") or 1
    elif any(b not in maps for b in bound):
        missing = [b for b in bound if b not in maps]
        dev.default_dscp_map = f"PORT_QOS_MAP binding {', '.join(missing)}, not defined in DSCP_TO_TC_MAP"
        dev.lines["dscp_map"] = line("PORT_QOS_MAP") or 1
    if map_name not in maps:
        return None
    dev.lines["dscp_map"] = line("DSCP_TO_TC_MAP", map_name) or 1
    return {int(k): int(v) for k, v in maps[map_name].items()}


def _ports(db: dict[str, Any], dev: DeviceConfig, line: Line) -> set[int]:
    """Every PORT with its PFC (PORT_QOS_MAP) and watchdog (PFC_WD); the lossless priorities of all ports."""
    pqm, wd = db.get("PORT_QOS_MAP", {}), db.get("PFC_WD", {})
    pfc_all: set[int] = set()
    for pname, pc in db.get("PORT", {}).items():
        p = PortConfig(name=pname, line=line("PORT", pname))
        if "mtu" in pc:
            p.mtu = int(pc["mtu"])
        if "speed" in pc:
            p.speed = int(pc["speed"]) // 1000
        q = pqm.get(pname, {})
        if "pfc_enable" in q:
            p.pfc = _ints(q["pfc_enable"])
            pfc_all.update(p.pfc)
            dev.lines.setdefault("pfc", line("PORT_QOS_MAP", pname, "pfc_enable") or 1)
        p.watchdog = pname in wd
        if p.watchdog:
            w = wd[pname] or {}
            p.wd = {knob: int(w[f]) for knob, f in _PFC_WD.items() if str(w.get(f, "")).isdigit()}
            dev.lines[f"pfc_wd.{pname}"] = line("PFC_WD", pname) or 1
        if p.pfc and not p.watchdog:
            p.line = line("PORT_QOS_MAP", pname) or p.line
        dev.ports[pname] = p
    return pfc_all


def _queues(db: dict[str, Any], dev: DeviceConfig, line: Line) -> tuple[set[int], dict[int, int], dict[int, Ecn]]:
    """Schedulers and WRED from the QUEUE table (the first port that has each TC): strict TCs, DWRR weights, ECN."""
    sched, wred = db.get("SCHEDULER", {}), db.get("WRED_PROFILE", {})
    strict: set[int] = set()
    dwrr: dict[int, int] = {}
    ecn: dict[int, Ecn] = {}
    for key, qc in db.get("QUEUE", {}).items():
        _port, _, tcs = key.partition("|")
        for tc in range(int(tcs.split("-")[0]), int(tcs.split("-")[-1]) + 1) if tcs else []:
            s = sched.get(_ref(qc.get("scheduler", "")), {})
            if s.get("type", "").upper() == "STRICT":
                strict.add(tc)
            elif s and tc not in dwrr:
                dwrr[tc] = int(s.get("weight", 0))
            dev.lines.setdefault(f"ets.{tc}", line("SCHEDULER", _ref(qc.get("scheduler", ""))) or line("QUEUE", key)
                                 or 1)
            w = wred.get(_ref(qc.get("wred_profile", "")), {})
            if w and tc not in ecn:
                ecn[tc] = Ecn(enabled=w.get("ecn", "ecn_none") != "ecn_none",
                              min_bytes=int(w.get("green_min_threshold", 0)),
                              max_bytes=int(w.get("green_max_threshold", 0)),
                              probability=int(w.get("green_drop_probability", 100)))
                dev.lines[f"ecn.{tc}"] = line("WRED_PROFILE", _ref(qc["wred_profile"])) or 1
    dev.lines.setdefault("ets", line("SCHEDULER") or 1)
    dev.lines.setdefault("ecn", line("WRED_PROFILE") or line("QUEUE") or 1)
    return strict, dwrr, ecn


def _bgp(db: dict[str, Any], dev: DeviceConfig, line: Line) -> None:
    """The ASN (BGP_GLOBALS, else DEVICE_METADATA) and BGP_NEIGHBOR."""
    meta = db.get("DEVICE_METADATA", {}).get("localhost", {})
    asn = db.get("BGP_GLOBALS", {}).get("default", {}).get("local_asn") or meta.get("bgp_asn")
    if asn:
        dev.asn = int(asn)
        dev.lines["bgp"] = line("BGP_GLOBALS", "default", "local_asn") or line("DEVICE_METADATA") or 1
    for key, nc in db.get("BGP_NEIGHBOR", {}).items():
        peer = key.split("|")[-1]
        dev.neighbors.append(BgpNeighborConfig(peer=peer, remote_as=str(nc.get("asn", nc.get("peer_type", ""))),
                                               interface=not peer[:1].isdigit() and ":" not in peer,
                                               line=line("BGP_NEIGHBOR", key)))


def _vlan_members(db: dict[str, Any], dev: DeviceConfig) -> None:
    """VLAN_MEMBER: a port's access VLAN or its tagged VLANs."""
    for key, vm in db.get("VLAN_MEMBER", {}).items():
        vlan, _, port = key.partition("|")
        p = dev.ports.get(port)
        vid = int(vlan.removeprefix("Vlan")) if vlan.removeprefix("Vlan").isdigit() else None
        if p is None or vid is None:
            continue
        if (vm or {}).get("tagging_mode") == "tagged":
            p.tagged_vlans = [*(p.tagged_vlans or []), vid]
        else:
            p.access_vlan = vid


def _gshut(db: dict[str, Any]) -> GshutConfig:
    """COMMUNITY_SET / ROUTE_MAP / BGP_NEIGHBOR_AF route_map_in and send_community, as frrcfgd turns them into
    `bgp community-list`, `route-map` and `neighbor … route-map … in` (sonic-frr-mgmt-framework frrcfgd.py)."""
    gs = GshutConfig()
    for name, cs in db.get("COMMUNITY_SET", {}).items():
        members = cs.get("community_member", [])
        members = members if isinstance(members, list) else str(members).split(",")
        if GSHUT_VALUES & {str(m).lower() for m in members}:
            gs.lists.add(name)
    for key, rm in sorted(db.get("ROUTE_MAP", {}).items(), key=lambda kv: kv[0]):
        name, _, _seq = key.partition("|")
        if rm.get("route_operation", "permit") != "permit":
            continue
        pref = rm.get("set_local_pref")
        gs.entry(name).append(({rm["match_community"]} if rm.get("match_community") else set(),
                               int(pref) if str(pref).isdigit() else None))
    for key, af in db.get("BGP_NEIGHBOR_AF", {}).items():
        parts = key.split("|")
        if len(parts) < 3 or parts[-1] != "ipv4_unicast":
            continue
        peer = parts[-2]
        maps = af.get("route_map_in", [])
        maps = maps if isinstance(maps, list) else [maps]
        if maps:
            gs.inbound[peer] = maps[0]
        if af.get("send_community") == "none":
            gs.no_send.add(peer)
    return gs


def _sysctl_aging(path: Path) -> tuple[int, tuple[str, int | None]] | None:
    """The longest IPv4 neighbour reachable time (s) in the sysctl.conf SONiC gets beside its config_db.json (the
    rendered pair; CONFIG_DB has no knob for it, reference switch-qos.md §1.8) and where it is; None without one."""
    if not path.is_file():
        return None
    times = [(int(m.group(1)) // 1000, n) for n, raw in enumerate(path.read_text().splitlines(), 1)
             if (m := re.match(r"\s*net\.ipv4\.neigh\.[^.\s]+\.base_reachable_time_ms\s*=\s*(\d+)", raw))]
    if not times:
        return None
    seconds, line = max(times)
    return seconds, (str(path), line)
