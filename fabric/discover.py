"""`fabric discover`: a drafted inventory from what a running fabric shows (LLDP and saved running configs).

Pure inference over parsed inputs; reading the files and writing the draft are the CLI's (fabric/cli/discover.py).
- Roles: a switch that sees hosts is a leaf, one that sees only leaves a spine; devices without a running config
  that LLDP shows on leaves are hosts.
- Scalable units: leaves that see the same hosts; SUs ordered by their first host, hosts by name (natural order).
  Rails: the leaf each NIC of an SU's first host reaches, in the order that host's LLDP lists its NICs (or the
  leaves' NIC names, naturally sorted, where the host printed nothing).
- Names: the defaults of `topology.names`, else the patterns that make them (`name_pattern`).
- NOS: the saved config's kind; platform from SONiC DEVICE_METADATA, else the NOS's usual platform (a comment
  says so); NVUE breakouts from the ports' `link breakout` mode.
- ASNs (the spines', the first leaf's, a `switches:` entry for a switch off that plan), loopbacks (BGP router
  ids), rail blocks (what the leaves announce in BGP); a pool is the smallest prefix covering what was found,
  widened to leave room to grow.
- QoS: the preset whose DSCP map and PFC priorities the leaves' configs have, with overrides for the ECN and DWRR
  values that differ; `custom` with the values found where no preset matches.
What LLDP and configs do not show (cable lengths, RDMA device names, GPUs, host MTU, the management network) is
guessed and the draft's comments say so. Every name and value from a device is untrusted: names must match the
inventory's NAME pattern, and YAML is written by `fabric.serialize.dumps_yaml` (quoted where not plain).
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from ipaddress import IPv4Interface, IPv4Network
from itertools import product
from typing import Any

from fabric.errors import InputError, Problem
from fabric.lint.configs.model import DeviceConfig
from fabric.lint.view import QosView
from fabric.model.inventory import NAME, NamePatterns
from fabric.model.platforms import PLATFORMS
from fabric.model.qos import PRESETS, QosPolicy
from fabric.nos import NOS
from fabric.order import natural
from fabric.parsers.lldp import Lldp
from fabric.serialize import dumps_yaml

GUESSED_PLATFORM = {"nvue": "sn5600", "eos": "7060x5", "frr": "linux-frr", "sonic": "msn2700"}
_CIDR = re.compile(r"(?<![\d.])(\d{1,3}\.\d{1,3}\.\d{1,3}\.\d{1,3})/(\d{1,2})(?![\d.])")
_NAME = re.compile(NAME)


@dataclass
class Running:
    """One switch's saved running configuration: its NOS, the parsed config and its text."""

    target: str
    config: DeviceConfig
    text: str
    document: Any = None  # the parsed tree of a SONiC config_db or an NVUE config; None for CLI text


@dataclass
class Seen:
    """The hosts' NICs LLDP shows: host → netdev → the leaf it reaches, in the order the host's LLDP lists them."""

    host_nics: dict[str, dict[str, str]] = field(default_factory=dict)


@dataclass
class Draft:
    files: dict[str, str]  # inventory file name → YAML text
    notes: list[str]  # what was guessed, for the person reading the CLI's output


def _fail(where: str, expected: str, found: str) -> InputError:
    return InputError(Problem(where, None, "", expected, found))


def observe(reports: dict[str, Lldp], switches: set[str]) -> Seen:
    """Hosts' NICs: from a host's own LLDP (its port → the switch it sees), else from what the switches see of it
    (the port description a host's lldpd sends is its netdev)."""
    seen = Seen()
    for device in sorted(set(reports) - switches, key=natural):
        for n in reports[device].neighbors:
            if n.system_name in switches:
                seen.host_nics.setdefault(device, {}).setdefault(n.port, n.system_name)
    for device in sorted(set(reports) & switches, key=natural):
        for n in reports[device].neighbors:
            far, far_ports = n.system_name, n.remote_ports()
            netdev = far_ports[-1] if far_ports else ""
            if far and far not in switches and far not in reports and netdev:
                _check_name(far, f"{device}'s LLDP, port {n.port}")
                seen.host_nics.setdefault(far, {}).setdefault(netdev, device)
    return seen


