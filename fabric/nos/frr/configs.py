"""frr.conf → DeviceConfig (BGP ASN, interface neighbors, graceful shutdown)."""

from __future__ import annotations

import re
from pathlib import Path

from fabric.lint.configs.gshut import GSHUT_VALUES, GshutConfig
from fabric.lint.configs.model import BgpNeighborConfig, DeviceConfig
from fabric.nos import row_of

_NEIGH = re.compile(r"^\s*neighbor\s+(\S+)\s+(interface\b.*|remote-as\s+(\S+).*)$")
_CLIST = re.compile(r"^bgp community-list (?:standard )?(\S+) (?:seq \d+ )?permit (.+)$")
_RMAP = re.compile(r"^route-map (\S+) (permit|deny) \d+")


def _bgp_line(line: str, n: int, groups: set[str], neigh: dict[str, BgpNeighborConfig], gs: GshutConfig) -> None:
    """A line inside `router bgp`: a peer group, a neighbour's inbound route map, send-community, a neighbour."""
    if m := re.match(r"^\s*neighbor\s+(\S+)\s+peer-group\s*$", line):
        groups.add(m.group(1))
    elif m := re.match(r"^\s*neighbor\s+(\S+)\s+route-map\s+(\S+)\s+in\s*$", line):
        gs.inbound[m.group(1)] = m.group(2)
    elif m := re.match(r"^\s*(no\s+)?neighbor\s+(\S+)\s+send-community\b", line):
        (gs.no_send if m.group(1) else gs.sends).add(m.group(2))
    elif (m := _NEIGH.match(line)) and m.group(1) not in groups:
        _neighbor(m, n, neigh, gs)


def _neighbor(m: re.Match[str], n: int, neigh: dict[str, BgpNeighborConfig], gs: GshutConfig) -> None:
    """`neighbor X interface [peer-group G] [remote-as A]` or `neighbor X remote-as A`."""
    peer, rest = m.group(1), m.group(2)
    nb = neigh.setdefault(peer, BgpNeighborConfig(peer=peer, remote_as="", interface=False, line=n))
    if not rest.startswith("interface"):
        nb.remote_as = m.group(3)
        return
    nb.interface = True
    if grp := re.search(r"peer-group\s+(\S+)", rest):
        gs.groups[peer] = grp.group(1)
    if ras := re.search(r"remote-as\s+(\S+)", rest):
        nb.remote_as = ras.group(1)


def parse(path: Path, name: str, text: str) -> DeviceConfig:
    dev = DeviceConfig(name=name, file=str(path), kind=row_of(__name__).name)
    groups: set[str] = set()
    neigh: dict[str, BgpNeighborConfig] = {}
    gs = GshutConfig()
    in_bgp = False
    rmap: list[tuple[set[str], int | None]] | None = None
    entry: tuple[set[str], list[int | None]] | None = None

    def close_entry() -> None:
        nonlocal entry
        if entry is not None and rmap is not None:
            rmap.append((entry[0], entry[1][0]))
        entry = None

    for n, raw in enumerate(text.splitlines(), 1):
        line = raw.split("!")[0].rstrip() if not raw.lstrip().startswith("!") else ""
        if not line:
            continue
        top = not line.startswith((" ", "\t"))
        if top:
            close_entry()
            rmap = None
        if m := _CLIST.match(line):
            if GSHUT_VALUES & {w.lower() for w in m.group(2).split()}:
                gs.lists.add(m.group(1))
            continue
        if m := _RMAP.match(line):
            rmap, entry = gs.entry(m.group(1)), (set(), [None])
            if m.group(2) == "deny":
                entry = None
            continue
        if entry is not None:
            if mm := re.match(r"^\s*match community (\S+)", line):
                entry[0].add(mm.group(1))
            elif mm := re.match(r"^\s*set local-preference (\d+)", line):
                entry[1][0] = int(mm.group(1))
            continue
        if m := re.match(r"^router bgp (\d+)(\s|$)", line):
            in_bgp, dev.asn = True, int(m.group(1))
            dev.lines["bgp"] = n
            continue
        if top and line not in ("exit",):
            in_bgp = False if not line.startswith("router bgp") else in_bgp
        if in_bgp:
            _bgp_line(line, n, groups, neigh, gs)
    close_entry()
    dev.neighbors = list(neigh.values())
    if dev.asn is not None:
        # FRR sends communities unless told not to (bgp.rst: send-community, "Default: enabled")
        dev.graceful_shutdown, dev.graceful_shutdown_missing = gs.verdict([nb.peer for nb in dev.neighbors], True)
        dev.lines["graceful_shutdown"] = dev.lines["bgp"]
    return dev
