"""Observe the lab: BGP sessions and ECMP width from each FRR instance, rail reachability by real ICMP echoes
(fping, one prober per host and rail), the LLDP neighbours each node's lldpd sees."""

from __future__ import annotations

import re
import subprocess
import time
from concurrent.futures import ThreadPoolExecutor
from ipaddress import IPv4Interface

from pydantic import BaseModel

from fabric.design.bgp import expectation
from fabric.design.intent import FabricIntent, HostIntent, SwitchIntent
from fabric.errors import InputError
from fabric.lab.sh import StepError
from fabric.lab.state import Fault, LabState
from fabric.parsers.frr import route_widths
from fabric.parsers.lldp import parse_lldpctl
from fabric.replies import json_replies

PROBE_WORKERS = 16  # fping processes at once, each mostly waiting for replies
VTY_WORKERS = 4


class Session(BaseModel):
    neighbor: str  # the port of an unnumbered session
    peer: str  # the device on the other end, from the intent
    state: str
    prefixes_received: int | None = None


class SwitchStatus(BaseModel):
    name: str
    role: str
    sessions: list[Session]
    ecmp_min: int | None = None  # narrowest ECMP group towards another leaf's prefixes
    ecmp_expected: int | None = None
    remote_prefixes: int = 0
    missing: list[str] = []  # prefixes of other switches not in the routing table
    error: str = ""

    @property
    def problems(self) -> list[str]:
        out = [f"{self.name}: {self.error}"] if self.error else []
        out += [f"{self.name}: session {s.neighbor} ({s.peer}) {s.state}" for s in self.sessions
                if s.state != "Established"]
        if self.missing:
            out.append(f"{self.name}: {len(self.missing)} prefixes missing, e.g. {self.missing[0]}")
        if self.ecmp_expected is not None and (self.ecmp_min or 0) < self.ecmp_expected:
            out.append(f"{self.name}: ECMP width {self.ecmp_min}, expected {self.ecmp_expected}")
        return out


class Ping(BaseModel):
    rail: int
    src: str
    src_address: str
    dst: str
    dst_address: str
    same_su: bool
    ok: bool
    rtt_ms: float | None = None


class LabStatus(BaseModel):
    fabric: str
    switches: list[SwitchStatus]
    pings: list[Ping]
    faults: list[Fault]

    @property
    def problems(self) -> list[str]:
        out = [p for s in self.switches for p in s.problems]
        out += [f"rail {p.rail}: {p.src} {p.src_address} → {p.dst} {p.dst_address} unreachable"
                for p in self.pings if not p.ok]
        return out

    @property
    def ok(self) -> bool:
        return not self.problems


def switch_status(st: LabState, sw: SwitchIntent, fabric: FabricIntent) -> SwitchStatus:
    """Sessions, prefixes and ECMP width of one switch, read from its FRR instance."""
    peers = {n.port: n.peer for n in sw.bgp.neighbors}
    ifnames = st.nodes[sw.name].ifnames
    by_if = {ifnames.get(p, p): p for p in peers}
    status = SwitchStatus(name=sw.name, role=sw.role, sessions=[])
    try:
        out = st.vtysh(sw.name, "show bgp ipv4 unicast summary json", "show ip route json")
        docs = json_replies(out, "vtysh")
        summary, routes = docs[0], docs[1]
    except (subprocess.TimeoutExpired, ValueError, IndexError) as exc:
        status.error = f"FRR not answering ({type(exc).__name__})"
        status.sessions = [Session(neighbor=p, peer=peer, state="Unknown") for p, peer in peers.items()]
        return status
    assert isinstance(summary, dict) and isinstance(routes, dict)
    seen = summary.get("peers", {}) if summary else {}
    for ifname, port in sorted(by_if.items()):
        info = seen.get(ifname, {})
        status.sessions.append(Session(neighbor=port, peer=peers[port], state=info.get("state", "Idle"),
                                       prefixes_received=info.get("pfxRcd")))
    want = expectation(sw, fabric)
    status.ecmp_expected = want.ecmp
    width = route_widths(routes)
    status.missing = sorted(p for p in want.learned if p not in width)
    widths = [width.get(p, 0) for p in want.leaf_prefixes]
    status.remote_prefixes = len(want.leaf_prefixes)
    status.ecmp_min = min(widths) if widths else None
    return status


def switches_status(st: LabState, fabric: FabricIntent) -> list[SwitchStatus]:
    with ThreadPoolExecutor(max_workers=VTY_WORKERS) as pool:
        return list(pool.map(lambda sw: switch_status(st, sw, fabric), fabric.switches.values()))