def _links(reports: dict[str, Lldp], leaves: set[str], spines: set[str]) -> Counter[tuple[str, str]]:
    links: Counter[tuple[str, str]] = Counter()
    for leaf in leaves & set(reports):
        links.update((leaf, n.system_name) for n in reports[leaf].neighbors if n.system_name in spines)
    for spine in spines & set(reports):
        for n in reports[spine].neighbors:
            if n.system_name in leaves and n.system_name not in reports:
                links[(n.system_name, spine)] += 1
    return links


@dataclass
class Layout:
    """The rail-optimized layout found: SUs of hosts and their rail leaves, spines."""

    sus: list[list[str]]  # hosts of each SU, in order
    rails: list[list[str]]  # leaves of each SU, rail 1 first
    spines: list[str]
    netdevs: dict[str, list[str]]  # host → netdev of rail 1, 2, …
    uplinks: int


def layout(seen: Seen, reports: dict[str, Lldp], switches: set[str]) -> Layout:
    """SUs, rails and spines (module docstring); a fabric that is not rail-optimized is a located error."""
    leaves = {leaf for nics in seen.host_nics.values() for leaf in nics.values()}
    spines = sorted(switches - leaves, key=natural)
    groups: dict[frozenset[str], list[str]] = {}
    for leaf in leaves:
        hosts = frozenset(h for h, nics in seen.host_nics.items() if leaf in nics.values())
        groups.setdefault(hosts, []).append(leaf)
    sus = sorted((sorted(h, key=natural) for h in groups), key=lambda hs: natural(hs[0]))
    rails: list[list[str]] = []
    netdevs: dict[str, list[str]] = {}
    for hosts in sus:
        first = seen.host_nics[hosts[0]]
        order = [first[n] for n in sorted(first, key=natural)]  # not lldpctl's order (ifindex: new when remade)
        su_leaves = list(dict.fromkeys(order))
        if sorted(su_leaves) != sorted(groups[frozenset(hosts)]):
            raise _fail(hosts[0], "one NIC on each rail leaf of its scalable unit",
                        f"NICs on {', '.join(su_leaves)}")
        rails.append(su_leaves)
        for h in hosts:
            by_leaf = {leaf: nd for nd, leaf in seen.host_nics[h].items()}
            if set(by_leaf) != set(su_leaves):
                raise _fail(h, f"a NIC on each of {', '.join(su_leaves)}", ", ".join(sorted(by_leaf)))
            netdevs[h] = [by_leaf[leaf] for leaf in su_leaves]
    if len({len(r) for r in rails}) > 1:
        raise _fail("LLDP", "the same number of rails in every scalable unit", str(sorted({len(r) for r in rails})))
    links = _links(reports, leaves, set(spines))
    counts = {links[(leaf, s)] for leaf in leaves for s in spines}
    if len(counts) != 1 or 0 in counts:
        raise _fail("LLDP", "every leaf cabled to every spine with the same number of links",
                    f"{sorted(counts)} links per leaf and spine")
    return Layout(sus=sus, rails=rails, spines=spines, netdevs=netdevs, uplinks=counts.pop())


MAX_RUNS = 6  # digit runs in a name tried as fields (3 ** 6 candidate patterns at most)


def name_pattern(named: list[tuple[str, dict[str, int]]]) -> str | None:
    """The `topology.names` format string that makes every name from its fields ({su}, {rail}, {n}, {h}…): each
    digit run of the first name is a field (zero-padded where it is) or itself; the pattern with the most fields
    that makes them all, None where none does."""
    tokens = re.split(r"(\d+)", named[0][0])
    runs = [i for i in range(1, len(tokens), 2)]
    if len(runs) > MAX_RUNS:
        return None
    fields = list(named[0][1])
    choices = sorted(product([None, *fields], repeat=len(runs)), key=lambda c: c.count(None))
    for choice in choices:
        parts = [t.replace("{", "{{").replace("}", "}}") for t in tokens]
        for i, f in zip(runs, choice, strict=True):
            if f is not None:
                width = len(tokens[i])
                parts[i] = f"{{{f}:0{width}d}}" if width > 1 and tokens[i][0] == "0" else f"{{{f}}}"
        pattern = "".join(parts)
        if all(pattern.format(**values) == name for name, values in named):
            return pattern
    return None


