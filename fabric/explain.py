"""`fabric explain`: every value of a device's intent with where it came from."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from json.encoder import encode_basestring  # type: ignore[attr-defined]
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from fabric.design.effective import settings
from fabric.design.intent import HostIntent, SwitchIntent
from fabric.design.knobs import ECN_BY_FACT, WATCHDOG
from fabric.design.load import load_deriver
from fabric.design.topology import Topo
from fabric.model.load import Loaded
from fabric.model.source import Loc, dotted
from fabric.nos import NOS

_INDEX = re.compile(r"\[\d+\]")

Row = tuple[str, str, str]  # (path, value, origin)
FullRow = tuple[str, str, str, bool]  # … and whether it is an `effective.` row (no `[` after the filter's path)


def matches(p: str, path: str, effective: bool) -> bool:
    """Whether the row at `p` is under the filter `path` ("" is every row)."""
    return not path or p == path or p.startswith(path + ".") or (not effective and p.startswith(path + "["))


def select(rows: list[FullRow], path: str) -> list[Row]:
    return [(p, v, o) for p, v, o, effective in rows if matches(p, path, effective)]


@dataclass
class Answer:
    """The fabric's name (to say a device is not in it) and every row of the device; rows None: no such device."""

    fabric: str
    rows: list[FullRow] | None


def to_json(rows: list[Row]) -> str:
    """`json.dumps([{"path": …, "value": …, "origin": …}, …], indent=2, ensure_ascii=False) + "\\n"`, written
    directly where every value is text (json's indenting encoder is pure Python: most of a large device's output)."""
    if not rows or not all(isinstance(x, str) for r in rows for x in r):
        return json.dumps([{"path": p, "value": v, "origin": o} for p, v, o in rows], indent=2,
                          ensure_ascii=False) + "\n"
    e = encode_basestring
    return "[\n" + ",\n".join(f'  {{\n    "path": {e(p)},\n    "value": {e(v)},\n    "origin": {e(o)}\n  }}'
                              for p, v, o in rows) + "\n]\n"


def flatten(data: Any, prefix: str = "") -> list[tuple[str, Any]]:
    """Nested dicts/lists → [(dotted.path[0].key, leaf value)] in a stable order."""
    if isinstance(data, BaseModel):
        data = data.model_dump(mode="json")
    out: list[tuple[str, Any]] = []
    if isinstance(data, dict) and data:
        for k, v in data.items():
            out += flatten(v, f"{prefix}.{k}" if prefix else str(k))
    elif isinstance(data, list) and data and any(isinstance(x, (dict, list)) for x in data):
        for i, v in enumerate(data):
            out += flatten(v, f"{prefix}[{i}]")
    else:
        out.append((prefix, data))
    return out


# QoS facts (fabric.design.intent.QosFacts) → the policy value they are decided from.
_POLICY_KEY: dict[str, tuple[str, ...]] = {
    "trust": ("trust",), "dscp_to_priority": ("dscp_to_priority",), "dscp_explicit": ("dscp_to_priority",),
    "default_priority": ("default_priority",), "priority_to_tc": ("priority_to_tc",),
    "lossless_priorities": ("lossless_priorities",), "roce_dscp": ("roce_dscp",), "cnp_dscp": ("cnp_dscp",),
    "cnp_priority": ("cnp_priority",), "headroom_mode": ("headroom", "mode"),
    "lossless_mtu": ("headroom", "lossless_mtu"),
    "small_packet_percentage": ("headroom", "small_packet_percentage"),
    **{f"watchdog.{k.fact}": ("pfc_watchdog", k.key) for k in WATCHDOG},  # the knobs: fabric.design.knobs
}


def _policy_key(fact: str, value: Any) -> tuple[Any, ...] | None:
    """`queues.3.ecn.min_bytes` → ('ecn', 3, 'min_bytes'); None for facts computed from several values."""
    parts = fact.split(".")
    if parts[0] == "queues" and len(parts) >= 3:
        tc = int(parts[1])
        if parts[2] == "ecn" and len(parts) == 4:
            return ("ecn", tc, ECN_BY_FACT[parts[3]].key) if parts[3] in ECN_BY_FACT else ("ecn", tc, parts[3])
        if parts[2] == "weight" or (parts[2] == "scheduler" and value == "dwrr"):
            return ("ets_dwrr", tc)
        if parts[2] == "scheduler" and value == "strict":
            return ("ets_strict",)
        return None
    return _POLICY_KEY.get(fact)


