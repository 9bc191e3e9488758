"""Switch targets: the driver contract (`base`), the bash-over-SSH helpers (`shell`), what the tool owns on
a device and the diff inside it (`owned`), and NVUE patch helpers (`treediff`) that the NOS drivers in
fabric/nos/<name>/driver.py are built from.
"""

from __future__ import annotations

from typing import Any

from fabric.nos import NOS
from fabric.targets.base import Driver


def driver_class(target: str) -> type[Driver]:
    return NOS[target].module("driver").DRIVER


def driver(target: str, conn: Any, device: str, intended: str, **kw: Any) -> Driver:
    """The driver of `target` over an open connection."""
    return driver_class(target)(conn, device, intended, **kw)
