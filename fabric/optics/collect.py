"""Reading the modules of a site: every host's rail NICs (`ethtool -m`, one SSH round trip per host) and
every switch's ports (the switch's push driver), in parallel; each row placed in the fabric (host, rail
NIC, leaf port, cable — or switch port and its peer)."""

from __future__ import annotations

import fnmatch
import shlex
import subprocess
from concurrent.futures import ThreadPoolExecutor
from typing import Literal

from pydantic import BaseModel

from fabric.access import Site
from fabric.optics.judge import Expectations, Issue, judge, mismatches
from fabric.parsers.transceiver import Module
from fabric.targets.transceivers import PORT_MARK, split_ethtool_dump

Status = Literal["alarm", "mismatch", "warning", "near", "ok", "no module", "not read", "error"]


class OpticsRow(BaseModel):
    side: Literal["host", "switch"]
    device: str  # host or switch
    port: str  # netdev or switch port
    nic: str | None = None  # RDMA device (host side)
    rail: int | None = None
    peer: str = ""  # the other end of the cable: leaf:port, or host:netdev / switch:port
    cable_m: int | None = None
    link: Literal["host", "fabric"] = "host"
    module: Module | None = None
    reason: str = ""  # why there is no module (or why it was not read)
    issues: list[Issue] = []
    mismatch: list[str] = []

    @property
    def status(self) -> Status:
        if self.module is None:
            return "error" if self.reason.startswith("error") else (
                "not read" if self.reason.startswith("not read") else "no module")
        levels = {i.level for i in self.issues}
        if "alarm" in levels:
            return "alarm"
        if self.mismatch:
            return "mismatch"
        return "warning" if "warning" in levels else "near" if "near" in levels else "ok"

    @property
    def where(self) -> str:
        if self.side == "host":
            return f"{self.device} rail {self.rail} {self.nic}/{self.port}"
        return f"{self.device}:{self.port}"


def host_rows(site: Site, host: str) -> list[OpticsRow]:
    h = site.fabric.hosts[host]
    script = "; ".join(f"echo {shlex.quote(PORT_MARK + r.netdev)}; ethtool -m {shlex.quote(r.netdev)} 2>&1; "
                       "echo \"rc=$?\"" for r in h.rails)
    try:
        p = subprocess.run(site.host_argv(host, ["sh", "-c", script]), capture_output=True, text=True, timeout=60)
        readings = split_ethtool_dump(p.stdout) if PORT_MARK in p.stdout else {}
        error = "" if readings else f"error: {(p.stderr.strip().splitlines() or [f'exit {p.returncode}'])[-1]}"
    except (OSError, subprocess.TimeoutExpired) as exc:
        readings, error = {}, f"error: {exc}"
    rows = []
    for r in h.rails:
        reading = readings.get(r.netdev, error or "error: no answer for this port")
        rows.append(OpticsRow(side="host", device=host, port=r.netdev, nic=r.rdma, rail=r.rail,
                              peer=f"{r.leaf}:{r.leaf_port}", cable_m=r.cable_m, link="host",
                              module=reading if isinstance(reading, Module) else None,
                              reason="" if isinstance(reading, Module) else str(reading)))
    return rows


def switch_rows(site: Site, switch: str) -> list[OpticsRow]:
    from fabric.targets.session import session

    sw = site.fabric.switches[switch]
    ports = [p.name for p in sw.ports]
    try:
        with session(site.switch(switch), site.switch_credentials()) as drv:
            readings = drv.transceivers(ports)
    except Exception as exc:  # a switch we cannot reach is a row per port, never a traceback
        readings = dict.fromkeys(ports, f"error: {str(exc).splitlines()[0] if str(exc) else type(exc).__name__}")
    if readings is None:
        readings = dict.fromkeys(ports, f"not read: the {sw.target} driver has no transceiver reader")
    rows = []
    for p in sw.ports:
        reading = readings.get(p.name, "no module (not reported)")
        rows.append(OpticsRow(side="switch", device=switch, port=p.name, peer=f"{p.peer}:{p.peer_port}",
                              cable_m=p.cable_m, link=p.kind,
                              module=reading if isinstance(reading, Module) else None,
                              reason="" if isinstance(reading, Module) else str(reading)))
    return rows


def read(site: Site, *, hosts: bool = True, switches: bool = True, limit: list[str] | None = None,
         workers: int = 8) -> list[OpticsRow]:
    """Every host's and switch's modules (only names matching a `limit` glob, when given)."""
    def wanted(name: str) -> bool:
        return not limit or any(fnmatch.fnmatchcase(name, pat) for pat in limit)

    jobs = ([(host_rows, h) for h in sorted(site.fabric.hosts) if wanted(h)] if hosts else []) + (
        [(switch_rows, s) for s in sorted(site.fabric.switches) if wanted(s)] if switches else [])
    with ThreadPoolExecutor(max_workers=workers) as pool:
        parts = list(pool.map(lambda job: job[0](site, job[1]), jobs))
    return [row for part in parts for row in part]


def assess(rows: list[OpticsRow], expect: Expectations | None = None) -> list[OpticsRow]:
    """Rows with their threshold issues and identity mismatches filled in."""
    out = []
    for row in rows:
        if row.module is None:
            out.append(row)
            continue
        want = getattr(expect, row.link) if expect else None
        out.append(row.model_copy(update={"issues": judge(row.module), "mismatch": mismatches(row.module, want)}))
    return out
