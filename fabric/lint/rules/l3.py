"""RF3xx: layers 1 to 3 — speeds, MTUs, rail cabling, addressing, ASNs and BGP sessions."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from functools import lru_cache
from ipaddress import IPv4Interface, IPv4Network
from itertools import repeat
from operator import attrgetter, itemgetter, methodcaller
from typing import TYPE_CHECKING

from fabric.design.intent import BgpNeighbor, PortIntent
from fabric.lint.context import Context
from fabric.lint.core import Finding, Rule, Severity, rule
from fabric.model.checks import private_asn

if TYPE_CHECKING:
    from fabric.lint.configs.model import ConfigSet  # --configs only: not imported by a cold `lint INV`

_SPEED, _MTU, _FIRST, _AT_SLASH = attrgetter("speed"), attrgetter("mtu"), itemgetter(0), methodcaller("partition", "/")
_RAIL, _VFS, _SUBNET = attrgetter("rail"), attrgetter("vfs"), attrgetter("subnet")

#: netdev MTU a RoCE path MTU needs (payload plus RoCE v2 headers; 4096 → 4200)
ROCE_HEADERS = 104
#: a pool or rail subnet this full is warned about
POOL_WARN = 0.9


@rule
class LinkSpeed(Rule):
    id = "RF301"
    severity = Severity.error
    title = "Both ends of a link run the same speed"
    explanation = (
        "A link whose ends are set to different speeds does not come up (or comes up at the lower "
        "speed with FEC mismatches); a host NIC faster than its leaf port silently loses bandwidth."
    )
    fix = "Set one speed per link class in cabling.* or links[].speed, and the matching breakout."
    configs = True

    def check(self, ctx: Context) -> Iterator[Finding]:
        speeds: set[int] = set()  # every port's and rail NIC's speed (C loops)
        for sw in ctx.switches:
            speeds.update(map(_SPEED, sw.ports))
        for h in ctx.hosts:
            speeds.update(map(_SPEED, h.rails))
        if len(speeds) < 2:  # one speed everywhere (the usual fabric): no two ends of a link differ
            return
        # a switch port before a host NIC (the last of a name wins in both), looked up per device: no tuple each
        nics: dict[str, dict[str, int]] = {}
        for h in ctx.hosts:
            nics.setdefault(h.name, {}).update({r.netdev: r.speed for r in h.rails})
        ports, none = ctx.ports_of, {}
        for ln in ctx.intent.links:
            p1, p2 = ports.get(ln.a, none).get(ln.a_port), ports.get(ln.b, none).get(ln.b_port)
            s1 = p1.speed if p1 is not None else nics.get(ln.a, none).get(ln.a_port)
            s2 = p2.speed if p2 is not None else nics.get(ln.b, none).get(ln.b_port)
            if s1 is not None and s2 is not None and s1 != s2:
                d2, p2 = ln.b, ln.b_port
                yield self.finding(
                    d2,
                    f"speed of {d2}:{p2}: expected {s1}G as at {ln.a}:{ln.a_port}, found {s2}G",
                    ctx.link_at(d2, p2),
                    p2,
                )

    def check_configs(self, cs: ConfigSet) -> Iterator[Finding]:
        if cs.intent is None:
            return
        by_dev = {d.name: d for d in cs.devices}  # the last of a name wins, as before
        # per device, each port's speed where the config sets one (C loops): no device and port looked up per link
        speeds = {name: {k: p.speed for k, p in d.ports.items() if p.speed} for name, d in by_dev.items()}
        none: dict[str, int] = {}
        for ln in cs.intent.links:
            for dev, port in ((ln.a, ln.a_port), (ln.b, ln.b_port)):
                speed = speeds.get(dev, none).get(port)
                if speed is not None and speed != ln.speed:
                    d = by_dev[dev]
                    yield self.finding(
                        dev,
                        f"speed of {port}: expected {ln.speed}G (the link's), found {speed}G",
                        (d.file, d.ports[port].line),
                        port,
                    )


@rule
class MtuChain(Rule):
    id = "RF302"
    severity = Severity.error
    title = "MTU chain: host ≤ leaf port ≤ fabric, RoCE MTU fits"
    explanation = (
        "A frame larger than the next hop's MTU is dropped silently (RoCE never fragments). The host "
        "netdev MTU must not exceed its leaf port's, host ports must not exceed fabric ports, and a "
        f"RoCE path MTU of 4096 needs a netdev MTU of at least {4096 + ROCE_HEADERS} for the RoCE "
        "v2 headers — otherwise the NIC falls back to 2048 and loses bandwidth."
    )
    fix = "Use switching.mtu 9216 and host mtu 9000 with roce_mtu 4096 (the defaults)."
    configs = True

    def check(self, ctx: Context) -> Iterator[Finding]:
        # the usual fabric, from each device's lowest and highest MTU (C loops): every rail NIC fits its RoCE MTU and
        # no leaf port (no host check), one MTU on every switch port (no switch check)
        port_mtus = [(min(m), max(m)) for m in (list(map(_MTU, sw.ports)) for sw in ctx.switches) if m]
        rail_mtus = [(min(m), max(m), h.roce_mtu + ROCE_HEADERS) for h in ctx.hosts if (m := list(map(_MTU, h.rails)))]
        port_min = min((lo for lo, _ in port_mtus), default=None)
        hosts_fit = all(lo >= need and (port_min is None or hi <= port_min) for lo, hi, need in rail_mtus)
        one_mtu = len({lo for lo, _ in port_mtus} | {hi for _, hi in port_mtus}) < 2
        hits = []
        ports, none = ctx.ports_of, {}
        for h in () if hosts_fit else ctx.hosts:
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
                p = ports.get(r.leaf, none).get(r.leaf_port)
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
        for sw in () if one_mtu else ctx.switches:
            host_max = max((p.mtu for p in sw.ports if p.kind == "host"), default=0)
            for p in sw.ports:
                if p.kind != "fabric":
                    continue
                if p.mtu < host_max:
                    yield self.finding(
                        sw.name,
                        f"MTU of {p.name}: expected at least {host_max} (host ports), found {p.mtu}",
                        ctx.switch_at(sw.name),
                        p.name,
                    )
                elif sw.name < p.peer and (peer := ports.get(p.peer, none).get(p.peer_port)) and peer.mtu != p.mtu:
                    yield self.finding(
                        sw.name,
                        f"MTU of {p.name}: expected {peer.mtu} as at {p.peer}:{peer.name}, found {p.mtu}",
                        ctx.switch_at(sw.name),
                        p.name,
                    )

    def check_configs(self, cs: ConfigSet) -> Iterator[Finding]:
        need = cs.host_mtu or 4096 + ROCE_HEADERS
        why = "the hosts' MTU" if cs.host_mtu else f"RoCE MTU 4096 + {ROCE_HEADERS}"
        for dev in cs.devices:
            for p in dev.ports.values():
                if p.mtu is not None and p.mtu < need:
                    yield self.finding(
                        dev.name,
                        f"MTU of {p.name}: expected at least {need} ({why}), found {p.mtu}",
                        (dev.file, p.line),
                        p.name,
                    )


@rule
class RailCabling(Rule):
    id = "RF303"
    severity = Severity.error
    title = "NIC k is cabled to the rail-k leaf of its scalable unit"
    explanation = (
        "Rail-optimized fabrics rely on GPU/NIC k of every host reaching every other host's NIC k "
        "through one leaf. A NIC on the wrong leaf sends every collective across the spines, "
        "halving bandwidth for the whole job, and its subnet and gateway are wrong."
    )
    fix = "Re-cable the NIC to the rail-k leaf of its SU, or fix hosts.*.nics[].rail."

    def check(self, ctx: Context) -> Iterator[Finding]:
        switches, ports, none = ctx.intent.switches, ctx.ports_of, {}
        for h in ctx.hosts:
            for r in h.rails:
                leaf = switches.get(r.leaf)
                if leaf is None or leaf.su != h.su or leaf.rail != r.rail:
                    got = f"{r.leaf} (SU {leaf.su}, rail {leaf.rail})" if leaf else f"{r.leaf or 'no leaf'}"
                    yield self.finding(
                        h.name,
                        f"{r.netdev} (rail {r.rail}): expected the rail-{r.rail} leaf of SU "
                        f"{h.su}, found {got}",
                        ctx.host_at(h.name, "nics"),
                        r.netdev,
                    )
                elif (p := ports.get(r.leaf, none).get(r.leaf_port)) is None or p.peer != h.name \
                        or p.peer_port != r.netdev:
                    got = f"{p.peer}:{p.peer_port}" if p else "no such port"
                    yield self.finding(
                        h.name,
                        f"{r.leaf}:{r.leaf_port}: expected cabled to {h.name}:{r.netdev}, found {got}",
                        ctx.host_at(h.name, "nics"),
                        r.netdev,
                    )


#: every decimal octet as ipaddress writes and reads it (ASCII digits, 0-255, no leading zero) → its value
_OCTETS = {str(i): i for i in range(256)}


@lru_cache(maxsize=65536)
def _prefix(head: str, plen: str) -> tuple[int, int, int] | None:
    """(top 24 bits, netmask, prefix length) for the first three octets and the prefix text of an address (a few
    hundred distinct pairs at cluster scale); None when they are not that."""
    octets = [_OCTETS.get(p) for p in head.split(".")]
    if len(octets) != 3 or None in octets or not (not plen or (plen.isascii() and plen.isdigit() and int(plen) <= 32)):
        return None
    p = int(plen) if plen else 32
    return octets[0] << 24 | octets[1] << 16 | octets[2] << 8, (0xFFFFFFFF << (32 - p)) & 0xFFFFFFFF, p


def _network(addr: str) -> tuple[int, int]:
    """IPv4Interface(addr).network as (network address, prefix length) integers: a dotted quad with an optional
    prefix is masked as integers (tens of thousands of host addresses at cluster scale), anything else parsed."""
    ip, _, plen = addr.partition("/")
    head, _, last = ip.rpartition(".")
    pre, value = _prefix(head, plen), _OCTETS.get(last)
    if pre is not None and value is not None:
        return (pre[0] | value) & pre[1], pre[2]
    net = IPv4Interface(addr).network
    return int(net.network_address), net.prefixlen


@lru_cache(maxsize=65536)
def _net(network: int, prefix: int) -> IPv4Network:
    return IPv4Network((network, prefix))


def _addresses(ctx: Context) -> list[tuple[str, str, str, tuple[str, int | None]]]:
    """(address/prefix, owner, item, where) of every address the fabric assigns (made once per run: RF304, RF305)."""
    if "addresses" in ctx.memo:
        return ctx.memo["addresses"]
    out: list[tuple[str, str, str, tuple[str, int | None]]] = []
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
    ctx.memo["addresses"] = out
    return out


@rule
class DuplicateAddress(Rule):
    id = "RF304"
    severity = Severity.error
    title = "No address is assigned twice"
    explanation = (
        "Two devices with one address answer each other's ARP and BGP; RDMA connections reach the "
        "wrong host and GID tables collide."
    )
    fix = "Give the explicit address (hosts.list[].management, switches) a free one, or widen the pool."

    def check(self, ctx: Context) -> Iterator[Finding]:
        addresses = _addresses(ctx)
        # every address once (the usual fabric; C loops): nothing to report
        if len(set(map(_FIRST, map(_AT_SLASH, map(_FIRST, addresses))))) == len(addresses):
            return
        seen: dict[str, tuple[str, str]] = {}
        for addr, owner, item, where in addresses:
            ip = addr.partition("/")[0]
            prev = seen.get(ip)
            if prev is None:
                seen[ip] = (owner, item)
            elif prev != (owner, item):
                o, i = prev
                yield self.finding(
                    owner,
                    f"address {ip} on {owner} {item}: expected unique, found it also on {o} {i}",
                    where,
                    item,
                )


@rule
class OverlappingSubnets(Rule):
    id = "RF305"
    severity = Severity.error
    title = "Subnets do not overlap"
    explanation = (
        "Overlapping subnets make routing ambiguous: a host's rail route or a leaf's connected "
        "subnet captures traffic meant for another rail, SU or the management network."
    )
    fix = (
        "Choose disjoint addressing.loopbacks, rails and management pools and a rail_prefix_length that fits."
    )

    def check(self, ctx: Context) -> Iterator[Finding]:
        # networks as (address, prefix length) integers; a domain is who may share one
        nets: dict[tuple[int, int], tuple[object, str, tuple[str, int | None]]] = {}
        for addr, owner, item, where in _addresses(ctx):
            net = _network(addr)
            domain: object = net  # a rail subnet is shared by its gateway and its hosts
            if item == "management":
                domain = "management"
            elif item.startswith("loopback"):
                domain = f"{owner} {item}"
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


@rule
class PoolCapacity(Rule):
    id = "RF306"
    severity = Severity.error
    title = "Address pools and rail subnets are not exhausted"
    explanation = (
        "Every host NIC and every VF needs an address in its rail subnet besides the network, "
        "gateway and broadcast addresses; loopbacks and management need one per device. A pool "
        f"that is full blocks the next host or VF (error); above {POOL_WARN:.0%} the next scalable "
        "unit will not fit (warning)."
    )
    fix = (
        "Lower addressing.rail_prefix_length (bigger blocks) or widen addressing.rails/loopbacks/management."
    )

    def check(self, ctx: Context) -> Iterator[Finding]:
        a = ctx.inv.addressing
        use: Counter[str] = Counter()
        blocks_used: set[tuple[int, int]] = set()
        for h in ctx.hosts:
            su, rails = h.su, h.rails
            blocks_used.update(zip(repeat(su), map(_RAIL, rails)))
            if any(map(_VFS, rails)):
                for r in rails:
                    use[r.subnet] += 1 + r.vfs
            else:  # no VFs (the usual host): one address per rail, counted by a C loop
                use.update(map(_SUBNET, rails))
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
        blocks = len(blocks_used)
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


@rule
class AsnPlan(Rule):
    id = "RF307"
    severity = Severity.error
    title = "ASN plan: spines share one, leaves unique, all private"
    explanation = (
        "RFC 7938 eBGP fabrics give all spines of a pod one ASN (so a path never crosses two "
        "spines: loop prevention does the rest) and each leaf its own; all from the private "
        "ranges 64512-65534 / 4200000000-4294967294 so they never leak."
    )
    fix = "Use addressing.asn (spines, leaves) and remove conflicting switches[].asn overrides."
    configs = True

    def check(self, ctx: Context) -> Iterator[Finding]:
        by_asn: dict[int, list[str]] = {}
        spine_asn: dict[int | None, dict[int, list[str]]] = {}
        for sw in ctx.switches:
            by_asn.setdefault(sw.bgp.asn, []).append(sw.name)
            if not private_asn(sw.bgp.asn):
                yield self.finding(
                    sw.name,
                    f"ASN {sw.bgp.asn}: expected a private ASN, found a public one",
                    ctx.switch_at(sw.name, "asn"),
                    "asn",
                )
            if sw.role in ("spine", "super-spine"):
                key = sw.pod if sw.role == "spine" else -1
                spine_asn.setdefault(key, {}).setdefault(sw.bgp.asn, []).append(sw.name)
        for pod, asns in sorted(spine_asn.items(), key=lambda kv: kv[0] or 0):
            if len(asns) > 1:
                common = max(asns, key=lambda x: len(asns[x]))
                for asn, names in sorted(asns.items()):
                    if asn != common:
                        what = "super-spines" if pod == -1 else f"spines of pod {pod}"
                        for n in names:
                            yield self.finding(
                                n,
                                f"ASN: expected {common} shared by the {what}, found {asn}",
                                ctx.switch_at(n, "asn"),
                                "asn",
                            )
        for sw in ctx.switches:
            others = [n for n in by_asn[sw.bgp.asn] if n != sw.name]
            if sw.role == "leaf" and others:
                yield self.finding(
                    sw.name,
                    f"ASN {sw.bgp.asn}: expected unique to this leaf, found it also on "
                    f"{', '.join(others[:3])}",
                    ctx.switch_at(sw.name, "asn"),
                    "asn",
                )

    def check_configs(self, cs: ConfigSet) -> Iterator[Finding]:
        for dev in cs.devices:
            if dev.asn is not None and not private_asn(dev.asn):
                yield self.finding(
                    dev.name,
                    f"ASN {dev.asn}: expected a private ASN, found a public one",
                    dev.at("bgp"),
                    "asn",
                )
            if cs.intent and dev.asn is not None and dev.name in cs.intent.switches:
                want = cs.intent.switches[dev.name].bgp.asn
                if want != dev.asn:
                    yield self.finding(
                        dev.name,
                        f"ASN: expected {want} (the inventory's plan), found {dev.asn}",
                        dev.at("bgp"),
                        "asn",
                    )


@rule
class Oversubscription(Rule):
    id = "RF308"
    severity = Severity.warning
    title = "Leaf oversubscription within lint.oversubscription_warn"
    explanation = (
        "Host-facing bandwidth divided by uplink bandwidth. Above 1:1 all-to-all collectives that "
        "cross the spines cannot run at line rate and PFC pauses start at the leaf uplinks. The "
        "ratio of every leaf is reported (info); above lint.oversubscription_warn it is a warning."
    )
    fix = "Add spines or uplinks_per_spine, or raise lint.oversubscription_warn if the design accepts it."

    def check(self, ctx: Context) -> Iterator[Finding]:
        limit = ctx.inv.lint.oversubscription_warn
        hits = []
        for sw in ctx.switches:
            if sw.role != "leaf":
                continue
            down = sum(p.speed for p in sw.ports if p.kind == "host")
            up = sum(p.speed for p in sw.ports if p.kind == "fabric")
            if not down:
                continue
            ratio = down / up if up else float("inf")
            sev = "warning" if ratio > limit else "info"
            tail = f"expected at most {limit:g}:1" if sev == "warning" else f"limit {limit:g}:1"
            hits.append(
                (
                    sw.name,
                    f"oversubscription {ratio:.2f}:1 ({down}G to hosts / {up}G up): {tail}",
                    ctx.at("lint", "oversubscription_warn") if sev == "warning" else ctx.switch_at(sw.name),
                    "uplinks",
                    sev,
                )
            )
        yield from self.grouped(hits, "leaves", "leaves")


@rule
class UnnumberedBothEnds(Rule):
    id = "RF309"
    severity = Severity.error
    title = "BGP unnumbered is configured on both ends"
    explanation = (
        "An unnumbered (RFC 5549) session comes up only if both ends configure the interface "
        "neighbor, with each other's ASN; one missing end leaves the link carrying no routes and "
        "the ECMP group one member short."
    )
    fix = "Regenerate both switches' configs; check explicit links[] and switches[].asn."
    configs = True

    def check(self, ctx: Context) -> Iterator[Finding]:
        # per switch, by port (as ctx.port, the last of a name wins): no (switch, port) tuple per lookup
        nbr = {sw.name: {n.port: n for n in sw.bgp.neighbors} for sw in ctx.switches}
        ports = ctx.ports_of
        switches = ctx.intent.switches
        asn = {k: sw.bgp.asn for k, sw in switches.items()}
        no_nbr: dict[str, BgpNeighbor] = {}
        no_port: dict[str, PortIntent] = {}
        for sw in ctx.switches:
            name, own = sw.name, ports[sw.name]
            for n in sw.bgp.neighbors:
                # the usual session, every condition below met: nothing to say
                back = nbr.get(n.peer, no_nbr).get(n.peer_port)
                if back is not None and back.peer == name and n.remote_asn == asn.get(n.peer) \
                        and (p := own.get(n.port)) and p.unnumbered \
                        and (pp := ports.get(n.peer, no_port).get(n.peer_port)) and pp.unnumbered:
                    continue
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

    def check_configs(self, cs: ConfigSet) -> Iterator[Finding]:
        if cs.intent is None:
            return
        for dev in cs.devices:
            sw = cs.intent.switches.get(dev.name)
            if sw is None or dev.asn is None:
                continue
            have = {n.peer for n in dev.neighbors if n.interface}
            for n in sw.bgp.neighbors:
                if n.port not in have:
                    yield self.finding(
                        dev.name,
                        f"BGP on {n.port}: expected an unnumbered session to {n.peer}, found none",
                        dev.at("bgp"),
                        n.port,
                    )


@rule
class LeafReachesSpines(Rule):
    id = "RF310"
    severity = Severity.error
    title = "Every leaf peers with every spine of its pod"
    explanation = (
        "In a two-tier Clos every leaf needs a path through every spine; a leaf missing a spine "
        "loses that share of its uplink bandwidth and every flow hashed to that spine from other "
        "leaves takes a longer path or is black-holed."
    )
    fix = "Cable and configure the missing leaf-spine links (topology.spines, links[])."

    def check(self, ctx: Context) -> Iterator[Finding]:
        spines: dict[int | None, list[str]] = {}
        for sw in ctx.switches:
            if sw.role == "spine":
                spines.setdefault(sw.pod, []).append(sw.name)
        for sw in ctx.switches:
            if sw.role != "leaf":
                continue
            peers = {n.peer for n in sw.bgp.neighbors}
            missing = [s for s in spines.get(sw.pod, []) if s not in peers]
            if missing:
                yield self.finding(
                    sw.name,
                    f"BGP peers: expected every spine of pod {sw.pod or 1}, found none to "
                    f"{', '.join(missing)}",
                    ctx.switch_at(sw.name),
                    "uplinks",
                )


@rule
class HostLeafTagging(Rule):
    id = "RF311"
    severity = Severity.error
    title = "A host's VLAN tagging matches its leaf port"
    explanation = (
        "A rail NIC with `vlan:` sends every frame tagged with that VLAN. The leaf port must be a tagged member "
        "of the same VLAN (the rail's SVI VLAN); an access (untagged) member drops the tagged frames or puts "
        "them in the wrong VLAN, and a routed port (p2p31) has no VLAN at all. An untagged NIC on a tagged-only "
        "port is the same break the other way round. Layer 2 is then silently down on that rail: ARP never "
        "resolves and the RDMA connection never forms."
    )
    fix = ("Give the NIC the rail's VLAN (addressing.vlan_base + rail) or no vlan at all, in svi addressing; "
           "p2p31 host ports are routed and carry untagged frames only. Then render and push the leaf.")
    configs = True

    def check(self, ctx: Context) -> Iterator[Finding]:
        hits = []
        ports, none = ctx.ports_of, {}
        for h in ctx.hosts:
            for r in h.rails:
                if r.vlan is None or (port := ports.get(r.leaf, none).get(r.leaf_port)) is None:
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

    def check_configs(self, cs: ConfigSet) -> Iterator[Finding]:
        if cs.intent is None:
            return
        devices = {d.name: d for d in cs.devices}
        for h in cs.intent.hosts.values():
            for r in h.rails:
                dev = devices.get(r.leaf)
                pc = dev.ports.get(r.leaf_port) if dev else None
                if dev is None or pc is None:
                    continue
                tagged = pc.tagged_vlans or []
                if r.vlan is not None and r.vlan not in tagged:
                    found = (f"access VLAN {pc.access_vlan}" if pc.access_vlan is not None
                             else f"tagged VLANs {tagged}" if tagged else "a routed port")
                    yield self.finding(dev.name, f"VLAN tagging on {r.leaf_port}: {h.name} {r.ifname} tags VLAN "
                                       f"{r.vlan}, expected a tagged member of it, found {found}",
                                       (dev.file, pc.line), r.leaf_port)
                elif r.vlan is None and tagged and pc.access_vlan is None:
                    yield self.finding(dev.name, f"VLAN tagging on {r.leaf_port}: {h.name} {r.ifname} sends "
                                       f"untagged frames, expected an access member, found tagged VLANs {tagged}",
                                       (dev.file, pc.line), r.leaf_port)
