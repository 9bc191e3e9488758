"""RF4xx: operations — adaptive routing, neighbor tables, ARP aging, maintenance drains."""

from __future__ import annotations

from collections.abc import Iterator
from operator import attrgetter
from typing import TYPE_CHECKING

from fabric.lint.context import Context
from fabric.lint.core import Finding, Rule, Severity, rule
from fabric.model.platforms import PLATFORMS

_SPEED = attrgetter("speed")

if TYPE_CHECKING:
    from fabric.lint.configs.model import ConfigSet  # --configs only: not imported by a cold `lint INV`

#: ARP/neighbor aging above this leaves stale entries for restarted containers (see RF404)
ARP_AGING_MAX = 600


@rule
class AdaptiveRoutingGroup(Rule):
    id = "RF401"
    severity = Severity.error
    title = "Adaptive routing is the same on every member of an ECMP group"
    explanation = (
        "Adaptive routing steers packets to the least-loaded member of an ECMP group. With AR on "
        "some members and static hashing on others, the AR members attract traffic and the "
        "static ones keep their flows: the group is uneven and packets of one flow arrive out of "
        "order on the ports that mix both."
    )
    fix = (
        "Set switching.adaptive_routing (or switches[].adaptive_routing) the same for all switches of a "
        "tier, and use link speeds the platform supports AR on."
    )

    def check(self, ctx: Context) -> Iterator[Finding]:
        role = {sw.name: sw.role for sw in ctx.switches}
        for sw in ctx.switches:
            if len({p.adaptive_routing for p in sw.ports if p.kind == "fabric"}) < 2:
                continue  # the same on every member of every group (the usual switch): nothing to group
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


@rule
class AdaptiveRoutingSupport(Rule):
    id = "RF402"
    severity = Severity.warning
    title = "Adaptive routing only where the ASIC and speed support it"
    explanation = (
        "NVIDIA adaptive routing runs on Spectrum-4 at 200G/400G on L3 physical ports (not 800G, "
        "SVIs or bonds). Enabled elsewhere it is rejected or silently ignored (error when a port "
        "has it); enabled in the inventory for a platform that cannot do it, the tool leaves it off "
        "(warning, so nobody assumes it is on)."
    )
    fix = "Enable adaptive_routing only on platforms and link speeds listed in platforms.py."

    def check(self, ctx: Context) -> Iterator[Finding]:
        glob = ctx.inv.switching.adaptive_routing.enabled
        hits = []
        for sw in ctx.switches:
            plat = PLATFORMS[sw.platform]
            supported = set(plat.adaptive_routing_speeds)
            # every speed of the switch supported (the usual switch): no port to name, no fabric port to leave off
            usual = set(map(_SPEED, sw.ports)) <= supported
            for p in () if usual else sw.ports:
                if p.adaptive_routing and p.speed not in plat.adaptive_routing_speeds:
                    yield self.finding(
                        sw.name,
                        f"adaptive routing on {p.name} at {p.speed}G: expected only at "
                        f"{', '.join(f'{s}G' for s in plat.adaptive_routing_speeds) or 'no speed'} "
                        f"on {sw.platform}, found enabled",
                        ctx.switch_at(sw.name),
                        p.name,
                        Severity.error,
                    )
            over = ctx.topo.switches[sw.name].adaptive_routing if sw.name in ctx.topo.switches else None
            wanted = over if over is not None else glob
            fabric = [] if usual else sorted({p.speed for p in sw.ports if p.kind == "fabric"})
            cannot = [s for s in fabric if s not in plat.adaptive_routing_speeds]
            if wanted and cannot:
                where = (
                    ctx.switch_at(sw.name, "adaptive_routing")
                    if over is not None
                    else ctx.at("switching", "adaptive_routing", "enabled")
                )
                hits.append(
                    (
                        sw.name,
                        f"adaptive routing: enabled in the inventory, but {sw.platform} "
                        f"({plat.asic}) supports it at "
                        f"{', '.join(f'{s}G' for s in plat.adaptive_routing_speeds) or 'no speed'}; "
                        f"left off on its {', '.join(f'{s}G' for s in cannot)} fabric ports",
                        where,
                        "platform",
                    )
                )
        yield from self.grouped(hits, "switching", "switches")