# fping (Debian's fping): one process per source address probes every target of its rail at once. A target is
# unreachable only after its first probe and 3 retries went unanswered over about 4 s (500 ms, then ×1.5 each), and a
# late reply to an earlier probe still counts: a busy machine delays answers, it does not lose them.
FPING = ["fping", "-e", "-r", "3", "-t", "500", "-B", "1.5", "-i", "1"]
_FPING_LINE = re.compile(r"^(\S+) is (alive|unreachable)(?: \(([\d.]+) ms\))?", re.MULTILINE)


def probe(st: LabState, node: str, src: str, targets: list[str]) -> dict[str, float | None]:
    """`fping -S src TARGETS…` in the node's namespace: {target: rtt in ms} for those that answered (their rtt
    None where fping gave none); a target missing from the result did not answer."""
    try:
        out = st.run(node, [*FPING, "-S", src, *targets], timeout=60).stdout
    except subprocess.TimeoutExpired as exc:  # what it printed before: those answered
        out = exc.stdout.decode(errors="replace") if isinstance(exc.stdout, bytes) else (exc.stdout or "")
    return {m[1]: float(m[3]) if m[3] else None for m in _FPING_LINE.finditer(out) if m[2] == "alive"}


def reachability(st: LabState, fabric: FabricIntent) -> list[Ping]:
    """Every ordered pair of hosts on every rail, within and across scalable units: one prober per host and rail
    (its rail address to every other host's address on that rail)."""
    on_rail: dict[int, list[tuple[HostIntent, str]]] = {}
    for h in fabric.hosts.values():
        for r in h.rails:
            on_rail.setdefault(r.rail, []).append((h, str(IPv4Interface(r.address).ip)))
    jobs = [(rail, a, src, [(b, dst) for b, dst in members if b.name != a.name])
            for rail, members in on_rail.items() for a, src in members]

    def one(job: tuple[int, HostIntent, str, list[tuple[HostIntent, str]]]) -> list[Ping]:
        rail, a, src, targets = job
        answered = probe(st, a.name, src, [dst for _, dst in targets]) if targets else {}
        return [Ping(rail=rail, src=a.name, src_address=src, dst=b.name, dst_address=dst, same_su=a.su == b.su,
                     ok=dst in answered, rtt_ms=answered.get(dst)) for b, dst in targets]

    with ThreadPoolExecutor(max_workers=PROBE_WORKERS) as pool:
        return sorted((p for ps in pool.map(one, jobs) for p in ps), key=lambda p: (p.rail, p.src, p.dst))


def lab_status(st: LabState, fabric: FabricIntent, *, pings: bool = True) -> LabStatus:
    return LabStatus(fabric=st.fabric, switches=switches_status(st, fabric),
                     pings=reachability(st, fabric) if pings else [], faults=st.faults)


def wait_converged(st: LabState, fabric: FabricIntent, *, timeout: float) -> list[SwitchStatus]:
    """Poll until every session is Established, every prefix is installed and ECMP is full width."""
    deadline = time.monotonic() + timeout
    while True:
        sws = switches_status(st, fabric)
        problems = [p for s in sws for p in s.problems]
        if not problems:
            return sws
        if time.monotonic() >= deadline:
            more = f" (+{len(problems) - 1} more)" if len(problems) > 1 else ""
            raise StepError("bgp convergence", f"not converged after {timeout:.0f}s: {problems[0]}{more}")
        time.sleep(1.0)


def lldp_silent(st: LabState) -> list[str]:
    """The cable ports (`node:port`) on which the node's lldpd sees no neighbour yet (`lldpctl -f json`)."""
    def one(node: str) -> list[str]:
        n = st.nodes[node]
        done = st.run(node, ["lldpctl", "-f", "json"])
        try:
            seen = {x.port for x in parse_lldpctl(done.stdout, f"{node}: lldpctl -f json").neighbors}
        except InputError:
            seen = set()
        return [f"{node}:{port}" for port, ifname in n.ifnames.items() if ifname not in seen]

    with ThreadPoolExecutor(max_workers=VTY_WORKERS) as pool:
        return [p for ps in pool.map(one, list(st.nodes)) for p in ps]


def wait_lldp(st: LabState, *, timeout: float) -> None:
    """Poll until every cable port has an LLDP neighbour (lldpd sends every second: a second or two after it
    started), so that `lab up` hands over a lab whose cabling reads whole."""
    deadline = time.monotonic() + timeout
    while silent := lldp_silent(st):
        if time.monotonic() >= deadline:
            more = f" (+{len(silent) - 1} more)" if len(silent) > 1 else ""
            raise StepError("lldp", f"no LLDP neighbour after {timeout:.0f}s on {silent[0]}{more}")
        time.sleep(0.5)
