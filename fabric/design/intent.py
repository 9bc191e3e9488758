"""Per-device intent ("facts"): everything the renderers, the lab, lint and the host agent consume.

These models are the contract between derivation and every consumer. The host intent is serialized
to `host.json` and read back by the host agent, so its shape is a stable boundary.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from ipaddress import IPv4Address, IPv4Interface, IPv4Network
from typing import Annotated, Any, Literal, TypeVar

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, StringConstraints, model_validator

from fabric.design.headroom import Headroom
from fabric.model.patterns import (
    ENV_KEY,
    ENV_MAX,
    ENV_VALUE,
    IFNAME,
    NAME,
    PORT,
    SYSCTL_KEY,
    SYSCTL_VALUE,
    Target,
    sysctl_interface,
)
from fabric.model.ports import HwPort


class Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


_M = TypeVar("_M", bound=Model)
_new, _set = object.__new__, object.__setattr__


@lru_cache(maxsize=64)
def _field_names(model: type[Model]) -> tuple[str, ...]:
    return tuple(model.__pydantic_fields__)


@lru_cache(maxsize=64)
def _all_set(model: type[Model]) -> set[str]:
    """Every field of `model`: the fields set of each trusted instance, one set shared by all of them (pydantic
    only ever adds a field's name to it, which it holds already; a copy of the model copies it)."""
    return set(model.__pydantic_fields__)


def trusted(model: type[_M], fields: dict[str, Any]) -> _M:
    """`model(**fields)` without validating the values again: what validation would hold (every field, in the
    model's order, the same value objects), for intents derived from values that were validated already —
    the inventory's, or those of an instance of the same shape made by `model(**fields)` (fabric.design.derive:
    thousands of hosts share all but their names and addresses). Any field missing, or an unknown one: the
    validating constructor, with its own messages. tests/design/derive/test_shapes.py holds it equal to validation."""
    names = _field_names(model)
    if tuple(fields) != names:  # a field missing, an unknown one, or another order
        if fields.keys() != set(names):
            return model(**fields)
        fields = {name: fields[name] for name in names}
    obj = _new(model)
    _set(obj, "__dict__", fields)  # the caller's dict: made for this instance
    _set(obj, "__pydantic_fields_set__", _all_set(model))
    _set(obj, "__pydantic_extra__", None)
    _set(obj, "__pydantic_private__", None)
    return obj


_OCTET = r"(25[0-5]|2[0-4][0-9]|1[0-9]{2}|[1-9]?[0-9])"
_DOTTED = rf"{_OCTET}(\.{_OCTET}){{3}}"
_PREFIX = r"/(3[0-2]|[12]?[0-9])"


def _ipv4(kind: type, form: str) -> AfterValidator:
    """A string that must parse as `kind` (host.json is read back by the agent: an IPv6 or malformed address is
    a located error there, not a traceback later). A well-formed value is recognised by one regex (ipaddress's
    rules: dotted quad, no leading zeros, prefix 0-32) and networks are parsed once each (routes and subnets repeat
    across thousands of hosts); any other form is left to `kind`, which accepts it or raises its own message."""
    shape = re.compile(form)

    @lru_cache(maxsize=65536)
    def check(v: str) -> str:
        if not shape.fullmatch(v) or kind is IPv4Network:  # other forms, and a network's host bits
            kind(v)  # raises with ipaddress's message
        return v
    return AfterValidator(check)


IfName = Annotated[str, StringConstraints(pattern=IFNAME)]
Ipv4If = Annotated[str, StringConstraints(max_length=18), _ipv4(IPv4Interface, _DOTTED + _PREFIX)]
Ipv4Net = Annotated[str, StringConstraints(max_length=18), _ipv4(IPv4Network, _DOTTED + _PREFIX)]
Ipv4 = Annotated[str, StringConstraints(max_length=15), _ipv4(IPv4Address, _DOTTED)]


class EcnFacts(Model):
    """ECN/WRED marking of one egress queue: thresholds in bytes, marking probability in percent."""

    enabled: bool
    min_bytes: int
    max_bytes: int
    probability: int


class QueueFacts(Model):
    """One traffic class (= egress queue): what maps to it and how it is scheduled and marked."""

    tc: int
    priorities: list[int]  # switch priorities classified to this TC
    lossless: bool  # a PFC priority maps here
    scheduler: Literal["strict", "dwrr"] | None  # None: the NOS default (no share configured)
    weight: int | None  # DWRR percent, None when strict or unscheduled
    ecn: EcnFacts | None


class WatchdogFacts(Model):
    """PFC watchdog on every lossless port (None on the switch when disabled or nothing is lossless)."""

    detection_ms: int
    restoration_ms: int
    action: Literal["drop", "forward", "alert"]
    poll_interval_ms: int
    robustness: int


class QosFacts(Model):
    """Every QoS number a NOS needs, decided once from the policy (fabric.design.derive.qos_facts).

    Renderers only format these; `fabric explain` shows them with the policy value each comes from."""

    trust: Literal["dscp", "pcp"]
    dscp_to_priority: list[int]  # 64 entries, the default priority applied
    dscp_explicit: list[int]  # the DSCPs the policy lists (the rest take default_priority)
    default_priority: int
    dscp_to_tc: list[int]  # 64 entries
    priority_to_tc: list[int]  # 8 entries
    lossless_priorities: list[int]
    lossless_tcs: list[int]
    roce_dscp: int
    cnp_dscp: int
    cnp_priority: int
    queues: dict[int, QueueFacts]  # TC → queue, for every TC that is scheduled or marked
    watchdog: WatchdogFacts | None
    headroom_mode: Literal["static", "dynamic"]
    lossless_mtu: int
    small_packet_percentage: int
    lossless_pool_percent: int  # NVUE: default-lossless traffic pool share (the rest default-lossy)

    @property
    def tsa(self) -> list[str]:
        """ETS algorithm per TC 0-7: strict or ets (DWRR)."""
        strict = {q.tc for q in self.queues.values() if q.scheduler == "strict"}
        return ["strict" if tc in strict else "ets" for tc in range(8)]

    @property
    def tcbw(self) -> list[int]:
        """DWRR percent per TC 0-7, 0 for strict and unscheduled TCs."""
        w = {q.tc: q.weight or 0 for q in self.queues.values()}
        return [w.get(tc, 0) for tc in range(8)]


@dataclass(slots=True)
class PortIntent:
    """One switch port. A plain dataclass: a 32k-GPU fabric has ~200,000 of them (derive passes the fields in order:
    a call of 19 keywords costs about three times a positional one)."""

    name: str
    speed: int  # Gb/s
    lanes: int
    mtu: int
    cable_m: int
    kind: Literal["host", "fabric"]
    peer: str
    peer_port: str
    description: str
    vlan: int | None = None  # svi: the rail VLAN of a host port
    tagged: bool = False  # svi: the host tags the rail VLAN, so the port is a tagged (not access) member of it
    address: str | None = None  # p2p31: leaf side of the /31
    unnumbered: bool = False  # BGP unnumbered session on this port
    adaptive_routing: bool = False
    lossless: bool = True
    pfc: tuple[int, ...] = ()  # lossless priorities with PFC on this port
    watchdog: bool = False  # PFC watchdog on this port (QosFacts.watchdog has its timers)
    headroom: Headroom | None = None
    hw: HwPort | None = None  # SONiC: the platform's port (SerDes lanes, alias, index, FEC, sub-port)


class Svi(Model):
    vlan: int
    name: str  # Vlan1001 (NOS), vlan1001 (Linux bridge)
    address: str  # gateway with prefix, 172.16.0.1/24
    subnet: str
    members: list[str]
    tagged: list[str] = []  # members that carry the VLAN tagged (their host tags it)
    su: int
    rail: int


@dataclass(slots=True)
class BgpNeighbor:
    port: str
    peer: str
    peer_port: str
    remote_asn: int


class BgpIntent(Model):
    asn: int
    router_id: str
    neighbors: list[BgpNeighbor]
    networks: list[str]
    blackholes: list[str] = []  # aggregates announced with a null route (p2p31 rail blocks)
    max_paths: int
    keepalive: int
    hold: int
    graceful_shutdown: bool  # RFC 8326: honour GRACEFUL_SHUTDOWN from peers (LOCAL_PREF 0), able to send it
    bfd: bool
    maximum_routes: int = 0  # routes accepted per neighbour (0: no limit)
    bfd_detect_multiplier: int = 3  # BFD timers where a NOS needs them spelled out (NVUE 5.15 BFD profiles)
    bfd_interval_ms: int = 300


class NeighborIntent(Model):
    aging_s: int
    gc_thresh1: int
    gc_thresh2: int
    gc_thresh3: int
    needed: int  # hosts × (1 + VFs) + fabric peers


class SwitchIntent(Model):
    name: str
    role: Literal["super-spine", "spine", "leaf"]
    target: Target
    platform: str
    asic: str
    release: str  # the NOS release the configs are written for (fabric.nos NOS.releases)
    su: int | None
    rail: int | None
    pod: int | None
    loopback: str  # 10.0.0.1/32
    management: str
    mtu: int
    adaptive_routing: bool
    ports: list[PortIntent]
    svis: list[Svi]
    breakout: dict[str, str] = {}  # SONiC: parent port → platform breakout mode (BREAKOUT_CFG) of the ports in use
    bgp: BgpIntent
    neighbor: NeighborIntent
    qos: QosFacts
    buffer_bytes: int
    origins: dict[str, str] = {}


class PodRail(Model):
    """How a pod attaches this rail (Kubernetes, fabric.render.k8s): one network per rail, named `network` both
    as the NetworkAttachmentDefinition and as the CNI config on this node, which holds what differs per node
    (the SU's subnet, the VLAN). `vf`: an SR-IOV VF with an address from the whereabouts pool of the (SU, rail)
    subnet after its hosts; `pf`: the NIC itself (host-device) with the host's own rail address."""

    network: str  # NAD name = node-local CNI config name = interface name inside the pod (pooled: one NAD)
    resource: str  # sriov-network-device-plugin resource, <prefix>/<name>
    device: Literal["vf", "pf"]
    range_start: str | None = None  # vf: whereabouts range_start/range_end in the rail subnet
    range_end: str | None = None
    pooled: bool = False  # one resource for every rail: the pod finds its rails (fabric.render.k8s.pod_rail_setup)
    address: str | None = None  # pooled vf: this host's VF address, set by the pod (pf: the rail's own address)


class RailIntent(Model):
    rail: int = Field(ge=1, le=64)
    rdma: str = Field(pattern=r"^[A-Za-z0-9_]{1,64}$")
    netdev: IfName  # the physical NIC
    # netdev, or netdev.vlan when tagged on the host side (Linux allows 15 characters; a longer VLAN name is not
    # refused here yet: the k8s-vlan16 fixture has one)
    ifname: str = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,20}$")
    vlan: int | None = Field(ge=1, le=4094)
    vfs: int = Field(ge=0, le=127)
    mtu: int = Field(ge=68, le=65535)
    speed: int = Field(ge=1, le=10_000)
    address: Ipv4If  # 172.16.0.11/24
    gateway: Ipv4
    subnet: Ipv4Net
    table: int = Field(ge=1, le=2**31)
    rule_priority: int = Field(ge=1, le=2**31)
    routes: list[Ipv4Net]  # destinations via the gateway, in the rail's table
    leaf: str = Field(pattern=NAME)
    leaf_port: str = Field(pattern=PORT)
    cable_m: int = Field(ge=0, le=100_000)
    pci: str | None = None  # PCI address of the NIC (inventory, or read from a predictable netdev name)
    vf_trust: bool = True  # with vfs > 0: `ip link set <netdev> vf N trust on|off`
    vf_spoof_check: bool = False  # with vfs > 0: `… spoofchk on|off`
    pod: PodRail | None = None  # how pods attach this rail; None where they cannot (VFs in p2p31 mode)


