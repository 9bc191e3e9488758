"""FRR's JSON output (vtysh `show … json`): concatenated documents, routes and their ECMP width."""

from __future__ import annotations

import json
from typing import Any


def reply_json(text: str, empty: str = "{}") -> Any:
    """One JSON document of a device's reply (`empty` where it printed nothing); anything that is not one —
    malformed, or nested past the decoder's recursion limit — is a ValueError naming why."""
    try:
        return json.loads(text.strip() or empty)
    except RecursionError:
        raise ValueError("nested too deeply") from None


def json_docs(text: str) -> list[Any]:
    """Concatenated JSON documents (vtysh prints one per -c)."""
    dec, docs, i = json.JSONDecoder(), [], 0
    while True:
        while i < len(text) and text[i].isspace():
            i += 1
        if i >= len(text):
            return docs
        doc, i = dec.raw_decode(text, i)
        docs.append(doc)


def _selected(entries: object) -> dict[str, Any] | None:
    if not isinstance(entries, list):
        return None
    return next((e for e in entries if isinstance(e, dict) and e.get("selected") and e.get("installed", True)), None)


def route_widths(routes: object) -> dict[str, int]:
    """`show ip route json` → prefix → number of distinct FIB next hops of its selected, installed route."""
    out: dict[str, int] = {}
    if not isinstance(routes, dict):
        return out
    for prefix, entries in routes.items():
        e = _selected(entries)
        if e is not None:
            hops = e.get("nexthops")
            out[prefix] = len({(str(h.get("interfaceName")), str(h.get("ip"))) for h in
                               (hops if isinstance(hops, list) else []) if isinstance(h, dict) and h.get("fib")})
    return out
