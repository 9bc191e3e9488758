"""`mlnx_qos -i IF` output (mlnx-tools pretty_print), TABs or spaces."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from fabric.parsers._common import CUT, Model, fail, integer, num, require_text, show, unterminated
from fabric.replies import reader

_TC = re.compile(r"^tc:\s*(\d+)\s+ratelimit:\s*([^,]+),\s*tsa:\s*(\w+)(?:,\s*bw:\s*(\d+)\s*%)?\s*$")
_PRIO = re.compile(r"^priority:\s*(\d+)\s*$")
_DSCP = re.compile(r"^prio:\s*(\d+)\s+dscp:\s*([\d,\s]*)$")
_BUFFERS = re.compile(r"^Receive buffer size \(bytes\):\s*(.*)$")


class TcConfig(Model):
    """One traffic class: scheduler (`tsa`: ets/strict/vendor/unknown), ETS share, the priorities in it;
    `ratelimit_gbps` None means unlimited."""

    tc: int
    ratelimit_gbps: float | None = None
    tsa: str
    bw_percent: int | None = None
    priorities: list[int] = []


class MlnxQos(Model):
    """The QoS state of one interface. Lists are indexed by priority 0-7. With several mlnx_qos
    outputs in one input the last complete one is kept (`blocks` says how many were seen)."""

    dcbx_mode: str | None = None
    trust: str | None = None
    dscp2prio: dict[int, int] = {}
    buffer_sizes: list[int] | None = None
    max_buffer_size: int | None = None
    cable_len: int | None = None
    pfc_enabled: list[bool]
    pfc_buffer: list[int] | None = None
    tcs: list[TcConfig] = []
    warnings: list[str] = []
    blocks: int = 1


def _eight(line: str, label: str, file: str, lineno: int, allowed: set[int]) -> list[int]:
    """The 8 per-priority values after `label` (e.g. 'enabled     0   0   0   1 …')."""
    values = [integer(t) for t in line[len(label) :].split()]
    if len(values) != 8 or any(v is None or v not in allowed for v in values):
        raise fail(
            file,
            lineno,
            f"pfc.{label}",
            f"8 values in {sorted(allowed)[0]}..{sorted(allowed)[-1]} (priorities 0-7)",
            show(line),
        )
    return [v for v in values if v is not None]


@reader('mlnx_qos -i <netdev>')
def parse_mlnx_qos(text: str, file: str = "-") -> MlnxQos:
    """Parse `mlnx_qos -i IF` output; unrelated lines (shell traces, prompts) are ignored."""
    lines = require_text(text, file, "mlnx_qos output")
    reader = _Reader(file)
    cut = unterminated(text, lines)
    for lineno, raw in enumerate(lines, 1):
        line = raw.strip()
        if not line:
            continue
        if lineno == cut:
            reader.warnings.append(f"line {lineno} ignored: {CUT}")
            continue
        reader.read(line, raw, lineno)
    return reader.result(len(lines))


@dataclass
class _Reader:
    """The blocks read so far (one per mlnx_qos output), the one being read and the section it is in."""

    file: str
    blocks: list[dict[str, Any]] = field(default_factory=list)
    cur: dict[str, Any] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    section: str = ""

    def read(self, line: str, raw: str, lineno: int) -> None:
        """One stripped line: the first reader that knows it takes it; anything else is ignored."""
        if self._starts_block(line):
            self._next_block()
        for step in (self._header, self._dscp, self._buffers, self._pfc, self._tc):
            if step(line, raw, lineno):
                return
        if "not supported" in line or line.startswith("*"):
            self.warnings.append(line.strip("* "))

    def _starts_block(self, line: str) -> bool:
        """A new output begins at 'DCBX mode:', or at 'Priority trust state:' once this one has one or its PFC."""
        return line.startswith(("DCBX mode:", "Priority trust state:")) and (
            "pfc_enabled" in self.cur or line.startswith("DCBX") or "trust" in self.cur
        )

    def _next_block(self) -> None:
        if self.cur:
            self.blocks.append(self.cur)
        self.cur, self.section = {}, ""

    def _header(self, line: str, raw: str, lineno: int) -> bool:
        """'DCBX mode:', 'Priority trust state:', 'Cable len:' and the section titles."""
        if line.startswith("DCBX mode:"):
            self.cur["dcbx_mode"] = line.split(":", 1)[1].strip()
        elif line.startswith("Priority trust state:"):
            self.cur["trust"] = line.split(":", 1)[1].strip()
        elif line.startswith("dscp2prio mapping:"):
            self.section = "dscp"
            self.cur["dscp2prio"] = {}
        elif line.startswith("Cable len:"):
            value = integer(line.split(":", 1)[1].strip())
            if value is None:
                raise fail(self.file, lineno, "cable_len", "an integer", show(raw))
            self.cur["cable_len"] = value
        elif line.startswith("PFC configuration:"):
            self.section = "pfc"
        else:
            return False
        return True

    def _dscp(self, line: str, raw: str, lineno: int) -> bool:
        """'prio:3 dscp:24,25,26,' inside the dscp2prio section."""
        m = _DSCP.match(line)
        if m is None or self.section != "dscp":
            return False
        prio = int(m[1])
        dscps = [integer(t) for t in m[2].replace(",", " ").split()]
        if prio > 7 or not dscps or any(d is None or not 0 <= d <= 63 for d in dscps):
            raise fail(self.file, lineno, "dscp2prio", "'prio:<0-7> dscp:<0-63>,…'", show(raw))
        self.cur["dscp2prio"].update({d: prio for d in dscps if d is not None})
        return True

    def _buffers(self, line: str, raw: str, lineno: int) -> bool:
        """'Receive buffer size (bytes): 20016,156096,0,…,max_buffer_size=…'."""
        m = _BUFFERS.match(line)
        if m is None:
            return False
        items = [t.strip() for t in m[1].split(",") if t.strip()]
        sizes = [integer(t) for t in items if "=" not in t]
        total = [integer(t.split("=", 1)[1]) for t in items if "=" in t]
        if len(sizes) != 8 or None in sizes or None in total:
            raise fail(self.file, lineno, "buffer_sizes", "8 buffer sizes in bytes[,max_buffer_size=N]", show(raw))
        self.cur["buffer_sizes"] = sizes
        self.cur["max_buffer_size"] = total[0] if total else None
        return True

    def _pfc(self, line: str, raw: str, lineno: int) -> bool:
        """The 'priority', 'enabled' and 'buffer' rows of the PFC section (8 values each)."""
        if self.section != "pfc":
            return False
        if line.startswith("priority") and not _PRIO.match(line):
            _eight(line, "priority", self.file, lineno, set(range(8)))
        elif line.startswith("enabled"):
            self.cur["pfc_enabled"] = [bool(v) for v in _eight(line, "enabled", self.file, lineno, {0, 1})]
        elif line.startswith("buffer"):
            self.cur["pfc_buffer"] = _eight(line, "buffer", self.file, lineno, set(range(8)))
        else:
            return False
        return True

    def _tc(self, line: str, raw: str, lineno: int) -> bool:
        """A 'tc: N ratelimit: …, tsa: …' line and the 'priority: N' lines under it."""
        if line.startswith("tc:"):
            m = _TC.match(line)
            rate = num(m[2].strip().removesuffix("Gbps").strip()) if m else None
            if m is None or (rate is None and m[2].strip() != "unlimited"):
                raise fail(self.file, lineno, "tc",
                           "'tc: N ratelimit: unlimited|X Gbps, tsa: ets, bw: N%|strict|vendor'", show(raw))
            self.section = "tc"
            self.cur.setdefault("tcs", []).append(
                TcConfig(tc=int(m[1]), ratelimit_gbps=rate, tsa=m[3], bw_percent=integer(m[4] or "")))
            return True
        if (m := _PRIO.match(line)) and self.section == "tc":
            self.cur["tcs"][-1].priorities.append(int(m[1]))
            return True
        return False

    def result(self, count: int) -> MlnxQos:
        """The last complete output (one with its PFC 'enabled' row), the warnings of all."""
        self._next_block()
        complete = [b for b in self.blocks if "pfc_enabled" in b]
        if not complete:
            raise fail(self.file, None, "pfc",
                       "mlnx_qos output with a 'PFC configuration:' section and an 'enabled' line",
                       f"none in {count} lines")
        last = complete[-1]
        last["dscp2prio"] = dict(sorted(last.get("dscp2prio", {}).items()))
        return MlnxQos(**last, warnings=self.warnings, blocks=len(self.blocks))
