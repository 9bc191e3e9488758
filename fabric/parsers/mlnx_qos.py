"""`mlnx_qos -i IF` output (mlnx-tools pretty_print), TABs or spaces."""

from __future__ import annotations

import re
from typing import Any

from fabric.parsers._common import CUT, Model, fail, integer, num, require_text, show, unterminated

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


def parse_mlnx_qos(text: str, file: str = "-") -> MlnxQos:
    """Parse `mlnx_qos -i IF` output; unrelated lines (shell traces, prompts) are ignored."""
    lines = require_text(text, file, "mlnx_qos output")
    blocks: list[dict[str, Any]] = []
    cur: dict[str, Any] = {}
    warnings: list[str] = []
    section = ""
    for lineno, raw in enumerate(lines, 1):
        line = raw.strip()
        if not line:
            continue
        if lineno == unterminated(text, lines):
            warnings.append(f"line {lineno} ignored: {CUT}")
            continue
        if line.startswith(("DCBX mode:", "Priority trust state:")) and (
            "pfc_enabled" in cur or line.startswith("DCBX") or "trust" in cur
        ):
            if cur:
                blocks.append(cur)
            cur, section = {}, ""
        if line.startswith("DCBX mode:"):
            cur["dcbx_mode"] = line.split(":", 1)[1].strip()
        elif line.startswith("Priority trust state:"):
            cur["trust"] = line.split(":", 1)[1].strip()
        elif line.startswith("dscp2prio mapping:"):
            section = "dscp"
            cur["dscp2prio"] = {}
        elif (m := _DSCP.match(line)) and section == "dscp":
            prio = int(m[1])
            dscps = [integer(t) for t in m[2].replace(",", " ").split()]
            if prio > 7 or not dscps or any(d is None or not 0 <= d <= 63 for d in dscps):
                raise fail(file, lineno, "dscp2prio", "'prio:<0-7> dscp:<0-63>,…'", show(raw))
            cur["dscp2prio"].update({d: prio for d in dscps if d is not None})
        elif m := _BUFFERS.match(line):
            items = [t.strip() for t in m[1].split(",") if t.strip()]
            sizes = [integer(t) for t in items if "=" not in t]
            total = [integer(t.split("=", 1)[1]) for t in items if "=" in t]
            if len(sizes) != 8 or None in sizes or None in total:
                raise fail(
                    file, lineno, "buffer_sizes", "8 buffer sizes in bytes[,max_buffer_size=N]", show(raw)
                )
            cur["buffer_sizes"] = sizes
            cur["max_buffer_size"] = total[0] if total else None
        elif line.startswith("Cable len:"):
            value = integer(line.split(":", 1)[1].strip())
            if value is None:
                raise fail(file, lineno, "cable_len", "an integer", show(raw))
            cur["cable_len"] = value
        elif line.startswith("PFC configuration:"):
            section = "pfc"
        elif section == "pfc" and line.startswith("priority") and not _PRIO.match(line):
            _eight(line, "priority", file, lineno, set(range(8)))
        elif section == "pfc" and line.startswith("enabled"):
            cur["pfc_enabled"] = [bool(v) for v in _eight(line, "enabled", file, lineno, {0, 1})]
        elif section == "pfc" and line.startswith("buffer"):
            cur["pfc_buffer"] = _eight(line, "buffer", file, lineno, set(range(8)))
        elif line.startswith("tc:"):
            m = _TC.match(line)
            rate = num(m[2].strip().removesuffix("Gbps").strip()) if m else None
            if m is None or (rate is None and m[2].strip() != "unlimited"):
                raise fail(
                    file,
                    lineno,
                    "tc",
                    "'tc: N ratelimit: unlimited|X Gbps, tsa: ets, bw: N%|strict|vendor'",
                    show(raw),
                )
            section = "tc"
            cur.setdefault("tcs", []).append(
                TcConfig(tc=int(m[1]), ratelimit_gbps=rate, tsa=m[3], bw_percent=integer(m[4] or ""))
            )
        elif (m := _PRIO.match(line)) and section == "tc":
            cur["tcs"][-1].priorities.append(int(m[1]))
        elif "not supported" in line or line.startswith("*"):
            warnings.append(line.strip("* "))
    if cur:
        blocks.append(cur)
    complete = [b for b in blocks if "pfc_enabled" in b]
    if not complete:
        raise fail(
            file,
            None,
            "pfc",
            "mlnx_qos output with a 'PFC configuration:' section and an 'enabled' line",
            f"none in {len(lines)} lines",
        )
    last = complete[-1]
    last["dscp2prio"] = dict(sorted(last.get("dscp2prio", {}).items()))
    return MlnxQos(**last, warnings=warnings, blocks=len(blocks))
