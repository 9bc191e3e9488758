"""frr.conf → DeviceConfig (BGP ASN, interface neighbors, graceful shutdown)."""

from __future__ import annotations

import re
from pathlib import Path

from fabric.lint.configs.model import BgpNeighborConfig, DeviceConfig

_NEIGH = re.compile(r"^\s*neighbor\s+(\S+)\s+(interface\b.*|remote-as\s+(\S+).*)$")


def parse(path: Path, name: str, text: str) -> DeviceConfig:
    dev = DeviceConfig(name=name, file=str(path), kind="frr")
    groups: set[str] = set()
    neigh: dict[str, BgpNeighborConfig] = {}
    in_bgp = False
    gshut = False
    for n, raw in enumerate(text.splitlines(), 1):
        line = raw.split("!")[0].rstrip() if not raw.lstrip().startswith("!") else ""
        if not line:
            continue
        if "graceful-shutdown" in line or "65535:0" in line:
            gshut = True
        if m := re.match(r"^router bgp (\d+)(\s|$)", line):
            in_bgp, dev.asn = True, int(m.group(1))
            dev.lines["bgp"] = n
            continue
        if not line.startswith((" ", "\t")) and line not in ("exit",):
            in_bgp = False if not line.startswith("router bgp") else in_bgp
        if not in_bgp:
            continue
        if m := re.match(r"^\s*neighbor\s+(\S+)\s+peer-group\s*$", line):
            groups.add(m.group(1))
            continue
        if m := _NEIGH.match(line):
            peer = m.group(1)
            if peer in groups:
                continue
            nb = neigh.setdefault(peer, BgpNeighborConfig(peer=peer, remote_as="", interface=False, line=n))
            rest = m.group(2)
            if rest.startswith("interface"):
                nb.interface = True
                ras = re.search(r"remote-as\s+(\S+)", rest)
                if ras:
                    nb.remote_as = ras.group(1)
            else:
                nb.remote_as = m.group(3)
    dev.neighbors = list(neigh.values())
    if dev.asn is not None:
        dev.graceful_shutdown = gshut
        dev.lines["graceful_shutdown"] = dev.lines["bgp"]
    return dev