def patterns(lay: Layout) -> dict[str, str]:
    """`topology.names` of the names found (only those other than the defaults); a located error where a role's
    names follow no pattern."""
    named = {
        "host": [(h, {"su": s, "h": i}) for s, hs in enumerate(lay.sus, 1) for i, h in enumerate(hs, 1)],
        "leaf": [(x, {"su": s, "rail": r}) for s, ls in enumerate(lay.rails, 1) for r, x in enumerate(ls, 1)],
        "spine": [(x, {"n": n}) for n, x in enumerate(lay.spines, 1)],
    }
    defaults = NamePatterns()
    out = {}
    for role, names in named.items():
        default = getattr(defaults, role)
        if all(default.format(**values, pod=1, plane=1) == name for name, values in names):
            continue
        found = name_pattern(names)
        if found is None:
            examples = ", ".join(n for n, _ in names[:3])
            raise _fail("LLDP", f"{role} names that follow one pattern of numbers (as topology.names.{role})",
                        examples)
        out[role] = found
    return out


def _pool(addresses: list[IPv4Network], floor: int) -> tuple[IPv4Network, str]:
    """The smallest prefix covering `addresses`, widened to /`floor` where longer (room for the next unit)."""
    lo, hi = min(a.network_address for a in addresses), max(a.broadcast_address for a in addresses)
    length = 32 - (int(lo) ^ int(hi)).bit_length()
    covering = IPv4Network((int(lo), length), strict=False)
    pool = covering.supernet(new_prefix=floor) if length > floor else covering
    why = f"smallest prefix covering the {len(addresses)} found: {covering}"
    return pool, why + (f", widened to /{floor} for growth" if pool != covering else "")


def _ipv4(text: str) -> IPv4Interface | None:
    try:
        return IPv4Interface(text)
    except ValueError:
        return None


_ROUTER_ID = re.compile(r"router[-_ ]id[\"':\s]+(\d{1,3}(?:\.\d{1,3}){3})\b")
_NETWORK = re.compile(r"^\s*network\s+(\d{1,3}(?:\.\d{1,3}){3}/\d{1,2})\b", re.MULTILINE)


def _keys_at(node: object, suffix: tuple[str, ...], path: tuple[str, ...] = ()) -> list[str]:
    """Keys of every mapping of an NVUE tree whose path ends with `suffix`."""
    if not isinstance(node, dict | list):
        return []
    if path[-len(suffix):] == suffix and isinstance(node, dict):
        return [str(k) for k in node]
    items = node.items() if isinstance(node, dict) else enumerate(node)
    return [k for key, v in items for k in _keys_at(v, suffix, (*path, str(key)))]


def advertised(sw: Running) -> list[IPv4Interface]:
    """The prefixes a switch announces in BGP: `network` statements (FRR, EOS), BGP_GLOBALS_AF_NETWORK (SONiC),
    `…/ipv4-unicast/network` (NVUE)."""
    if sw.target == "sonic":
        found = [k.rpartition("|")[2] for k in sw.document.get("BGP_GLOBALS_AF_NETWORK", {})]
    elif sw.target == "nvue":
        found = _keys_at(sw.document, ("address-family", "ipv4-unicast", "network"))
    else:
        found = _NETWORK.findall(sw.text)
    return [i for f in found if (i := _ipv4(f)) is not None]


def loopback(sw: Running, name: str) -> IPv4Network:
    """A switch's loopback: its BGP router id (every NOS names it router-id or router_id)."""
    m = _ROUTER_ID.search(sw.text)
    ip = _ipv4(m[1]) if m else None
    if ip is None:
        raise _fail(name, "a BGP router id (the loopback address) in the saved config", "none")
    return ip.network


def addressing(running: dict[str, Running], lay: Layout) -> tuple[dict, list[str]]:
    """addressing: the loopbacks (each switch's router id), the rail blocks (what the leaves announce besides
    their loopback), the mode (p2p31 where leaf addresses in those blocks are /31s), ASNs."""
    loops = [loopback(sw, n) for n, sw in running.items()]
    leaves = [leaf for rs in lay.rails for leaf in rs]
    blocks = sorted({i.network for leaf in leaves for i in advertised(running[leaf]) if 0 < i.network.prefixlen < 31},
                    key=lambda n: int(n.network_address))
    if not blocks:
        raise _fail(leaves[0], "the rail subnets the leaves announce in BGP (network statements)", "none")
    p2p = any(m[2] == "31" and any(IPv4Interface(f"{m[1]}/32").network.subnet_of(b) for b in blocks)
              for leaf in leaves for m in _CIDR.finditer(running[leaf].text) if _ipv4(f"{m[1]}/{m[2]}"))
    lo_pool, lo_why = _pool(sorted(set(loops)), 24)
    rail_pool, rail_why = _pool(blocks, 16)
    notes = [f"loopbacks (router ids): {lo_why}", f"rails (the leaves' announced subnets): {rail_why}",
             "management: not read; the default 198.18.0.0/16 (guessed)"]
    asn = {"spines": _first_asn(running, lay.spines, "spines"), "leaves": _first_asn(running, leaves, "leaves")}
    return {"mode": "p2p31" if p2p else "svi", "loopbacks": str(lo_pool), "rails": str(rail_pool),
            "rail_prefix_length": min(b.prefixlen for b in blocks), "asn": asn}, notes


