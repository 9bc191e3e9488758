"""The lint rules that look ports up per switch (`Context.ports_of`), share the fabric's address list, parse an
address's network from an octet table, and judge NCCL settings once per distinct value: their findings equal those
of the rules as they read before (kept below, verbatim) on every example and fixture inventory, each broken in the
ways the rules look for — a speed or MTU mismatch, a NIC on the wrong leaf, a missing or numbered session, a
duplicate or overlapping address, a wrong VLAN, NCCL lists of every mode, a GID policy — and on ports named twice."""

from __future__ import annotations

import dataclasses
import random
from collections.abc import Callable, Iterator
from ipaddress import IPv4Interface, IPv4Network

import pytest

from fabric.design.intent import BgpNeighbor, PortIntent
from fabric.lint.context import Context
from fabric.lint.core import RULES, Finding, Rule
from fabric.lint.engine import run
from fabric.lint.rules import all_rules
from fabric.lint.rules.host import _entries, _env_at
from fabric.lint.rules.l3 import POOL_WARN, ROCE_HEADERS, _net
from fabric.lint.rules.l3 import _network as network
from fabric.model.load import load
from tests.support.paths import ROOT

INVENTORIES = sorted([*(ROOT / "inventories").iterdir(), *(ROOT / "tests/fixtures/inventories").iterdir()])


# -- the rules as they read before --------------------------------------------------------------------------------
def _octet(s: str) -> bool:
    """A decimal octet as ipaddress writes it: 0-255, no leading zero."""
    return s.isdigit() and len(s) <= 3 and (s == "0" or s[0] != "0") and int(s) < 256


def _head(head: str) -> int | None:
    """The first three octets of a dotted quad as the address's top 24 bits (host addresses share a few hundred
    of them); None when they are not three decimal octets."""
    parts = head.split(".")
    if len(parts) == 3 and all(_octet(p) for p in parts):
        return int(parts[0]) << 24 | int(parts[1]) << 16 | int(parts[2]) << 8
    return None


def _network(addr: str) -> tuple[int, int]:
    """IPv4Interface(addr).network as (network address, prefix length) integers: a dotted quad with an optional
    prefix is masked as integers (tens of thousands of host addresses at cluster scale), anything else parsed."""
    ip, _, plen = addr.partition("/")
    head, _, last = ip.rpartition(".")
    base = _head(head)
    if base is not None and _octet(last) and (not plen or (plen.isdigit() and int(plen) <= 32)):
        p = int(plen) if plen else 32
        return (base | int(last)) & (0xFFFFFFFF << (32 - p)) & 0xFFFFFFFF, p
    net = IPv4Interface(addr).network
    return int(net.network_address), net.prefixlen


def _addresses(ctx: Context) -> list[tuple[str, str, str, tuple[str, int | None]]]:
    """(address/prefix, owner, item, where) of every address the fabric assigns."""
    out = []
    loopbacks, management, rails = (ctx.at("addressing", k) for k in ("loopbacks", "management", "rails"))
    for sw in ctx.switches:
        at = ctx.switch_at(sw.name)
        out.append((sw.loopback, sw.name, "loopback", loopbacks))
        out.append((sw.management, sw.name, "management", management))
        out += [(s.address, sw.name, s.name, rails) for s in sw.svis]
        out += [(p.address, sw.name, p.name, at) for p in sw.ports if p.address]
    for h in ctx.hosts:
        out.append((h.management_address, h.name, "management", ctx.host_at(h.name, "management")))
        out += [(r.address, h.name, r.ifname, rails) for r in h.rails]
    return out


def _rf301(self: Rule, ctx: Context) -> Iterator[Finding]:
    nics = {(h.name, r.netdev): r.speed for h in ctx.hosts for r in h.rails}
    ports = ctx.port  # a switch port before a host NIC
    for ln in ctx.intent.links:
        p1, p2 = ports.get((ln.a, ln.a_port)), ports.get((ln.b, ln.b_port))
        s1 = p1.speed if p1 is not None else nics.get((ln.a, ln.a_port))
        s2 = p2.speed if p2 is not None else nics.get((ln.b, ln.b_port))
        if s1 is not None and s2 is not None and s1 != s2:
            d2, p2 = ln.b, ln.b_port
            yield self.finding(
                d2,
                f"speed of {d2}:{p2}: expected {s1}G as at {ln.a}:{ln.a_port}, found {s2}G",
                ctx.link_at(d2, p2),
                p2,
            )


