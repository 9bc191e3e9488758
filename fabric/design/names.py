"""Which inventory device a name taken from a log or report means.

A log is written by whoever runs the job, so a name in it stands for a device only when it is:

- exactly the device's inventory name; or
- that name followed by the inventory's own domain: the DNS domain of the inventory's FQDN names (`prod.example`
  for a device named `gpu-01.prod.example`). An inventory of short names only has no domain, so
  `gpu-01.evil.example` (or `gpu-01.cluster.local`) is never `gpu-01`; or
- the short name of exactly one inventory device named by FQDN (`gpu-01` for `gpu-01.prod.example`), since hosts
  print their short hostname.

Anything else names no device (case, a trailing dot and other domains included).
"""

from __future__ import annotations

from collections.abc import Iterable


class DeviceNames:
    """The inventory names of one kind of device (hosts or switches), to resolve names found in logs."""

    def __init__(self, names: Iterable[str]) -> None:
        self.names = frozenset(names)
        self.domains = frozenset(n.partition(".")[2] for n in self.names if "." in n)
        by_short: dict[str, list[str]] = {}
        for n in sorted(self.names):
            if "." in n:
                by_short.setdefault(n.partition(".")[0], []).append(n)
        self.by_short = {short: found[0] for short, found in by_short.items() if len(found) == 1}

    def resolve(self, name: str) -> str | None:
        """The inventory name `name` stands for, or None."""
        if name in self.names:
            return name
        short, dot, domain = name.partition(".")
        if dot:
            return short if short in self.names and domain in self.domains else None
        return self.by_short.get(name)
