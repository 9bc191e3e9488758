"""Derivation, addressing: loopbacks, management, the rail blocks per (SU, rail) and the hosts' addresses in them
(`addressing` section; svi or p2p31)."""

from __future__ import annotations

from fabric.design.topology import Host
from fabric.model.inventory import Addressing as AddressingSection


def dotted(n: int) -> str:
    """An IPv4 address as text (ipaddress's own conversion dominates derivation at cluster scale). Not cached:
    nearly every address is asked for once (a cache held one more string per host address and hit 5 %)."""
    return f"{n >> 24}.{(n >> 16) & 255}.{(n >> 8) & 255}.{n & 255}"


class Addressing:
    """The address plan (a part of `Deriver`): what `addr`, the rail base and block size and the switch index
    give."""

    addr: AddressingSection
    block_size: int
    _rails_base: int
    _rails: int
    index: dict[str, int]

    def block_base(self, su: int, rail: int) -> int:
        return self._rails_base + ((su - 1) * self._rails + (rail - 1)) * self.block_size

    def loopback(self, name: str) -> str:
        return dotted(int(self.addr.loopbacks.network_address) + 1 + self.index[name])

    def management(self, i: int) -> str:
        return f"{dotted(int(self.addr.management.network_address) + 1 + i)}/{self.addr.management.prefixlen}"

    def host_address(self, host: Host, rail: int) -> tuple[str, str]:
        """(address/prefix, gateway) of `host` on `rail`."""
        base = self.block_base(host.su, rail)
        if self.addr.mode == "svi":
            return f"{dotted(base + 1 + host.h)}/{self.addr.rail_prefix_length}", dotted(base + 1)
        leaf = base + 2 * (host.h - 1)
        return f"{dotted(leaf + 1)}/31", dotted(leaf)

    def subnet(self, su: int, rail: int) -> str:
        """The rail block of (SU, rail) as text (svi: the hosts' subnet; p2p31: the block of their /31s)."""
        return f"{dotted(self.block_base(su, rail))}/{self.addr.rail_prefix_length}"