def _rf302(self: Rule, ctx: Context) -> Iterator[Finding]:
    hits = []
    for h in ctx.hosts:
        need = h.roce_mtu + ROCE_HEADERS
        for r in h.rails:
            if r.mtu < need:
                hits.append(
                    (
                        h.name,
                        f"MTU of {r.ifname}: expected at least {need} for RoCE MTU {h.roce_mtu}, "
                        f"found {r.mtu}",
                        ctx.host_at(h.name, "mtu"),
                        r.ifname,
                    )
                )
            p = ctx.port.get((r.leaf, r.leaf_port))
            if p and r.mtu > p.mtu:
                hits.append(
                    (
                        h.name,
                        f"MTU of {r.ifname}: expected at most {p.mtu} ({r.leaf}:{p.name}), found {r.mtu}",
                        ctx.host_at(h.name, "mtu"),
                        r.ifname,
                    )
                )
    yield from self.grouped(hits, "hosts", "hosts")
    for sw in ctx.switches:
        host_max = max((p.mtu for p in sw.ports if p.kind == "host"), default=0)
        for p in sw.ports:
            if p.kind != "fabric":
                continue
            peer = ctx.port.get((p.peer, p.peer_port))
            if p.mtu < host_max:
                yield self.finding(
                    sw.name,
                    f"MTU of {p.name}: expected at least {host_max} (host ports), found {p.mtu}",
                    ctx.switch_at(sw.name),
                    p.name,
                )
            elif peer and peer.mtu != p.mtu and sw.name < p.peer:
                yield self.finding(
                    sw.name,
                    f"MTU of {p.name}: expected {peer.mtu} as at {p.peer}:{peer.name}, found {p.mtu}",
                    ctx.switch_at(sw.name),
                    p.name,
                )


def _rf303(self: Rule, ctx: Context) -> Iterator[Finding]:
    for h in ctx.hosts:
        for r in h.rails:
            leaf = ctx.intent.switches.get(r.leaf)
            p = ctx.port.get((r.leaf, r.leaf_port))
            if leaf is None or (leaf.su, leaf.rail) != (h.su, r.rail):
                got = f"{r.leaf} (SU {leaf.su}, rail {leaf.rail})" if leaf else f"{r.leaf or 'no leaf'}"
                yield self.finding(
                    h.name,
                    f"{r.netdev} (rail {r.rail}): expected the rail-{r.rail} leaf of SU "
                    f"{h.su}, found {got}",
                    ctx.host_at(h.name, "nics"),
                    r.netdev,
                )
            elif p is None or (p.peer, p.peer_port) != (h.name, r.netdev):
                got = f"{p.peer}:{p.peer_port}" if p else "no such port"
                yield self.finding(
                    h.name,
                    f"{r.leaf}:{r.leaf_port}: expected cabled to {h.name}:{r.netdev}, found {got}",
                    ctx.host_at(h.name, "nics"),
                    r.netdev,
                )


def _rf304(self: Rule, ctx: Context) -> Iterator[Finding]:
    seen: dict[str, tuple[str, str]] = {}
    for addr, owner, item, where in _addresses(ctx):
        ip = addr.split("/")[0]
        if ip in seen and seen[ip] != (owner, item):
            o, i = seen[ip]
            yield self.finding(
                owner,
                f"address {ip} on {owner} {item}: expected unique, found it also on {o} {i}",
                where,
                item,
            )
        else:
            seen.setdefault(ip, (owner, item))