@rule
class NeighborCapacity(Rule):
    id = "RF403"
    severity = Severity.error
    title = "Neighbor table holds hosts × (1 + VFs) with margin"
    explanation = (
        "Every host NIC and every VF (each container) on a rail subnet is an ARP entry on its "
        "leaf, plus the BGP peers. Above gc_thresh3 the kernel refuses new entries (packets to new "
        "neighbors are dropped, error); above gc_thresh2 it garbage-collects aggressively and "
        "entries flap (warning: keep gc_thresh2 as the margin above the need)."
    )
    fix = (
        "Raise switching.neighbor.table_size (gc_thresh3; gc_thresh2 is half of it) or leave it to the tool."
    )

    def check(self, ctx: Context) -> Iterator[Finding]:
        hits = []
        for sw in ctx.switches:
            n = sw.neighbor
            if n.needed > n.gc_thresh2:
                sev = "error" if n.needed > n.gc_thresh3 else "warning"
                hits.append(
                    (
                        sw.name,
                        f"neighbor table: expected room for {n.needed} entries below "
                        f"gc_thresh2, found gc_thresh2 {n.gc_thresh2}, gc_thresh3 {n.gc_thresh3}",
                        ctx.first(
                            ("switching", "neighbor", "table_size"), ("switching", "neighbor"), ("switching",)
                        ),
                        "gc_thresh3",
                        sev,
                    )
                )
        yield from self.grouped(hits, "switching", "switches")


@rule
class ArpAging(Rule):
    id = "RF404"
    severity = Severity.warning
    title = f"ARP aging at most {ARP_AGING_MAX} s for container churn"
    explanation = (
        "Containers and VFs start fast and reuse addresses with new MACs. A leaf that keeps the old "
        "entry (SONiC's default reachable time is 30 min, EOS 4 h) sends RDMA traffic to a dead MAC "
        "until it ages out; the new host's gratuitous ARP (arp_notify) helps only if it is not "
        f"filtered. Aging of at most {ARP_AGING_MAX} s bounds the outage."
    )
    fix = "Set switching.neighbor.aging to 300s (the default); on EOS `arp aging timeout default 300`."
    configs = True

    def check(self, ctx: Context) -> Iterator[Finding]:
        hits = [
            (
                sw.name,
                f"ARP aging: expected at most {ARP_AGING_MAX} s, found {sw.neighbor.aging_s} s",
                ctx.first(("switching", "neighbor", "aging"), ("switching",)),
                "arp aging",
            )
            for sw in ctx.switches
            if sw.neighbor.aging_s > ARP_AGING_MAX
        ]
        yield from self.grouped(hits, "switching", "switches")

    def check_configs(self, cs: ConfigSet) -> Iterator[Finding]:
        for dev in cs.devices:
            if dev.arp_aging is not None and dev.arp_aging > ARP_AGING_MAX:
                yield self.finding(
                    dev.name,
                    f"ARP aging: expected at most {ARP_AGING_MAX} s, found {dev.arp_aging} s",
                    dev.arp_aging_at or dev.at("arp_aging"),
                    "arp aging",
                )


@rule
class GracefulShutdown(Rule):
    id = "RF405"
    severity = Severity.warning
    title = "Graceful shutdown (RFC 8326): GRACEFUL_SHUTDOWN honoured from peers and sendable to them"
    explanation = (
        "Draining a switch for maintenance should move traffic away before its sessions drop: the drained "
        "switch announces its routes with GRACEFUL_SHUTDOWN (65535:0) and its peers give them LOCAL_PREF 0, so "
        "ECMP moves to the other paths first. Without it every reboot blackholes in-flight RDMA until BGP hold "
        "timers expire, and NCCL jobs fail with timeouts. A config honours it with an inbound policy on every "
        "fabric neighbour (a community list matching 65535:0, a route-map entry setting local-preference 0) and "
        "can send it when communities reach the neighbours (EOS needs `send-community`; FRR, SONiC and NVUE "
        "send them unless told not to). FRR-based NOSes also lower the preference by themselves; the tool "
        "renders the policy on every target so the behaviour does not depend on the build."
    )
    fix = ("Keep switching.bgp.graceful_shutdown true (the default) and push the rendered configs; drain with "
           "`bgp graceful-shutdown` (FRR, SONiC BGP_GLOBALS graceful_shutdown), `nv set router bgp "
           "graceful-shutdown` (NVUE) or maintenance mode (EOS).")
    configs = True

    def check(self, ctx: Context) -> Iterator[Finding]:
        hits = [
            (
                sw.name,
                "BGP graceful shutdown: expected GRACEFUL_SHUTDOWN honoured from the fabric neighbours, "
                "found switching.bgp.graceful_shutdown false",
                ctx.first(("switching", "bgp", "graceful_shutdown"), ("switching",)),
                "bgp",
            )
            for sw in ctx.switches
            if not sw.bgp.graceful_shutdown and sw.bgp.neighbors
        ]
        yield from self.grouped(hits, "switching", "switches")

    def check_configs(self, cs: ConfigSet) -> Iterator[Finding]:
        for dev in cs.devices:
            if dev.graceful_shutdown is False and dev.neighbors:
                yield self.finding(
                    dev.name,
                    "BGP graceful shutdown: expected GRACEFUL_SHUTDOWN honoured from and sendable to every fabric "
                    f"neighbour, found {dev.graceful_shutdown_missing}",
                    dev.at("graceful_shutdown"),
                    "bgp",
                )
