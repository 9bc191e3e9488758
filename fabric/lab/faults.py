"""Faults injected into the lab: a link taken down, a port throttled with a tbf qdisc. Recorded in state."""

from __future__ import annotations

import re
from pathlib import Path

from fabric.errors import UsageError
from fabric.lab.sh import quiet, run
from fabric.lab.state import Fault, LabState

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


def clear(st: LabState) -> list[Fault]:
    """Undo every recorded fault: links up, tbf qdiscs removed (a switch port gets its queues back)."""
    cleared = list(st.faults)
    for f in cleared:
        if f.kind == "link":
            quiet(st.ns_argv(f.node, ["ip", "link", "set", "dev", f.ifname, "up"]))
        else:
            quiet(st.ns_argv(f.node, ["tc", "qdisc", "del", "dev", f.ifname, "root"]))
            if st.nodes[f.node].kind == "switch" and st.qos:
                _restore_queues(st, f.node, f.port)
    st.faults = []
    st.save()
    return cleared


def qdisc(st: LabState, node: str, ifname: str) -> str:
    """`tc qdisc show` of one interface (to verify a throttle)."""
    return st.run(node, ["tc", "qdisc", "show", "dev", ifname]).stdout


def _restore_queues(st: LabState, node: str, port: str) -> None:
    from fabric.design.load import load_fabric
    from fabric.lab import qos
    from fabric.render import render_switch

    fabric = load_fabric(Path(st.inventory), target="frr").intent
    qos.apply(st, fabric, node, render_switch(fabric.switches[node], fabric), st.qos_rate or qos.PORT_RATE,
              ports=[port])