def _rf305(self: Rule, ctx: Context) -> Iterator[Finding]:
    # networks as (address, prefix length) integers; a domain is who may share one
    nets: dict[tuple[int, int], tuple[object, str, tuple[str, int | None]]] = {}
    for addr, owner, item, where in _addresses(ctx):
        net = _network(addr)
        domain: object = "management" if item == "management" else f"{owner} {item}"
        if item != "management" and not item.startswith("loopback"):
            domain = net  # a rail subnet is shared by its gateway and its hosts
        prev = nets.get(net)
        if prev is None:
            nets[net] = (domain, f"{owner} {item}", where)
        elif prev[0] != domain:
            yield self.finding(
                owner,
                f"subnet {_net(*net)} of {owner} {item}: expected disjoint, found it also used by {prev[1]}",
                where,
                item,
            )
    cur: tuple[int, int] | None = None
    cur_end = -1  # the broadcast address of cur
    for net in sorted(nets):
        end = net[0] | ((1 << (32 - net[1])) - 1)
        if cur is not None and net[0] <= cur_end:
            domain, label, where = nets[net]
            yield self.finding(
                label.split(" ")[0],
                f"subnet {_net(*net)} of {label}: expected disjoint, found it inside {_net(*cur)} of "
                f"{nets[cur][1]}",
                where,
                label.partition(" ")[2],
            )
            if end <= cur_end:
                continue
        cur, cur_end = net, end


def _rf309(self: Rule, ctx: Context) -> Iterator[Finding]:
    # per switch, by port (as ctx.port, the last of a name wins): no (switch, port) tuple per lookup
    nbr = {sw.name: {n.port: n for n in sw.bgp.neighbors} for sw in ctx.switches}
    ports = {sw.name: {p.name: p for p in sw.ports} for sw in ctx.switches}
    switches = ctx.intent.switches
    no_nbr: dict[str, BgpNeighbor] = {}
    no_port: dict[str, PortIntent] = {}
    for sw in ctx.switches:
        own = ports[sw.name]
        for n in sw.bgp.neighbors:
            peer_sw = switches.get(n.peer)
            back = nbr.get(n.peer, no_nbr).get(n.peer_port)
            p, pp = own.get(n.port), ports.get(n.peer, no_port).get(n.peer_port)
            ok = peer_sw is not None and back is not None and back.peer == sw.name
            if ok and p and p.unnumbered and pp and pp.unnumbered and n.remote_asn == peer_sw.bgp.asn:
                continue
            where = ctx.link_at(sw.name, n.port)
            if peer_sw is None or back is None or back.peer != sw.name:
                yield self.finding(
                    sw.name,
                    f"BGP on {n.port}: expected a session back from {n.peer}:{n.peer_port}, found none",
                    where,
                    n.port,
                )
            elif not (p and p.unnumbered and pp and pp.unnumbered):
                yield self.finding(
                    sw.name,
                    f"BGP on {n.port}: expected unnumbered on both ends, found "
                    f"{'numbered' if not (p and p.unnumbered) else 'numbered at ' + n.peer}",
                    where,
                    n.port,
                )
            elif n.remote_asn != peer_sw.bgp.asn:
                yield self.finding(
                    sw.name,
                    f"BGP on {n.port}: expected remote-as {peer_sw.bgp.asn} "
                    f"({n.peer}), found {n.remote_asn}",
                    where,
                    n.port,
                )


def _rf311(self: Rule, ctx: Context) -> Iterator[Finding]:
    hits = []
    for h in ctx.hosts:
        for r in h.rails:
            port = ctx.port.get((r.leaf, r.leaf_port))
            if port is None or r.vlan is None:
                continue
            if port.vlan is None:
                message = (f"VLAN tagging on rail {r.rail}: expected an untagged NIC on a routed leaf port "
                           f"({ctx.intent.addressing_mode}), found the host tagging VLAN {r.vlan}")
            elif port.vlan != r.vlan:
                message = (f"VLAN tagging on rail {r.rail}: expected the host to tag the rail VLAN {port.vlan} "
                           f"of {r.leaf}, found VLAN {r.vlan}")
            else:
                continue
            hits.append((h.name, message, ctx.host_at(h.name, "nics"), f"{r.netdev}→{r.leaf}:{r.leaf_port}"))
    yield from self.grouped(hits, "hosts", "hosts")


