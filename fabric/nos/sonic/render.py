"""SONiC: `config_db.json` serialized from the intent, plus the kernel neighbour sysctls.

Table and field names follow sonic-buildimage `src/sonic-yang-models/yang-models/*.yang` and frrcfgd
(`src/sonic-frr-mgmt-framework/frrcfgd/frrcfgd.py`); see shared reference switch-qos.md §1.
Every map is explicit: SONiC's own DSCP_TO_TC_MAP sends DSCP 26 to a lossy class (§1.1). PORT entries carry the
platform's lanes, alias, index, sub-port and FEC (PortIntent.hw, from fabric/data/sonic) and BREAKOUT_CFG the
mode of each broken-out parent; tests/nos/sonic/test_yang.py validates every render with SONiC's YANG models.

Graceful shutdown (RFC 8326): the receiver side is a COMMUNITY_SET, a ROUTE_MAP setting local-preference 0 and
route_map_in on every fabric neighbour; FRR sends communities by default, and a drain sets BGP_GLOBALS
`graceful_shutdown` (frrcfgd → `bgp graceful-shutdown`), which the steady-state render never does.
"""

from __future__ import annotations

from typing import Any

from fabric.design.intent import FabricIntent, PortIntent, QosFacts, SwitchIntent
from fabric.fast.memo import Memo
from fabric.model.ports import sonic_port_map
from fabric.render.files import Files
from fabric.serialize import dumps_json

MAP = "ROCE"  # name of every QoS map this renderer owns (SONiC's own defaults are named AZURE)
CABLE_PROFILE = "AZURE"  # the CABLE_LENGTH / LOSSLESS_TRAFFIC_PATTERN key buffermgrd reads
VRF = "default"
GSHUT_SET = "GSHUT"
GSHUT = "65535:0"  # RFC 8326 GRACEFUL_SHUTDOWN
FABRIC_IN = "FABRIC-IN"
AF = "ipv4_unicast"
LOOPBACK = "Loopback0"
# pg_profile_lookup.ini threshold column: 0 in every Mellanox row (reference §1.5).
LOSSLESS_DYNAMIC_TH = "0"
DYNAMIC_DEFAULT_TH = "0"  # DEFAULT_LOSSLESS_BUFFER_PARAMETER of buffers_config.j2 (§1.4)

Table = dict[str, dict[str, Any]]


def _s(value: object) -> str:
    return str(value).lower() if isinstance(value, bool) else str(value)


def _csv(values: list[int]) -> str:
    return ",".join(str(v) for v in sorted(values))


def _ranges(values: list[int]) -> str:
    """3 → "3", [3, 4] → "3-4": the PG range form of BUFFER_PG keys."""
    vals = sorted(values)
    out, start = [], vals[0]
    for prev, cur in zip(vals, [*vals[1:], None], strict=True):
        if cur != (prev + 1):
            out.append(f"{start}-{prev}" if start != prev else str(start))
            start = cur  # type: ignore[assignment]
    return ",".join(out)


def qos_maps(q: QosFacts) -> Table:
    tcs = range(8)
    return {
        "DSCP_TO_TC_MAP": {MAP: {str(d): str(tc) for d, tc in enumerate(q.dscp_to_tc)}},
        "TC_TO_QUEUE_MAP": {MAP: {str(t): str(t) for t in tcs}},
        "TC_TO_PRIORITY_GROUP_MAP": {MAP: {str(t): str(t if t in q.lossless_tcs else 0) for t in tcs}},
        "MAP_PFC_PRIORITY_TO_QUEUE": {MAP: {str(p): str(tc) for p, tc in enumerate(q.priority_to_tc)}},
        "PFC_PRIORITY_TO_PRIORITY_GROUP_MAP": {MAP: {str(p): str(q.priority_to_tc[p])
                                                     for p in q.lossless_priorities}},
    }


def schedulers(q: QosFacts) -> dict[int, tuple[str, dict[str, str]]]:
    """TC → (scheduler name, fields): STRICT, or DWRR with the weight."""
    return {tc: (f"{MAP}_TC{tc}", {"type": "STRICT"} if qu.scheduler == "strict"
                 else {"type": "DWRR", "weight": str(qu.weight)})
            for tc, qu in q.queues.items() if qu.scheduler}


