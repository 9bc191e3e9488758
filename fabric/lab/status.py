"""Observe the lab: BGP sessions and ECMP width from each FRR instance, rail reachability by real pings."""

from __future__ import annotations

import re
import subprocess
import time
from concurrent.futures import ThreadPoolExecutor
from ipaddress import IPv4Interface
from itertools import permutations

from pydantic import BaseModel

from fabric.design.bgp import expectation
from fabric.design.intent import FabricIntent, SwitchIntent
from fabric.lab.sh import StepError
from fabric.lab.state import Fault, LabState
from fabric.parsers.frr import json_docs, route_widths

PING_WORKERS = 16
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
        docs = json_docs(out)
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


_RTT = re.compile(r"= [\d.]+/([\d.]+)/")


def ping(st: LabState, node: str, src: str, dst: str, *, retries: int = 1) -> tuple[bool, float | None]:
    """`ping -I src -c 1 -W 1 dst` in the node's namespace; one retry covers a first ARP miss."""
    for _ in range(1 + retries):
        try:
            p = st.run(node, ["ping", "-n", "-q", "-I", src, "-c", "1", "-W", "1", dst], timeout=5)
        except subprocess.TimeoutExpired:
            continue
        if p.returncode == 0:
            m = _RTT.search(p.stdout)
            return True, float(m.group(1)) if m else None
    return False, None


def reachability(st: LabState, fabric: FabricIntent) -> list[Ping]:
    """Every ordered pair of hosts on every rail, within and across scalable units."""
    jobs = []
    for a, b in permutations(fabric.hosts.values(), 2):
        b_rails = {r.rail: r for r in b.rails}
        for ra in a.rails:
            if ra.rail in b_rails:
                jobs.append((ra.rail, a, b, str(IPv4Interface(ra.address).ip),
                             str(IPv4Interface(b_rails[ra.rail].address).ip)))

    def one(job: tuple) -> Ping:
        rail, a, b, src, dst = job
        ok, rtt = ping(st, a.name, src, dst)
        return Ping(rail=rail, src=a.name, src_address=src, dst=b.name, dst_address=dst,
                    same_su=a.su == b.su, ok=ok, rtt_ms=rtt)

    with ThreadPoolExecutor(max_workers=PING_WORKERS) as pool:
        return sorted(pool.map(one, jobs), key=lambda p: (p.rail, p.src, p.dst))


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
