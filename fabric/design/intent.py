"""Per-device intent ("facts"): everything the renderers, the lab, lint and the host agent consume.

These models are the contract between derivation and every consumer. The host intent is serialized
to `host.json` and read back by the host agent, so its shape is a stable boundary.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from pydantic import BaseModel, ConfigDict

from fabric.design.headroom import Headroom
from fabric.model.qos import QosPolicy


class Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


@dataclass(slots=True, kw_only=True)
class PortIntent:
    """One switch port. A plain dataclass: a 32k-GPU fabric has ~200,000 of them."""

    name: str
    speed: int  # Gb/s
    lanes: int
    mtu: int
    cable_m: int
    kind: Literal["host", "fabric"]
    peer: str
    peer_port: str
    description: str
    vlan: int | None = None  # svi: access VLAN of a host port
    address: str | None = None  # p2p31: leaf side of the /31
    unnumbered: bool = False  # BGP unnumbered session on this port
    adaptive_routing: bool = False
    lossless: bool = True
    headroom: Headroom | None = None


class Svi(Model):
    vlan: int
    name: str  # Vlan1001 (NOS), vlan1001 (Linux bridge)
    address: str  # gateway with prefix, 172.16.0.1/24
    subnet: str
    members: list[str]
    su: int
    rail: int


@dataclass(slots=True, kw_only=True)
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
    graceful_shutdown: bool
    bfd: bool


class NeighborIntent(Model):
    aging_s: int
    gc_thresh1: int
    gc_thresh2: int
    gc_thresh3: int
    needed: int  # hosts × (1 + VFs) + fabric peers


class SwitchIntent(Model):
    name: str
    role: Literal["super-spine", "spine", "leaf"]
    target: Literal["sonic", "nvue", "eos", "frr"]
    platform: str
    asic: str
    su: int | None
    rail: int | None
    pod: int | None
    loopback: str  # 10.0.0.1/32
    management: str
    mtu: int
    adaptive_routing: bool
    ports: list[PortIntent]
    svis: list[Svi]
    bgp: BgpIntent
    neighbor: NeighborIntent
    qos: QosPolicy
    buffer_bytes: int
    origins: dict[str, str] = {}


class RailIntent(Model):
    rail: int
    rdma: str
    netdev: str  # the physical NIC
    ifname: str  # netdev, or netdev.vlan when tagged on the host side
    vlan: int | None
    vfs: int
    mtu: int
    speed: int
    address: str  # 172.16.0.11/24
    gateway: str
    subnet: str
    table: int
    rule_priority: int
    routes: list[str]  # destinations via the gateway, in the rail's table
    leaf: str
    leaf_port: str
    cable_m: int


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
    name: str
    su: int
    gpus: int
    management_interface: str
    management_address: str
    roce_mtu: int
    rails: list[RailIntent]
    sysctls: dict[str, str]  # /proc/sys relative path (net/ipv4/conf/eth1/arp_ignore) → value
    nic_qos: NicQos
    dcqcn: DcqcnIntent
    gid: GidIntent
    nccl_env: dict[str, str]
    origins: dict[str, str] = {}


class LinkIntent(Model):
    a: str
    a_port: str
    b: str
    b_port: str
    speed: int
    cable_m: int
    kind: str


class FabricIntent(Model):
    name: str
    addressing_mode: Literal["svi", "p2p31"]
    rails: int
    switches: dict[str, SwitchIntent]
    hosts: dict[str, HostIntent]
    links: list[LinkIntent]