def _first_asn(running: dict[str, Running], names: list[str], what: str) -> int:
    asn = running[names[0]].config.asn
    if asn is None:
        raise _fail(names[0], f"the BGP ASN of the {what} in its config", "none")
    return int(asn)


def asn_overrides(running: dict[str, Running], lay: Layout, asn: dict[str, int]) -> list[dict]:
    """`switches:` entries for the switches whose ASN is not the plan's (all spines one ASN, leaves numbered on
    from the first, in the order the topology generates them)."""
    leaves = [leaf for rs in lay.rails for leaf in rs]
    planned = {**{s: asn["spines"] for s in lay.spines}, **{x: asn["leaves"] + i for i, x in enumerate(leaves)}}
    return [{"name": n, "asn": running[n].config.asn} for n in [*lay.spines, *leaves]
            if running[n].config.asn is not None and running[n].config.asn != planned[n]]


def _breakout(sw: Running) -> str | None:
    """The breakout of an NVUE switch: its ports' `link.breakout` mode (2x) at the speed its sub-ports run; None
    elsewhere (SONiC and EOS breakouts are not read)."""
    if sw.target != "nvue":
        return None
    modes = Counter(m for m in _keys_at(sw.document, ("link", "breakout")) if re.fullmatch(r"[1-8]x", m))
    speeds = Counter(p.speed for name, p in sw.config.ports.items() if p.speed and re.fullmatch(r"swp\d+s\d+", name))
    if not modes or not speeds:
        return None
    return f"{modes.most_common(1)[0][0]}{speeds.most_common(1)[0][0]}G"


def _speeds(leaf: Running, report: Lldp | None, switches: set[str]) -> tuple[str, str, list[str]]:
    """The configured speed of a leaf's host ports and of its uplinks (the ports its LLDP shows hosts and switches
    on); 400G with a note where the config sets none (FRR)."""
    ports: dict[bool, list[str]] = {True: [], False: []}
    for n in report.neighbors if report else []:
        ports[n.system_name in switches].append(n.port)
    out, notes = [], []
    for up, what in ((False, "host-leaf"), (True, "leaf-spine")):
        speeds = Counter(p.speed for name in ports[up] if (p := leaf.config.ports.get(name)) and p.speed)
        out.append(f"{speeds.most_common(1)[0][0]}G" if speeds else "400G")
        notes.append(f"{what} speed: the configured speed of the leaf's ports" if speeds else
                     f"guessed: {what} speed 400G, the leaf's config sets no port speed")
    return out[0], out[1], notes


def platform_of(sw: Running) -> tuple[str, bool]:
    """(platform, guessed): the platform the config names where it names one, else the NOS's usual one."""
    meta = sw.document.get("DEVICE_METADATA", {}).get("localhost", {}) if sw.target == "sonic" else {}
    said = " ".join(str(meta.get(k, "")) for k in ("platform", "hwsku")).lower()
    named = [p for p in PLATFORMS if p in said]
    if named:
        return max(named, key=len), False
    return GUESSED_PLATFORM.get(sw.target, next(iter(PLATFORMS))), True


def _qos_diff(v: QosView, preset: dict) -> dict | None:
    """Overrides that turn `preset` into what `view` (a QosView) configures; None where its classification or
    lossless priorities differ (no preset fits)."""
    q = QosPolicy.model_validate(preset)
    if any(v.priority_of_dscp(d) != q.priority_of_dscp(d) for d in range(64)):
        return None
    if sorted(v.lossless) != sorted(q.lossless_priorities):
        return None
    over: dict = {}
    for tc, e in v.ecn.items():
        p = q.ecn.get(tc)
        found = {"min_bytes": e.min_bytes, "max_bytes": e.max_bytes, "probability": e.probability}
        diff = {k: val for k, val in found.items() if p is None or getattr(p, k) != val}
        if diff:
            over.setdefault("ecn", {})[tc] = diff
    if v.dwrr and v.dwrr != q.ets_dwrr:
        over["ets_dwrr"] = dict(v.dwrr)
    return over


