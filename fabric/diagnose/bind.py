"""Bind diagnose findings to the fabric: which host, rail NIC, leaf port and cable a log line is about.

A finding's subjects carry what the log named (BINDING_KEYS in report.py). With an inventory they
resolve to `Located` entries:

- `host` / `peer_host`: a host of the fabric (by the names `fabric.design.names` allows, or its management
  address), or a switch — then `switch_port` names a port of that switch, and a host port gives the host NIC
  behind it;
- `dev` (mlx5_N) and `ifname` (netdev or netdev.vlan): the rail NIC of that host; without a host,
  the rail when every host uses that name for the same rail;
- `addr` / `peer_addr`: a rail address → host, rail, NIC, leaf, leaf port, cable;
- `oob_addr`: a management (or rail) address → host.
"""

from __future__ import annotations

from collections import Counter
from ipaddress import ip_interface

from pydantic import BaseModel, ConfigDict

from fabric.design.intent import FabricIntent, HostIntent, RailIntent
from fabric.design.names import DeviceNames

MAX_LOCATED = 50


class Located(BaseModel):
    """Where in the fabric a finding points: a host, one of its rail NICs and the cable to its leaf."""

    model_config = ConfigDict(frozen=True)

    via: str  # the log value that resolved it, e.g. "peer_addr=10.100.1.3"
    host: str | None = None
    nic: str | None = None  # RDMA device, mlx5_N
    netdev: str | None = None
    rail: int | None = None
    address: str | None = None
    leaf: str | None = None
    leaf_port: str | None = None
    cable_m: int | None = None
    peer: str | None = None  # switch:port at the other end, for a fabric port

    def text(self) -> str:
        """One line for the table: `gpu-su1-02 rail 2 mlx5_1/rail2 → leaf-su1-r2:swp2, 5 m cable`."""
        parts = [self.host or ""]
        if self.rail is not None:
            parts.append(f"rail {self.rail}")
        parts.append("/".join(p for p in (self.nic, self.netdev) if p))
        text = " ".join(p for p in parts if p)
        if self.leaf:
            text += f" → {self.leaf}:{self.leaf_port}" + (f", {self.cable_m} m cable" if self.cable_m is not None
                                                         else "")
        if self.peer:
            text += f" → {self.peer}"
        return text or "-"


class FabricIndex:
    """Look-ups from log names and addresses to hosts, rails and switch ports."""

    def __init__(self, fabric: FabricIntent) -> None:
        self.fabric = fabric
        self.host_names = DeviceNames(fabric.hosts)
        self.switch_names = DeviceNames(fabric.switches)
        self.by_addr: dict[str, tuple[HostIntent, RailIntent | None]] = {}
        self.by_dev: dict[str, set[int]] = {}
        for h in fabric.hosts.values():
            self.by_addr[str(ip_interface(h.management_address).ip)] = (h, None)
            for r in h.rails:
                self.by_addr[str(ip_interface(r.address).ip)] = (h, r)
                for name in {r.rdma, r.netdev, r.ifname}:
                    self.by_dev.setdefault(name, set()).add(r.rail)

    def host(self, name: str) -> HostIntent | None:
        """The host a log calls `name` (`fabric.design.names`), or whose management or rail address it is."""
        if (found := self.host_names.resolve(name)) is not None:
            return self.fabric.hosts[found]
        by_addr = self.by_addr.get(name)
        return by_addr[0] if by_addr else None

    def switch(self, name: str) -> str | None:
        return self.switch_names.resolve(name)

    def roce_tos(self, name: str) -> int | None:
        """The RoCE ToS (NCCL_IB_TC) the inventory gives the host a log calls `name`; None if not a host."""
        host = self.host(name)
        return host.nic_qos.roce_tos if host is not None else None

    @staticmethod
    def rail_of(host: HostIntent, name: str) -> RailIntent | None:
        return next((r for r in host.rails if name in (r.rdma, r.netdev, r.ifname)), None)


