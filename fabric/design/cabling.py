"""Cabling truth: the cables LLDP shows in the hall against the cables the model has.

Each device's LLDP report (fabric.parsers.lldp) says, per local port, who is at the other end. Both ends of a
cable may report it; a cable is known where either does. Every link of the model is then

- ok: the ends see each other (or the one end read sees the other, the other device not read);
- half-seen: one end sees the other, the other end was read and sees nothing on that port (LLDP off there);
- missing: no neighbour on either end (cable out, or the link down);
- miswired: an end is cabled to another port of the fabric;
- unexpected: an end sees a device the inventory does not have, no name (or a chassis ID for one), or more than one
  neighbour;
- unread: neither device was read.

Each link's state keeps, besides what its ends see, the port of the fabric each end is really cabled to where that
is not the model's far end (what the picture draws). Miswires are explained as cables, anchored at the lower end (a
host's NIC, a leaf's uplink, a spine's uplink): "gpu-su1-07 NIC 3 is in leaf-su1-r4:swp12, expected
leaf-su1-r3:swp12". Two cables each in the other's port are one swap; a longer cycle is a rotation; a swap whose far
ends share one front-panel port is a breakout's legs in the wrong order. A neighbour is named by its system name (or
its short name, before the first dot) and its port by the port id, or else the port description (lldpd on a Linux
host sends its MAC as port id), or the SONiC alias (lldpmgrd sends it as port id).
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from enum import StrEnum
from functools import lru_cache

from pydantic import BaseModel

from fabric.design.intent import FabricIntent, Link, SwitchIntent
from fabric.design.topology import Switch, Topo, port_indexes
from fabric.errors import printable
from fabric.model.platforms import PLATFORMS
from fabric.model.ports import sonic_port_map
from fabric.parsers.lldp import Lldp, Neighbor

End = tuple[str, str]  # (device, port)


class Status(StrEnum):
    ok = "ok"
    half_seen = "half-seen"
    missing = "missing"
    miswired = "miswired"
    unexpected = "unexpected"
    unread = "unread"


ORDER = {s: i for i, s in enumerate((Status.miswired, Status.unexpected, Status.missing, Status.half_seen,
                                     Status.unread, Status.ok))}


@dataclass(slots=True)
class LinkState:
    """One link of the model and what LLDP shows of it (a plain dataclass: a 32k-GPU fabric has 100,000)."""

    a: str  # device:port (the lower end: host NIC, leaf uplink, spine uplink)
    b: str
    kind: str  # host-leaf | leaf-spine | spine-super-spine | explicit
    status: Status
    found: str = ""  # what the ends see, where not what the model has
    a_cabled_to: str = ""  # device:port of the fabric that a's cable really reaches, where LLDP shows one not b
    b_cabled_to: str = ""  # device:port whose cable is really in b, where LLDP shows one not a


class Fault(BaseModel):
    """One thing to fix in the hall, as a cable: a swap covers two links."""

    status: Status
    message: str
    links: list[str] = []  # the model's links it concerns (`a — b`)


class Cabling(BaseModel):
    links: list[LinkState]
    faults: list[Fault]
    counts: dict[str, int]  # status → links
    read: int  # devices whose LLDP was read
    unread: list[str]  # devices of the model without an LLDP report

    @property
    def failed(self) -> bool:
        return bool(self.faults)


@dataclass(frozen=True, slots=True)
class Seen:
    """What is at the other end of a port: a port of the fabric (`end`), or only what was reported (`label`, `end`
    None); `named` False for a neighbour that sends no system name (it says nothing about which device it is)."""

    end: End | None
    label: str
    named: bool = True


@lru_cache(maxsize=256)
def _aliases(platform: str, ways: int, speed: int) -> dict[str, str]:
    """SONiC alias → port name on a platform broken out `ways` at `speed` (lldpmgrd sends the alias)."""
    pm = sonic_port_map(platform)
    layout = pm.layout(ways, speed) if pm is not None else None
    return {p.alias: name for name, p in (layout or {}).items()}


@dataclass(frozen=True, slots=True)
class Ports:
    """How a switch names its ports: its NOS, platform and breakout (one value shared by alike switches)."""

    target: str
    platform: str
    ways: int
    lanes: int
    capacity: int
    speed: int  # Gb/s of a logical port

    def indexes(self) -> dict[str, int]:
        return port_indexes(self.target, self.ways, self.lanes, self.capacity)

    def aliases(self) -> dict[str, str]:
        return _aliases(self.platform, self.ways, self.speed) if self.target == "sonic" else {}


def _ports_of_switch(sw: Switch) -> Ports:
    return Ports(sw.target, sw.platform.name, sw.ways, sw.platform.lanes, sw.capacity, sw.port_speed)


def _ports_of_intent(sw: SwitchIntent) -> Ports:
    """The switch's naming from its ports in use: the breakout (1, 2, 4 or 8 ways) under which the NOS names them
    all so (a port's lane count says the SerDes lanes, not always the breakout: a Linux white box has 1)."""
    plat = PLATFORMS[sw.platform]
    names = [p.name for p in sw.ports]
    ways = next((w for w in (1, 2, 4, 8) if w <= plat.lanes and all(
        n in port_indexes(sw.target, w, plat.lanes, plat.ports * w) for n in names)), 1)
    speed = sw.ports[0].speed if sw.ports else plat.max_speed
    return Ports(sw.target, sw.platform, ways, plat.lanes, plat.ports * ways, speed)


def alias_of(sw: Switch) -> dict[str, str]:
    """Port name → the alias a SONiC switch sends as its LLDP port id (empty for other NOSes)."""
    return {name: alias for alias, name in _ports_of_switch(sw).aliases().items()}


class Names:
    """The model's devices and ports, by the names LLDP reports them: from the topology (`of_topology`, what
    `fabric cabling` loads) or the derived intent (`of_intent`, what `fabric accept` has)."""

    def __init__(self, switches: dict[str, Ports], rails: dict[End, int], hosts: set[str]):
        self.switches, self.rails, self.hosts = switches, rails, hosts
        self._lower: dict[str, str] | None = None
        self._resolved: dict[str, str | None] = {}  # system name as reported → device
        self._shared: dict[Ports, dict[str, str]] = {}  # reported name (a port's or its alias) → port name
        self._names: dict[str, dict[str, str]] = {}  # the same, by switch

    @classmethod
    def of_topology(cls, topo: Topo) -> Names:
        return cls({n: _ports_of_switch(sw) for n, sw in topo.switches.items()},
                   {(h.name, n.netdev): n.rail for h in topo.hosts.values() for n in h.nics}, set(topo.hosts))

    @classmethod
    def of_intent(cls, fabric: FabricIntent) -> Names:
        return cls({n: _ports_of_intent(sw) for n, sw in fabric.switches.items()},
                   {(h.name, r.netdev): r.rail for h in fabric.hosts.values() for r in h.rails}, set(fabric.hosts))

    def devices(self) -> list[str]:
        return [*self.switches, *self.hosts]

    def device(self, name: str) -> str | None:
        """The device of the model a system name names: itself, its short name (before the first dot), either
        in any case; None for a name outside the inventory."""
        if name in self._resolved:
            return self._resolved[name]
        if self._lower is None:
            self._lower = {n.lower(): n for n in self.devices()}
        short = name.split(".", 1)[0]
        found = next((c for c in (name, short) if c in self.switches or c in self.hosts), None)
        found = found or self._lower.get(name.lower()) or self._lower.get(short.lower())
        if len(self._resolved) < 1 << 20:
            self._resolved[name] = found
        return found

    def port(self, device: str, reported: list[str]) -> str | None:
        sw = self.switches.get(device)
        if sw is None:
            for p in reported:
                if (device, p) in self.rails:
                    return p
            return None
        names = self._names.get(device)
        if names is None:
            names = self._shared.get(sw)
            if names is None:
                names = self._shared[sw] = {**sw.aliases(), **{p: p for p in sw.indexes()}}
            self._names[device] = names
        for p in reported:
            if p in names:
                return names[p]
        return None

    def front(self, end: End) -> tuple[str, int] | None:
        """(switch, front-panel port) of a broken-out switch port; None for a host or a port not broken out."""
        sw = self.switches.get(end[0])
        index = sw.indexes().get(end[1]) if sw is not None and sw.ways > 1 else None
        return None if index is None or sw is None else (end[0], index // sw.ways + 1)

    def say(self, seen: Seen) -> str:
        """What `seen` is, in words: a port of the model by its label, else what was reported."""
        return self.label(seen.end) if seen.end is not None else seen.label

    def label(self, end: End) -> str:
        """`gpu-su1-07 NIC 3` for a host's rail NIC, `leaf-su1-r3:swp12` for a switch port."""
        rail = self.rails.get(end)
        return f"{end[0]} NIC {rail}" if rail is not None else f"{end[0]}:{end[1]}"


# a MAC address (aa:bb:cc:dd:ee:ff, aa-bb-…, or EOS' aabb.ccdd.eeff) where a system name belongs: a chassis ID
_CHASSIS_MAC = re.compile(r"(?i)^(?:[0-9a-f]{2}[:-]){5}[0-9a-f]{2}$|^(?:[0-9a-f]{4}\.){2}[0-9a-f]{4}$")


def _seen(names: Names, n: Neighbor) -> Seen:
    device = names.device(n.system_name) if n.system_name else None
    port = names.port(device, n.remote_ports()) if device is not None else None
    if device is not None and port is not None:
        return Seen((device, port), "")
    # what the neighbour sent, on one line with control characters escaped (a report is read in a terminal)
    remote = printable((n.port_id or n.port_description or "?")[:80])
    if device is not None:
        return Seen(None, f"{device} port {remote!r} (no such port of {device} in the model)")
    if n.system_name and (n.system_name == n.chassis_id or _CHASSIS_MAC.match(n.system_name)):
        return Seen(None, f"a neighbour named by its chassis ID {printable(n.system_name[:80])} (port {remote})",
                    False)
    if n.system_name:
        return Seen(None, f"{printable(n.system_name[:80])}:{remote} (not in the inventory)")
    return Seen(None, f"a neighbour without a system name (chassis {printable(n.chassis_id[:80]) or '?'}, port "
                f"{remote})", False)


def _reports(names: Names, reports: dict[str, Lldp]) -> dict[End, list[Seen]]:
    """Local end → what it sees, for the model's ports of every device read (other ports, eth0 say, left out)."""
    own: dict[End, list[Seen]] = {}
    for device, lldp in reports.items():
        for n in lldp.neighbors:
            port = names.port(device, [n.port])
            if port is not None:
                own.setdefault((device, port), []).append(_seen(names, n))
    return own


class _Evidence:
    """What each end is cabled to: its own report first, else what a read device reports of it (a nameless
    neighbour, identified by nothing, only where nothing else is known)."""

    def __init__(self, own: dict[End, list[Seen]]):
        self.reported = own
        self.own = {u: s[0] for u, s in own.items() if len(s) == 1}
        self.inferred: dict[End, Seen] = {}
        for u, s in self.own.items():
            if s.end is not None and (s.end not in self.own or not self.own[s.end].named):
                self.inferred.setdefault(s.end, Seen(u, ""))

    def view(self, u: End) -> Seen | None:
        mine = self.own.get(u)
        return mine if mine is not None and mine.named else self.inferred.get(u) or mine

    def firsthand(self, u: End) -> bool:
        """`u` reports a neighbour of its own (named or not)."""
        return u in self.reported


@dataclass(slots=True)
class _Displaced:
    link: Link
    anchor: End
    far: End
    actual: Seen | None  # what the anchor is cabled to
    at_far: Seen | None  # what the expected far end is cabled to
    anchor_read: bool = True  # the anchor's device was read (else it sees nothing only for want of its report)


def judge(links: Sequence[Link], names: Names, reports: dict[str, Lldp]) -> Cabling:
    """The model's `links` against the LLDP `reports` (device → its neighbours)."""
    own = _reports(names, reports)
    ev = _Evidence(own)
    read = set(reports)
    states, displaced, faults = [], [], []
    for ln in links:
        state, moved, fault = _link(ln, ev, read, names)
        states.append(state)
        if moved is not None:
            displaced.append(moved)
        if fault is not None:
            faults.append(fault)
    faults += _explain(displaced, names)
    faults += _strays(own, links, names)
    faults += _quiet([(ln, st) for ln, st in zip(links, states, strict=True) if st.status is Status.half_seen], ev,
                     names)
    counts = {s.value: 0 for s in Status}
    for st in states:
        counts[st.status.value] += 1
    unread = sorted(d for d in names.devices() if d not in read)
    if counts[Status.unread]:
        faults.append(Fault(status=Status.unread, message=f"{counts[Status.unread]} links not judged: neither end was "
                            f"read ({len(unread)} devices without an LLDP report: {', '.join(unread[:5])}"
                            + (", …)" if len(unread) > 5 else ")")))
    faults.sort(key=lambda f: (ORDER[f.status], f.message))
    return Cabling(links=states, faults=faults, counts=counts, read=len(read & set(names.devices())), unread=unread)


def judge_topology(topo: Topo, reports: dict[str, Lldp]) -> Cabling:
    return judge(topo.links, Names.of_topology(topo), reports)


def _quiet(half: list[tuple[Link, LinkState]], ev: _Evidence, names: Names) -> list[Fault]:
    """The half-seen links, one fault per device that sees nothing where its neighbours see it (lldpd not running
    on a host shows on all its NICs at once)."""
    by_device: dict[str, list[tuple[End, End, str]]] = {}
    for ln, _state in half:
        a, b = (ln.a, ln.a_port), (ln.b, ln.b_port)
        silent, other = (a, b) if not ev.firsthand(a) else (b, a)
        by_device.setdefault(silent[0], []).append((silent, other, _name(ln)))
    faults = []
    for device, ends in by_device.items():
        if len(ends) == 1:
            (silent, other, _), = ends
            message = f"{names.label(other)} sees {names.label(silent)}, which sees nothing on {silent[1]}"
        else:
            ports = ", ".join(s[1] for s, _, _ in ends[:8]) + (", …" if len(ends) > 8 else "")
            message = f"{device} sees nothing on {len(ends)} ports its neighbours see it on ({ports})"
        faults.append(Fault(status=Status.half_seen, links=[x[2] for x in ends],
                            message=message + " (LLDP not running or not received there)"))
    return faults


def _name(ln: Link) -> str:
    return f"{ln.a}:{ln.a_port} — {ln.b}:{ln.b_port}"


def _link(ln: Link, ev: _Evidence, read: set[str], names: Names) -> tuple[LinkState, _Displaced | None,
                                                                           Fault | None]:
    a, b = (ln.a, ln.a_port), (ln.b, ln.b_port)
    va, vb = ev.view(a), ev.view(b)
    state = LinkState(f"{a[0]}:{a[1]}", f"{b[0]}:{b[1]}", ln.kind, Status.ok)
    if va is not None and vb is not None and va.end == b and vb.end == a:
        silent = a if a[0] in read and not ev.firsthand(a) else b if b[0] in read and not ev.firsthand(b) else None
        if silent is None:
            return state, None, None
        state.status, state.found = Status.half_seen, f"{names.label(silent)} sees nothing"
        return state, None, None
    if va is None and vb is None:
        if a[0] not in read and b[0] not in read:
            state.status = Status.unread
            return state, None, None
        state.status = Status.missing
        return state, None, Fault(status=Status.missing, links=[_name(ln)], message=(
            f"{names.label(a)} — {names.label(b)}: no neighbour on either end (cable out, or the link down)"))
    state.found = "; ".join(f"{names.label(u)} sees {names.say(v)}" for u, v in ((a, va), (b, vb)) if v is not None)
    state.a_cabled_to, state.b_cabled_to = _elsewhere(va, b), _elsewhere(vb, a)
    if va is not None and vb is not None and va.named and vb.named and ev.firsthand(a) and ev.firsthand(b) \
            and (va.end == b) != (vb.end == a):
        state.status = Status.unexpected
        return state, None, Fault(status=Status.unexpected, links=[_name(ln)], message=(
            f"{state.found}: the two ends disagree (a stale LLDP entry, or something in between)"))
    foreign = any(v is not None and v.end is None for v in (va, vb))
    state.status = Status.unexpected if foreign else Status.miswired
    return state, _Displaced(ln, a, b, va, vb, a[0] in read), None


def _elsewhere(seen: Seen | None, expected: End) -> str:
    """`device:port` of the port of the fabric an end is really cabled to, where not the `expected` one."""
    return f"{seen.end[0]}:{seen.end[1]}" if seen is not None and seen.end is not None and seen.end != expected else ""


def _cycles(displaced: list[_Displaced]) -> Iterator[list[_Displaced]]:
    """The displaced links in groups: a cycle of cables each in the next one's expected port, or one alone."""
    by_far = {d.far: d for d in displaced}
    done: set[End] = set()
    for d in displaced:
        if d.anchor in done:
            continue
        group, cur = [d], d
        while cur.actual is not None and cur.actual.end in by_far:
            nxt = by_far[cur.actual.end]
            if nxt is d or nxt.anchor in done or nxt in group:
                break
            group.append(nxt)
            cur = nxt
        closed = cur.actual is not None and cur.actual.end == d.far and len(group) > 1
        for g in group if closed else [d]:
            done.add(g.anchor)
        yield group if closed else [d]


def _explain(displaced: list[_Displaced], names: Names) -> list[Fault]:
    faults = []
    for group in _cycles(displaced):
        links = [_name(d.link) for d in group]
        if len(group) == 1:
            faults.append(_alone(group[0], names, links))
            continue
        parts = [f"{names.label(group[0].anchor)} is in {names.label(group[0].actual.end)}, expected "  # type: ignore[union-attr,arg-type]
                 f"{names.label(group[0].far)}"]
        parts += [f"{names.label(d.anchor)} is in {names.label(d.actual.end)}" for d in group[1:]]  # type: ignore[union-attr,arg-type]
        faults.append(Fault(status=Status.miswired, links=links, message="; ".join(parts) + " — " + _fix(group,
                                                                                                        names)))
    return faults


def _fix(group: list[_Displaced], names: Names) -> str:
    """What to do with a cycle of cables."""
    if len(group) > 2:
        return f"move each of these {len(group)} cables to its expected port"
    hosts = {d.anchor[0] for d in group}
    if len(hosts) == 1 and group[0].anchor[0] in names.hosts:
        rails = sorted(names.label(d.anchor).rsplit(" ", 1)[1] for d in group)
        return f"NICs {rails[0]} and {rails[1]} of {group[0].anchor[0]} are crossed: swap these two cables"
    front = {names.front(d.far) for d in group}
    if len(front) == 1 and None not in front:
        device, port = next(iter(front))  # type: ignore[misc]
        return f"the legs of breakout {device} port {port} are in the wrong order: swap these two cables"
    return "swap these two cables"


def _alone(d: _Displaced, names: Names, links: list[str]) -> Fault:
    anchor, far = names.label(d.anchor), names.label(d.far)
    if d.actual is None and d.at_far is not None:
        status = Status.unexpected if d.at_far.end is None else Status.miswired
        if not d.anchor_read:
            return Fault(status=status, links=links, message=f"{far} holds {names.say(d.at_far)}, expected {anchor} "
                         f"({d.anchor[0]} not read)")
        return Fault(status=status, links=links, message=f"{anchor} sees nothing; its expected port {far} holds "
                     f"{names.say(d.at_far)}")
    if d.actual is None:
        return Fault(status=Status.missing, links=links, message=f"{anchor} — {far}: no neighbour")
    if d.actual.end is None:
        return Fault(status=Status.unexpected, links=links,
                     message=f"{anchor} sees {names.say(d.actual)}, expected {far}")
    return Fault(status=Status.miswired, links=links, message=f"{anchor} is in {names.say(d.actual)}, expected {far}")


def _strays(own: dict[End, list[Seen]], links: Sequence[Link], names: Names) -> list[Fault]:
    """Neighbours the model has no link for: more than one on a port, or a cable between two ports the model
    leaves free (each such cable once)."""
    expected = {e for ln in links for e in ((ln.a, ln.a_port), (ln.b, ln.b_port))}
    faults, told = [], set()
    for u, seen in own.items():
        if len(seen) > 1:
            faults.append(Fault(status=Status.unexpected, message=f"{len(seen)} neighbours on {names.label(u)}: "
                                f"{', '.join(names.say(s) for s in seen[:4])} (a switch or hub in between?)"))
        elif u not in expected and (seen[0].end is None or seen[0].end not in expected):
            pair = frozenset((u, seen[0].end or ("", seen[0].label)))
            if pair not in told:
                told.add(pair)
                faults.append(Fault(status=Status.unexpected, message=f"{names.label(u)} — {names.say(seen[0])}: a "
                                    "cable the model does not have"))
    return faults