def wred_profiles(q: QosFacts) -> dict[int, tuple[str, dict[str, str]]]:
    """TC → (WRED_PROFILE name, fields): thresholds in bytes, probability in percent, ECN on all colours."""
    out: dict[int, tuple[str, dict[str, str]]] = {}
    for tc, qu in q.queues.items():
        ecn = qu.ecn
        if ecn is None or not ecn.enabled:
            continue
        fields = {"ecn": "ecn_all"}
        for colour in ("green", "yellow", "red"):
            fields.update({f"wred_{colour}_enable": "true", f"{colour}_min_threshold": str(ecn.min_bytes),
                           f"{colour}_max_threshold": str(ecn.max_bytes),
                           f"{colour}_drop_probability": str(ecn.probability)})
        out[tc] = (f"{MAP}_TC{tc}", fields)
    return out


def lossless_profile(speed_mbps: int, cable: str) -> str:
    """The headroom profile buffermgrd gives a lossless PG on the traditional model: `pg_lossless_<PORT speed>_
    <CABLE_LENGTH>_profile` (sonic-swss cfgmgr/buffermgr.cpp BufferMgr::doSpeedUpdateTask)."""
    return f"pg_lossless_{speed_mbps}_{cable}_profile"


def cable_length(p: PortIntent) -> str:
    """The port's CABLE_LENGTH value."""
    return f"{p.cable_m}m"


def buffers(sw: SwitchIntent, lossless: list[PortIntent]) -> Table:
    """Static: one profile per (speed, cable) from PortIntent.headroom, under the name buffermgrd looks up. On
    the traditional model buffermgrd points every lossless PG at that name whenever a port's speed, cable length or
    pfc_enable changes and for every port when it starts, and reuses a profile of that name that CONFIG_DB holds
    (doSpeedUpdateTask): any other name would be taken back. Ports of one (speed, cable) share it, so it carries the
    largest headroom among them (lanes can differ). The switch's own profile of that name: brownfield.py.
    Dynamic: BUFFER_PG profile NULL so buffermgrd computes headroom from CABLE_LENGTH."""
    q = sw.qos
    pgs = _ranges(q.lossless_tcs) if q.lossless_tcs else ""
    db: Table = {"CABLE_LENGTH": {CABLE_PROFILE: {p.name: cable_length(p) for p in sw.ports}}}
    if not pgs:
        return db
    pg: dict[str, dict[str, str]] = {}
    if q.headroom_mode == "dynamic":
        db["LOSSLESS_TRAFFIC_PATTERN"] = {CABLE_PROFILE: {
            "mtu": str(q.lossless_mtu),
            "small_packet_percentage": str(q.small_packet_percentage)}}
        db["DEFAULT_LOSSLESS_BUFFER_PARAMETER"] = {CABLE_PROFILE: {"default_dynamic_th": DYNAMIC_DEFAULT_TH}}
        for p in lossless:
            pg[f"{p.name}|{pgs}"] = {"profile": "NULL"}
    else:
        profiles: dict[str, dict[str, str]] = {}
        for p in lossless:
            hr = p.headroom
            if hr is None:
                continue
            name = lossless_profile(p.speed * 1000, cable_length(p))  # the PORT speed and CABLE_LENGTH rendered
            if name not in profiles or int(profiles[name]["size"]) < hr.size:
                profiles[name] = {"pool": "ingress_lossless_pool", "xon": str(hr.xon), "xoff": str(hr.xoff),
                                  "size": str(hr.size), "dynamic_th": LOSSLESS_DYNAMIC_TH}
            pg[f"{p.name}|{pgs}"] = {"profile": name}
        db["BUFFER_PROFILE"] = profiles
    db["BUFFER_PG"] = pg
    return db


def config_db(sw: SwitchIntent) -> dict[str, Table]:
    """The whole CONFIG_DB content this fabric owns on one switch, table group by table group."""
    db: dict[str, Table] = {}
    for tables in (metadata, ports, vlans, qos_tables, bgp_tables):
        db.update(tables(sw))
    db.update(buffers(sw, [p for p in sw.ports if p.pfc]))
    return db


def metadata(sw: SwitchIntent) -> dict[str, Table]:
    """DEVICE_METADATA (frrcfgd, the buffer model; the platform the render is for) and the loopback."""
    localhost = {"hostname": sw.name, "bgp_asn": str(sw.bgp.asn), "frr_mgmt_framework_config": "true",
                 "docker_routing_config_mode": "unified",
                 "buffer_model": "dynamic" if sw.qos.headroom_mode == "dynamic" else "traditional"}
    pm = sonic_port_map(sw.platform)
    if pm is not None:  # the switch this is written for; the push compares it and never writes it (brownfield.py)
        localhost["platform"] = pm.platform
    return {"DEVICE_METADATA": {"localhost": localhost},
            "LOOPBACK_INTERFACE": {LOOPBACK: {}, f"{LOOPBACK}|{sw.loopback}": {}}}