def _rf202(self: Rule, ctx: Context) -> Iterator[Finding]:
    hits = []
    for h in ctx.hosts:
        value = h.nccl_env.get("NCCL_IB_HCA", "")
        rails = sorted(r.rdma for r in h.rails)
        mode, names = _entries(value)
        where = _env_at(ctx, h, "NCCL_IB_HCA", "nics")
        if mode == "^" or not names:
            hits.append(
                (
                    h.name,
                    f"NCCL_IB_HCA: expected ={','.join(f'{n}:1' for n in rails)}, found "
                    f"{value or 'unset (every RDMA device)'}",
                    where,
                    "NCCL_IB_HCA",
                )
            )
            continue
        if sorted(set(names)) != rails:
            extra = sorted(set(names) - set(rails))
            missing = sorted(set(rails) - set(names))
            detail = "; ".join(
                x
                for x in (
                    f"not rail NICs: {', '.join(extra)}" if extra else "",
                    f"missing: {', '.join(missing)}" if missing else "",
                )
                if x
            )
            hits.append(
                (
                    h.name,
                    f"NCCL_IB_HCA: expected exactly the rail NICs {', '.join(rails)}, found "
                    f"{value} ({detail})",
                    where,
                    "NCCL_IB_HCA",
                )
            )
        elif mode != "=":
            shadow = sorted(
                {f"{a} matches {b}" for a in names for b in rails if a != b and b.startswith(a)}
            )
            detail = f" ({'; '.join(shadow)})" if shadow else " (mlx5_1 would also select mlx5_10 …)"
            hits.append(
                (
                    h.name,
                    f"NCCL_IB_HCA: expected an exact list starting with '=', found the prefix "
                    f"list {value}{detail}",
                    where,
                    "NCCL_IB_HCA",
                )
            )
    yield from self.grouped(hits, "hosts", "hosts")


def _rf203(self: Rule, ctx: Context) -> Iterator[Finding]:
    hits = []
    for h in ctx.hosts:
        value = h.nccl_env.get("NCCL_SOCKET_IFNAME", "")
        mode, names = _entries(value)
        if mode == "^":
            continue
        rails = {r.netdev for r in h.rails} | {r.ifname for r in h.rails}
        bad = sorted({r for n in names for r in rails if r == n or (mode == "" and r.startswith(n))})
        if bad:
            hits.append(
                (
                    h.name,
                    f"NCCL_SOCKET_IFNAME: expected the management interface "
                    f"={h.management_interface}, found {value} (selects rail NIC {', '.join(bad)})",
                    _env_at(ctx, h, "NCCL_SOCKET_IFNAME", "management_interface"),
                    "NCCL_SOCKET_IFNAME",
                )
            )
        elif not names:
            hits.append(
                (
                    h.name,
                    f"NCCL_SOCKET_IFNAME: expected ={h.management_interface}, found unset "
                    "(NCCL may pick a rail NIC)",
                    _env_at(ctx, h, "NCCL_SOCKET_IFNAME", "management_interface"),
                    "NCCL_SOCKET_IFNAME",
                )
            )
    yield from self.grouped(hits, "hosts", "hosts")


def _rf204(self: Rule, ctx: Context) -> Iterator[Finding]:
    hits = []
    for h in ctx.hosts:
        env = h.nccl_env
        where = ctx.host_at(h.name, "gid")
        idx, ver = env.get("NCCL_IB_GID_INDEX"), env.get("NCCL_IB_ROCE_VERSION_NUM", "2")
        if ver != "2":
            hits.append(
                (
                    h.name,
                    f"NCCL_IB_ROCE_VERSION_NUM: expected 2, found {ver}",
                    _env_at(ctx, h, "NCCL_IB_ROCE_VERSION_NUM", "gid"),
                    "NCCL_IB_ROCE_VERSION_NUM",
                )
            )
        if h.gid.policy == "roce-v2-ipv4" and idx != str(h.gid.index):
            hits.append(
                (
                    h.name,
                    f"NCCL_IB_GID_INDEX: expected {h.gid.index} (the verified RoCE v2 IPv4 GID), "
                    f"found {idx if idx is not None else 'unset'}",
                    _env_at(ctx, h, "NCCL_IB_GID_INDEX", "gid"),
                    "NCCL_IB_GID_INDEX",
                )
            )
        if h.gid.policy == "auto" and idx is not None:
            hits.append(
                (
                    h.name,
                    f"NCCL_IB_GID_INDEX: expected unset with gid.policy auto, found {idx} (not "
                    "verified to be RoCE v2)",
                    where,
                    "NCCL_IB_GID_INDEX",
                )
            )
    yield from self.grouped(hits, "hosts", "hosts")