def _priority_to_tc(v: QosView) -> dict[int, int]:
    """The priority → TC map a config sets; where its parser reads none (SONiC and EOS map DSCP to TC), each
    priority the DSCP map or PFC uses keeps its own TC and the others share the default priority's."""
    if v.priority_to_tc:
        return {p: v.tc_of_priority(p) for p in range(8)}
    used = {*(v.dscp_to_priority or {}).values(), v.default_priority, *v.lossless}
    return {p: p if p in used else v.default_priority for p in range(8)}


def qos(running: dict[str, Running], leaves: list[str]) -> tuple[dict, list[str]]:
    views = [running[leaf].config.qos for leaf in leaves if running[leaf].config.qos is not None]
    if not views:
        return {"preset": "nvidia-roce"}, ["qos: no QoS in the saved configs (FRR keeps it in qos.sh): the "
                                           "nvidia-roce preset (guessed)"]
    for name in (n for n in PRESETS if n != "custom"):
        over = _qos_diff(views[0], PRESETS[name])
        if over is not None:
            return {"preset": name, **over}, [f"qos: the {name} preset" + (f" with overrides of {', '.join(over)}"
                                                                          if over else "") + f" ({leaves[0]})"]
    v = views[0]
    lossless = sorted(v.lossless)
    explicit = {d: p for d, p in (v.dscp_to_priority or {}).items() if p != v.default_priority}
    roce = min((d for d, p in explicit.items() if p in lossless), default=26)
    strict = sorted(v.strict_tcs)
    cnp = min((d for d, p in explicit.items() if v.tc_of_priority(p) in strict), default=48)
    custom = {"preset": "custom", "trust": "dscp", "dscp_to_priority": dict(sorted(explicit.items())),
              "default_priority": v.default_priority,
              "priority_to_tc": _priority_to_tc(v), "lossless_priorities": lossless,
              "roce_dscp": roce, "cnp_dscp": cnp, "cnp_priority": v.priority_of_dscp(cnp), "ets_strict": strict,
              "ets_dwrr": dict(v.dwrr),
              "ecn": {tc: {"enabled": e.enabled, "min_bytes": e.min_bytes, "max_bytes": e.max_bytes,
                           "probability": e.probability} for tc, e in v.ecn.items()},
              "pfc_watchdog": PRESETS["nvidia-roce"]["pfc_watchdog"], "headroom": PRESETS["nvidia-roce"]["headroom"]}
    return custom, [f"qos: no preset matches {leaves[0]}'s DSCP map and PFC priorities: custom with the values "
                    "found (roce_dscp, cnp_dscp, watchdog and headroom guessed)"]


def _comment(lines: list[str]) -> str:
    """Comment lines; device text in them is made one printable line each."""
    return "".join("# " + "".join(c if c.isprintable() else "?" for c in line)[:300] + "\n" for line in lines)


def graceful_shutdown(running: dict[str, Running]) -> tuple[dict, list[str]]:
    """`bgp.graceful_shutdown: false` where no switch's config honours RFC 8326 (the tool's default is on: a drain
    needs it, and the first plan would add it everywhere)."""
    if any(sw.config.graceful_shutdown for sw in running.values()):
        return {}, []
    return {"bgp": {"graceful_shutdown": False}}, [
        "bgp.graceful_shutdown: false, as found (no switch honours GRACEFUL_SHUTDOWN); `fabric drain` needs it on"]


def _sections(doc: dict) -> str:
    """Top-level sections in the order given (dumps_yaml sorts keys), blank lines between."""
    return "\n".join(dumps_yaml({key: value}) for key, value in doc.items())


def _check_name(name: str, where: str) -> None:
    """A device name from LLDP becomes a key of the draft only where it is an inventory name."""
    if not _NAME.match(name):
        raise _fail(where, f"a device name matching {NAME}", repr(name[:80]))


def role_settings(sw: Running, role: str, notes: list[str]) -> dict:
    """`roles.<role>` from one switch of the role: its NOS, platform and breakout (a guess noted in `notes`)."""
    plat, guessed = platform_of(sw)
    breakout = _breakout(sw)
    if guessed:
        notes.append(f"roles.{role}.platform: {plat} guessed, the {NOS[sw.target].short} config does not name "
                     "its platform")
    return {"platform": plat, "target": sw.target, **({"breakout": breakout} if breakout else {})}


