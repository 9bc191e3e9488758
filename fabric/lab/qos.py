"""The switches' egress queues in the lab, so traffic there is classified, scheduled and ECN-marked.

A veth has no line rate and never queues, so every switch port gets a port shaper at `PORT_RATE` with the
switch's rendered queue tree below it:

- `ets+red` (a kernel with sch_ets and sch_red): the `tc` lines of the rendered `qos.sh` themselves — the
  `ets` qdisc with the policy's bands, shares and priomap and `red … ecn` on the ECN bands — moved under a
  `tbf` port shaper;
- `htb` (a kernel without them): the same bands from the same facts (`fabric.nos.frr.render.ets_tree`) as HTB
  classes `1:<band+1>` — strict bands at priority 0, DWRR bands with their share as guaranteed rate — over
  `pfifo` (`red` where the kernel has it). ECN is marked only with `red`.

On a switch the ASIC classifies by `dcb app` (DSCP → priority → band); in software a `u32` filter per DSCP
of the policy does it. The queue counters (`tc -s class`/`qdisc`) are read by the FRR driver.
"""

from __future__ import annotations

import re
import subprocess

from fabric.design.intent import FabricIntent
from fabric.lab.sh import run
from fabric.lab.state import LabState
from fabric.nos.frr.render import EtsTree, ets_tree

PORT_RATE = "1gbit"  # the lab's line rate: every switch port is shaped to it
_RATE_BITS = {"bit": 1, "kbit": 10**3, "mbit": 10**6, "gbit": 10**9}


def rate_bits(rate: str) -> int:
    m = re.fullmatch(r"(\d+)(bit|kbit|mbit|gbit)", rate)
    assert m, rate
    return int(m[1]) * _RATE_BITS[m[2]]


def kernel_qdiscs(st: LabState, node: str) -> set[str]:
    """Which of ets, red, htb, tbf this kernel has (probed on the namespace's loopback, then removed)."""
    probes = {"ets": ["ets", "bands", "2", "strict", "1"], "htb": ["htb"], "tbf": ["tbf", "rate", "1gbit", "burst",
              "64kb", "latency", "10ms"],
              "red": ["red", "limit", "400000", "min", "30000", "max", "90000", "avpkt", "1500", "burst", "21",
                      "probability", "1", "ecn"]}
    have = set()
    for kind, args in probes.items():
        p = subprocess.run(st.ns_argv(node, ["tc", "qdisc", "add", "dev", "lo", "root", "handle", "ffff:", *args]),
                           capture_output=True, text=True, timeout=10)
        if p.returncode == 0:
            have.add(kind)
            subprocess.run(st.ns_argv(node, ["tc", "qdisc", "del", "dev", "lo", "root"]), capture_output=True,
                           timeout=10)
    return have


def _filters(ifname: str, tree: EtsTree, dscp_to_tc: list[int], explicit: list[int]) -> list[str]:
    """u32 DSCP → band filters (what `dcb app dscp-prio` does in the ASIC)."""
    band = {b.tc: b.band for b in tree.bands}
    return [f"filter add dev {ifname} parent 1: protocol ip prio 1 u32 match ip dsfield {d << 2:#04x} 0xfc "
            f"flowid 1:{band[dscp_to_tc[d]] + 1}" for d in explicit]


def ets_lines(ifname: str, qos_sh: str, port: str, rate: str) -> list[str]:
    """The rendered qos.sh's tc lines of `port`, under a tbf shaper (handle 9:) at the lab rate."""
    out = [f"qdisc replace dev {ifname} root handle 9: tbf rate {rate} burst 256kb latency 100ms"]
    for line in qos_sh.splitlines():
        if line.startswith(f"tc qdisc replace dev {port} "):
            rest = line.removeprefix(f"tc qdisc replace dev {port} ").replace("root handle 1:", "parent 9:1 handle 1:")
            out.append(f"qdisc replace dev {ifname} {rest}")
    return out


def port_lines(fabric: FabricIntent, node: str, port: str, ifname: str, qos_sh: str, rate: str) -> list[str]:
    """`tc -batch` lines of one switch port with the rendered `ets` + `red … ecn` tree and the DSCP filters."""
    sw = fabric.switches[node]
    return (ets_lines(ifname, qos_sh, port, rate)
            + _filters(ifname, ets_tree(sw.qos), sw.qos.dscp_to_tc, sw.qos.dscp_explicit))


def htb_lines(ifname: str, tree: EtsTree, rate: str, red: bool) -> list[str]:
    """The same bands as HTB classes: strict first (prio 0), DWRR by share (prio 1), the rest last (prio 2)."""
    total = rate_bits(rate)
    default = tree.priomap[0] + 1
    out = [f"qdisc replace dev {ifname} root handle 1: htb default {default}",
           f"class replace dev {ifname} parent 1: classid 1:100 htb rate {rate} ceil {rate} burst 64k cburst 64k"]
    for b in tree.bands:
        share = 100 if b.strict else (b.quantum or 1) // 100 or 1  # the quantum is 100 B per percent
        prio = 0 if b.strict else 1 if share > 1 else 2
        out.append(f"class replace dev {ifname} parent 1:100 classid 1:{b.band + 1} htb rate "
                   f"{max(total * share // 100, 8000)}bit ceil {rate} burst 64k cburst 64k prio {prio}")
        if b.red and red:
            out.append(f"qdisc replace dev {ifname} parent 1:{b.band + 1} handle {b.band + 11}: red {b.red}")
    return out


def apply(st: LabState, fabric: FabricIntent, node: str, files: dict[str, str], rate: str = PORT_RATE,
          ports: list[str] | None = None) -> str:
    """Shape and queue every port of switch `node` (or only `ports`); returns the mode used."""
    sw = fabric.switches[node]
    tree = ets_tree(sw.qos)
    have = kernel_qdiscs(st, node)
    mode = "ets+red" if {"ets", "red", "tbf"} <= have else "htb"
    qos_sh = files["qos.sh"]
    lines: list[str] = []
    for p in sw.ports:
        if ports is not None and p.name not in ports:
            continue
        ifname = st.nodes[node].ifnames.get(p.name)
        if ifname is None:
            continue
        if mode == "ets+red":
            lines += ets_lines(ifname, qos_sh, p.name, rate)
        else:
            lines += htb_lines(ifname, tree, rate, red="red" in have)
        lines += _filters(ifname, tree, sw.qos.dscp_to_tc, sw.qos.dscp_explicit)
    if lines:  # from scratch, so applying twice gives the same tree (no duplicate filters)
        subprocess.run(st.ns_argv(node, ["tc", "-force", "-batch", "-"]), capture_output=True, timeout=30, text=True,
                       input="".join(f"qdisc del dev {st.nodes[node].ifnames[p.name]} root\n" for p in sw.ports
                                     if p.name in st.nodes[node].ifnames and (ports is None or p.name in ports)))
        run(st.ns_argv(node, ["tc", "-batch", "-"]), f"qos {node}", input="\n".join(lines) + "\n")
    return mode
