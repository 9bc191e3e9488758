"""Rails through netlink (pyroute2): link, MTU, VLAN sub-interface, address, per-rail table, source rule.

The agent owns only what the intent names: each rail interface (and its parent NIC when tagged), the
IPv4 addresses on the rail interface, every route in the rail's table and every rule that points to
that table or selects the rail address. Anything else on the host is never read for changes.
"""

from __future__ import annotations

import errno
from dataclasses import dataclass, field
from ipaddress import IPv4Interface, IPv4Network
from typing import Any

from pyroute2 import IPRoute
from pyroute2.netlink.exceptions import NetlinkError

from fabric.design.intent import HostIntent, RailIntent
from fabric.host.step import Step, change, fail, same

AF_INET = 2


@dataclass
class Link:
    index: int
    ifname: str
    mtu: int
    up: bool
    kind: str | None
    parent: int | None
    vlan_id: int | None


@dataclass
class Route:
    dst: str
    gateway: str | None
    oif: str | None
    prefsrc: str | None
    scope: int

    def text(self) -> str:
        parts = [
            f"via {self.gateway}" if self.gateway else "",
            f"dev {self.oif}" if self.oif else "",
            f"src {self.prefsrc}" if self.prefsrc else "",
            "scope link" if self.scope == 253 else "",
        ]
        return " ".join(p for p in parts if p)


@dataclass
class Rule:
    src: str | None
    src_len: int
    table: int
    priority: int
    extra: bool  # other selectors (iif, oif, fwmark, …): not one of ours as written

    def text(self) -> str:
        src = f"{self.src}/{self.src_len}" if self.src and self.src_len != 32 else (self.src or "all")
        return f"pref {self.priority} from {src} lookup {self.table}" + (" (+selectors)" if self.extra else "")


@dataclass
class State:
    links: dict[str, Link] = field(default_factory=dict)
    addresses: dict[int, list[str]] = field(default_factory=dict)
    routes: dict[int, list[Route]] = field(default_factory=dict)
    rules: list[Rule] = field(default_factory=list)


def _attr(msg: Any, name: str) -> Any:
    return msg.get_attr(name)


def read_state(ipr: IPRoute) -> State:
    """Links, IPv4 addresses, IPv4 routes by table and IPv4 rules, as the kernel reports them."""
    st = State()
    names: dict[int, str] = {}
    for msg in ipr.get_links():
        info = _attr(msg, "IFLA_LINKINFO")
        kind = info.get_attr("IFLA_INFO_KIND") if info else None
        vlan_id = None
        if kind == "vlan":
            data = info.get_attr("IFLA_INFO_DATA")
            vlan_id = data.get_attr("IFLA_VLAN_ID") if data else None
        name = _attr(msg, "IFLA_IFNAME")
        names[msg["index"]] = name
        st.links[name] = Link(
            msg["index"],
            name,
            _attr(msg, "IFLA_MTU"),
            bool(msg["flags"] & 1),
            kind,
            _attr(msg, "IFLA_LINK"),
            vlan_id,
        )
    for msg in ipr.get_addr(family=AF_INET):
        st.addresses.setdefault(msg["index"], []).append(f"{_attr(msg, 'IFA_ADDRESS')}/{msg['prefixlen']}")
    for msg in ipr.get_routes(family=AF_INET):
        if msg["type"] != 1:  # unicast only; local/broadcast live in the local table
            continue
        table = _attr(msg, "RTA_TABLE") or msg["table"]
        dst = f"{_attr(msg, 'RTA_DST') or '0.0.0.0'}/{msg['dst_len']}"
        oif = _attr(msg, "RTA_OIF")
        st.routes.setdefault(table, []).append(
            Route(
                dst,
                _attr(msg, "RTA_GATEWAY"),
                names.get(oif) if oif else None,
                _attr(msg, "RTA_PREFSRC"),
                msg["scope"],
            )
        )
    for msg in ipr.get_rules(family=AF_INET):
        extra = any(_attr(msg, a) is not None for a in ("FRA_IIFNAME", "FRA_OIFNAME", "FRA_FWMARK"))
        st.rules.append(
            Rule(
                _attr(msg, "FRA_SRC"),
                msg["src_len"],
                _attr(msg, "FRA_TABLE") or msg["table"],
                _attr(msg, "FRA_PRIORITY") or 0,
                extra or bool(msg["dst_len"]),
            )
        )
    return st