def hosts_section(lay: Layout) -> dict:
    """`hosts:`: the first host's NICs as the defaults; a `list` entry for each host whose NICs are named otherwise."""
    def nics(netdevs: list[str]) -> list[dict]:
        return [{"rail": r, "rdma": f"mlx5_{r - 1}", "netdev": nd} for r, nd in enumerate(netdevs, 1)]

    first = lay.netdevs[lay.sus[0][0]]
    hosts: dict = {"defaults": {"gpus": len(first), "mtu": 9000, "nics": nics(first)}}
    others = [{"name": h, "nics": nics(nds)} for h, nds in lay.netdevs.items() if nds != first]
    return {**hosts, "list": others} if others else hosts


def draft(reports: dict[str, Lldp], running: dict[str, Running], name: str) -> Draft:
    """The inventory files of the fabric `reports` and `running` show (module docstring)."""
    switches = set(running)
    for device, report in reports.items():
        if device not in switches and report.source != "lldpctl":
            raise _fail(device, f"a saved running config in --running (its LLDP output is a switch's: "
                        f"{report.source})", "none")
    seen = observe(reports, switches)
    if not seen.host_nics:
        raise _fail("--lldp", "LLDP that shows hosts on leaves (host or leaf outputs)", "no host seen")
    lay = layout(seen, reports, switches)
    names = patterns(lay)
    leaves = [x for r in lay.rails for x in r]
    leaf, spine = leaves[0], lay.spines[0]
    addr, notes = addressing(running, lay)
    role_notes: list[str] = []
    qos_doc, qos_notes = qos(running, leaves)
    overrides = asn_overrides(running, lay, addr["asn"])
    if overrides:
        role_notes.append(f"switches: the {len(overrides)} whose BGP ASN is not the plan's (spines one ASN, leaves "
                          "numbered on from the first)")
    roles = {role: role_settings(running[sw], role, role_notes) for role, sw in (("leaf", leaf), ("spine", spine))}
    host_gbps, up_gbps, speed_notes = _speeds(running[leaf], reports.get(leaf), set(running))
    adaptive = any(c.adaptive_routing for leaf in leaves for c in running[leaf].config.ports.values())
    bgp, gshut_notes = graceful_shutdown(running)
    mtu = max((c.mtu for c in running[leaf].config.ports.values() if c.mtu), default=9216)
    hosts = hosts_section(lay)
    topology = {"rails": len(lay.rails[0]), "scalable_units": len(lay.sus), "hosts_per_su": len(lay.sus[0]),
                "spines": len(lay.spines), "uplinks_per_spine": lay.uplinks, **({"names": names} if names else {})}
    if len({len(s) for s in lay.sus}) > 1:
        raise _fail("LLDP", "the same number of hosts in every scalable unit", str([len(s) for s in lay.sus]))
    files = {
        "fabric.yaml": _comment(["Drafted by fabric discover from LLDP and saved running configs.",
                                 *role_notes, *speed_notes,
                                 "guessed: cable lengths 5m host-leaf and 40m leaf-spine, not visible in LLDP"])
        + _sections({"fabric": {"name": name, "description": "drafted by fabric discover"}, "topology": topology,
                     "roles": roles, "cabling": {"host_leaf": {"speed": host_gbps, "cable": "5m"},
                                                 "leaf_spine": {"speed": up_gbps, "cable": "40m"}},
                     **({"switches": overrides} if overrides else {})}),
        "addressing.yaml": _comment(notes) + dumps_yaml({"addressing": addr}),
        "qos.yaml": _comment(qos_notes) + dumps_yaml({"qos": qos_doc}),
        "switching.yaml": _comment([f"mtu: the largest port MTU of {leaf}; adaptive routing: as its ports have it",
                                    *gshut_notes, "not read: BGP timers and paths, ARP aging (the defaults)"])
        + dumps_yaml({"switching": {"mtu": mtu, "adaptive_routing": {"enabled": adaptive}, **bgp}}),
        "hosts.yaml": _comment(["NICs and rails from LLDP (netdev = the host's port, rail = the leaf it reaches)",
                                "guessed: rdma names mlx5_<rail-1>, gpus = rails, mtu 9000; not visible in LLDP"])
        + dumps_yaml({"hosts": hosts}),
    }
    return Draft(files=files, notes=[*role_notes, *notes, *qos_notes])