def ports(sw: SwitchIntent) -> dict[str, Table]:
    """PORT with the platform's lanes, BREAKOUT_CFG for broken-out parents, INTERFACE (unnumbered or addressed)."""
    port_t: Table = {}
    intf: Table = {}
    for p in sw.ports:
        entry = {"admin_status": "up", "description": p.description, "mtu": str(p.mtu),
                 "speed": str(p.speed * 1000)}
        if p.hw is not None:  # the platform's port (sonic-port.yang: lanes is mandatory)
            entry.update({"lanes": p.hw.lanes, "alias": p.hw.alias, "index": str(p.hw.index),
                          "subport": str(p.hw.subport)})
            if p.hw.fec:
                entry["fec"] = p.hw.fec
        port_t[p.name] = entry
        if p.kind == "fabric" and p.unnumbered:
            intf[p.name] = {"ipv6_use_link_local_only": "enable"}
        elif p.address:
            intf[p.name] = {}
            intf[f"{p.name}|{p.address}"] = {}
    db: dict[str, Table] = {"PORT": port_t}
    if sw.breakout:
        db["BREAKOUT_CFG"] = {parent: {"brkout_mode": mode} for parent, mode in sw.breakout.items()}
    if intf:
        db["INTERFACE"] = intf
    return db


def vlans(sw: SwitchIntent) -> dict[str, Table]:
    """The rail SVIs: VLAN, VLAN_MEMBER (tagged where the host tags), VLAN_INTERFACE."""
    if not sw.svis:
        return {}
    return {
        "VLAN": {s.name: {"vlanid": str(s.vlan), "mtu": str(sw.mtu)} for s in sw.svis},
        "VLAN_MEMBER": {f"{s.name}|{m}": {"tagging_mode": "tagged" if m in s.tagged else "untagged"}
                        for s in sw.svis for m in s.members},
        "VLAN_INTERFACE": {k: {} for s in sw.svis for k in (s.name, f"{s.name}|{s.address}")},
    }


def qos_tables(sw: SwitchIntent) -> dict[str, Table]:
    """QoS: maps, per-port bindings, schedulers, WRED, queues and the PFC watchdog (buffers: `buffers`)."""
    q = sw.qos
    db: dict[str, Table] = dict(qos_maps(q))
    maps = {"dscp_to_tc_map": MAP, "tc_to_queue_map": MAP, "tc_to_pg_map": MAP, "pfc_to_queue_map": MAP}
    if sw.asic.startswith("spectrum"):  # qos_config.j2 emits pfc_to_pg_map for mellanox/barefoot only
        maps["pfc_to_pg_map"] = MAP
    pqm: Table = {"global": {"dscp_to_tc_map": MAP}}
    for p in sw.ports:
        entry = dict(maps)
        if p.pfc:
            entry["pfc_enable"] = _csv(list(p.pfc))
            if p.watchdog:
                entry["pfcwd_sw_enable"] = _csv(list(p.pfc))
        pqm[p.name] = entry
    db["PORT_QOS_MAP"] = pqm
    sched, wred = schedulers(q), wred_profiles(q)
    db["SCHEDULER"] = dict(sched.values())
    if wred:
        db["WRED_PROFILE"] = dict(wred.values())
    queue: Table = {}
    for p in sw.ports:
        for tc in sorted(set(sched) | set(wred)):
            entry = {}
            if tc in sched:
                entry["scheduler"] = sched[tc][0]
            if tc in wred:
                entry["wred_profile"] = wred[tc][0]
            queue[f"{p.name}|{tc}"] = entry
    db["QUEUE"] = queue
    db.update(pfc_watchdog(sw))
    return db


def pfc_watchdog(sw: SwitchIntent) -> dict[str, Table]:
    """PFC_WD: the global poll interval and each watched port's action and timers."""
    wd = sw.qos.watchdog
    if wd is None or not any(p.watchdog for p in sw.ports):
        return {}
    pfc_wd: Table = {"GLOBAL": {"POLL_INTERVAL": str(wd.poll_interval_ms)}}
    for p in sw.ports:
        if p.watchdog:
            pfc_wd[p.name] = {"action": wd.action, "detection_time": str(wd.detection_ms),
                              "restoration_time": str(wd.restoration_ms)}
    return {"PFC_WD": pfc_wd}


