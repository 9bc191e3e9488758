"""Faults injected into the lab: a link taken down, a port throttled with a tbf qdisc, cables miswired or pulled.
Recorded in state; `clear` undoes them all.

A cable is a veth pair, and a veth's peer cannot change, so a cable fault makes the cables again: the affected pairs
are deleted and made anew, each port's device under its own name and MAC in its own namespace, only its peer
different. `swap-cables` and `cross-uplinks` exchange the cables in two ports; `pull` leaves the port empty (its
device's peer lies in the lab's namespace of unplugged ends, down: no carrier) and the cable's far end leading
nowhere. Every port of the cables is configured again as `lab up` configured it (the switch's interfaces.sh and
queues, the host agent, lldpd), so only the cabling differs from the model; `clear` makes the original pairs again."""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path
from typing import TYPE_CHECKING

from fabric.errors import UsageError
from fabric.lab import daemons
from fabric.lab.sh import quiet, run
from fabric.lab.state import Cable, End, Fault, LabState, LinkState

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
    _tbf(st, node, ifname, rate, f"throttle {spec}")
    st.faults = [f for f in st.faults if not (f.kind == "throttle" and f.node == node and f.port == port)]
    fault = Fault(kind="throttle", node=node, port=port, ifname=ifname, rate=rate)
    st.faults.append(fault)
    st.save()
    return fault


def _tbf(st: LabState, node: str, ifname: str, rate: str, step: str) -> None:
    # from scratch: a `replace` of the switch port's root tbf (the ets+red lab) would keep its queue tree below
    quiet(st.ns_argv(node, ["tc", "qdisc", "del", "dev", ifname, "root"]))
    run(st.ns_argv(node, ["tc", "qdisc", "replace", "dev", ifname, "root", "tbf", "rate", rate,
                          "burst", "64kb", "latency", "50ms"]), step)


def clear(st: LabState, fabric: FabricIntent | None = None) -> list[Fault]:
    """Undo every recorded fault, the latest first: cables back in their ports (configured again), links up, tbf
    qdiscs removed (a switch port gets its queues back)."""
    cleared = list(st.faults)
    for f in reversed(cleared):
        st.faults.remove(f)  # first: a port made again below holds only the faults still recorded
        if f.was:
            _recable(st, f.now, f.was, "clear")
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
            if f.was and (node, port) in _ends(f):
                raise UsageError(f"{node}:{port} is already in a {f.kind} fault; run `fabric lab fault clear` first")


def _ends(f: Fault) -> list[tuple[str, str]]:
    """The ports a cable fault changed: every port end of its cables (the named ones and their far ends)."""
    return sorted({(e.node, e.port) for c in f.was for e in (c.a, c.b) if e.node})


def _end(st: LabState, node: str, port: str) -> End:
    ifname = st.nodes[node].ifnames[port]
    shown = json.loads(run(["ip", "-n", st.netns_of(node), "-j", "link", "show", "dev", ifname], f"{node}:{port}"))
    return End(node=node, port=port, ifname=ifname, mac=shown[0]["address"])


def _far(st: LabState, node: str, port: str) -> tuple[str, str]:
    ln = _cable(st, node, port)
    return (ln.b, ln.b_port) if (ln.a, ln.a_port) == (node, port) else (ln.a, ln.a_port)


def _unplugged(node: str, port: str) -> End:
    """The free end of the cable pulled out of `node:port` (or left in it), in the unplugged namespace."""
    return End(node="", port="", ifname="c" + hashlib.sha1(f"{node}:{port}".encode()).hexdigest()[:10], mac="")


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
    far_a, far_b = _far(st, a[0], a[1]), _far(st, b[0], b[1])
    _free(st, a[:2], b[:2], far_a, far_b)
    ea, eb, fa, fb = (_end(st, *x) for x in (a[:2], b[:2], far_a, far_b))
    fault = Fault(kind=kind, node=a[0], port=a[1], ifname=a[2], other=f"{b[0]}:{b[1]}",  # type: ignore[arg-type]
                  was=[Cable(a=ea, b=fa), Cable(a=eb, b=fb)], now=[Cable(a=ea, b=fb), Cable(a=eb, b=fa)])
    return _inject(st, fabric, fault)


def pull(st: LabState, fabric: FabricIntent, spec: str) -> Fault:
    """Pull the cable out of a port: the port stays, empty (its device's peer lies unplugged, down: no carrier), and
    the cable's far end, still in its port, leads nowhere (no carrier there either)."""
    node, port, ifname = _port(st, spec)
    far = _far(st, node, port)
    _free(st, (node, port), far)
    if quiet(["ip", "netns", "pids", st.unplugged_netns]) != 0:
        st.namespaces.append(st.unplugged_netns)  # recorded first: `lab down` removes it
        st.save()
        run(["ip", "netns", "add", st.unplugged_netns], "unplugged namespace")
    e, f = _end(st, node, port), _end(st, *far)
    fault = Fault(kind="pull", node=node, port=port, ifname=ifname, was=[Cable(a=e, b=f)],
                  now=[Cable(a=e, b=_unplugged(node, port)), Cable(a=f, b=_unplugged(*far))])
    return _inject(st, fabric, fault)


def _inject(st: LabState, fabric: FabricIntent, fault: Fault) -> Fault:
    """Recable, then record the fault (one that fails half-way is not: `fabric lab down` removes it)."""
    _recable(st, fault.was, fault.now, fault.kind)
    st.faults.append(fault)
    st.save()
    _configure(st, fabric, _ends(fault))
    return fault


def _recable(st: LabState, old: list[Cable], new: list[Cable], step: str) -> None:
    """Replace the veth pairs `old` by `new`. A port's device is made again under its name and MAC, never renamed
    or moved: FRR keys an interface by its name and holds one ifindex per name (zebra: a rename's "results are
    uncertain"), and a port of a real switch keeps its name whatever cable is plugged in."""
    for c in old:
        run(["ip", "-n", st.netns_of(c.a.node), "link", "del", "dev", c.a.ifname], step)
    for c in new:
        mac_a = ["address", c.a.mac] if c.a.mac else []
        mac_b = ["address", c.b.mac] if c.b.mac else []
        run(["ip", "-n", st.netns_of(c.a.node), "link", "add", "name", c.a.ifname, *mac_a, "type", "veth", "peer",
             "name", c.b.ifname, *mac_b, "netns", st.netns_of(c.b.node)], step)


def _configure(st: LabState, fabric: FabricIntent, ends: list[tuple[str, str]]) -> None:
    """Configure ports whose device was made again as `lab up` did: the switch's interfaces.sh (idempotent) and
    queues, the host agent on a host; every port up but one a link fault holds down, a throttled port's tbf again;
    the node's lldpd started again."""
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
        for p in ports:  # a port's own recorded fault (a link down, a throttle) holds on its new device
            held = {f.kind: f for f in st.faults if not f.was and (f.node, f.port) == (node, p)}
            ifname = st.nodes[node].ifnames[p]
            if "throttle" in held:
                _tbf(st, node, ifname, held["throttle"].rate or "", f"{node}:{p} throttled again")
            state = "down" if "link" in held else "up"
            run(st.ns_argv(node, ["ip", "link", "set", "dev", ifname, state]), f"{node}:{p} {state}")
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
