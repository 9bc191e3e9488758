"""Arista EOS: running-config text from `templates/eos/running-config.j2` (reference switch-qos.md §3).

Units: ECN thresholds are rendered in `bytes` (exact, no KB/KiB ambiguity); PFC watchdog timers are
seconds with decimals, converted from the policy's milliseconds.
"""

from __future__ import annotations

from typing import Any

from fabric.design.intent import FabricIntent, SwitchIntent
from fabric.model.qos import QosPolicy
from fabric.render import Files, template

PEER_GROUP = "FABRIC"
DSCPS_PER_LINE = 8  # conservative: keeps each `qos map dscp` line short
# Policy action → EOS watchdog action; `alert` has no EOS equivalent and leaves the EOS default.
WATCHDOG_ACTION = {"drop": "drop", "forward": "no-drop"}


def seconds(ms: int, decimals: int) -> str:
    """200 → "0.2", 1500 → "1.5": EOS watchdog timers are seconds with up to `decimals` places."""
    text = f"{ms / 1000:.{decimals}f}".rstrip("0").rstrip(".")
    return text or "0"


def dscp_map(q: QosPolicy) -> list[dict[str, Any]]:
    """All 64 DSCPs, grouped by traffic class: EOS's default map (DSCP/8) would put 24-31 in TC3."""
    by_tc: dict[int, list[int]] = {}
    for d in range(64):
        by_tc.setdefault(q.tc_of_dscp(d), []).append(d)
    lines = []
    for tc, dscps in sorted(by_tc.items()):
        for i in range(0, len(dscps), DSCPS_PER_LINE):
            lines.append({"dscps": " ".join(str(d) for d in dscps[i:i + DSCPS_PER_LINE]), "tc": tc})
    return lines


def queues(q: QosPolicy) -> list[dict[str, Any]]:
    tcs = sorted(set(q.ets_strict) | set(q.ets_dwrr) | {tc for tc, e in q.ecn.items() if e.enabled})
    return [{"tc": tc, "strict": tc in q.ets_strict, "weight": q.ets_dwrr.get(tc),
             "ecn": q.ecn[tc] if tc in q.ecn and q.ecn[tc].enabled else None} for tc in tcs]


def render(sw: SwitchIntent, fabric: FabricIntent) -> Files:
    q = sw.qos
    wd = q.pfc_watchdog
    watchdog = None
    if wd.enabled and q.lossless_priorities:
        watchdog = {"timeout": seconds(wd.detection, 2), "recovery": seconds(wd.restoration, 2),
                    "polling": seconds(wd.poll_interval, 3), "action": WATCHDOG_ACTION.get(wd.action)}
    text = template("eos/running-config.j2", sw=sw, fabric=fabric, dscp_map=dscp_map(q), queues=queues(q),
                    watchdog=watchdog, lossless_priorities=sorted(q.lossless_priorities),
                    peer_group=PEER_GROUP)
    return {"running-config.cfg": text}