def _nic(via: str, host: HostIntent, rail: RailIntent | None) -> Located:
    if rail is None:
        return Located(via=via, host=host.name)
    return Located(via=via, host=host.name, nic=rail.rdma, netdev=rail.netdev, rail=rail.rail,
                   address=rail.address, leaf=rail.leaf, leaf_port=rail.leaf_port, cable_m=rail.cable_m)


def locate(subject: dict[str, str], index: FabricIndex) -> list[Located]:
    """Every place in the fabric that one subject names (local side first, then the peer)."""
    name = subject.get("host")
    host = index.host(name) if name else None
    switch = index.switch(name) if name and host is None else None
    out = _local(subject, index, host, switch)
    if switch is not None and subject.get("switch_port"):
        out += _switch_port(index, switch, subject["switch_port"])
    for key in ("addr", "peer_addr", "oob_addr"):
        value = subject.get(key)
        if value and value in index.by_addr:
            h, r = index.by_addr[value]
            out.append(_nic(f"{key}={value}", h, r))
    if subject.get("peer_host") and (peer := index.host(subject["peer_host"])):
        out.append(_nic(f"peer_host={subject['peer_host']}", peer, None))
    # an address or device already resolved to one of a host's NICs makes the bare host entry redundant
    with_nic = {loc.host for loc in out if loc.nic and loc.host}
    return [loc for loc in out if loc.nic or loc.host is None or loc.host not in with_nic]


def _local(subject: dict[str, str], index: FabricIndex, host: HostIntent | None, switch: str | None) -> list[Located]:
    """The subject's own host (at the NIC its device or interface names, if one does), else, with no host or
    switch named, the rail a device name has on every host."""
    nic_names = [(k, subject[k]) for k in ("dev", "ifname") if subject.get(k)]
    if host is not None:
        rail = next((r for k, v in nic_names if (r := index.rail_of(host, v))), None)
        via = next((f"{k}={v}" for k, v in nic_names if index.rail_of(host, v)), f"host={subject.get('host')}")
        return [_nic(via, host, rail)]
    if switch is not None:
        return []
    for k, v in nic_names:
        rails = index.by_dev.get(v, set())
        if len(rails) == 1:  # the same rail on every host that has this device
            return [Located(via=f"{k}={v}", nic=v if k == "dev" else None, netdev=v if k == "ifname" else None,
                            rail=next(iter(rails)))]
    return []


def _switch_port(index: FabricIndex, switch: str, port_name: str) -> list[Located]:
    """A switch port: the host NIC behind a host port, else the port itself and its peer."""
    port = next((p for p in index.fabric.switches[switch].ports if p.name == port_name), None)
    via = f"switch_port={switch}:{port_name}"
    if port is not None and port.kind == "host" and (peer := index.host(port.peer)):
        return [_nic(via, peer, index.rail_of(peer, port.peer_port))]
    if port is not None:
        return [Located(via=via, leaf=switch, leaf_port=port.name, cable_m=port.cable_m,
                        peer=f"{port.peer}:{port.peer_port}")]
    return []


def bind_subjects(subjects: list[dict[str, str]], index: FabricIndex) -> list[Located]:
    """The distinct places named by a finding's subjects, in order of first mention."""
    seen: dict[tuple[object, ...], Located] = {}
    for subject in subjects:
        for loc in locate(subject, index):
            key = (loc.host, loc.nic, loc.rail, loc.leaf, loc.leaf_port, loc.peer)
            seen.setdefault(key, loc)
            if len(seen) >= MAX_LOCATED:
                return list(seen.values())
    return list(seen.values())


def fabric_roce_tos(fabric: FabricIntent, default: int) -> int:
    """The fabric's RoCE ToS: the one its hosts use (the most common, should they differ), else `default`."""
    counts = Counter(h.nic_qos.roce_tos for h in fabric.hosts.values())
    return min(counts, key=lambda tos: (-counts[tos], tos)) if counts else default
