"""Lossless counters per host NIC and switch port: snapshots, deltas, rates, anomalies.

Sources, read in one command per node: `ethtool -S <netdev>` (mlx5: rx_prio3_pause, rx_discards_phy…),
`ip -s -j link` (kernel link statistics, what the lab's veths have) and RDMA
`/sys/class/infiniband/<dev>/ports/1/hw_counters/*` (out_of_sequence, np_cnp_sent…). Counter names
are prefixed with their source: `ethtool:`, `link:`, `hw:`.
"""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

from pydantic import BaseModel

from fabric.accept import transport as tr
from fabric.accept.results import Planned
from fabric.access import Site
from fabric.errors import InputError, ReplyError, UsageError, one_line, printable
from fabric.parsers import parse_ethtool_stats
from fabric.parsers.iproute import link_counters
from fabric.replies import reader
from fabric.targets.base import TargetError
from fabric.targets.session import conn_errors, reason, session

# node → port (rail netdev or switch port) → counter → value
Snapshot = dict[str, dict[str, dict[str, int]]]

DISCARD = re.compile(r"(discard|^link:(rx|tx)_(dropped|errors)$|out_of_buffer$)")
QUEUE_DROPS = re.compile(r"^queue:(?P<n>\d):drops$")  # judged on lossless queues only (lossy ones may drop)
SEQUENCE = re.compile(r"^hw:(out_of_sequence|packet_seq_err|implied_nak_seq_err|local_ack_timeout_err)$")
PAUSE = re.compile(r"^(ethtool:(rx|tx)_prio\d_pause|pfc:(\d|all):(rx|tx)_pause)$")
ECN = re.compile(r"^(ethtool:rx_prio\d_marked|hw:np_ecn_marked_roce_packets|queue:\d:ecn_marked|port:ecn_marked)$")
REORDER = {"hw:out_of_sequence"}  # expected where adaptive routing sprays a flow over paths
CNP_SENT, CNP_HANDLED = "hw:np_cnp_sent", "hw:rp_cnp_handled"
STORM = re.compile(r"^(ethtool:tx_pause_storm_(warning|error)_events|pfcwd:\d:storm_detected)$")
# per-priority bytes of a NIC (mlx5 ethtool -S) and per-queue bytes of a switch port (the drivers' `queue:`)
PRIO_BYTES = re.compile(r"^ethtool:(?P<dir>rx|tx)_prio(?P<n>\d)_bytes$")
QUEUE_BYTES = re.compile(r"^queue:(?P<n>\d):tx_bytes$")

# Switch counters, the same names on every NOS driver (fabric.nos.*.driver.counters):
#   queue:<tc>:tx_bytes|tx_packets|drops|ecn_marked   egress queue (TC) of the port
#   pfc:<prio>:rx_pause|tx_pause                      PFC frames per priority (`all`: the NOS counts per port)
#   port:ecn_marked                                   ECN-marked packets where the NOS counts per port only
#   pfcwd:<prio>:storm_detected|storm_restored        PFC watchdog events


def _host_script(netdevs: list[tuple[str, str]]) -> str:
    parts = []
    for netdev, rdma in netdevs:
        q = shlex.quote(netdev)
        parts.append(f"echo '@@ {netdev} ethtool'; ethtool -S {q} 2>/dev/null; "
                     f"echo '@@ {netdev} link'; ip -s -j link show dev {q} 2>/dev/null; echo")
        if rdma:
            d = f"{tr.SYSFS}/class/infiniband/{shlex.quote(rdma)}/ports/1/hw_counters"
            parts.append(f"echo '@@ {netdev} hw'; for f in {d}/*; do [ -r \"$f\" ] && "
                         f"echo \"     ${{f##*/}}: $(cat \"$f\")\"; done 2>/dev/null; true")
    return "; ".join(parts)


def _first_link(doc: object) -> dict[str, int]:
    return link_counters(doc[0]) if isinstance(doc, list) and doc else {}


MAX_REPLY = 4 << 20  # one host's dump: a few KB per NIC; more is no reply of this script


