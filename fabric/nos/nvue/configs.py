"""NVUE YAML (`nv config show -o yaml` / `nv config patch`) → DeviceConfig.

`qos roce` enabled without explicit maps means NVIDIA's RoCE defaults (reference switch-qos.md §2.1)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fabric.fast.memo import Memo, made
from fabric.lint.configs.gshut import GSHUT_VALUES, GshutConfig
from fabric.lint.configs.model import BgpNeighborConfig, Deferred, DeviceConfig, PortConfig
from fabric.lint.view import Ecn, QosView
from fabric.model.qos import PRESETS
from fabric.model.running import nvue_document
from fabric.model.source import SourceMap, yaml_text
from fabric.nos import row_of
from fabric.serialize import Fields, Shared
from fabric.serialize import _string as yaml_string  # how the emitter writes a key

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
Place = Callable[..., "int | Deferred | None"]  # the same, or the line found when first read (`Deferred`)


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
            dscp = (m or {}).get("dscp") or {}
            for d, v in dscp.items():
                self.dscp = self.dscp if self.dscp is not None else {}
                self.dscp[int(d)] = int(v.get("switch-priority"))
            if dscp:
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


def _qos_of(qos: dict[str, Any], dev: DeviceConfig, line: Line, memo: Memo | None = None) -> _Qos:
    """`_Qos.of(qos, dev, line)` of a rendered patch (`line` its `_PatchLines`): switches of the same QoS share its
    tree (`render.qos_tree`) and so its text; where the text of this patch's `qos` is that of a patch judged
    before (kept in `memo`), so is every line below it, shifted by where `qos` starts. The `_Qos` is shared (read
    only)."""
    span = line.span("qos") if type(line) is _PatchLines and qos else None
    if span is None or memo is None:
        return _Qos.of(qos, dev, line)
    first, text = span[0], line.text[span[1]:span[2]]
    known = memo.find(qos, "nvue qos judged")  # (its text, `_Qos.of` it, the lines it sets less the line of `qos`)
    if known is not None and known[0] == text:
        dev.lines.update({k: first + v for k, v in known[2].items()})
        return known[1]
    before = dict(dev.lines)
    q = _Qos.of(qos, dev, line)
    last = first + text.count("\n")
    set_here = {k: v for k, v in dev.lines.items() if k not in before or before[k] != v}
    if all(first <= v <= last for v in set_here.values()):  # the lines of `qos` only: true of every rendered patch
        memo.put(qos, "nvue qos judged", (text, q, {k: v - first for k, v in set_here.items()}))
    return q


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


_READS = frozenset(("link", "qos", "router", "bridge"))  # what `_port` reads of a port's entry


def _port(pname: str, ic: dict[str, Any], q: _Qos, line: Place,
          shapes: dict[int, tuple[Any, PortConfig | None]] | None = None) -> PortConfig | None:
    """One swp port; None for a breakout parent (its sub-ports carry the traffic) or a port shut down. `shapes`:
    the ports of a rendered tree whose entries share what `_port` reads (`fabric.serialize.Fields`: all but their
    description and address) are judged once per shared part."""
    common = None if shapes is None else ic._common if type(ic) is Fields and _READS.isdisjoint(ic._own) else (
        ic if type(ic) is Shared else None)
    if common is not None:
        known = shapes.get(id(common))  # type: ignore[union-attr]
        if known is None or known[0] is not common:
            known = shapes[id(common)] = (common, _port(pname, ic, q, line))  # type: ignore[index]
        if known[1] is None:
            return None
        p = object.__new__(PortConfig)  # a shallow copy of the port judged first, under this port's name and line
        p.__dict__.update(known[1].__dict__)
        p.name, p.line, p.wd = pname, line("interface", pname), dict(p.wd)
        if p.tagged_vlans is not None:
            p.tagged_vlans = list(p.tagged_vlans)
        return p
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


def _neighbor_policy(nc: dict[str, Any]) -> tuple[str | None, str | None, bool]:
    """A neighbour's inbound route map, peer group, and whether it stops sending communities."""
    v4 = ((nc.get("address-family") or {}).get("ipv4-unicast") or {})
    rm = ((v4.get("policy") or {}).get("inbound") or {}).get("route-map")
    advertise = v4.get("community-advertise")
    return (None if rm is None else str(rm), str(nc["peer-group"]) if nc.get("peer-group") else None,
            (advertise if isinstance(advertise, dict) else {}).get("regular") in _OFF)


