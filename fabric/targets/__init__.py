"""Switch targets: fetch the running configuration, diff it against the intent, change it in a transaction.

One driver per target (`frr`, `sonic`, `nvue`, `eos`), each speaking the device's own transactional
commands over netmiko; see `base.Driver` for the contract and `connect` for addresses and credentials.
"""

from __future__ import annotations

from importlib import import_module
from typing import Any

from fabric.targets.base import Driver

DRIVERS = {"frr": "fabric.targets.frr:FrrDriver", "sonic": "fabric.targets.sonic:SonicDriver",
           "nvue": "fabric.targets.nvue:NvueDriver", "eos": "fabric.targets.eos:EosDriver"}


def driver(target: str, conn: Any, device: str, intended: str, **kw: Any) -> Driver:
    """The driver of `target` over an open connection."""
    mod, cls = DRIVERS[target].split(":")
    return getattr(import_module(mod), cls)(conn, device, intended, **kw)