def _rf401(self: Rule, ctx: Context) -> Iterator[Finding]:
    role = {sw.name: sw.role for sw in ctx.switches}
    for sw in ctx.switches:
        groups: dict[str, list[tuple[str, bool]]] = {}
        for p in sw.ports:
            if p.kind == "fabric":
                groups.setdefault(role.get(p.peer, "?"), []).append((p.name, p.adaptive_routing))
        for peer_role, members in sorted(groups.items()):
            on = [n for n, x in members if x]
            if on and len(on) < len(members):
                off = [n for n, x in members if not x]
                yield self.finding(
                    sw.name,
                    f"adaptive routing toward the {peer_role}s: expected the same on all "
                    f"{len(members)} members, found on: {', '.join(on)}; off: {', '.join(off)}",
                    ctx.switch_at(sw.name, "adaptive_routing"),
                    f"{peer_role} group",
                )


def _rf306(self: Rule, ctx: Context) -> Iterator[Finding]:
    a = ctx.inv.addressing
    use: dict[str, int] = {}
    for h in ctx.hosts:
        for r in h.rails:
            use[r.subnet] = use.get(r.subnet, 0) + 1 + r.vfs
    hits = []
    if ctx.intent.addressing_mode == "svi":
        for subnet, n in sorted(use.items()):
            cap = IPv4Network(subnet).num_addresses - 3
            if n > cap or n >= POOL_WARN * cap:
                sev = "error" if n > cap else "warning"
                hits.append(
                    (
                        "rails",
                        f"rail subnet {subnet}: expected room for {n} addresses "
                        f"(hosts × (1+VFs)), found {cap} usable",
                        ctx.at("addressing", "rail_prefix_length"),
                        subnet,
                        sev,
                    )
                )
    nsw, nh = len(ctx.switches), len(ctx.hosts)
    blocks = len({(h.su, r.rail) for h in ctx.hosts for r in h.rails})
    for key, need, cap in (
        ("loopbacks", nsw, a.loopbacks.num_addresses - 2),
        ("management", nsw + nh, a.management.num_addresses - 2),
        ("rails", blocks, 2 ** (a.rail_prefix_length - a.rails.prefixlen)),
    ):
        if need > cap or need >= POOL_WARN * cap:
            sev = "error" if need > cap else "warning"
            hits.append(
                (
                    key,
                    f"addressing.{key}: {need} of {cap} used, expected below {POOL_WARN:.0%}",
                    ctx.at("addressing", key),
                    key,
                    sev,
                )
            )
    yield from self.grouped(hits, "rails", "rail subnets")


REFERENCE: dict[str, Callable[[Rule, Context], Iterator[Finding]]] = {
    "RF301": _rf301, "RF302": _rf302, "RF303": _rf303, "RF304": _rf304, "RF305": _rf305, "RF309": _rf309,
    "RF311": _rf311, "RF202": _rf202, "RF203": _rf203, "RF204": _rf204, "RF306": _rf306, "RF401": _rf401,
}


# -- ways to break a derived fabric ---------------------------------------------------------------------------------
def _leaf(ctx: Context) -> str:
    return next(n for n, s in ctx.intent.switches.items() if s.role == "leaf")


def _host(ctx: Context, i: int = 0) -> str:
    return list(ctx.intent.hosts)[i]


def _speed(ctx: Context) -> None:
    sw = ctx.intent.switches[_leaf(ctx)]
    sw.ports[0].speed, sw.ports[-1].speed = 100, 25


def _rail_speed(ctx: Context) -> None:
    ctx.intent.hosts[_host(ctx)].rails[0].speed = 25


def _mtu(ctx: Context) -> None:
    sw = ctx.intent.switches[_leaf(ctx)]
    for p in sw.ports:
        if p.kind == "fabric":
            p.mtu = 1500
            break
    ctx.intent.hosts[_host(ctx)].rails[-1].mtu = 9500
    ctx.intent.hosts[_host(ctx, -1)].roce_mtu = 9000


