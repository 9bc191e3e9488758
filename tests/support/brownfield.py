"""A switch's running configuration as after an apply on a switch that also runs someone else's configuration: its
render beside a real switch's own (tests/fixtures/brownfield/<nos>, each folder's SOURCE.md)."""

from __future__ import annotations

import json
import re
from typing import Any

from fabric.nos.nvue.driver import load_running


def beside(nos: str, intended: str, foreign: str) -> str:
    """`intended` with `foreign`'s configuration: for text (EOS, FRR) its lines after the render's, without its
    hostname and `end`, its `router bgp` under the render's ASN (the tool never renumbers); for trees (SONiC, NVUE, as
    JSON) every table, entry and field the render lacks."""
    if nos in ("eos", "frr"):
        asn = re.search(r"(?m)^router bgp (\d+)", intended)
        foreign = re.sub(r"(?m)^(hostname .*|end)\n", "", foreign)
        if asn:
            foreign = re.sub(r"(?m)^router bgp \d+", f"router bgp {asn.group(1)}", foreign)
        return re.sub(r"(?m)^end\n?\Z", "", intended).rstrip("\n") + "\n!\n" + foreign
    read = load_running if nos == "nvue" else json.loads
    return json.dumps(_merged(read(intended), read(foreign)))


def _merged(mine: Any, theirs: Any) -> Any:
    """`mine` with every key of `theirs` it lacks, recursively (the render wins where both have a value)."""
    if not isinstance(mine, dict) or not isinstance(theirs, dict):
        return mine
    return {**theirs, **{k: _merged(v, theirs.get(k)) for k, v in mine.items()}}
