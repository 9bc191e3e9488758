"""Pluggable modules (transceivers): one model for a module's identity, its diagnostics per lane and its
own alarm/warning thresholds, whatever read it — `ethtool -m` on a host (parsed here) or a switch NOS
(each push driver's `transceivers()`).

`ethtool -m` prints `Name : value` lines (ethtool qsfp.c for SFF-8636 QSFP/QSFP28, cmis.c for CMIS
QSFP-DD/OSFP, sff-common.c for the shared diagnostics): `Module temperature : 42.17 degrees C / …`,
`Module voltage : 3.2917 V`, per lane `Laser tx bias current (Channel 1) : 6.662 mA`, `Transmit avg optical
power (Channel 1) : 0.7119 mW / -1.48 dBm`, `Rcvr signal avg optical power(Channel 1) : …` (SFF-8636 has no
space before the parenthesis, CMIS has one), and the thresholds `Laser rx power low alarm threshold : 0.0446
mW / -13.51 dBm`. A threshold of 0 mW (`-inf dBm`) means the module does not implement it.
"""

from __future__ import annotations

import math
import re

from fabric.parsers._common import Model, fail, require_text
from fabric.replies import reader

METRICS = ("temperature", "voltage", "bias", "tx_power", "rx_power")
UNITS = {"temperature": "°C", "voltage": "V", "bias": "mA", "tx_power": "dBm", "rx_power": "dBm"}
# Every pattern matches in linear time (no two quantifiers over the same characters); a reply is at most
# MAX_REPLY bytes and a line at most MAX_LINE characters (ethtool's own lines are under 100).
MAX_REPLY, MAX_LINE = 1 << 20, 512
_LANE = re.compile(r"\((?:Channel|Chan|Lane) ?(\d+)\)")
_NUM = re.compile(r"(-?(?:\d+(?:\.\d*)?|inf)) ?(mW|dBm|mA|V|degrees C)")
_THRESHOLD = re.compile(r"^(?P<what>.+?) (?P<level>high alarm|low alarm|high warning|low warning) threshold$")
_THRESHOLD_NAMES = {"Laser bias current": "bias", "Laser output power": "tx_power", "Module temperature": "temperature",
                    "Module voltage": "voltage", "Laser rx power": "rx_power"}


class Lane(Model):
    lane: int
    bias: float | None = None  # mA
    tx_power: float | None = None  # dBm; None: no light (0 mW) or not reported
    rx_power: float | None = None

    @property
    def dark(self) -> bool:
        """Nothing lit on this lane: a lane the module or the port speed does not use."""
        return not self.bias and self.tx_power is None and self.rx_power is None


class Levels(Model):
    high_alarm: float | None = None
    low_alarm: float | None = None
    high_warning: float | None = None
    low_warning: float | None = None


class Module(Model):
    """One module as read: identity, module-level and per-lane values, the module's own thresholds."""

    identifier: str = ""
    vendor: str = ""
    part: str = ""
    serial: str = ""
    revision: str = ""
    firmware: str = ""
    temperature: float | None = None  # °C
    voltage: float | None = None  # V
    lanes: list[Lane] = []
    thresholds: dict[str, Levels] = {}  # metric (METRICS) → levels
    flags_on: list[str] = []  # alarm/warning flags the module raises itself ("Module temperature high warning")


def _value(text: str) -> float | None:
    """`0.7119 mW / -1.48 dBm` → -1.48; `0.0000 mW / -inf dBm` → None (no light); `6.662 mA` → 6.662."""
    found = {unit: value for value, unit in _NUM.findall(text)}
    if "dBm" in found:
        return None if "inf" in found["dBm"] else float(found["dBm"])
    if "mW" in found:
        mw = float(found["mW"])
        return 10 * math.log10(mw) if mw > 0 else None
    return next((float(found[unit]) for unit in ("mA", "V", "degrees C") if unit in found), None)


@reader('ethtool -m <port>')
def parse_ethtool_module(text: str, file: str = "-") -> Module:
    """Parse `ethtool -m IF` (ethtool's text dump); a module without diagnostics has no lanes."""
    if len(text) > MAX_REPLY:
        raise fail(file, None, "", f"ethtool -m output of at most {MAX_REPLY >> 10} KiB", f"{len(text) >> 10} KiB")
    lines = require_text(text, file, "ethtool -m output")
    mod = Module()
    lanes: dict[int, Lane] = {}
    identity = {"Identifier": "identifier", "Vendor name": "vendor", "Vendor PN": "part", "Vendor SN": "serial",
                "Vendor rev": "revision", "Active firmware version": "firmware"}
    for raw in lines:
        head, colon, tail = raw.partition(":")  # `Name : value` (the value may hold colons, the name none)
        key, value = head.strip(), tail.strip()
        if not colon or not key or len(raw) > MAX_LINE or key.startswith("#"):
            continue
        if key in identity:
            setattr(mod, identity[key], value)
            continue
        if value in ("On", "Off") and re.search(r"(alarm|warning)", key):
            if value == "On":
                mod.flags_on.append(re.sub(r"\s+", " ", key))
            continue
        if t := _THRESHOLD.match(key):
            metric = _THRESHOLD_NAMES.get(t["what"])
            number = _value(value)
            if metric is not None:
                levels = mod.thresholds.setdefault(metric, Levels())
                setattr(levels, t["level"].replace(" ", "_"), number)
            continue
        lane_m = _LANE.search(key)
        number = _value(value)
        if key == "Module temperature":
            mod.temperature = number
        elif key == "Module voltage":
            mod.voltage = number
        elif lane_m:
            lane = lanes.setdefault(int(lane_m.group(1)), Lane(lane=int(lane_m.group(1))))
            base = key[:lane_m.start()].strip()
            if base.startswith("Laser tx bias current"):
                lane.bias = number
            elif base.startswith("Transmit avg optical power"):
                lane.tx_power = number
            elif base.startswith(("Rcvr signal avg optical power", "Receiver signal average optical power")):
                lane.rx_power = number
    if not mod.identifier:
        raise fail(file, None, "Identifier", "an 'Identifier : 0x…' line (ethtool -m of a module)", "none")
    mod.lanes = [lanes[k] for k in sorted(lanes)]
    return mod
