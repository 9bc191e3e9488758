"""The small common model that parsed device configs are reduced to: only what lint rules read."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from fabric.design.intent import FabricIntent, QosFacts
from fabric.lint.view import QosView, Where
from fabric.model.inventory import Target

Kind = Target  # the NOS a config file is written for


class Deferred(tuple[Callable[[Any], "int | None"], Any]):
    """(find, key): a value found when it is first read, `find(key)` (the line of a key in a file taken without
    reading its lines: `fabric.nos.nvue.configs.parse_rendered`; rules read a line only to locate a finding)."""


class _Found:
    """A dataclass field that takes a value or a `Deferred`, which it resolves once, when the field is read."""

    def __set_name__(self, owner: type, name: str) -> None:
        self.slot = f"_{name}"

    def __get__(self, obj: Any, owner: type | None = None) -> Any:
        if obj is None:
            return None  # the field's default
        value = obj.__dict__[self.slot]
        if type(value) is Deferred:
            value = obj.__dict__[self.slot] = value[0](value[1])
        return value

    def __set__(self, obj: Any, value: Any) -> None:
        obj.__dict__[self.slot] = value


@dataclass
class PortConfig:
    name: str
    line: int | None = _Found()  # type: ignore[assignment]
    mtu: int | None = None
    speed: int | None = None  # Gb/s
    pfc: list[int] | None = None  # lossless priorities on this port; None when not configured
    watchdog: bool = False
    # PFC watchdog values the config sets per port (SONiC PFC_WD), by knob key (fabric.design.knobs.WATCHDOG)
    wd: dict[str, int] = field(default_factory=dict)
    adaptive_routing: bool | None = None
    access_vlan: int | None = None  # untagged (access) member of this VLAN
    tagged_vlans: list[int] | None = None  # tagged member of these VLANs; None: no tagged membership configured


@dataclass
class BgpNeighborConfig:
    peer: str  # interface (unnumbered) or address
    remote_as: str  # ASN, "external" or "internal"
    interface: bool
    line: int | None = _Found()  # type: ignore[assignment]


@dataclass
class DeviceConfig:
    """What one config file says. `qos is None` when the file carries no QoS (a plain frr.conf)."""

    name: str
    file: str
    kind: Kind
    qos: QosView | None = None
    lines: dict[str, int] = field(default_factory=dict)  # 'dscp_map', 'pfc', 'ecn.3', 'arp_aging', 'bgp' …
    ports: dict[str, PortConfig] = field(default_factory=dict)
    asn: int | None = None
    neighbors: list[BgpNeighborConfig] = field(default_factory=list)
    arp_aging: int | None = None
    arp_aging_at: Where | None = None  # where arp_aging is set when not in this file (SONiC: sysctl.conf beside it)
    graceful_shutdown: bool | None = None  # RFC 8326 honoured and sendable (fabric.lint.configs.gshut); None: no BGP
    graceful_shutdown_missing: str = ""  # what is missing when graceful_shutdown is False
    default_dscp_map: str = ""  # why the file relies on the NOS's default DSCP map, if it does (SONiC's parser)

    def at(self, key: str = "") -> Where:
        """File and line of `key`, falling back to the key's prefix ('ecn.3' → 'ecn') or the file."""
        while key:
            if key in self.lines:
                return (self.file, self.lines[key])
            key = key.rpartition(".")[0]
        return (self.file, None)


@dataclass
class ConfigSet:
    """Every parsed config, with what they are judged against: the inventory's policy, or the preset."""

    devices: list[DeviceConfig]
    policy: QosFacts  # what the configs are judged against
    host_mtu: int | None = None  # from the inventory; None: only the RoCE minimum is enforced
    intent: FabricIntent | None = None