# Intent fields an inventory key sets directly, most specific first: "@" is the device's own entry
# (switches[i] or hosts.list[i]), "%role" its role in `roles`, "defaults" hosts.defaults.
_SWITCH_KEYS: dict[str, list[tuple[str, ...]]] = {
    "platform": [("@", "platform"), ("%role", "platform")], "asic": [("@", "platform"), ("%role", "platform")],
    "target": [("@", "target"), ("%role", "target")], "su": [("@", "su")], "rail": [("@", "rail")],
    "pod": [("@", "pod")], "bgp.asn": [("@", "asn")],
    "adaptive_routing": [("@", "adaptive_routing"), ("switching", "adaptive_routing", "enabled")],
    "ports.adaptive_routing": [("@", "adaptive_routing"), ("switching", "adaptive_routing", "enabled")],
    "mtu": [("switching", "mtu")], "ports.mtu": [("switching", "mtu")],
    "bgp.keepalive": [("switching", "bgp", "keepalive")], "bgp.hold": [("switching", "bgp", "hold")],
    "bgp.max_paths": [("switching", "bgp", "max_paths")], "bgp.bfd": [("switching", "bgp", "bfd")],
    "bgp.graceful_shutdown": [("switching", "bgp", "graceful_shutdown")],
    "neighbor.aging_s": [("switching", "neighbor", "aging")],
    **{f"neighbor.gc_thresh{i}": [("switching", "neighbor", "table_size")] for i in (1, 2, 3)},
}
_HOST_KEYS: dict[str, list[tuple[str, ...]]] = {
    "gpus": [("@", "gpus"), ("defaults", "gpus")],
    "management_interface": [("@", "management_interface"), ("defaults", "management_interface")],
    "management_address": [("@", "management")], "roce_mtu": [("@", "roce_mtu"), ("defaults", "roce_mtu")],
    "rails.mtu": [("@", "mtu"), ("defaults", "mtu")],
    "nic_qos.roce_tos": [("@", "roce_tos"), ("defaults", "roce_tos")],
    "gid.policy": [("@", "gid", "policy"), ("defaults", "gid", "policy")],
    "gid.index": [("@", "gid", "index"), ("defaults", "gid", "index")],
}


def _own(topo: Topo, device: SwitchIntent | HostIntent) -> Loc | None:
    node = topo.switches.get(device.name) if isinstance(device, SwitchIntent) else topo.hosts.get(device.name)
    return node.loc if node is not None and node.loc[:1] in (("switches",), ("hosts",)) else None


def _candidates(loaded: Loaded, topo: Topo, device: SwitchIntent | HostIntent, path: str) -> list[Loc]:
    """Inventory keys that could have set the value at `path`, most specific first."""
    own = _own(topo, device)
    generic = _INDEX.sub("", path)
    parts = path.split(".")
    if isinstance(device, SwitchIntent):
        keys = _SWITCH_KEYS.get(generic, [])
        if generic in ("ports.speed", "ports.cable_m"):
            port = device.ports[int(path.split("[", 1)[1].split("]", 1)[0])]
            link = topo.link_at(device.name, port.name)
            field = "speed" if generic == "ports.speed" else "cable"
            cls = {"host-leaf": "host_leaf", "spine-super-spine": "spine_super_spine"}.get(
                link.kind if link else "", "leaf_spine")
            return [*([(*link.loc, field)] if link and link.loc[:1] == ("links",) else []),
                    ("cabling", cls, field)]
    else:
        keys = _HOST_KEYS.get(generic, [])
        if parts[0] in ("nccl_env", "sysctls") or path.startswith("dcqcn.cc_params."):
            keys = [("@", *parts), ("defaults", *parts)]
        elif generic.count(".") == 1 and generic.startswith("rails.") and parts[-1] in ("rdma", "netdev", "vlan",
                                                                                       "vfs"):
            rail = device.rails[int(path.split("[", 1)[1].split("]", 1)[0])].rail
            entry = loaded.inv.hosts.entries[own[2]] if own and own[:2] == ("hosts", "list") else None
            for base, nics in ((own, entry.nics if entry else None), (("hosts", "defaults"),
                                                                      loaded.inv.hosts.defaults.nics)):
                j = next((j for j, n in enumerate(nics or []) if n.rail == rail), None)
                if base is not None and j is not None:
                    return [(*base, "nics", j, parts[-1])]
            return []
    out: list[Loc] = []
    for key in keys:
        if key[0] == "@":
            if own is not None:
                out.append((*own, *key[1:]))
        elif key[0] == "%role":
            out.append(("roles", getattr(device, "role", ""), *key[1:]))
        elif key[0] == "defaults":
            out.append(("hosts", "defaults", *key[1:]))
        else:
            out.append(key)
    return out


def origin(loaded: Loaded, device: SwitchIntent | HostIntent, path: str, value: Any = None,
           topo: Topo | None = None) -> str:
    """Say where the value at `path` comes from: preset, override, inventory, derived or formula."""
    unset = ""
    if topo is not None and not path.startswith("qos."):
        candidates = _candidates(loaded, topo, device, path)
        for loc in candidates:
            if loc in loaded.smap.lines:
                return f"inventory ({loaded.where(*loc)})" + _adjusted(device, path)
        unset = f"default ({dotted(candidates[-1])})" if candidates else ""
    if path.startswith("qos."):
        return _qos_origin(loaded, path, value) + _not_rendered(loaded, device, path)
    return _origin(device, path, unset)


