"""`fabric explain`: every value of a device's intent with where it came from."""

from __future__ import annotations

import re
from typing import Any

from pydantic import BaseModel

from fabric.design.intent import HostIntent, SwitchIntent
from fabric.model.load import Loaded

_INDEX = re.compile(r"\[\d+\]")


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


def origin(loaded: Loaded, device: SwitchIntent | HostIntent, path: str) -> str:
    """Say where the value at `path` comes from: preset, override, inventory, derived or formula."""
    if path.startswith(("qos.", "nic_qos.")) and path.split(".", 1)[0] == "qos":
        keys = tuple(int(k) if k.isdigit() else k for k in path.split(".")[1:])
        node: Any = loaded.qos_overrides
        for n, key in enumerate(keys, 1):
            node = node.get(key, node.get(str(key))) if isinstance(node, dict) else None
            if node is None:
                break
            if not isinstance(node, dict):  # the user replaced this value (or the whole subtree)
                return f"override ({loaded.where('qos', *keys[:n])})"
        preset = loaded.inv.qos.get("preset", "nvidia-roce")
        return f"preset {preset} ({loaded.where('qos')})"
    if isinstance(device, SwitchIntent) and ".headroom." in path:
        idx = int(path.split("[", 1)[1].split("]", 1)[0])
        hr = device.ports[idx].headroom
        return hr.explain() if hr else "derived"
    generic = _INDEX.sub("", path)
    best = ""
    for key in device.origins:
        if (generic == key or generic.startswith(key + ".")) and len(key) > len(best):
            best = key
    if best:
        return device.origins[best]
    if path.startswith("nic_qos."):
        return "derived from the fabric QoS policy (same numbers as the switches)"
    if path.startswith(("ports", "bgp.neighbors", "svis", "rails")):
        return "derived: topology and cabling"
    return "derived"


def explain(loaded: Loaded, device: SwitchIntent | HostIntent, path: str = "") -> list[tuple[str, str, str]]:
    """(path, value, origin) rows of `device`, filtered by a path prefix."""
    rows = []
    for p, value in flatten(device.model_dump(mode="json", exclude={"origins"})):
        if path and not (p == path or p.startswith(path + ".") or p.startswith(path + "[")):
            continue
        rows.append((p, "" if value is None else str(value), origin(loaded, device, p)))
    return rows
