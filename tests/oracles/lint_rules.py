"""RF301–RF306, RF309, RF311, RF202–RF204 and RF401 as they read before the rules looked ports up per switch
(`Context.ports_of`), shared the fabric's address list and parsed networks from an octet table; verbatim.
Held against by tests/lint/rules/test_rules.py."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from ipaddress import IPv4Interface, IPv4Network

from fabric.design.intent import BgpNeighbor, PortIntent
from fabric.lint.context import Context
from fabric.lint.core import Finding, Rule
from fabric.lint.rules.host import _entries, _env_at
from fabric.lint.rules.l3 import POOL_WARN, ROCE_HEADERS, _net


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
