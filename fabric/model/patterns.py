"""The string patterns every name, port, key and value of the inventory and the intent is checked against, and the
NOS names a switch can target: apart from the inventory's models, so that the intent (and the host agent, which
validates a host's intent alone) imports them without building the inventory's schema."""

from __future__ import annotations

from functools import lru_cache
from typing import Literal

from fabric.nos import NOS

Target = Literal[tuple(NOS)]  # the NOS table: sonic, nvue, eos, frr
Role = Literal["super-spine", "spine", "leaf"]
# The one set of string patterns every name, port, key and value is checked against at the model, so nothing
# downstream (file names, shell scripts, config sessions, sysctl.d, env files) ever sees a path, a newline or a
# shell metacharacter.
NAME = r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,62}$"  # a device name: also a file name and a DNS label
PORT = r"^[A-Za-z][A-Za-z0-9_./-]{0,63}$"  # Ethernet0, swp1s0, Ethernet1/1, eth1
IFNAME = r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,14}$"  # a Linux netdev (IFNAMSIZ 16 with the NUL; no / or :)
# net.ipv4.conf.all.arp_ignore, net.ipv4.conf.{if}.rp_filter (each rail), net/ipv4/conf/rail1.1001/…
SYSCTL_KEY = r"^[a-z0-9_]+(?:[./](?:\{if\}|[A-Za-z0-9_-][A-Za-z0-9_.-]*))+$"
SYSCTL_VALUE = r"^[A-Za-z0-9_.,:+ -]{0,256}$"  # 1, 4096 87380 6291456
ENV_KEY = r"^[A-Za-z_][A-Za-z0-9_]{0,127}$"
ENV_VALUE = r"^[^\x00-\x1f\x7f]*$"  # one line; the templates quote it
# at most ENV_MAX characters: a limit of its own (as `{0,4096}` in the pattern, pydantic-core's regex engine took
# 15-30 ms to compile it in every process)
ENV_MAX = 4096
LINE = r"^[^\x00-\x1f\x7f]*$"  # free text: one line, no control characters


@lru_cache(maxsize=65536)  # the same keys recur on every host
def sysctl_interface(key: str) -> str | None:
    """The interface a per-interface sysctl key names (net.ipv4.conf.X.rp_filter, net/ipv6/neigh/X/…), else None."""
    parts = key.split("/") if "/" in key else key.split(".")
    if len(parts) >= 5 and parts[0] == "net" and parts[2] in ("conf", "neigh"):
        return ".".join(parts[3:-1]) if "/" not in key else parts[3]
    return None