def bgp_tables(sw: SwitchIntent) -> dict[str, Table]:
    """BGP through frrcfgd: unnumbered neighbors keyed by port, explicit remote ASN, the graceful-shutdown policy."""
    b = sw.bgp
    db: dict[str, Table] = {
        "BGP_GLOBALS": {VRF: {"local_asn": str(b.asn), "router_id": b.router_id, "load_balance_mp_relax": "true"}},
        "BGP_GLOBALS_AF": {f"{VRF}|{AF}": {"max_ebgp_paths": str(b.max_paths)}},
        "BGP_GLOBALS_AF_NETWORK": {f"{VRF}|{AF}|{n}": {} for n in b.networks},
    }
    nbr: Table = {}
    for n in b.neighbors:
        entry = {"asn": str(n.remote_asn), "capability_ext_nexthop": "true", "keepalive": str(b.keepalive),
                 "holdtime": str(b.hold), "name": f"{n.peer}:{n.peer_port}"}
        if b.bfd:
            entry["bfd"] = "true"
        nbr[f"{VRF}|{n.port}"] = entry
    db["BGP_NEIGHBOR"] = nbr
    # admin_status up → frrcfgd `neighbor X activate` (sonic-bgp-common.yang: up|down)
    af: dict[str, Any] = {"admin_status": "up"}
    if b.graceful_shutdown and b.neighbors:
        db.update(gshut_policy())
        af["route_map_in"] = [FABRIC_IN]
    db["BGP_NEIGHBOR_AF"] = {f"{VRF}|{n.port}|{AF}": dict(af) for n in b.neighbors}
    if b.blackholes:
        db["STATIC_ROUTE"] = {f"{VRF}|{n}": {"blackhole": "true"} for n in b.blackholes}
    return db


def gshut_policy() -> dict[str, Table]:
    """RFC 8326 receiver side through frrcfgd: `bgp community-list standard GSHUT permit 65535:0` and a route map
    that sets local-preference 0 on it (frrcfgd.py community_set_key_map, route_map_key_map; sonic-route-map.yang,
    sonic-routing-policy-sets.yang). FRR, under SONiC too, also does this by itself for eBGP peers."""
    return {
        "COMMUNITY_SET": {GSHUT_SET: {"set_type": "STANDARD", "match_action": "ANY", "community_member": [GSHUT]}},
        "ROUTE_MAP_SET": {FABRIC_IN: {}},
        "ROUTE_MAP": {f"{FABRIC_IN}|10": {"route_operation": "permit", "match_community": GSHUT_SET,
                                          "set_local_pref": "0"},
                      f"{FABRIC_IN}|20": {"route_operation": "permit"}},
    }


def neighbor_interfaces(sw: SwitchIntent) -> list[str]:
    """Interfaces with IPv4 neighbours the hosts sit behind: the rail SVIs, or the routed host ports (p2p31)."""
    return [s.name for s in sw.svis] + [p.name for p in sw.ports if p.kind == "host" and p.address]


def sysctl_conf(sw: SwitchIntent) -> str:
    """ARP/ND aging and table sizes: kernel sysctls on SONiC, no CONFIG_DB knob (reference §1.8).

    `neigh.default.*` only seeds interfaces created after it is set; the rail SVIs (or routed host ports) exist
    already on a running switch, so their reachable time is set by name too. gc_thresh* are global only."""
    n = sw.neighbor
    lines = [f"# {sw.name}: neighbour table sized for {n.needed} entries; aging {n.aging_s} s"]
    for fam in ("ipv4", "ipv6"):
        lines += [f"net.{fam}.neigh.default.base_reachable_time_ms = {n.aging_s * 1000}",
                  f"net.{fam}.neigh.default.gc_thresh1 = {n.gc_thresh1}",
                  f"net.{fam}.neigh.default.gc_thresh2 = {n.gc_thresh2}",
                  f"net.{fam}.neigh.default.gc_thresh3 = {n.gc_thresh3}"]
    lines += [f"net.ipv4.neigh.{name}.base_reachable_time_ms = {n.aging_s * 1000}" for name in neighbor_interfaces(sw)]
    return "\n".join(lines) + "\n"


def render(sw: SwitchIntent, fabric: FabricIntent, *, extras: bool = True,
           memo: Memo | None = None) -> Files:
    return {"config_db.json": dumps_json(config_db(sw)), "sysctl.conf": sysctl_conf(sw)}