def _bgp(tree: dict[str, Any], dev: DeviceConfig, line: Line, place: Place) -> None:
    """The ASN, the neighbours of the default VRF, and whether graceful shutdown is honoured and sent."""
    gs = _gshut(tree)
    bgp = (tree.get("router") or {}).get("bgp") or {}
    if "autonomous-system" in bgp and isinstance(bgp["autonomous-system"], int):
        dev.asn, dev.lines["bgp"] = bgp["autonomous-system"], line("router", "bgp", "autonomous-system") or 1
    vbgp = (((tree.get("vrf") or {}).get("default") or {}).get("router") or {}).get("bgp") or {}
    known: dict[int, tuple[Any, tuple[str | None, str | None, bool], str]] = {}  # neighbours sharing one entry
    for key, nc in (vbgp.get("neighbor") or {}).items():
        nc = nc or {}
        facts = known.get(id(nc))
        if facts is None or facts[0] is not nc:
            facts = known[id(nc)] = (nc, _neighbor_policy(nc), str(nc.get("remote-as", "")))
        (rm, group, quiet), remote_as, peer = facts[1], facts[2], str(key)
        if rm is not None:
            gs.inbound[peer] = rm
        if group is not None:
            gs.groups[peer] = group
        if quiet:
            gs.no_send.add(peer)
        dev.neighbors.append(BgpNeighborConfig(peer=peer, remote_as=remote_as, interface=peer.startswith("swp"),
                                               line=place("vrf", "default", "router", "bgp", "neighbor", key)))
    if dev.asn is not None:
        # FRR under NVUE sends communities unless `community-advertise regular` is off
        dev.graceful_shutdown, dev.graceful_shutdown_missing = gs.verdict([n.peer for n in dev.neighbors], True)
        dev.lines["graceful_shutdown"] = dev.lines["bgp"]


def parse(path: Path, name: str, text: str) -> DeviceConfig:
    doc, smap = nvue_document(path, text)
    tree, base = _set_tree(doc)
    lines = smap.lines

    def line(*key: Any) -> int | None:
        loc = (*base, *key)
        hit = dict.get(lines, loc)  # the common case first: the line of this very path (no alias, no ancestor)
        return hit[1] if hit is not None else smap.where(loc)[1]

    return _device(path, name, tree, line)


RENDERED_HEAD = b"- set:\n"  # how a patch this tool renders starts (`render.patch_yaml`)


def parse_rendered(path: Path, name: str, text: str, tree: dict[str, Any], memo: Memo | None = None,
                   again: Callable[[], str | None] | None = None) -> DeviceConfig | None:
    """`parse(path, name, text)` where `text` is byte for byte the patch rendered for the switch and `tree` the
    renderer's own tree of it (`render.rendered_tree`), which reading the text gives (tests/nos/nvue/test_driver.py):
    the few lines of QoS, BGP and ARP settings are found in the text (`_PatchLines`), those of ports and neighbours,
    which rules read only to locate a finding, by reading the text when first asked (`_LinesLater`); the text is
    not read line by line otherwise. None where the text is not as the renderer writes it: `parse` reads it.
    `memo`: what the patches of one directory share (their QoS tree, read once); `again`: the same text made once
    more when first asked (the render of the switch), so that the config does not hold it meanwhile."""
    if not text.startswith(RENDERED_HEAD.decode()):
        return None
    try:
        lines = _LinesLater(text if again is None else again, str(path))
        return _device(path, name, _in_yaml_order(tree, memo), _PatchLines(text, tree),
                       later=lambda *key: Deferred((lines, key)), memo=memo)
    except LookupError:
        return None


def _sorted(d: Any, deep: bool = False) -> Any:
    """`d` with its keys in the order its YAML text has them (`fabric.serialize` sorts them as text)."""
    if not isinstance(d, dict):
        return d
    return {k: _sorted(d[k], True) if deep else d[k] for k in sorted(d, key=str)}


def _in_yaml_order(tree: dict[str, Any], memo: Memo | None = None) -> dict[str, Any]:
    """The mappings `_device` iterates (QoS, policies, ports, BGP neighbours) in the order reading the patch gives
    them: the renderer builds its tree in its own order, and the order of ports and neighbours is the order of the
    config's ports and of its findings. What `_device` only looks up keeps its order."""
    t = dict(tree)
    qos = t.get("qos")  # switches of the same QoS share its tree (`render.qos_tree`): sorted once in `memo`
    t["qos"] = made(memo, qos, "nvue yaml order", lambda: _sorted(qos, deep=True))
    t["interface"] = _sorted(t.get("interface"))
    router = t.get("router")
    if isinstance(router, dict) and "policy" in router:
        t["router"] = {**router, "policy": _sorted(router["policy"], deep=True)}
    bgp = (((t.get("vrf") or {}).get("default") or {}).get("router") or {}).get("bgp")
    if isinstance(bgp, dict) and isinstance(bgp.get("neighbor"), dict):
        vrf, default, vrouter = t["vrf"], t["vrf"]["default"], t["vrf"]["default"]["router"]
        t["vrf"] = {**vrf, "default": {**default, "router": {**vrouter, "bgp": {**bgp, "neighbor": _sorted(
            bgp["neighbor"])}}}}
    return t


