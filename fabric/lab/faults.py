"""Faults injected into the lab: a link taken down, a port throttled with a tbf qdisc, cables miswired or pulled.
Recorded in state; `clear` undoes them all.

A cable is a veth pair, so a cable fault moves veth ends: `swap-cables` and `cross-uplinks` exchange the cables in
two ports (each end moves to the other port's namespace and takes its name); `pull` moves the cable's end out of
its port into the lab's namespace of unplugged ends and leaves an empty port behind (a veth whose peer lies there,
down: no carrier, as a port without a cable). A port that gets a new end is configured again as `lab up` configured
it (the switch's interfaces.sh and queues, the host agent, lldpd), so only the cabling differs from the model."""

from __future__ import annotations

import hashlib
import re
from pathlib import Path
from typing import TYPE_CHECKING

from fabric.errors import UsageError
from fabric.lab import daemons
from fabric.lab.sh import quiet, run
from fabric.lab.state import Fault, LabState, LinkState, Move

if TYPE_CHECKING:
    from fabric.design.intent import FabricIntent

RATE = re.compile(r"^\d+(\.\d+)?(bit|kbit|mbit|gbit|tbit|bps|kbps|mbps|gbps|tbps)$", re.IGNORECASE)


def _port(st: LabState, spec: str) -> tuple[str, str, str]:
    """`DEV:PORT` → (node, port, ifname); the port must be a lab cable end."""
    node, sep, port = spec.partition(":")
    if not sep or not node or not port:
        raise UsageError(f"expected DEV:PORT, e.g. leaf-su1-r1:swp5, found {spec!r}")
    n = st.node(node)
    ifname = n.ifnames.get(port)
    if ifname is None:
        raise UsageError(f"{node} has no lab port {port!r}; ports: {', '.join(n.ifnames)}")
    return node, port, ifname


def link(st: LabState, spec: str, state: str) -> Fault | None:
    """Take a cable end down (recorded as a fault) or back up (its fault cleared)."""
    if state not in ("down", "up"):
        raise UsageError(f"expected down or up, found {state!r}")
    node, port, ifname = _port(st, spec)
    run(st.ns_argv(node, ["ip", "link", "set", "dev", ifname, state]), f"link {spec} {state}")
    st.faults = [f for f in st.faults if not (f.kind == "link" and f.node == node and f.port == port)]
    fault = Fault(kind="link", node=node, port=port, ifname=ifname) if state == "down" else None
    if fault:
        st.faults.append(fault)
    st.save()
    return fault


def throttle(st: LabState, spec: str, rate: str) -> Fault:
    """Limit a port's egress with `tc qdisc replace … root tbf rate RATE`."""
    if not RATE.match(rate):
        raise UsageError(f"expected a tc rate such as 100mbit or 1gbit, found {rate!r}")
    node, port, ifname = _port(st, spec)
    # from scratch: a `replace` of the switch port's root tbf (the ets+red lab) would keep its queue tree below
    quiet(st.ns_argv(node, ["tc", "qdisc", "del", "dev", ifname, "root"]))
    run(st.ns_argv(node, ["tc", "qdisc", "replace", "dev", ifname, "root", "tbf", "rate", rate,
                          "burst", "64kb", "latency", "50ms"]), f"throttle {spec}")
    st.faults = [f for f in st.faults if not (f.kind == "throttle" and f.node == node and f.port == port)]
    fault = Fault(kind="throttle", node=node, port=port, ifname=ifname, rate=rate)
    st.faults.append(fault)
    st.save()
    return fault


def clear(st: LabState, fabric: FabricIntent | None = None) -> list[Fault]:
    """Undo every recorded fault, the latest first: cables back in their ports (configured again), links up, tbf
    qdiscs removed (a switch port gets its queues back)."""
    cleared = list(st.faults)
    for f in reversed(cleared):
        if f.moves:
            _unmove(st, f)
            _configure(st, fabric or _fabric(st), _ends(f))
        elif f.kind == "link":
            quiet(st.ns_argv(f.node, ["ip", "link", "set", "dev", f.ifname, "up"]))
        else:
            quiet(st.ns_argv(f.node, ["tc", "qdisc", "del", "dev", f.ifname, "root"]))
            if st.nodes[f.node].kind == "switch" and st.qos:
                _restore_queues(st, f.node, f.port)
    st.faults = []
    st.save()
    return cleared


# -- cable faults ---------------------------------------------------------------------------------------------------
def _cable(st: LabState, node: str, port: str) -> LinkState:
    return next(ln for ln in st.links if (node, port) in ((ln.a, ln.a_port), (ln.b, ln.b_port)))


def _host_cable(st: LabState, ln: LinkState) -> bool:
    return "host" in (st.nodes[ln.a].kind, st.nodes[ln.b].kind)


def _free(st: LabState, *ends: tuple[str, str]) -> None:
    """A port already in a cable fault takes no second one (clear first)."""
    for f in st.faults:
        for node, port in ends:
            if f.moves and (node, port) in _ends(f):
                raise UsageError(f"{node}:{port} is already in a {f.kind} fault; run `fabric lab fault clear` first")


def _ends(f: Fault) -> list[tuple[str, str]]:
    """The ports a cable fault changed (the one or two named)."""
    other = f.other.partition(":") if f.other else None
    return [(f.node, f.port)] + ([(other[0], other[2])] if other else [])