def _peer_mtu(ctx: Context) -> None:
    for sw in ctx.intent.switches.values():
        for p in sw.ports:
            if p.kind == "fabric" and sw.name > p.peer:
                p.mtu += 8
                return


def _swap_rails(ctx: Context) -> None:
    r = ctx.intent.hosts[_host(ctx, 1)].rails
    if len(r) > 1:
        r[0].leaf, r[1].leaf = r[1].leaf, r[0].leaf
    r[-1].leaf_port = "nonexistent"


def _wrong_peer(ctx: Context) -> None:
    sw = ctx.intent.switches[_leaf(ctx)]
    for p in sw.ports:
        if p.kind == "host":
            p.peer_port = "elsewhere"
            break


def _no_leaf(ctx: Context) -> None:
    ctx.intent.hosts[_host(ctx)].rails[0].leaf = "no-such-switch"


def _twice(ctx: Context) -> None:  # a port name twice on a switch, a host NIC twice: the last of a name wins
    sw = ctx.intent.switches[_leaf(ctx)]
    sw.ports.append(dataclasses.replace(sw.ports[0], speed=1, mtu=1000, peer="x", unnumbered=True, vlan=7))
    h = ctx.intent.hosts[_host(ctx)]
    h.rails.append(h.rails[0].model_copy(update={"speed": 10, "vlan": 5}))


def _session(ctx: Context) -> None:
    sw = max(ctx.intent.switches.values(), key=lambda s: len(s.bgp.neighbors))
    if len(sw.bgp.neighbors) < 2:
        return
    sw.bgp.neighbors.pop()
    n = sw.bgp.neighbors[0]
    sw.bgp.neighbors[0] = dataclasses.replace(n, remote_asn=n.remote_asn + 1)
    if len(sw.bgp.neighbors) > 2:
        sw.bgp.neighbors[1] = dataclasses.replace(sw.bgp.neighbors[1], peer="ghost")
    for p in ctx.intent.switches[n.peer].ports:
        if p.kind == "fabric":
            p.unnumbered = False
            break


def _addresses_clash(ctx: Context) -> None:
    switches = list(ctx.intent.switches.values())
    h = ctx.intent.hosts[_host(ctx)]
    switches[0].loopback = h.rails[0].address.split("/")[0] + "/32"
    switches[-1].loopback = "10.0.0.0/8"
    h.management_address = switches[1].management
    ctx.intent.hosts[_host(ctx, -1)].rails[0].address = "172.31.255.1/16"


def _vlan(ctx: Context) -> None:
    for i, r in enumerate(ctx.intent.hosts[_host(ctx)].rails):
        r.vlan = None if i == 0 else 4000 + i


def _nccl(ctx: Context) -> None:
    values = ["", "^mlx5_0", "mlx5_1", "=mlx5_0:1", "mlx5", "mlx5_0,mlx5_1,mlx5_2,mlx5_3,mlx5_4,mlx5_5,mlx5_6,mlx5_7,x"]
    sockets = ["", "rail", "=rail1", "^eth", "eth0", "=eth0"]
    for i, h in enumerate(ctx.intent.hosts.values()):
        env = dict(h.nccl_env)
        env["NCCL_IB_HCA"] = values[i % len(values)]
        env["NCCL_SOCKET_IFNAME"] = sockets[i % len(sockets)]
        if i % 3 == 0:
            env["NCCL_IB_GID_INDEX"] = "1"
            env["NCCL_IB_ROCE_VERSION_NUM"] = "1"
        h.nccl_env = env
        if i % 4 == 1:
            h.gid = h.gid.model_copy(update={"policy": "auto"})


def _ar(ctx: Context) -> None:
    for sw in list(ctx.intent.switches.values())[::3]:
        fabric = [p for p in sw.ports if p.kind == "fabric"]
        if fabric:
            fabric[0].adaptive_routing = not fabric[0].adaptive_routing


def _vfs(ctx: Context) -> None:
    for h in list(ctx.intent.hosts.values())[::2]:
        h.rails[0].vfs = 250