def _adjusted(device: SwitchIntent | HostIntent, path: str) -> str:
    """What derivation did to an inventory value (the MTU capped to the NOS's ceiling), from the device's origins."""
    note = device.origins.get(_INDEX.sub("", path).removeprefix("ports."), "")
    return note[note.index(", capped to"):] if ", capped to" in note else ""


def _not_rendered(loaded: Loaded, device: SwitchIntent | HostIntent, path: str) -> str:
    """What the device's NOS does with a watchdog fact it cannot express as requested (fabric.design.effective)."""
    if not isinstance(device, SwitchIntent) or not path.startswith("qos.watchdog."):
        return ""
    nos = NOS[device.target]
    field = _POLICY_KEY.get(path.removeprefix("qos."), ("", ""))[-1]
    if nos.watchdog is None:
        return f"; not configured on {nos.title}: it has no PFC watchdog"
    s = next((s for s in settings(loaded, device) if s.key == f"qos.pfc_watchdog.{field}"), None)
    if s is None or not s.how:
        return ""
    if s.effective is None:
        return f"; not a {nos.title} setting ({s.how})"
    return f"; {nos.title} runs {s.effective} ({s.how})"


def _qos_origin(loaded: Loaded, path: str, value: Any) -> str:
    found = _policy_key(path.removeprefix("qos."), value)
    if found is None:
        return "derived from qos.priority_to_tc, lossless_priorities and dscp_to_priority"
    keys: tuple[Any, ...] = found
    node: Any = loaded.qos_overrides
    for n, key in enumerate(keys, 1):
        node = node.get(key, node.get(str(key))) if isinstance(node, dict) else None
        if node is None:
            break
        if not isinstance(node, dict):  # the user replaced this value (or the whole subtree)
            return f"override ({loaded.where('qos', *keys[:n])})"
    preset = loaded.inv.qos.get("preset", "nvidia-roce")
    return f"preset {preset} ({loaded.where('qos')})"


def _origin(device: SwitchIntent | HostIntent, path: str, unset: str) -> str:
    if isinstance(device, SwitchIntent) and ".headroom." in path:
        idx = int(path.split("[", 1)[1].split("]", 1)[0])
        hr = device.ports[idx].headroom
        return hr.explain() if hr else "derived"
    generic = {"bgp.asn": "asn"}.get(_INDEX.sub("", path), _INDEX.sub("", path))
    best = ""
    for key in device.origins:
        if (generic == key or generic.startswith(key + ".")) and len(key) > len(best):
            best = key
    if best:
        return device.origins[best]
    if unset:
        return unset
    if path.startswith("nic_qos."):
        return "derived from the fabric QoS policy (same numbers as the switches)"
    if path.startswith(("ports", "bgp.neighbors", "svis", "rails")):
        return "derived: topology and cabling"
    return "derived"


def rows(loaded: Loaded, device: SwitchIntent | HostIntent, path: str = "",
         topo: Topo | None = None) -> list[FullRow]:
    """(path, value, origin, whether an `effective.` row) of `device` under a path prefix; with the topology,
    values the inventory sets give its file:line."""
    out: list[FullRow] = []
    for p, value in flatten(device.model_dump(mode="json", exclude={"origins"})):
        if matches(p, path, False):
            out.append((p, "" if value is None else str(value), origin(loaded, device, p, value, topo), False))
    if isinstance(device, SwitchIntent):  # requested beside effective: what the NOS runs of each value
        for s in settings(loaded, device):
            p = f"effective.{s.key}"
            if not matches(p, path, True):
                continue
            source = f"inventory ({loaded.where(*s.loc)})" if s.written else "preset or default"
            eff = s.effective if s.effective is not None else f"not a {NOS[device.target].title} setting"
            out.append((p, eff, f"requested {s.requested} ({source})" + (f"; {s.how}" if s.how else ""), True))
    return out


def explain(loaded: Loaded, device: SwitchIntent | HostIntent, path: str = "",
            topo: Topo | None = None) -> list[Row]:
    """(path, value, origin) rows of `device`, filtered by a path prefix; with the topology, values the
    inventory sets give its file:line."""
    return [(p, v, o) for p, v, o, _ in rows(loaded, device, path, topo)]


def answer(directory: Path, name: str) -> Answer:
    """Every row of `name` in the inventory `directory`: the whole fabric's checks, then that device's intent
    alone."""
    deriver = load_deriver(directory)
    intent = deriver.device(name)
    return Answer(deriver.loaded.inv.fabric.name,
                  None if intent is None else rows(deriver.loaded, intent, "", deriver.topo))
