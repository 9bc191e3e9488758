"""SONiC brownfield: fit the rendered CONFIG_DB to the switch it lands on, and refuse what SONiC would refuse.

`adapt(intent, running)` is pure and runs before every diff (plan, plan --running, apply):

- **Buffer model.** `DEVICE_METADATA.buffer_model` is never pushed: SONiC reads it when swss starts, so a
  flip does nothing until a swss restart (buffer manager HLD, sonic-net/SONiC doc/qos/
  dynamically-headroom-calculation.md, "Switch between the dynamic and traditional buffer model"). The
  render is fitted to the model the switch runs: `dynamic` — lossless PGs reference `NULL` and buffermgrd
  computes the headroom from CABLE_LENGTH, the port speed and LOSSLESS_TRAFFIC_PATTERN (HLD, "BUFFER_PG":
  "profile NULL … headroom calculated dynamically"); the static `pg_lossless_*` profiles are not pushed.
  `traditional` — explicit profiles, which only a static render has (qos.headroom.mode static); a dynamic
  render onto a traditional switch is refused. The render names them as buffermgrd does
  (`pg_lossless_<speed>_<cable>_profile`, render.lossless_profile), since buffermgrd points every lossless PG at
  that name and reuses a profile of that name that exists (cfgmgr/buffermgr.cpp doSpeedUpdateTask). A profile of
  that name the switch holds and no earlier apply rendered is SONiC's own (from its pg_profile_lookup.ini), shared
  by every port of that speed and cable: it is kept, never rewritten, and the plan's note gives its headroom
  beside the inventory's.
- **Buffer pools.** The render's headroom profiles (traditional model) go in the ingress pool the switch's own
  lossless PGs use (their profile's `pool`), else its `ingress_lossless_pool`, else its one ingress pool; a switch
  without an ingress pool keeps the refusal (sonic-buffer-profile.yang: a profile's `pool` must be a BUFFER_POOL).
- **Routing config mode.** `frr_mgmt_framework_config` / `docker_routing_config_mode` are never pushed: the
  bgp container picks bgpcfgd or frrcfgd when it starts (sonic-buildimage dockers/docker-fpm-frr/
  docker_init.sh; SONiC doc/mgmt/SONiC_Design_Doc_Unified_FRR_Mgmt_Interface.md: "frr_mgmt_framework_config
  … takes effect after the bgp docker restarts"). On a switch without frrcfgd the render's BGP objects
  (unnumbered neighbours, route maps, networks, blackholes, Loopback0) would do nothing, so they are left
  out of the push and the plan says so; switching the mode is the operator's planned restart (docs/plan-apply.md).
- **Platform.** PORT `lanes`/`alias`/`index`/`subport` of a port the switch has are its platform's and never
  rewritten; a switch whose `DEVICE_METADATA.platform` (or a port's lanes) differs from the inventory's is a
  located error.
- **Lossless PGs.** A switch holds `BUFFER_PG|EthernetN|3-4`; the render's `|3` beside it would overlap
  (SONiC's `config interface buffer priority-group lossless` refuses overlapping PGs). The tool owns the
  lossless PGs of a port whose `pfc_enable` it renders, so an overlapping key the switch holds is replaced, and
  the plan shows it as the replacement it is (`BUFFER_PG|Ethernet0: ~ 3-4 profile=NULL → 3 profile=NULL`): the
  port's PGs follow its rendered lossless priorities (PG 4 stops being lossless with `pfc_enable` 4), never a
  PG beside an overlapping one, nor a PG left lossless without PFC.

`preflight(after)` checks the CONFIG_DB a patch would leave: every buffer profile's pool exists, every PG
points at a profile that exists (or NULL on the dynamic model), no two PGs of a port overlap, and no port is
routed (INTERFACE) while a VLAN or PortChannel member. Each problem names the table|key and field.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from fabric.fast.plain import deep_copy
from fabric.targets.owned import Change

Path = tuple[str, ...]
ROUTING_TABLES = ("BGP_GLOBALS", "BGP_GLOBALS_AF", "BGP_GLOBALS_AF_NETWORK", "BGP_NEIGHBOR", "BGP_NEIGHBOR_AF",
                  "ROUTE_MAP_SET", "ROUTE_MAP", "COMMUNITY_SET", "STATIC_ROUTE", "LOOPBACK_INTERFACE")
ROUTING_META = ("bgp_asn", "frr_mgmt_framework_config", "docker_routing_config_mode")
PLATFORM_FIELDS = ("lanes", "alias", "index", "subport")
NEVER_PUSHED_META = ("buffer_model", "platform", "frr_mgmt_framework_config", "docker_routing_config_mode")


@dataclass
class Fitted:
    """The intent fitted to one switch, the running leaves it takes over, and what stands in the way."""

    intent: dict[str, Any]
    owned: set[Path] = field(default_factory=set)  # running leaves owned besides the intent's (overlapping PGs)
    problems: list[str] = field(default_factory=list)  # the switch is not touched when there is any
    notes: list[str] = field(default_factory=list)  # what the plan leaves out and why


def _meta(db: dict) -> dict[str, Any]:
    return db.get("DEVICE_METADATA", {}).get("localhost", {}) or {}


def pg_range(spec: str) -> set[int]:
    """`3-4` → {3, 4}; `3` → {3}; `0,3-4` is not a SONiC PG key but is read the same way."""
    out: set[int] = set()
    for part in spec.split(","):
        lo, _, hi = part.partition("-")
        if lo.strip().isdigit() and (not hi or hi.strip().isdigit()):
            out |= set(range(int(lo), int(hi or lo) + 1))
    return out


def overlapping_pgs(db: dict) -> list[tuple[str, str]]:
    """Pairs of BUFFER_PG keys of one port whose priority groups overlap."""
    by_port: dict[str, list[tuple[str, set[int]]]] = {}
    for key in db.get("BUFFER_PG", {}):
        port, _, spec = key.rpartition("|")
        by_port.setdefault(port, []).append((key, pg_range(spec)))
    return [(a, b) for keys in by_port.values() for i, (a, ra) in enumerate(keys) for b, rb in keys[i + 1:]
            if ra & rb]


def adapt(intent: dict[str, Any], running: dict[str, Any], earlier: frozenset[str] = frozenset()) -> Fitted:
    """The intent fitted to the switch whose CONFIG_DB is `running` (see the module docstring); `earlier`: the
    BUFFER_PROFILE names an earlier apply rendered (the tool's own)."""
    fit = Fitted(deep_copy(intent))
    want, have = fit.intent, running
    meta_w, meta_h = want.setdefault("DEVICE_METADATA", {}).setdefault("localhost", {}), _meta(have)
    _platform(fit, meta_w, meta_h, have)
    _buffer_model(fit, meta_w, meta_h, have)
    _switch_profiles(fit, have, earlier)
    _pools(fit, have)
    _routing_mode(fit, meta_w, meta_h, have)
    for f in NEVER_PUSHED_META:
        meta_w.pop(f, None)
    _pg_overlaps(fit, have)
    return fit


def _platform(fit: Fitted, meta_w: dict, meta_h: dict, have: dict) -> None:
    want_p, have_p = meta_w.get("platform"), meta_h.get("platform")
    if want_p and have_p and want_p != have_p:
        fit.problems.append(f"DEVICE_METADATA|localhost platform: expected {want_p} (the inventory's), found {have_p}: "
                            "the inventory's PORT lanes, alias and index do not fit this switch; set its platform in "
                            "the inventory")
    ports_h = have.get("PORT", {})
    bad = [f"PORT|{p} lanes: expected {e['lanes']}, found {ports_h[p]['lanes']}"
           for p, e in sorted(fit.intent.get("PORT", {}).items())
           if p in ports_h and "lanes" in e and "lanes" in ports_h[p] and e["lanes"] != ports_h[p]["lanes"]]
    if bad and not (want_p and have_p and want_p != have_p):
        fit.problems.append(f"{bad[0]}{f' (and {len(bad) - 1} more ports)' if len(bad) > 1 else ''}: the switch's "
                            f"port map ({meta_h.get('hwsku', 'its hwsku')}) differs from the inventory's platform")
    for p, e in fit.intent.get("PORT", {}).items():
        if p in ports_h:  # the platform's facts of a port the switch has: never rewritten
            for f in PLATFORM_FIELDS:
                e.pop(f, None)


def _buffer_model(fit: Fitted, meta_w: dict, meta_h: dict, have: dict) -> None:
    model = meta_h.get("buffer_model", "traditional")  # SONiC's default when the field is absent
    want = fit.intent
    pgs = want.get("BUFFER_PG", {})
    dynamic_render = any(v.get("profile") == "NULL" for v in pgs.values())
    if model == "dynamic" and not dynamic_render and pgs:
        statics = {v.get("profile") for v in pgs.values()}
        for v in pgs.values():
            v["profile"] = "NULL"
        profiles = want.get("BUFFER_PROFILE", {})
        for name in statics:
            profiles.pop(name, None)
        if not profiles:
            want.pop("BUFFER_PROFILE", None)
        fit.notes.append("buffer model dynamic (the switch's): lossless PGs reference NULL and buffermgrd computes "
                         "their headroom from CABLE_LENGTH and the port speed; the static headroom profiles are not "
                         "pushed")
    elif model != "dynamic" and dynamic_render:
        fit.problems.append(f"DEVICE_METADATA|localhost buffer_model: the switch runs {model}; the inventory renders "
                            "dynamic headroom (qos.headroom.mode dynamic), which buffermgrd computes only on the "
                            "dynamic model: set qos.headroom.mode static for this switch (a model change needs a "
                            "swss restart, which the push never does)")
    if model != "dynamic":  # the parameters only the dynamic buffer manager reads
        for t in ("LOSSLESS_TRAFFIC_PATTERN", "DEFAULT_LOSSLESS_BUFFER_PARAMETER"):
            want.pop(t, None)


def _switch_profiles(fit: Fitted, have: dict, earlier: frozenset[str]) -> None:
    """Keep the switch's own headroom profile of a rendered name (module docstring, buffer model)."""
    want, theirs = fit.intent.get("BUFFER_PROFILE", {}), have.get("BUFFER_PROFILE", {})
    for name in sorted(n for n in want if n in theirs and n not in earlier):
        mine, kept = want.pop(name), theirs[name] or {}
        fields = ("xon", "xoff", "size")
        if any(str(kept.get(f)) != mine.get(f) for f in fields):
            fit.notes.append(f"BUFFER_PROFILE|{name} kept: the switch's own ({_hr(kept)}), which buffermgrd gives "
                             f"every port of that speed and cable on the traditional model; the inventory computes "
                             f"{_hr(mine)}")
    if not want:
        fit.intent.pop("BUFFER_PROFILE", None)


def _hr(profile: dict) -> str:
    return ", ".join(f"{f} {profile.get(f, 'none')}" for f in ("xon", "xoff", "size"))


def lossless_pool(have: dict) -> str | None:
    """The ingress pool lossless traffic uses on the switch (module docstring); None: it has none."""
    pools, profiles = have.get("BUFFER_POOL", {}), have.get("BUFFER_PROFILE", {})
    used = sorted({(profiles.get(v.get("profile", "")) or {}).get("pool", "")
                   for k, v in have.get("BUFFER_PG", {}).items()
                   if pg_range(k.rpartition("|")[2]) - {0} and isinstance(v, dict)} & set(pools))
    if used:
        return used[0]
    if "ingress_lossless_pool" in pools:
        return "ingress_lossless_pool"
    ingress = sorted(n for n, v in pools.items() if (v or {}).get("type") == "ingress")
    return ingress[0] if len(ingress) == 1 else None


def _pools(fit: Fitted, have: dict) -> None:
    pool = lossless_pool(have)
    profiles = fit.intent.get("BUFFER_PROFILE", {})
    moved = sorted(n for n, v in profiles.items() if pool and v.get("pool") not in (pool, None))
    for name in moved:
        profiles[name]["pool"] = pool
    if moved:
        fit.notes.append(f"headroom profiles in the switch's lossless ingress pool {pool}: {', '.join(moved)}")


def runs_frrcfgd(db: dict) -> bool:
    """Whether the switch whose CONFIG_DB is `db` runs frrcfgd (else bgpcfgd): see the module docstring."""
    return str(_meta(db).get("frr_mgmt_framework_config", "")).lower() == "true"


def _routing_mode(fit: Fitted, meta_w: dict, meta_h: dict, have: dict) -> None:
    want = fit.intent
    if not runs_frrcfgd(have):
        left = [t for t in ROUTING_TABLES if want.get(t)]
        for t in ROUTING_TABLES:
            want.pop(t, None)
        for f in ROUTING_META:
            meta_w.pop(f, None)
        if left:
            mode = meta_h.get("docker_routing_config_mode", "unset")
            fit.notes.append(f"BGP not pushed ({', '.join(left)}): the switch runs bgpcfgd (docker_routing_config_mode "
                             f"{mode}, no frr_mgmt_framework_config) and the bgp container picks its daemon only at "
                             "start; see docs/plan-apply.md, adopting a brownfield SONiC switch")
        return
    asn_h = have.get("BGP_GLOBALS", {}).get("default", {}).get("local_asn") or meta_h.get("bgp_asn")
    asn_w = want.get("BGP_GLOBALS", {}).get("default", {}).get("local_asn") or meta_w.get("bgp_asn")
    if asn_h and asn_w and str(asn_h) != str(asn_w) and have.get("BGP_GLOBALS", {}).get("default"):
        fit.problems.append(f"BGP_GLOBALS|default local_asn: expected {asn_w} (inventory), found {asn_h}: the tool "
                            "never renumbers a router; change the inventory's ASN or renumber the switch first")


def _pg_overlaps(fit: Fitted, have: dict) -> None:
    """Own the lossless PG keys the switch holds that overlap a rendered one of the same port."""
    mine: dict[str, list[tuple[str, set[int]]]] = {}
    for key in fit.intent.get("BUFFER_PG", {}):
        port, _, spec = key.rpartition("|")
        mine.setdefault(port, []).append((key, pg_range(spec)))
    for key, entry in have.get("BUFFER_PG", {}).items():
        port, _, spec = key.rpartition("|")
        rng = pg_range(spec)
        if any(k != key and r & rng for k, r in mine.get(port, [])):
            for f in (entry or {}) or {"": None}:
                fit.owned.add(("BUFFER_PG", key, f) if f else ("BUFFER_PG", key))


def replaced_pgs(changes: list[Change], owned: set[Path]) -> list[Change]:
    """The removal of a port's overlapping PG key (`owned`, from `adapt`) and the addition of the rendered key(s) of
    that port as one change under `BUFFER_PG|<port>`, old → new: a replacement of the port's lossless PGs."""
    gone = {p[1] for p in owned if p[0] == "BUFFER_PG"}
    old: dict[str, list[str]] = {}
    new: dict[str, list[str]] = {}
    for c in changes:
        table, _, key = c.section.partition("|")
        port, _, spec = key.rpartition("|")
        if table != "BUFFER_PG" or not port:
            continue
        if c.op == "-" and key in gone:
            old.setdefault(port, []).append(f"{spec} {c.line}")
        elif c.op == "+":
            new.setdefault(port, []).append(f"{spec} {c.line}")
    ports = set(old) & set(new)
    out = [c for c in changes if not (c.section.startswith("BUFFER_PG|")
                                      and c.section.partition("|")[2].rpartition("|")[0] in ports
                                      and (c.op == "+" or c.section.partition("|")[2] in gone))]
    out += [Change(section=f"BUFFER_PG|{port}", op="~", old=", ".join(sorted(old[port])),
                   line=", ".join(sorted(new[port]))) for port in sorted(ports)]
    out.sort(key=lambda c: c.section)
    return out


def preflight(after: dict[str, Any]) -> list[str]:
    """What SONiC's YANG and buffer manager refuse in the CONFIG_DB a patch leaves (see the module docstring)."""
    problems: list[str] = []
    pools, profiles = after.get("BUFFER_POOL", {}), after.get("BUFFER_PROFILE", {})
    dynamic = _meta(after).get("buffer_model") == "dynamic"
    for name, prof in sorted(profiles.items()):
        pool = (prof or {}).get("pool")
        if pool and pool not in pools:
            problems.append(f"BUFFER_PROFILE|{name} pool: expected one of the switch's buffer pools "
                            f"({', '.join(sorted(pools)) or 'none'}), found {pool}")
    for key, pg in sorted(after.get("BUFFER_PG", {}).items()):
        prof = (pg or {}).get("profile")
        if prof == "NULL" and not dynamic:
            problems.append(f"BUFFER_PG|{key} profile: NULL is only valid on the dynamic buffer model")
        elif prof and prof != "NULL" and prof not in profiles:
            problems.append(f"BUFFER_PG|{key} profile: expected a BUFFER_PROFILE, found {prof} (not defined)")
    pairs = overlapping_pgs(after)
    if pairs:
        problems.append(_some("BUFFER_PG: overlapping priority groups", [f"{a} and {b}" for a, b in pairs]))
    members: dict[str, str] = {}
    for table in ("VLAN_MEMBER", "PORTCHANNEL_MEMBER"):
        for key in after.get(table, {}):
            members[key.partition("|")[2]] = f"{table}|{key}"
    routed = {k.partition("|")[0] for k in after.get("INTERFACE", {})}
    clash = [f"{port} ({members[port]})" for port in sorted(routed & set(members))]
    if clash:
        problems.append(_some("INTERFACE: ports routed while VLAN or PortChannel members (remove the membership on "
                              "the switch, or give the port another role in the inventory)", clash))
    return problems


def _some(what: str, items: list[str], show: int = 4) -> str:
    more = f" and {len(items) - show} more" if len(items) > show else ""
    return f"{what}: {', '.join(items[:show])}{more}"
