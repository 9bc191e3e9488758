"""iproute2 JSON (`ip -s -j link show`): one link's statistics as `link:<direction>_<name>` counters."""

from __future__ import annotations

import re
from typing import Any

from fabric.replies import json_reply, reader


def link_counters(link: Any) -> dict[str, int]:
    """`{"ifname": …, "stats64": {"rx": {"bytes": …}, "tx": {…}}}` → {"link:rx_bytes": …, …}."""
    out: dict[str, int] = {}
    stats = (link.get("stats64") or link.get("stats")) if isinstance(link, dict) else None
    if isinstance(stats, dict):  # a reply of another shape has no counters (never an exception)
        for direction in ("rx", "tx"):
            values = stats.get(direction)
            for k, v in (values.items() if isinstance(values, dict) else ()):
                if isinstance(v, int) and not isinstance(v, bool):
                    out[f"link:{direction}_{k}"] = v
    return out


# `tc -s class show dev X` (iproute2 6.1 prints classes as text even with -j):
#   class htb 1:5 parent 1:100 prio 1 rate 500Mbit ceil 1Gbit burst 64Kb cburst 64Kb
#    Sent 374975878 bytes 41607 pkt (dropped 0, overlimits 6690 requeues 0)
_CLASS = re.compile(r"^class \S+ (?P<id>[0-9a-f]+:[0-9a-f]+) .*\n\s+Sent (?P<bytes>\d+) bytes (?P<pkts>\d+) pkt "
                    r"\(dropped (?P<drops>\d+)", re.MULTILINE)


_BACKLOG = re.compile(r"^class \S+ (?P<id>[0-9a-f]+:[0-9a-f]+) .*\n(?:(?!class )[^\n]*\n)*?"
                      r"\s+backlog (?P<bytes>\d+)(?P<unit>[KMG]?)b ", re.MULTILINE)


def queue_backlog(class_text: str) -> dict[int, int]:
    """Bytes queued per traffic class at the moment of `tc -s class show dev X` (`backlog 4542b 3p`, `173Kb`:
    iproute2's sprint_size, 1024-based): a gauge, not a counter, so apart from queue_counters."""
    out: dict[int, int] = {}
    for m in _BACKLOG.finditer(class_text):
        band = band_of(m["id"])
        if band is not None:
            out[7 - band] = int(m["bytes"]) * 1024 ** " KMG".index(m["unit"] or " ")
    return out


def band_of(classid: str, handle: str = "1") -> int | None:
    """`1:N` (the queue tree's class N, N = 1-8) → its band N−1; None for other classes."""
    major, _, minor = classid.partition(":")
    n = int(minor, 16) if minor and len(minor) <= 4 and all(c in "0123456789abcdefABCDEF" for c in minor) else 0
    return n - 1 if major == handle and 1 <= n <= 8 else None


def queue_counters(class_text: str, qdiscs: Any, dev: str) -> dict[str, int]:
    """Per traffic class of one port's egress tree (band b = TC 7−b, the mlxsw mapping the frr target renders):
    `queue:<tc>:tx_bytes|tx_packets|drops` from its class and `queue:<tc>:ecn_marked` from the `red` qdisc on it
    (`tc -s -j qdisc show`: `marked`). The class's drops already hold red's: an `ets` class reports its child
    qdisc's own statistics (net/sched/sch_ets.c, ets_class_dump_stats) and an `htb` class counts every packet its
    child did not take (sch_htb.c htb_enqueue: `net_xmit_drop_count`, NET_XMIT_CN included); red's drops count
    only where no class line was read."""
    out: dict[str, int] = {}
    for m in _CLASS.finditer(class_text):
        band = band_of(m["id"])
        if band is not None:
            tc = 7 - band
            out[f"queue:{tc}:tx_bytes"] = int(m["bytes"])
            out[f"queue:{tc}:tx_packets"] = int(m["pkts"])
            out[f"queue:{tc}:drops"] = int(m["drops"])
    for q in qdiscs if isinstance(qdiscs, list) else []:
        if isinstance(q, dict) and q.get("dev") == dev and q.get("kind") == "red":
            band = band_of(str(q.get("parent", "")))
            xstats = q.get("xstats")
            marked = q.get("marked", xstats.get("marked") if isinstance(xstats, dict) else None)
            drops = q.get("drops", 0)
            if band is not None and isinstance(marked, int) and isinstance(drops, int):
                tc = 7 - band
                out[f"queue:{tc}:ecn_marked"] = marked
                out.setdefault(f"queue:{tc}:drops", drops)
    return out


@reader('ip -s -j link show; tc -s -j qdisc show; tc -s class show dev <port>')
def port_counters(out: str) -> dict[str, dict[str, int]]:
    """The reply of `ip -s -j link show; echo @@qdisc; tc -s -j qdisc show; echo "@@class <dev>"; tc -s class
    show dev <dev>…` → per front-panel port: link and egress-queue counters. A reply that is not JSON where JSON
    belongs is a ValueError; JSON of another shape has no counters."""
    links_text, _, rest = out.partition("@@qdisc")
    qdisc_text, _, classes = rest.partition("@@class ")
    links = json_reply(links_text, "a JSON reply", "[]")
    qdiscs = json_reply(qdisc_text, "a JSON reply", "[]")
    per_dev = {chunk.split("\n", 1)[0].strip(): chunk for chunk in ("@@class " + classes).split("@@class ")[1:]}
    return {lk["ifname"]: {**link_counters(lk), **queue_counters(per_dev.get(lk["ifname"], ""), qdiscs, lk["ifname"])}
            for lk in (links if isinstance(links, list) else [])
            if isinstance(lk, dict) and isinstance(lk.get("ifname"), str) and lk["ifname"] != "lo"
            and lk.get("link_type") == "ether" and not lk["ifname"].startswith(("eth", "vlan", "br"))}
