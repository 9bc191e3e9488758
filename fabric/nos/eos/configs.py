"""Arista EOS CLI → DeviceConfig (qos maps, PFC, watchdog, tx-queue ETS/ECN, MTU, VLANs, BGP, graceful shutdown,
ARP aging)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from fabric.lint.configs.gshut import GSHUT_VALUES, GshutConfig
from fabric.lint.configs.model import BgpNeighborConfig, DeviceConfig, PortConfig
from fabric.lint.view import Ecn, QosView
from fabric.nos import row_of

_UNITS = {"bytes": 1, "kbytes": 1000, "mbytes": 1_000_000, "segments": 208}
_ECN = re.compile(
    r"random-detect ecn minimum-threshold (\d+) (\w+) maximum-threshold (\d+) (\w+)"
    r"(?: max-mark-probability (\d+))?"
)


def _vlans(spec: str) -> list[int]:
    """`1001,1003-1004` → [1001, 1003, 1004]."""
    out: list[int] = []
    for part in spec.split(","):
        lo, _, hi = part.partition("-")
        out += range(int(lo), int(hi or lo) + 1)
    return out


def parse(path: Path, name: str, text: str) -> DeviceConfig:
    r = _Reader(DeviceConfig(name=name, file=str(path), kind=row_of(__name__).name))
    for n, raw in enumerate(text.splitlines(), 1):
        if raw.strip() and not raw.lstrip().startswith("!"):
            r.read(raw, n)
    return r.result(name)


@dataclass
class _Reader:
    """The device read so far, and where the reader is: the enclosing block headers, the interface, its
    tx-queue, and the route map whose permit entry is open."""

    dev: DeviceConfig
    dscp: dict[int, int] = field(default_factory=dict)
    strict: set[int] = field(default_factory=set)
    dwrr: dict[int, int] = field(default_factory=dict)
    ecn: dict[int, Ecn] = field(default_factory=dict)
    lossless: set[int] = field(default_factory=set)
    block: list[str] = field(default_factory=list)
    iface: PortConfig | None = None
    txq: int | None = None
    wd_global: bool = False
    gs: GshutConfig = field(default_factory=GshutConfig)
    rmap: str | None = None

    def read(self, raw: str, n: int) -> None:
        depth = (len(raw) - len(raw.lstrip(" "))) // 3
        line = raw.strip()
        del self.block[depth:]
        self.block.append(line)
        top = self.block[0]
        if depth == 0:
            self.iface, self.txq, self.rmap = None, None, None
            self._top(line, n)
        elif self.rmap is not None:
            self._route_map(line)
        elif top.startswith("interface Ethernet") and self.iface is not None:
            self._interface(self.iface, line, n, depth)
        elif top.startswith("router bgp"):
            self._bgp(line, n)

    def _top(self, line: str, n: int) -> None:
        """A line at the top level: community lists, route maps, the DSCP map, ARP aging, BGP, an interface, the
        global watchdog."""
        dev, gs = self.dev, self.gs
        if m := re.match(r"ip community-list (?:standard )?(\S+) permit (.+)", line):
            if GSHUT_VALUES & {w.lower() for w in m.group(2).split()}:
                gs.lists.add(m.group(1))
        elif m := re.match(r"route-map (\S+) (permit|deny)", line):
            if m.group(2) == "permit":
                self.rmap = m.group(1)
                gs.entry(self.rmap).append((set(), None))
        elif m := re.match(r"qos map dscp ([\d ]+) to traffic-class (\d)", line):
            for d in m.group(1).split():
                self.dscp[int(d)] = int(m.group(2))
            dev.lines.setdefault("dscp_map", n)
        elif m := re.match(r"arp aging timeout default (\d+)", line):
            dev.arp_aging, dev.lines["arp_aging"] = int(m.group(1)), n
        elif m := re.match(r"router bgp (\d+)", line):
            dev.asn, dev.lines["bgp"] = int(m.group(1)), n
            dev.graceful_shutdown = None
        elif m := re.match(r"interface (Ethernet\S+)", line):
            self.iface = dev.ports.setdefault(m.group(1), PortConfig(name=m.group(1), line=n))
        elif line.startswith("priority-flow-control pause watchdog") and "port" not in line:
            self.wd_global = self.wd_global or line == "priority-flow-control pause watchdog"

    def _route_map(self, line: str) -> None:
        assert self.rmap is not None
        lists = self.gs.entry(self.rmap)[-1][0]
        if m := re.match(r"match community (\S+)", line):
            lists.add(m.group(1))
        elif m := re.match(r"set local-preference (\d+)", line):
            self.gs.entry(self.rmap)[-1] = (lists, int(m.group(1)))

    def _interface(self, iface: PortConfig, line: str, n: int, depth: int) -> None:
        if m := re.match(r"switchport access vlan (\d+)", line):
            iface.access_vlan = int(m.group(1))
        elif m := re.match(r"switchport trunk allowed vlan ([\d,-]+)", line):
            iface.tagged_vlans = _vlans(m.group(1))
        elif m := re.match(r"mtu (\d+)", line):
            iface.mtu = int(m.group(1))
        elif m := re.match(r"speed (?:forced )?(\d+)g", line):
            iface.speed = int(m.group(1))
        elif m := re.match(r"priority-flow-control priority (\d) no-drop", line):
            iface.pfc = sorted({*(iface.pfc or []), int(m.group(1))})
            self.lossless.add(int(m.group(1)))
            self.dev.lines.setdefault("pfc", n)
        elif line.startswith("priority-flow-control pause watchdog"):
            iface.watchdog = True
        elif m := re.match(r"tx-queue (\d)", line):
            self.txq = int(m.group(1))
        elif self.txq is not None and depth >= 2:
            self._tx_queue(self.txq, line, n)

    def _tx_queue(self, txq: int, line: str, n: int) -> None:
        """Inside `tx-queue N`: strict priority, a bandwidth share, ECN marking."""
        if line == "priority strict":
            self.strict.add(txq)
            self.dev.lines.setdefault(f"ets.{txq}", n)
        elif m := re.match(r"bandwidth (?:guaranteed )?percent (\d+)", line):
            self.dwrr.setdefault(txq, int(m.group(1)))
            self.dev.lines.setdefault(f"ets.{txq}", n)
        elif m := _ECN.match(line):
            self.ecn.setdefault(txq, Ecn(True, int(m.group(1)) * _UNITS.get(m.group(2), 1),
                                         int(m.group(3)) * _UNITS.get(m.group(4), 1), int(m.group(5) or 100)))
            self.dev.lines.setdefault(f"ecn.{txq}", n)

    def _bgp(self, line: str, n: int) -> None:
        gs = self.gs
        if m := re.match(r"neighbor (\S+) route-map (\S+) in$", line):
            gs.inbound[m.group(1)] = m.group(2)
        elif m := re.match(r"(no )?neighbor (\S+) send-community\b", line):
            (gs.no_send if m.group(1) else gs.sends).add(m.group(2))
        elif m := re.match(r"neighbor interface (\S+) .*?(?:remote-as (\d+))?$", line):
            self.dev.neighbors.append(BgpNeighborConfig(peer=m.group(1), remote_as=m.group(2) or "", interface=True,
                                                        line=n))
            if grp := re.search(r"peer-group (\S+)", line):
                gs.groups[m.group(1)] = grp.group(1)
        elif m := re.match(r"neighbor (\d+\.\d+\.\d+\.\d+) remote-as (\d+)", line):
            self.dev.neighbors.append(BgpNeighborConfig(peer=m.group(1), remote_as=m.group(2), interface=False,
                                                        line=n))

    def result(self, name: str) -> DeviceConfig:
        dev = self.dev
        if self.wd_global:
            for p in dev.ports.values():
                p.watchdog = True
        if dev.asn is not None:
            # EOS sends no communities to a neighbour without `send-community`
            dev.graceful_shutdown, dev.graceful_shutdown_missing = self.gs.verdict(
                [nb.peer for nb in dev.neighbors], False)
            dev.lines["graceful_shutdown"] = dev.lines["bgp"]
        if self.dscp or self.lossless:
            dev.qos = QosView(name=name, dscp_to_priority=self.dscp or None, default_priority=0, priority_to_tc={},
                              lossless=sorted(self.lossless), strict_tcs=sorted(self.strict), dwrr=self.dwrr,
                              ecn=self.ecn, at=dev.at)
        return dev