class _LinesLater:
    """The line of a key path under the `set` tree of a patch, read (as `parse` reads them) when first asked; the
    text, or a function that makes it (None: no line)."""

    def __init__(self, text: str | Callable[[], str | None], file: str):
        self.text: str | Callable[[], str | None] | None = text
        self.file = file
        self.smap = SourceMap()

    def __call__(self, key: tuple[Any, ...]) -> int | None:
        if self.text is not None:
            text, self.text = self.text, None
            text = text if isinstance(text, str) else text()
            if text is not None:
                yaml_text(text, self.file, self.smap)
        return self.smap.where((0, "set", *key))[1]


class _PatchLines:
    """The line of a key path under a rendered patch's `set` tree, as the loader's SourceMap answers it (the line
    of the path, else of its nearest ancestor; `- set:` is line 1), found in the text without reading it line by
    line: the patch is the block YAML `fabric.serialize` writes for the renderer's `tree` (`- set:`, then one key
    per line, indented two more per level from 4, each mapping's keys sorted as text), so a mapping's keys are,
    in that order, the lines that start with the indentation and the key as the emitter writes it, within the
    lines of their parent. A key that is not where it belongs raises LookupError: the caller reads the text."""

    def __init__(self, text: str, tree: dict[str, Any]):
        self.text = text
        self.tree = tree
        self.kids: dict[int, dict[str, list[Any]]] = {}  # span start → key → [line, span start, span end, value]
        self.known: dict[tuple[Any, ...], int] = {}  # key path → its answer

    def __call__(self, *key: Any) -> int:
        hit = self.known.get(key)
        if hit is not None:
            return hit
        best, start, end, first, indent, node = 1, len(RENDERED_HEAD), len(self.text), 2, 4, self.tree
        for i, k in enumerate(key):
            kids = self.kids.get(start)
            if kids is None:
                kids = self.kids[start] = self._children(node, start, end, first, indent)
                self.known.update({(*key[:i], child): at[0] for child, at in kids.items()})
            found = kids.get(k) if type(k) is str else None
            if found is None:
                break
            best, start, end, node = found
            first, indent = best + 1, indent + 2
        self.known[key] = best
        return best

    def span(self, key: str) -> tuple[int, int, int] | None:
        """(the line of a key of the `set` tree, where the text of its value starts, where it ends); None where the
        patch lacks the key."""
        self(key)
        found = self.kids.get(len(RENDERED_HEAD), {}).get(key)
        return None if found is None else (found[0], found[1], found[2])

    def _children(self, node: Any, start: int, end: int, first: int, indent: int) -> dict[str, list[Any]]:
        """The keys of the mapping `node` written in text[start:end] (its first line numbered `first`)."""
        if not isinstance(node, dict) or not node:
            return {}
        if any(type(k) is not str for k in node):
            raise LookupError("a key that is not a string")
        text, pad = self.text, "\n" + " " * indent
        kids: dict[str, list[Any]] = {}
        pos, line = start - 1, first  # the newline before the line numbered `line`
        previous: list[Any] | None = None
        for k in sorted(node):
            at = text.find(f"{pad}{yaml_string(k)}:", pos, end)
            if at < 0:
                raise LookupError(k)
            line += text.count("\n", pos + 1, at + 1)
            pos = at
            if previous is not None:
                previous[2] = at + 1
            eol = text.find("\n", at + 1, end)
            previous = kids[k] = [line, end if eol < 0 else eol + 1, end, node[k]]
        return kids


def _device(path: Path, name: str, tree: dict[str, Any], line: Line, later: Place | None = None,
            memo: Memo | None = None) -> DeviceConfig:
    """The config of the `set` tree `tree`. `later`: the renderer's own tree (ports of shared parts), whose ports'
    and neighbours' lines are found when a finding asks (`later(*key)`, a `Deferred`); `memo`: what the patches
    read share (`_qos_of`)."""
    dev = DeviceConfig(name=name, file=str(path), kind=row_of(__name__).name)
    qos = tree.get("qos") or {}
    q = _qos_of(qos, dev, line, memo) if later is not None else _Qos.of(qos, dev, line)
    shapes: dict[int, tuple[Any, PortConfig | None]] | None = {} if later is not None else None
    place = later or line
    for pname, ic in (tree.get("interface") or {}).items():
        if isinstance(ic, dict) and str(pname).startswith("swp") and (p := _port(str(pname), ic, q, place, shapes)):
            dev.ports[str(pname)] = p
    arp = (((tree.get("system") or {}).get("global") or {}).get("arp") or {}).get("base-reachable-time")
    if isinstance(arp, int):
        dev.arp_aging, dev.lines["arp_aging"] = arp, line("system", "global", "arp", "base-reachable-time") or 1
    _bgp(tree, dev, line, place)
    dev.qos = q.view(name, dev)
    return dev