class NicQos(Model):
    """What `mlnx_qos` and sysfs are told, identical on every rail NIC of a host."""

    trust: Literal["dscp", "pcp"]
    pfc: list[int]  # 8 × 0/1, priority i
    prio_tc: list[int]  # 8, priority i → TC
    tsa: list[Literal["strict", "ets", "vendor"]]  # 8, per TC
    tcbw: list[int]  # 8, per TC, sums to 100 over ETS TCs
    dscp2prio: dict[int, int]  # explicit DSCPs of the policy
    roce_tos: int
    cnp_dscp: int
    cnp_priority: int


class DcqcnIntent(Model):
    np_priorities: list[int]
    rp_priorities: list[int]
    cc_params: dict[str, int]


class GidIntent(Model):
    policy: Literal["roce-v2-ipv4", "auto"]
    index: int


class HostIntent(Model):
    name: str = Field(pattern=NAME)
    su: int
    gpus: int
    management_interface: IfName
    management_address: Ipv4If
    roce_mtu: int
    rails: list[RailIntent]
    # /proc/sys relative path (net/ipv4/conf/eth1/arp_ignore) → value
    sysctls: dict[Annotated[str, StringConstraints(pattern=SYSCTL_KEY)],
                  Annotated[str, StringConstraints(pattern=SYSCTL_VALUE)]]
    nic_qos: NicQos
    dcqcn: DcqcnIntent
    gid: GidIntent
    nccl_env: dict[Annotated[str, StringConstraints(pattern=ENV_KEY)],
                   Annotated[str, StringConstraints(pattern=ENV_VALUE, max_length=ENV_MAX)]]
    rdma_netns: Literal["exclusive", "shared"] | None = None  # RDMA subsystem netns mode; None: not managed
    origins: dict[str, str] = {}

    @model_validator(mode="after")
    def _own_interfaces(self) -> HostIntent:
        """The agent manages the rail interfaces only: never the management interface, nor a sysctl of an
        interface the intent does not name."""
        own = {r.netdev for r in self.rails} | {r.ifname for r in self.rails}
        if self.management_interface in own:
            raise ValueError(f"rails other than the management interface {self.management_interface}")
        foreign = sorted({d for k in self.sysctls if (d := sysctl_interface(k)) and d not in own | {"all", "default"}})
        if foreign:
            raise ValueError(f"sysctls of all, default or a rail interface, found {', '.join(foreign)}")
        return self


@dataclass(slots=True)
class Link:
    """One cable of the fabric, as the topology lays it out and the intent carries it (a plain dataclass: a 32k-GPU
    fabric has ~100,000). `loc`: where the inventory names it (`hosts`, `links`), for a located message."""

    a: str
    a_port: str
    b: str
    b_port: str
    speed: int
    cable_m: int
    kind: str  # host-leaf | leaf-spine | spine-super-spine | explicit
    loc: tuple[Any, ...] = ()


class K8sFacts(Model):
    """Fabric-wide Kubernetes settings (inventory `kubernetes:`); per-rail facts are RailIntent.pod."""

    namespace: str = "default"
    device_plugin_namespace: str = "kube-system"
    resource_prefix: str = "nvidia.com"
    resources: Literal["per-rail", "pooled"] = "per-rail"
    network_name: str = "rail"  # network of rail N: network_name + N (also the pod's interface name)
    explicit: bool = False  # the inventory has a `kubernetes:` section


class FabricIntent(Model):
    name: str
    addressing_mode: Literal["svi", "p2p31"]
    rails: int
    switches: dict[str, SwitchIntent]
    hosts: dict[str, HostIntent]
    links: list[Link]
    kubernetes: K8sFacts = K8sFacts()
