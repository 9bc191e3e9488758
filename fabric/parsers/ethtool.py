"""`ethtool -S IF` NIC statistics."""

from __future__ import annotations

import re

from fabric.parsers._common import CUT, Model, Skipped, fail, require_text, show, unterminated
from fabric.replies import reader

_VALUE = re.compile(r"[0-9]{1,20}")  # ASCII digits, a 64-bit counter at most (int() of more is unbounded work)


def _counter(line: str) -> tuple[str, str] | None:
    """`     name: 123` → (name, "123"): split at the last colon (linear, no backtracking)."""
    name, colon, value = line.strip().rpartition(":")
    value = value.strip()
    if not colon or not name.strip() or not _VALUE.fullmatch(value) or int(value) >= 1 << 64:
        return None
    return name.strip(), value


class EthtoolStats(Model):
    """Counters by name, in the driver's order (e.g. mlx5 `rx_prio3_pause`, `rx_discards_phy`)."""

    counters: dict[str, int]
    skipped: list[Skipped] = []


def ethtool_delta(before: EthtoolStats, after: EthtoolStats) -> dict[str, int]:
    """after - before for every counter present in both (negative means a reset or a wrap)."""
    return {
        name: value - before.counters[name]
        for name, value in after.counters.items()
        if name in before.counters
    }


@reader('ethtool -S <netdev>')
def parse_ethtool_stats(text: str, file: str = "-") -> EthtoolStats:
    """Parse `ethtool -S`: lines before 'NIC statistics:' are ignored, the block ends at the first
    unindented line; an indented line that is not `name: integer` is skipped and reported."""
    lines = require_text(text, file, "ethtool -S output")
    start = next((i for i, line in enumerate(lines) if line.strip() == "NIC statistics:"), None)
    if start is None:
        found = next((line for line in lines if line.strip()), "")
        raise fail(file, 1, "ethtool", "'NIC statistics:' then '     name: value' lines", show(found))
    counters: dict[str, int] = {}
    skipped: list[Skipped] = []
    for lineno, line in enumerate(lines[start + 1 :], start + 2):
        if not line.strip():
            continue
        if not line[0].isspace():
            break
        m = _counter(line)
        if lineno == unterminated(text, lines):
            skipped.append(Skipped(line=lineno, text=line.strip(), reason=CUT))
        elif m is None:
            skipped.append(Skipped(line=lineno, text=line.strip(), reason="not 'name: integer'"))
        elif m[0] in counters:
            skipped.append(
                Skipped(line=lineno, text=line.strip(), reason="duplicate counter (first value kept)")
            )
        else:
            counters[m[0]] = int(m[1])
    if not counters:
        first = skipped[0] if skipped else None
        raise fail(
            file,
            first.line if first else start + 1,
            "ethtool.counters",
            "'     name: integer' lines",
            show(first.text) if first else "no counters after 'NIC statistics:'",
        )
    return EthtoolStats(counters=counters, skipped=skipped)
