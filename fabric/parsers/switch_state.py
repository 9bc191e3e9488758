"""What a switch's health check and transaction read back, as each NOS prints it: BGP peers' states (NVUE, EOS;
FRR and SONiC's vtysh: fabric.parsers.frr.bgp_peers), NVUE's `qos roce` object and its config revisions, EOS's
inventory. Readers (fabric.replies): entries of another shape are left out, a reply that is not JSON, or not the
object the command prints, is one ReplyError naming the command.

Shapes: NVUE `nv show vrf default router bgp neighbor -o json` (neighbor → {"state": "established", …}) and
`nv config revision -o json` (revision → {"state": "applied", …}); EOS eAPI `show ip bgp summary | json`
(vrfs → vrf → peers → peer → peerState, as ANTA's VerifyBGPPeersHealth reads it).
"""

from __future__ import annotations

from typing import Any

from fabric.errors import ReplyError
from fabric.replies import json_reply, reader


def _object(text: str, command: str, what: str) -> dict[str, Any]:
    data = json_reply(text, command)
    if not isinstance(data, dict):
        raise ReplyError(command, f"a JSON object ({what})", f"a JSON {type(data).__name__}")
    return data


def _dicts(data: object) -> dict[str, dict[str, Any]]:
    return {str(k): v for k, v in data.items() if isinstance(v, dict)} if isinstance(data, dict) else {}


@reader("nv show vrf default router bgp neighbor -o json")
def nvue_bgp_peers(text: str) -> dict[str, str]:
    """Neighbor → `Established` or the state NVUE printed."""
    data = _object(text, "nv show vrf default router bgp neighbor -o json", "neighbors")
    return {n: ("Established" if str(p.get("state", "")).lower() == "established" else str(p.get("state")))
            for n, p in _dicts(data).items()}


@reader("nv show qos roce -o json")
def nvue_roce(text: str) -> dict[str, Any]:
    """The `qos roce` settings NVUE applied."""
    return _object(text, "nv show qos roce -o json", "the qos roce settings")


@reader("nv config revision -o json")
def nvue_revisions(text: str) -> dict[str, dict[str, Any]]:
    """Revision → its fields (`state`: applied, pending, confirm, …)."""
    return _dicts(_object(text, "nv config revision -o json", "revisions"))


@reader("show ip bgp summary | json")
def eos_bgp_peers(text: str) -> dict[str, str]:
    """Peer → its peerState, over every VRF."""
    data = _object(text, "show ip bgp summary | json", "vrfs")
    return {n: str(p.get("peerState", "")) for v in _dicts(data.get("vrfs")).values()
            for n, p in _dicts(v.get("peers")).items()}


@reader("show inventory | json")
def eos_inventory(text: str) -> dict[str, Any]:
    """`show inventory | json` (xcvrSlots is what fabric.targets.transceivers reads)."""
    return _object(text, "show inventory | json", "the inventory")