@reader("the host's counter dump (ethtool -S, ip -s -j link, rdma hw counters)")
def parse_host_dump(text: str, host: str = "-", problems: list[str] | None = None) -> dict[str, dict[str, int]]:
    """The sections printed by the host script → port → counters. A host's reply is outside input: a section
    that cannot be read adds one located problem (`host: section: expected …, found …`) to `problems` and no
    counters; nothing in a reply raises."""
    def problem(where: str, expected: str, found: str) -> None:
        if problems is not None:
            problems.append(printable(f"{host}: {where}: expected {expected}, found {found}")[:300])

    if len(text) > MAX_REPLY:
        problem("reply", f"at most {MAX_REPLY >> 20} MiB", f"{len(text) >> 20} MiB")
        return {}
    sections: dict[tuple[str, str], list[str]] = {}
    key: tuple[str, str] | None = None
    for n, line in enumerate(text.splitlines(), 1):
        if line.startswith("@@ "):
            words = line.split(maxsplit=2)
            if len(words) != 3 or words[2] not in ("ethtool", "link", "hw"):
                problem(f"line {n}", "'@@ <netdev> ethtool|link|hw'", repr(line[:60]))
                key = None
                continue
            key = (words[1], words[2])
            sections[key] = []
        elif key is not None:
            sections[key].append(line)
    out: dict[str, dict[str, int]] = {}
    for (port, kind), lines in sections.items():
        body = "\n".join(lines).strip()
        counters = out.setdefault(port, {})
        if not body:
            continue
        if kind == "ethtool":
            try:
                stats = parse_ethtool_stats(body + "\n", f"ethtool -S {port}")
            except InputError as exc:
                problem(f"ethtool -S {port}", "'NIC statistics:' lines", str(exc.problems[0].found)[:60])
                continue
            counters.update({f"ethtool:{k}": v for k, v in stats.counters.items()})
        elif kind == "link":
            try:
                doc = json.loads(body)
            except (ValueError, RecursionError) as exc:
                problem(f"ip -s -j link show dev {port}", "ip's JSON", one_line(exc, 60))
                continue
            if not (isinstance(doc, list) and doc and isinstance(doc[0], dict)):
                problem(f"ip -s -j link show dev {port}", "a list of links", repr(doc)[:40])
                continue
            counters.update({k: v for k, v in _first_link(doc).items() if 0 <= v < 1 << 64})
        elif kind == "hw":
            for ln in lines:
                name, _, value = ln.strip().partition(":")
                value = value.strip()
                if value.isascii() and value.isdigit() and len(value) <= 20 and int(value) < 1 << 64:
                    counters[f"hw:{name}"] = int(value)
                elif ln.strip():
                    problem(f"hw_counters of {port}", "'name: integer'", repr(ln.strip()[:60]))
    return out


# The receiving kernel's count of IPv4 packets by ECN codepoint (`IpExt` of /proc/net/netstat, what `nstat` shows as
# IpExtInCEPkts): per network namespace, so per host and not per rail, and per packet as received — ip_rcv counts
# a GRO/GSO batch as its segments, where a switch's qdisc (Linux `red`) marks it, and counts it, as one.
KERNEL = "kernel"  # the snapshot's "port" of these namespace-wide counters
KERNEL_ECN = ("InNoECTPkts", "InECT1Pkts", "InECT0Pkts", "InCEPkts")
KERNEL_CE = "ip:InCEPkts"


@reader("cat /proc/net/netstat")
def parse_netstat(text: str, host: str = "-", problems: list[str] | None = None) -> dict[str, int]:
    """/proc/net/netstat (a `Group: names…` line, then `Group: values…`) → the IpExt ECN counters as `ip:<name>`.
    Outside input: an IpExt pair whose lines do not match adds one located problem and no counters."""
    lines = [ln.split() for ln in text.splitlines() if ln.startswith("IpExt:")]
    if len(lines) != 2 or len(lines[0]) != len(lines[1]):
        found = (f"{len(lines[0]) - 1} names and {len(lines[1]) - 1} values" if len(lines) == 2
                 else f"{len(lines)} IpExt lines")
        if problems is not None:
            problems.append(printable(f"{host}: /proc/net/netstat: expected an IpExt names line and a values line "
                                      f"of the same length, found {found}")[:300])
        return {}
    values = dict(zip(lines[0][1:], lines[1][1:], strict=True))
    return {f"ip:{k}": int(v) for k, v in values.items()
            if k in KERNEL_ECN and v.isascii() and v.isdigit() and len(v) <= 20}


def kernel_ecn(site: Site, hosts: list[str], *, workers: int = 8) -> Snapshot:
    """Each host's kernel ECN counters (one `cat /proc/net/netstat` a host) as {host: {KERNEL: counters}}; a host
    that does not answer has no entry."""
    def one(h: str) -> tuple[str, dict[str, int]]:
        c = tr.run(site, h, ["cat", "/proc/net/netstat"], timeout=20)
        try:
            return h, {} if c.rc != 0 else parse_netstat(c.stdout, h)
        except ReplyError:  # not /proc/net/netstat as the kernel prints it: no counters of this host
            return h, {}

    with ThreadPoolExecutor(max_workers=max(1, min(workers, len(hosts)))) as pool:
        return {h: {KERNEL: cs} for h, cs in pool.map(one, hosts) if cs}

class Unreachable(Exception):
    """A node whose counters could not be read at all (no SSH session)."""


def host_snapshot(site: Site, host: str, problems: list[str] | None = None) -> dict[str, dict[str, int]]:
    netdevs = [(r.ifname, r.rdma) for r in site.fabric.hosts[host].rails]
    c = tr.run(site, host, ["sh", "-c", _host_script(netdevs)], timeout=20)
    if c.unreachable:
        raise Unreachable(c.last_error)
    return parse_host_dump(c.stdout, host, problems)