MUTATIONS: dict[str, Callable[[Context], None]] = {
    "as-is": lambda ctx: None, "speed": _speed, "rail-speed": _rail_speed, "mtu": _mtu, "peer-mtu": _peer_mtu,
    "swap-rails": _swap_rails, "wrong-peer": _wrong_peer, "no-leaf": _no_leaf, "twice": _twice,
    "session": _session, "addresses": _addresses_clash, "vlan": _vlan, "nccl": _nccl, "ar": _ar, "vfs": _vfs,
}


@pytest.fixture(scope="module", params=INVENTORIES, ids=lambda p: p.name)
def loaded(request: pytest.FixtureRequest):
    return load(request.param)


@pytest.mark.parametrize("mutation", list(MUTATIONS))
def test_rules_find_what_they_found_before(loaded, mutation: str) -> None:
    ctx = Context(loaded)
    MUTATIONS[mutation](ctx)
    all_rules()
    for rule_id, reference in REFERENCE.items():
        rule = RULES[rule_id]
        ctx.reset()
        want = sorted(set(reference(rule, ctx)), key=Finding.sort_key)
        ctx.reset()
        got = sorted(set(rule.check(ctx)), key=Finding.sort_key)
        assert got == want, (rule_id, mutation)
    # and through the engine, which resets what the rules share at every run
    assert run(ctx, select=list(REFERENCE)).findings == run(ctx, select=list(REFERENCE)).findings


def test_a_run_after_the_intent_changed_sees_the_change() -> None:
    ctx = Context(load(ROOT / "inventories" / "example"))
    assert not run(ctx, select=["RF301", "RF304"]).findings
    _speed(ctx)
    _addresses_clash(ctx)
    found = {f.rule for f in run(ctx, select=["RF301", "RF304"]).findings}
    assert found == {"RF301", "RF304"}


def test_network_equals_ipaddress() -> None:
    """The octet-table parse gives IPv4Interface's network, or raises as it does, on well-formed and malformed
    addresses (an empty prefix after `/` is the one form read as /32, as before)."""
    rng = random.Random(27)
    octets = ["0", "1", "9", "10", "99", "100", "199", "254", "255", "256", "01", "00", "1000", "-1", "", "a",
              "\u0663", "\u00b2"]
    cases = ["10.0.0.1/24", "10.0.0.1", "0.0.0.0/0", "255.255.255.255/32", "10.0.0.1/33", "10.0.0.1/0x1",
             "1.2.3/24", "1.2.3.4.5/24", " 10.0.0.1/24", "10.0.0.1/24 ", "10.0.0.1/-1", "10.0.0.1/08"]
    for _ in range(20000):
        quad = ".".join(rng.choice([*octets, str(rng.randint(0, 300))]) for _ in range(4))
        prefix = rng.choice([str(rng.randint(0, 34)), "", "x", "\u0663", "\u00b2", "024"])
        cases.append(f"{quad}/{prefix}" if rng.random() < 0.8 else quad)
    for addr in cases:
        try:
            net = IPv4Interface(addr).network
            want: object = (int(net.network_address), net.prefixlen)
        except ValueError:
            want = ValueError
        try:
            got: object = network(addr)
        except ValueError:
            got = ValueError
        if addr.endswith("/") and got is not ValueError:
            assert got == _network(addr), addr
            continue
        assert got == want, addr


def test_a_large_fabric_is_held_to_the_end_of_the_command_and_only_the_last(monkeypatch: pytest.MonkeyPatch) -> None:
    """`lint` is done with the derived fabric before it exits: `fabric.fast.batch` still holds it (frozen objects
    a module references are left to the operating system at exit, not freed one by one), the last two only (a
    fabric and the configs linted against it)."""
    import gc

    from fabric.design.load import load_fabric
    from fabric.fast import batch

    monkeypatch.setattr(batch, "LARGE", 1)  # the example counts as large
    monkeypatch.setattr(batch, "_HELD", [])  # what an earlier test held
    try:
        first = load_fabric(ROOT / "inventories" / "example")
        assert len(batch._HELD) == 1 and batch._HELD[0] is first
        second = load_fabric(ROOT / "inventories" / "eos-example")
        third = load_fabric(ROOT / "inventories" / "example")
        assert len(batch._HELD) == 2 and batch._HELD[0] is second and batch._HELD[1] is third
    finally:
        gc.unfreeze()
