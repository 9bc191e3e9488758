"""Platform port maps: the front-panel ports SONiC builds on a platform, shipped as package data.

`fabric/data/sonic/<platform>.json` (how it was derived: SOURCE.md there) holds, per platform, the default
ports (name, SerDes lanes, alias, index, speed, FEC, sub-port, breakout mode) and every breakout mode the
tool's `NxSPEEDG` form can express with its child ports. Derivation reads it through `sonic_port_map` so
SONiC's PORT and BREAKOUT_CFG entries are facts, not renderer guesses; a platform without a file has no
port map (the SONiC renderer then cannot render it, see fabric.design.topology).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from functools import lru_cache
from importlib import resources

_MODE = re.compile(r"^(\d+)x(\d+)G(?:\[([0-9G,]*)\])?")


@dataclass(frozen=True, slots=True)
class HwPort:
    """One port as SONiC's portconfig builds it (PORT table fields)."""

    name: str  # Ethernet<first lane>
    lanes: str  # "0,1,2,3"
    alias: str  # etp1, etp1a
    index: int  # front-panel port number
    speed: int  # default speed of its breakout mode, Mb/s
    mode: str  # platform.json breakout mode of its parent, e.g. 2x400G[200G,100G,50G,40G,25G,10G]
    subport: int  # 0 when the parent is not broken out, else the position in the parent (1-based)
    fec: str | None  # "rs" where the mode's lane speed is 50G or more (portconfig.py), else the platform default

    @property
    def lane_count(self) -> int:
        """The SerDes lanes PORT gives the port: what SONiC's headroom lua reads (buffer_headroom_mellanox.lua)."""
        return self.lanes.count(",") + 1


def mode_speeds(mode: str) -> tuple[int, int, tuple[int, ...]]:
    """`2x400G[200G,100G]` → (2, 400, (400, 200, 100)): ways, default speed and every speed the mode runs (Gb/s)."""
    m = _MODE.match(mode)
    if m is None:
        raise ValueError(f"unknown breakout mode {mode!r}")
    ways, default = int(m.group(1)), int(m.group(2))
    alternatives = tuple(int(s.rstrip("G")) for s in (m.group(3) or "").split(",") if s)
    return ways, default, (default, *alternatives)


@dataclass
class PortMap:
    platform: str  # SONiC platform string (DEVICE_METADATA platform)
    hwsku: str
    ports: dict[str, HwPort]  # the default (first-boot) ports
    breakout: dict[str, dict[str, HwPort]]  # "2x400G" → child ports of every parent that has the mode
    parent_of: dict[str, str] = field(default_factory=dict)  # SerDes lane → the default port holding it

    def __post_init__(self) -> None:
        self.parent_of = {lane: name for name, p in self.ports.items() for lane in p.lanes.split(",")}

    def modes(self, ways: int) -> list[str]:
        """The breakout modes with `ways` ports per parent, as `NxSPEEDG` (1-way: the parents' own modes)."""
        if ways == 1:
            return sorted({f"1x{mode_speeds(p.mode)[1]}G" for p in self.ports.values()})
        return sorted(k for k in self.breakout if mode_speeds(k)[0] == ways)

    def layout(self, ways: int, speed: int) -> dict[str, HwPort] | None:
        """The ports of the platform broken out `ways` per parent at `speed` Gb/s, or None when no mode of the
        platform runs that (2x200G on an SN5600 is mode 2x400G[200G,…] at speed 200000)."""
        if ways == 1:
            return self.ports
        for key, children in self.breakout.items():
            first = next(iter(children.values()))
            w, _default, speeds = mode_speeds(first.mode)
            if w == ways and speed in speeds and mode_speeds(key)[0] == ways:
                return children
        return None

    def parent(self, port: HwPort) -> str:
        """The parent port (BREAKOUT_CFG key) whose lanes include `port`'s first lane."""
        return self.parent_of[port.lanes.split(",")[0]]


def _port(name: str, e: dict[str, str]) -> HwPort:
    return HwPort(name=name, lanes=e["lanes"], alias=e["alias"], index=int(e["index"]), speed=int(e["speed"]),
                  mode=e["mode"], subport=int(e["subport"]), fec=e.get("fec"))


@lru_cache(maxsize=16)
def sonic_port_map(platform: str) -> PortMap | None:
    """The SONiC port map of a platform of fabric.model.platforms, or None when the tool ships none."""
    ref = resources.files("fabric") / "data" / "sonic" / f"{platform}.json"
    if not ref.is_file():
        return None
    data = json.loads(ref.read_text())
    return PortMap(platform=data["platform"], hwsku=data["hwsku"],
                   ports={n: _port(n, e) for n, e in data["ports"].items()},
                   breakout={k: {n: _port(n, e) for n, e in ch.items()} for k, ch in data["breakout"].items()})