def swap(st: LabState, fabric: FabricIntent, kind: str, spec_a: str, spec_b: str) -> Fault:
    """Exchange the cables in two ports: `swap-cables` two host cables (two leaves' ports, or two NICs of a host),
    `cross-uplinks` two switch-to-switch cables."""
    a, b = _port(st, spec_a), _port(st, spec_b)
    cable_a, cable_b = _cable(st, a[0], a[1]), _cable(st, b[0], b[1])
    if cable_a is cable_b:
        raise UsageError(f"expected two cables, found {spec_a} and {spec_b} are the two ends of one cable")
    want_host = kind == "swap-cables"
    for spec, cable in ((spec_a, cable_a), (spec_b, cable_b)):
        if _host_cable(st, cable) != want_host:
            found = "a host cable" if _host_cable(st, cable) else "a cable between two switches"
            raise UsageError(f"{kind}: expected {'a host cable' if want_host else 'an uplink'} at {spec}, found "
                             f"{found} ({cable.a}:{cable.a_port} — {cable.b}:{cable.b_port})")
    _free(st, a[:2], b[:2])
    moves = [Move(node=a[0], ifname=a[2], to_node=b[0], to_ifname=b[2]),
             Move(node=b[0], ifname=b[2], to_node=a[0], to_ifname=a[2])]
    fault = Fault(kind=kind, node=a[0], port=a[1], ifname=a[2], other=f"{b[0]}:{b[1]}", moves=moves)  # type: ignore[arg-type]
    return _inject(st, fabric, fault)


def pull(st: LabState, fabric: FabricIntent, spec: str) -> Fault:
    """Pull the cable out of a port: its end goes to the unplugged namespace, the port stays, empty."""
    node, port, ifname = _port(st, spec)
    _free(st, (node, port))
    if quiet(["ip", "netns", "pids", st.unplugged_netns]) != 0:
        st.namespaces.append(st.unplugged_netns)  # recorded first: `lab down` removes it
        st.save()
        run(["ip", "netns", "add", st.unplugged_netns], "unplugged namespace")
    parked = "c" + hashlib.sha1(f"{node}:{port}".encode()).hexdigest()[:10]
    fault = Fault(kind="pull", node=node, port=port, ifname=ifname,
                  moves=[Move(node=node, ifname=ifname, to_node="", to_ifname=parked)])
    return _inject(st, fabric, fault)


def _inject(st: LabState, fabric: FabricIntent, fault: Fault) -> Fault:
    """Move the cable ends, then record the fault (one that fails half-way is not: `fabric lab down` removes it)."""
    _move(st, fault.moves, fault.kind)
    if fault.kind == "pull":  # the empty port: a veth end whose peer lies unplugged, down
        m = fault.moves[0]
        run(["ip", "-n", st.netns_of(m.node), "link", "add", "name", m.ifname, "type", "veth", "peer", "name",
             m.to_ifname + "e", "netns", st.unplugged_netns], f"pull {m.node}:{fault.port}")
    st.faults.append(fault)
    st.save()
    _configure(st, fabric, _ends(fault))
    return fault


def _move(st: LabState, moves: list[Move], step: str) -> None:
    """Carry out `moves` through temporary names, so that two ends may trade names and namespaces."""
    for i, m in enumerate(moves):
        src, dst = st.netns_of(m.node), st.netns_of(m.to_node)
        run(["ip", "-n", src, "link", "set", "dev", m.ifname, "down"], step)
        where = [] if src == dst else ["netns", dst]
        run(["ip", "-n", src, "link", "set", "dev", m.ifname, *where, "name", f"fabricmv{i}"], step)
    for i, m in enumerate(moves):
        dst = st.netns_of(m.to_node)
        run(["ip", "-n", dst, "link", "set", "dev", f"fabricmv{i}", "name", m.to_ifname], step)


def _unmove(st: LabState, f: Fault) -> None:
    """Put a cable fault's ends back where `lab up` made them (the empty port of a pull removed first)."""
    if f.kind == "pull":
        quiet(["ip", "-n", st.netns_of(f.node), "link", "del", "dev", f.ifname])
    _move(st, [Move(node=m.to_node, ifname=m.to_ifname, to_node=m.node, to_ifname=m.ifname) for m in f.moves],
          "clear")


def _configure(st: LabState, fabric: FabricIntent, ends: list[tuple[str, str]]) -> None:
    """Configure ports that got a new cable end as `lab up` did: the switch's interfaces.sh (idempotent) and
    queues, the host agent on a host; every port up, the node's lldpd started again."""
    from fabric.lab.lifecycle import host_agent

    for node in sorted({n for n, _p in ends}):
        ports = [p for n, p in ends if n == node]
        if st.nodes[node].kind == "host":
            host_agent(st, node, fabric.hosts[node])
        else:
            run(st.ns_argv(node, ["sh", str(st.dir / "switches" / node / "interfaces.sh")]), f"interfaces.sh {node}")
            if st.qos:
                from fabric.lab import qos
                from fabric.render import render_switch

                qos.apply(st, fabric, node, render_switch(fabric.switches[node], fabric),
                          st.qos_rate or qos.PORT_RATE, ports=ports)
        for p in ports:
            run(st.ns_argv(node, ["ip", "link", "set", "dev", st.nodes[node].ifnames[p], "up"]), f"{node}:{p} up")
        daemons.restart_lldpd(st, node)
    st.save()


def _fabric(st: LabState) -> FabricIntent:
    from fabric.design.load import load_fabric

    return load_fabric(Path(st.inventory), target="frr").intent


def qdisc(st: LabState, node: str, ifname: str) -> str:
    """`tc qdisc show` of one interface (to verify a throttle)."""
    return st.run(node, ["tc", "qdisc", "show", "dev", ifname]).stdout


def _restore_queues(st: LabState, node: str, port: str) -> None:
    from fabric.lab import qos
    from fabric.render import render_switch

    fabric = _fabric(st)
    qos.apply(st, fabric, node, render_switch(fabric.switches[node], fabric), st.qos_rate or qos.PORT_RATE,
              ports=[port])
