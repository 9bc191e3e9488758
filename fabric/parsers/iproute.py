"""iproute2 JSON (`ip -s -j link show`): one link's statistics as `link:<direction>_<name>` counters."""

from __future__ import annotations

from typing import Any


def link_counters(link: Any) -> dict[str, int]:
    """`{"ifname": …, "stats64": {"rx": {"bytes": …}, "tx": {…}}}` → {"link:rx_bytes": …, …}."""
    out: dict[str, int] = {}
    if isinstance(link, dict):
        stats = link.get("stats64") or link.get("stats") or {}
        for direction in ("rx", "tx"):
            for k, v in (stats.get(direction) or {}).items():
                if isinstance(v, int) and not isinstance(v, bool):
                    out[f"link:{direction}_{k}"] = v
    return out