class RailPlanner:
    """Plans (and, through the returned actions, applies) every rail of one host."""

    def __init__(self, ipr: IPRoute, intent: HostIntent):
        self.ipr = ipr
        self.intent = intent
        self.state = read_state(ipr)
        self.created: set[str] = set()  # interfaces this plan creates (VLAN sub-interfaces)
        self.removed_rules: set[str] = set()  # a stray rule may match two rails: remove it once

    def index(self, ifname: str) -> int:
        found = self.ipr.link_lookup(ifname=ifname)
        if not found:
            raise LookupError(f"no such interface {ifname}")
        return found[0]

    # -- links ------------------------------------------------------------------------------------
    def _link(self, rail: RailIntent, ifname: str) -> list[Step]:
        cur = self.state.links.get(ifname)
        steps: list[Step] = []
        if cur is None:
            return steps
        if cur.mtu != rail.mtu:
            steps.append(
                change(
                    lambda: self.ipr.link("set", index=self.index(ifname), mtu=rail.mtu),
                    section="link",
                    target=ifname,
                    name="mtu",
                    current=str(cur.mtu),
                    desired=str(rail.mtu),
                )
            )
        else:
            steps.append(same(section="link", target=ifname, name="mtu", current=str(cur.mtu)))
        if not cur.up:
            steps.append(
                change(
                    lambda: self.ipr.link("set", index=self.index(ifname), state="up"),
                    section="link",
                    target=ifname,
                    name="state",
                    current="down",
                    desired="up",
                )
            )
        else:
            steps.append(same(section="link", target=ifname, name="state", current="up"))
        return steps

    def links(self, rail: RailIntent) -> tuple[list[Step], bool]:
        """Steps for the NIC (and VLAN sub-interface); False when the rail cannot be configured."""
        parent = self.state.links.get(rail.netdev)
        if parent is None:
            return [
                fail(
                    f"no such interface {rail.netdev} (the rail NIC)",
                    section="link",
                    target=rail.netdev,
                    name="exists",
                    op="check",
                    desired="present",
                )
            ], False
        steps = self._link(rail, rail.netdev)
        if rail.vlan is None:
            return steps, True
        sub = self.state.links.get(rail.ifname)
        want = f"vlan {rail.vlan} on {rail.netdev}"
        if sub is None:
            self.created.add(rail.ifname)

            def create() -> None:
                try:
                    self.ipr.link(
                        "add",
                        ifname=rail.ifname,
                        kind="vlan",
                        link=self.index(rail.netdev),
                        vlan_id=rail.vlan,
                        mtu=rail.mtu,
                        state="up",
                    )
                except NetlinkError as exc:
                    if exc.code == errno.EOPNOTSUPP:
                        raise RuntimeError("this kernel cannot create VLAN devices (no 802.1Q support)") from exc
                    raise
                self.ipr.link("set", index=self.index(rail.ifname), state="up")

            steps.append(change(create, section="link", target=rail.ifname, name="vlan", op="create", desired=want))
            return steps, True
        matches = sub.kind == "vlan" and sub.parent == parent.index and sub.vlan_id == rail.vlan
        have = (
            want
            if matches
            else (
                f"vlan {sub.vlan_id} (parent index {sub.parent})"
                if sub.kind == "vlan"
                else f"a {sub.kind or 'plain'} device"
            )
        )
        if have != want:
            return [
                *steps,
                fail(
                    f"{rail.ifname} exists as {have}; remove it or fix the intent",
                    section="link",
                    target=rail.ifname,
                    name="vlan",
                    op="check",
                    current=have,
                    desired=want,
                ),
            ], False
        steps.append(same(section="link", target=rail.ifname, name="vlan", current=want))
        return [*steps, *self._link(rail, rail.ifname)], True

    # -- addresses, routes, rules -----------------------------------------------------------------
    def addresses(self, rail: RailIntent) -> list[Step]:
        link = self.state.links.get(rail.ifname)
        have = self.state.addresses.get(link.index, []) if link else []
        want = str(IPv4Interface(rail.address))
        steps: list[Step] = []
        for addr in have:
            if addr != want:
                ip, plen = addr.split("/")
                steps.append(
                    change(
                        lambda ip=ip, plen=plen: self._ignore_gone(
                            lambda: self.ipr.addr("del", index=self.index(rail.ifname), address=ip, prefixlen=int(plen))
                        ),
                        section="address",
                        target=rail.ifname,
                        name=addr,
                        op="remove",
                        current=addr,
                    )
                )
        if want in have:
            steps.append(same(section="address", target=rail.ifname, name=want, current=want))
        else:
            iface = IPv4Interface(want)
            steps.append(
                change(
                    lambda: self.ipr.addr(
                        "add",
                        index=self.index(rail.ifname),
                        address=str(iface.ip),
                        prefixlen=iface.network.prefixlen,
                    ),
                    section="address",
                    target=rail.ifname,
                    name=want,
                    op="add",
                    desired=want,
                )
            )
        return steps

    @staticmethod
    def _ignore_gone(fn: Any) -> None:
        """Removal of something the kernel already removed (e.g. routes flushed with their address)."""
        try:
            fn()
        except NetlinkError as exc:
            if exc.code not in (errno.ESRCH, errno.ENOENT, errno.EADDRNOTAVAIL):
                raise

    def desired_routes(self, rail: RailIntent) -> dict[str, Route]:
        ip = str(IPv4Interface(rail.address).ip)
        subnet = str(IPv4Network(rail.subnet))
        out = {subnet: Route(subnet, None, rail.ifname, ip, 253)}
        for dst in rail.routes:
            net = str(IPv4Network("0.0.0.0/0" if dst == "default" else dst))
            out.setdefault(net, Route(net, rail.gateway, rail.ifname, None, 0))
        return out

    def routes(self, rail: RailIntent) -> list[Step]:
        want = self.desired_routes(rail)
        have = {r.dst: r for r in self.state.routes.get(rail.table, [])}
        steps: list[Step] = []
        tgt = f"table {rail.table}"
        for dst, cur in have.items():
            if dst not in want:
                steps.append(
                    change(
                        lambda cur=cur: self._ignore_gone(lambda: self.ipr.route("del", dst=cur.dst, table=rail.table)),
                        section="route",
                        target=tgt,
                        name=dst,
                        op="remove",
                        current=cur.text(),
                    )
                )
        for dst, route in want.items():
            cur = have.get(dst)
            if cur is not None and cur.text() == route.text():
                steps.append(same(section="route", target=tgt, name=dst, current=cur.text()))
                continue

            def put(route: Route = route) -> None:
                spec: dict[str, Any] = {"dst": route.dst, "table": rail.table, "oif": self.index(rail.ifname)}
                if route.gateway:
                    spec["gateway"] = route.gateway
                if route.prefsrc:
                    spec["prefsrc"] = route.prefsrc
                if route.scope:
                    spec["scope"] = route.scope
                self.ipr.route("replace", **spec)

            steps.append(
                change(
                    put,
                    section="route",
                    target=tgt,
                    name=dst,
                    op="set" if cur else "add",
                    current=cur.text() if cur else None,
                    desired=route.text(),
                )
            )
        return steps

    def rules(self, rail: RailIntent) -> list[Step]:
        ip = str(IPv4Interface(rail.address).ip)
        want = Rule(ip, 32, rail.table, rail.rule_priority, False)
        mine = [r for r in self.state.rules if r.table == rail.table or (r.src == ip and r.src_len == 32)]
        steps: list[Step] = []
        found = False
        for r in mine:
            if r.text() == want.text() and not found:
                found = True
                steps.append(same(section="rule", target=rail.ifname, name=want.text(), current=r.text()))
                continue
            if r.text() in self.removed_rules:
                continue
            self.removed_rules.add(r.text())
            steps.append(
                change(
                    lambda r=r: self._ignore_gone(
                        lambda: self.ipr.rule("del", src=r.src, src_len=r.src_len, table=r.table, priority=r.priority)
                    ),
                    section="rule",
                    target=rail.ifname,
                    name=r.text(),
                    op="remove",
                    current=r.text(),
                )
            )
        if not found:
            steps.append(
                change(
                    lambda: self.ipr.rule("add", src=ip, src_len=32, table=rail.table, priority=rail.rule_priority),
                    section="rule",
                    target=rail.ifname,
                    name=want.text(),
                    op="add",
                    desired=want.text(),
                )
            )
        return steps

    def plan(self) -> list[Step]:
        """Every rail's steps in the order they must run: links, addresses, routes, rules."""
        steps: list[Step] = []
        for rail in self.intent.rails:
            link_steps, ok = self.links(rail)
            steps += link_steps
            if ok:
                steps += self.addresses(rail) + self.routes(rail) + self.rules(rail)
        return steps