def switch_snapshot(site: Site, switch: str, *, timeout: float = 5) -> dict[str, dict[str, int]]:
    """The switch's port counters through its NOS driver (empty where the driver reads none)."""
    try:
        with session(site.switch(switch), site.switch_credentials(), timeout=timeout) as drv:
            return drv.counters() or {}
    except conn_errors() as exc:
        raise Unreachable(reason(exc)) from None
    except (TargetError, ValueError, RecursionError):  # a reply that is not one: no counters
        return {}


def planned_snapshot(site: Site, *, switches: bool = True) -> list[Planned]:
    """The reads of one `snapshot`, for `--dry-run`."""
    out = [Planned(host=h, role="read", command=shlex.join(["sh", "-c", _host_script(
        [(r.ifname, r.rdma) for r in site.fabric.hosts[h].rails])])) for h in site.fabric.hosts]
    if switches:
        from fabric.nos import NOS

        for name, sw in site.fabric.switches.items():
            reads = NOS[sw.target].module("driver").DRIVER.counter_commands
            out.append(Planned(host=name, role="read", command="; ".join(reads) if reads
                               else f"({sw.target} driver reads no counters)"))
    return out


def snapshot(site: Site, *, switches: bool = False, workers: int = 32, nodes: list[str] | None = None,
             progress: Callable[[str, str], None] = lambda _n, _s: None,
             problems: list[str] | None = None) -> Snapshot:
    """Counters of every host (and switch), all at once; a node that cannot be reached has no entry and is
    reported to `progress` as `unreachable` the moment that is known."""
    fabric = site.fabric
    if nodes is None:
        nodes = list(fabric.hosts) + (list(fabric.switches) if switches else [])
    if any(n in fabric.switches for n in nodes):
        try:
            site.switch_credentials()
        except UsageError:  # no switch credentials here: host counters only
            nodes = [n for n in nodes if n not in fabric.switches]
    if not nodes:
        return {}

    def one(n: str) -> tuple[str, dict[str, dict[str, int]] | None]:
        progress(n, "reading")
        try:
            got = host_snapshot(site, n, problems) if n in fabric.hosts else switch_snapshot(site, n)
        except Unreachable:
            progress(n, "unreachable")
            return n, None
        progress(n, "done")
        return n, got

    with ThreadPoolExecutor(max_workers=max(1, min(workers, len(nodes)))) as pool:
        return {n: got for n, got in pool.map(one, nodes) if got is not None}


def delta(before: Snapshot, after: Snapshot) -> Snapshot:
    """after − before for counters present in both."""
    return {node: {port: {k: v - before[node][port][k] for k, v in cs.items()
                          if k in before.get(node, {}).get(port, {})}
                   for port, cs in ports.items()}
            for node, ports in after.items() if node in before}


def total(counters: dict[str, int], pattern: re.Pattern[str]) -> int:
    return sum(v for k, v in counters.items() if pattern.search(k))


class PortRates(BaseModel):
    node: str
    port: str
    pause: float = 0.0
    ecn: float = 0.0
    cnp_sent: float = 0.0
    cnp_handled: float = 0.0
    discards: float = 0.0
    rx_gbps: float = 0.0
    tx_gbps: float = 0.0
    queues_gbps: dict[int, float] = {}  # switch port: egress Gb/s per traffic class
    exposed: list[str] = []  # which sources this port has (ethtool, link, hw)
    anomalies: list[str] = []


def rates(d: Snapshot, seconds: float) -> list[PortRates]:
    """Per-second rates of the lossless counter groups, with anomalies named."""
    out = []
    for node, ports in sorted(d.items()):
        for port, cs in sorted(ports.items()):
            r = PortRates(node=node, port=port,
                          pause=total(cs, PAUSE) / seconds, ecn=total(cs, ECN) / seconds,
                          cnp_sent=cs.get(CNP_SENT, 0) / seconds, cnp_handled=cs.get(CNP_HANDLED, 0) / seconds,
                          discards=(total(cs, DISCARD) + total(cs, SEQUENCE)) / seconds,
                          rx_gbps=cs.get("link:rx_bytes", 0) * 8 / seconds / 1e9,
                          tx_gbps=cs.get("link:tx_bytes", 0) * 8 / seconds / 1e9,
                          queues_gbps={int(m["n"]): round(v * 8 / seconds / 1e9, 3) for k, v in cs.items()
                                       if (m := QUEUE_BYTES.match(k))},
                          exposed=sorted({k.split(":", 1)[0] for k in cs}))
            bad = {k: v for k, v in cs.items() if (DISCARD.search(k) or SEQUENCE.search(k)) and v > 0}
            dropped = {k: v for k, v in cs.items() if QUEUE_DROPS.match(k) and v > 0}
            if dropped:  # a lossy queue may drop; which queue is lossless is judged by the acceptance checks
                r.anomalies.append("queue drops: " + ", ".join(f"{k}+{v}" for k, v in sorted(dropped.items())))
            if bad:
                r.anomalies.append("discards/errors: " + ", ".join(f"{k}+{v}" for k, v in sorted(bad.items())))
            if total(cs, STORM) > 0:
                r.anomalies.append("PFC storm events")
            if r.pause > 0:
                r.anomalies.append("PFC pause frames (congestion)")
            out.append(r)
    return out
