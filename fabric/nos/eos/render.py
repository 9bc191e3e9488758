"""Arista EOS: running-config text from `templates/eos/running-config.j2` (reference switch-qos.md §3).

Units: ECN thresholds are rendered in `bytes` (exact, no KB/KiB ambiguity); PFC watchdog timers are
seconds with decimals, converted from the policy's milliseconds.

Checked in meaning against Arista's pyavd rendering the same intent (tests/nos/eos/test_render.py): BGP unnumbered
needs `ip routing ipv6 interfaces` (which replaces `ip routing`) and `ipv6 unicast-routing`; the L3 MTU is
capped to EOS's ceiling in derivation (fabric.nos `mtu_max`); `maximum-routes` is explicit because EOS limits
routes per neighbour by default.

Graceful shutdown (RFC 8326): routes from peers that carry GSHUT (65535:0) get local-preference 0 through an
inbound route map; `send-community` lets EOS send the community when the switch is drained (EOS does not send
communities to a neighbour without it; the drain itself is maintenance mode or an outbound policy).
"""

from __future__ import annotations

from typing import Any

from fabric.design.intent import FabricIntent, QosFacts, SwitchIntent
from fabric.fast.memo import Memo
from fabric.render.files import Files, template

PEER_GROUP = "FABRIC"
GSHUT_LIST = "GSHUT"
FABRIC_IN = "FABRIC-IN"
DSCPS_PER_LINE = 8  # conservative: keeps each `qos map dscp` line short
# Policy action → EOS watchdog action; `alert` has no EOS equivalent and leaves the EOS default.
WATCHDOG_ACTION = {"drop": "drop", "forward": "no-drop"}


def seconds(ms: int, decimals: int) -> str:
    """200 → "0.2", 1500 → "1.5": EOS watchdog timers are seconds with up to `decimals` places."""
    text = f"{ms / 1000:.{decimals}f}".rstrip("0").rstrip(".")
    return text or "0"


def dscp_map(q: QosFacts) -> list[dict[str, Any]]:
    """All 64 DSCPs, grouped by traffic class: EOS's default map (DSCP/8) would put 24-31 in TC3."""
    by_tc: dict[int, list[int]] = {}
    for d, tc in enumerate(q.dscp_to_tc):
        by_tc.setdefault(tc, []).append(d)
    lines = []
    for tc, dscps in sorted(by_tc.items()):
        for i in range(0, len(dscps), DSCPS_PER_LINE):
            lines.append({"dscps": " ".join(str(d) for d in dscps[i:i + DSCPS_PER_LINE]), "tc": tc})
    return lines


def queues(q: QosFacts) -> list[dict[str, Any]]:
    """The tx-queues with a scheduling or an enabled ECN profile."""
    return [{"tc": tc, "strict": qu.scheduler == "strict", "weight": qu.weight,
             "ecn": qu.ecn if qu.ecn and qu.ecn.enabled else None}
            for tc, qu in q.queues.items() if qu.scheduler or (qu.ecn and qu.ecn.enabled)]


def render(sw: SwitchIntent, fabric: FabricIntent, *, extras: bool = True,
           memo: Memo | None = None) -> Files:
    q = sw.qos
    wd = q.watchdog
    watchdog = None
    if wd is not None:
        watchdog = {"timeout": seconds(wd.detection_ms, 2), "recovery": seconds(wd.restoration_ms, 2),
                    "polling": seconds(wd.poll_interval_ms, 3), "action": WATCHDOG_ACTION.get(wd.action)}
    gshut = {"list": GSHUT_LIST, "map": FABRIC_IN} if sw.bgp.graceful_shutdown and sw.bgp.neighbors else None
    text = template("eos/running-config.j2", sw=sw, fabric=fabric, dscp_map=dscp_map(q), queues=queues(q),
                    watchdog=watchdog, peer_group=PEER_GROUP, gshut=gshut)
    return {"running-config.cfg": text}
