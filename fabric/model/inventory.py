"""The inventory: what users write in `inventories/<name>/*.yaml`, validated with unknown keys forbidden."""

from __future__ import annotations

import re
from ipaddress import IPv4Interface, IPv4Network
from string import Formatter
from typing import Annotated, Any, ClassVar, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    StringConstraints,
    field_validator,
    model_validator,
)

from fabric.model.patterns import (
    ENV_KEY,
    ENV_MAX,
    ENV_VALUE,
    IFNAME,
    LINE,
    NAME,
    PORT,
    SYSCTL_KEY,
    SYSCTL_VALUE,
    Role,
    Target,
)
from fabric.model.units import Bytes, Gbps, Metres, Seconds
from fabric.nos import names as nos_names

MAX_PARALLEL_LINKS = 64  # parallel links between two switches of adjacent tiers
TEMPLATE = re.compile(r"\{[{%#]")  # Jinja syntax: never in a name of a file or host (it reaches Ansible)


def _no_template(v: object) -> object:
    if isinstance(v, str) and TEMPLATE.search(v):
        raise ValueError("a file name without template syntax ({{, {% or {#})")
    return v


FilePath = Annotated[str, AfterValidator(_no_template), StringConstraints(pattern=LINE, max_length=4096)]
MAX_HOSTS, MAX_SWITCHES, MAX_LINKS = 65_536, 16_384, 1_048_576
Name = Annotated[str, StringConstraints(pattern=NAME)]
IfName = Annotated[str, StringConstraints(pattern=IFNAME)]
SysctlKey = Annotated[str, StringConstraints(pattern=SYSCTL_KEY)]


def _text(v: object) -> object:
    """A number written without quotes is the same text (sysctl values, environment values)."""
    if isinstance(v, bool):
        return str(int(v))
    if isinstance(v, int) and -2**63 <= v < 2**64:
        return str(v)
    return v


SysctlValue = Annotated[str, BeforeValidator(_text), StringConstraints(pattern=SYSCTL_VALUE)]


def _address(v: object) -> object:
    """An address or prefix as text: pydantic would read `true` or `5` as 0.0.0.1/32 and 0.0.0.5/32."""
    if isinstance(v, str | IPv4Network | IPv4Interface):
        return v
    raise ValueError("an IPv4 prefix written as text, like 10.0.0.0/16")


Network = Annotated[IPv4Network, BeforeValidator(_address)]
Interface = Annotated[IPv4Interface, BeforeValidator(_address)]
EnvKey = Annotated[str, StringConstraints(pattern=ENV_KEY)]
EnvValue = Annotated[str, BeforeValidator(_text), StringConstraints(pattern=ENV_VALUE, max_length=ENV_MAX)]


def format_problem(pattern: str, fields: tuple[str, ...]) -> str | None:
    """Why a `topology.names` format string cannot make device names (None: it can): only the role's fields,
    no conversions, a numeric spec of at most two digits, and a result that is a device name."""
    try:
        parts = list(Formatter().parse(pattern))
    except ValueError as exc:
        return f"a format string ({exc})"
    for _text, field, spec, conversion in parts:
        if field is None:
            continue
        if field not in fields:
            return f"fields among {{{'}, {'.join(fields)}}} (not {{{field}}})"
        if conversion or not re.fullmatch(r"0?[1-9]?d?", spec or ""):
            return f"plain fields such as {{{fields[0]}}} or {{{fields[0]}:02d}}"
    sample = pattern.format(**dict.fromkeys(fields, 1))
    if not re.fullmatch(NAME, sample):
        return f"names of at most 63 letters, digits, _ . - (it makes {sample!r})"
    return None


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)


class FabricInfo(Strict):
    name: str = Field(pattern=NAME,
        description="fabric name: names the build directory, the lab's namespaces and the state directory")
    description: str = Field("", max_length=200, pattern=LINE, description="one line about the fabric, for people")


class NamePatterns(Strict):
    """Python format strings; fields: su, rail, n (1-based), h (host in SU, 1-based), pod, plane."""

    FIELDS: ClassVar[dict[str, tuple[str, ...]]] = {
        "super_spine": ("plane", "n"), "spine": ("n", "pod", "plane"), "leaf": ("su", "rail", "pod"),
        "host": ("su", "h")}

    super_spine: str = Field("super{plane}-{n}", max_length=64, description="super-spine names; fields plane and n")
    spine: str = Field("spine{n}", max_length=64, description="spine names; fields n, pod and plane")
    leaf: str = Field("leaf-su{su}-r{rail}", max_length=64, description="rail leaf names; fields su, rail and pod")
    host: str = Field("gpu-su{su}-{h:02d}", max_length=64,
                      description="GPU host names; fields su and h (host in its SU)")

    @field_validator("super_spine", "spine", "leaf", "host")
    @classmethod
    def _pattern(cls, v: str, info: Any) -> str:
        why = format_problem(v, cls.FIELDS[info.field_name])
        if why:
            raise ValueError(why)
        return v


class Topology(Strict):
    """Rail-optimized generation. Leave `scalable_units` at 0 to describe everything explicitly."""

    rails: int = Field(ge=1, le=16, description="rail NICs per host, one rail leaf per rail in every SU")
    scalable_units: int = Field(0, ge=0, le=4096,
        description="scalable units to generate (0: describe every switch, host and link explicitly)")
    hosts_per_su: int = Field(0, ge=0, le=1024, description="GPU hosts per scalable unit")
    spines: int = Field(0, ge=0, le=512, description="spines (per pod when super_spines > 0)")
    uplinks_per_spine: int = Field(1, ge=1, le=MAX_PARALLEL_LINKS,
                                   description="parallel links from each leaf to each spine")
    pods: int = Field(1, ge=1, le=256, description="pods of scalable units, each with its own spines (3-tier)")
    super_spines: int = Field(0, ge=0, le=512, description="super-spines per plane; plane k joins spine k of every pod")
    uplinks_per_super_spine: int = Field(1, ge=1, le=MAX_PARALLEL_LINKS,
                                         description="parallel links from each spine to each super-spine of its plane")
    names: NamePatterns = Field(NamePatterns(), description="format strings of generated device names")

    @model_validator(mode="after")
    def _size(self) -> Topology:
        """Refused before anything is built: a fabric larger than any cluster this tool is for."""
        hosts = self.scalable_units * self.hosts_per_su
        switches = self.scalable_units * self.rails + self.pods * self.spines + self.spines * self.super_spines
        links = hosts * self.rails + self.scalable_units * self.rails * self.spines * self.uplinks_per_spine
        if hosts > MAX_HOSTS or switches > MAX_SWITCHES or links > MAX_LINKS:
            raise ValueError(f"a fabric of at most {MAX_HOSTS} hosts, {MAX_SWITCHES} switches and {MAX_LINKS} links, "
                             f"found {hosts} hosts, {switches} switches, {links} links")
        return self


RELEASE = r"^[0-9][0-9A-Za-z.]*$"


class RoleSettings(Strict):
    platform: str = Field(
        description="switch model: sn5600, sn5400, sn4700, sn4600c, msn2700, 7060x5, 7060x6 or linux-frr")
    target: Target = Field(description=f"the NOS the configs are written for: {nos_names()}")
    breakout: str | None = Field(None, pattern=r"^[1-8]x\d+G$", description="e.g. 2x400G")
    release: str | None = Field(None, pattern=RELEASE,
                                description="NOS release the configs are written for (e.g. NVUE 5.9 or 5.15); "
                                            "default: the NOS's default for the platform")

    @field_validator("platform")
    @classmethod
    def _known_platform(cls, v: str) -> str:
        from fabric.model.platforms import PLATFORMS

        if v not in PLATFORMS:
            raise ValueError(f"one of {', '.join(sorted(PLATFORMS))}")
        return v


class SwitchDef(Strict):
    """An explicit switch (irregular fabrics) or per-switch overrides of a generated one."""

    name: str = Field(pattern=NAME, description="switch name (a generated one to override it, or a new one)")
    role: Role | None = Field(None, description="leaf, spine or super-spine")
    platform: str | None = Field(None, description="switch model (overrides the role's)")
    target: Target | None = Field(None, description="NOS (overrides the role's)")
    breakout: str | None = Field(None, pattern=r"^[1-8]x\d+G$",
                                 description="port breakout, e.g. 2x400G (overrides the role's)")
    su: int | None = Field(None, ge=1, le=4096, description="scalable unit of a leaf")
    rail: int | None = Field(None, ge=1, le=16, description="rail of a leaf")
    pod: int | None = Field(None, ge=1, le=256, description="pod of a leaf or spine (three tiers)")
    asn: int | None = Field(None, ge=1, le=4294967295, description="BGP ASN (default from addressing.asn)")
    adaptive_routing: bool | None = Field(None,
        description="adaptive routing on this switch (overrides switching.adaptive_routing.enabled)")
    release: str | None = Field(None, pattern=RELEASE, description="NOS release of this switch (overrides the role's)")


class LinkClass(Strict):
    speed: Gbps = Field(description="link speed, e.g. 400G")
    cable: Metres = Field(description="cable length in metres, e.g. 5m (it sizes the PFC headroom)")


class Cabling(Strict):
    host_leaf: LinkClass = Field(LinkClass(speed="400G", cable="5m"), description="host NIC to rail leaf links")
    leaf_spine: LinkClass = Field(LinkClass(speed="400G", cable="40m"), description="leaf to spine links")
    spine_super_spine: LinkClass = Field(LinkClass(speed="400G", cable="100m"),
                                         description="spine to super-spine links")


NEUTRAL_PORT = r"[1-9][0-9]{0,2}(?:/[1-8])?"  # front-panel port [/ sub-port of its breakout]: 12, 12/2
LINK_END = NAME[:-1] + ":(?:" + PORT[1:-1] + "|" + NEUTRAL_PORT + ")$"  # device:port, the NOS's name or 12/2


class LinkDef(Strict):
    """`a`/`b` as `device:port`: the NOS's port name (swp12s1, Ethernet12/5) or NOS-neutral `12/2` (front-panel
    port 12, the second port of its breakout; `12` unbroken), which the switch's NOS names. Matching a generated
    link overrides its speed/cable; otherwise adds one."""

    a: str = Field(pattern=LINK_END, description="one end, device:port")
    b: str = Field(pattern=LINK_END, description="the other end, device:port")
    speed: Gbps | None = Field(None, description="link speed (default: its link class's)")
    cable: Metres | None = Field(None, description="cable length (default: its link class's)")


class AsnPlan(Strict):
    """RFC 7938: one ASN for all spines (per pod in 3 tiers), one per leaf, one for super-spines."""

    super_spines: int = Field(64900, ge=1, le=4294967295, description="ASN of the super-spines")
    spines: int = Field(65000, ge=1, le=4294967295, description="ASN of the spines (one per pod in three tiers)")
    leaves: int = Field(65100, ge=1, le=4294967295,
                        description="ASN of the first leaf; each next leaf takes the next number")


class Addressing(Strict):
    mode: Literal["svi", "p2p31"] = Field("svi",
        description="svi: one subnet per SU and rail, gateway on the leaf's VLAN interface; p2p31: a /31 per host port")
    loopbacks: Network = Field(description="pool of switch loopback addresses")
    rails: Network = Field(description="pool of host rail subnets")
    rail_prefix_length: int = Field(24, ge=8, le=30, description="block per (scalable unit, rail)")
    management: Network = Field(IPv4Network("198.18.0.0/16"), description="management network of switches and hosts")
    vlan_base: int = Field(1000, ge=2, le=4000, description="svi: VLAN id = vlan_base + rail")
    table_base: int = Field(100, ge=1, le=250, description="host routing table = table_base + rail")
    rule_priority_base: int = Field(1000, ge=1, le=30000,
                                    description="host policy-routing rule priority = rule_priority_base + rail")
    asn: AsnPlan = Field(AsnPlan(), description="BGP ASN plan (RFC 7938, private ranges)")


class AdaptiveRouting(Strict):
    enabled: bool = Field(False, description="adaptive routing on the leaves where the platform runs it")
    link_utilization_threshold: int | None = Field(None, ge=1, le=100,
        description="percent of link utilization at which flows move (NOS default when unset)")


class Neighbor(Strict):
    """ARP/ND: containers reuse addresses fast, so stale entries must age out quickly."""

    aging: Seconds = Field(300, description="ARP base reachable time / aging")
    table_size: int | None = Field(None, ge=128, le=2**31 - 1,
                                   description="gc_thresh3; default sized from hosts × (1+VFs)")


class BgpOptions(Strict):
    keepalive: int = Field(3, ge=1, le=60, description="BGP keepalive in seconds")
    hold: int = Field(9, ge=3, le=180, description="BGP hold time in seconds")
    max_paths: int = Field(64, ge=1, le=512, description="ECMP paths")
    graceful_shutdown: bool = Field(True, description="RFC 8326: routes from peers that carry GRACEFUL_SHUTDOWN "
                                    "(65535:0) get LOCAL_PREF 0, and the switch can send the community when drained")
    bfd: bool = Field(False, description="BFD on every fabric BGP session")
    maximum_routes: int = Field(256000, ge=0, le=2**32 - 1,
                                description="routes accepted per fabric neighbour (0: no limit); "
                                "rendered where the NOS limits by default (EOS `maximum-routes`)")


class Switching(Strict):
    mtu: int = Field(9216, ge=1500, le=9216, description="switch port MTU, capped to what the NOS takes")
    adaptive_routing: AdaptiveRouting = Field(AdaptiveRouting(), description="adaptive routing")
    neighbor: Neighbor = Field(Neighbor(), description="ARP/ND aging and table size")
    bgp: BgpOptions = Field(BgpOptions(), description="BGP timers, paths and policies")


class NicDef(Strict):
    rail: int = Field(ge=1, le=16, description="rail this NIC is cabled to")
    rdma: str = Field(pattern=r"^[A-Za-z0-9_]{1,64}$", description="RDMA device, e.g. mlx5_0")
    netdev: IfName = Field(description="Linux interface name of the NIC")
    vlan: int | None = Field(None, ge=1, le=4094, description="tag on the host side")
    vfs: int = Field(0, ge=0, le=127, description="SR-IOV virtual functions")
    pci: str | None = Field(None, pattern=r"^[0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]$",
                            description="PCI address of the NIC (0000:18:00.0); default: read from a predictable "
                                        "netdev name (enp24s0np0); the device plugin selects a passed-through PF by it")

    @field_validator("pci", mode="before")
    @classmethod
    def _quoted_pci(cls, v: object) -> object:
        if v is not None and not isinstance(v, str):  # YAML 1.1 reads 0000:18:00.0 as a base-60 number
            raise ValueError(f"a quoted PCI address such as \"0000:18:00.0\" (unquoted, YAML reads it as the "
                             f"number {v})")
        return v


class Dcqcn(Strict):
    enabled: bool = Field(True, description="DCQCN congestion control on the NIC")
    priorities: list[Annotated[int, Field(ge=0, le=7)]] | None = Field(None, max_length=8,
                                                                      description="default: the lossless priorities")
    cc_params: dict[Annotated[str, StringConstraints(pattern=r"^[a-z0-9_]{1,64}$")],
                    Annotated[int, Field(ge=0, le=2**32 - 1)]] = Field(
        default_factory=dict, description="mlx5 cc_params, e.g. rp_ai_rate")


class Gid(Strict):
    """`roce-v2-ipv4`: NCCL is told `index` and the host agent checks it is the RoCE v2 IPv4 GID;
    `auto`: NCCL picks by address family and RoCE version (no NCCL_IB_GID_INDEX)."""

    policy: Literal["roce-v2-ipv4", "auto"] = Field("roce-v2-ipv4",
        description="roce-v2-ipv4: NCCL is told the index and the host agent checks it; auto: NCCL picks")
    index: int = Field(3, ge=0, le=255, description="GID index of the RoCE v2 IPv4 GID")


class HostSettings(Strict):
    gpus: int | None = Field(None, ge=0, le=64, description="GPUs per host")
    management_interface: IfName | None = Field(None, description="management interface name")
    nics: list[NicDef] | None = Field(None, max_length=64, description="the RDMA NICs, one per rail")
    mtu: int | None = Field(None, ge=1280, le=9216, description="rail interface MTU")
    roce_mtu: Literal[256, 512, 1024, 2048, 4096] | None = Field(None, description="RoCE path MTU")
    roce_tos: int | None = Field(None, ge=0, le=255,
                                 description="RoCE traffic class byte (default: RoCE DSCP << 2 | ECT(0))")
    dcqcn: Dcqcn | None = Field(None, description="DCQCN settings")
    gid: Gid | None = Field(None, description="which GID NCCL uses")
    sysctls: dict[SysctlKey, SysctlValue] | None = Field(None,
        description="extra sysctls; {if} in a key expands per rail interface")
    nccl_env: dict[EnvKey, EnvValue] | None = Field(None, description="extra NCCL environment variables")


class HostDef(HostSettings):
    name: str = Field(pattern=NAME, description="host name")
    su: int | None = Field(None, ge=1, le=4096, description="scalable unit of the host")
    management: Interface | None = Field(None, description="management address with prefix, e.g. 198.18.1.10/16")


class Hosts(Strict):
    defaults: HostSettings = Field(HostSettings(),
                                   description="settings every host takes unless its entry says otherwise")
    entries: list[HostDef] = Field(default_factory=list, alias="list", description="the hosts (key `list`)")


class Waiver(Strict):
    rule: str = Field(pattern=r"^RF\d+$", description="lint rule id, e.g. RF404")
    objects: list[Annotated[str, StringConstraints(pattern=LINE, max_length=200)]] = Field(min_length=1,
        description="objects waived (globs of device names or finding objects)")
    reason: str = Field(min_length=3, max_length=500, pattern=LINE, description="why, for the reviewer")


class LintSettings(Strict):
    waive: list[Waiver] = Field(default_factory=list, description="waived findings")
    oversubscription_warn: float = Field(1.0, gt=0, le=1000, allow_inf_nan=False,
        description="warn when a leaf's downlink to uplink capacity ratio exceeds this")


class LabSettings(Strict):
    management: Network = Field(IPv4Network("198.18.0.0/16"), description="the lab's management network")
    prefix: str = Field("rf", pattern=r"^[a-z]{1,4}$", description="prefix of every lab namespace and link")
    port_rate: str = Field("1gbit", pattern=r"^[1-9]\d{0,5}(k|m|g)bit$",
                           description="every lab switch port is shaped to this tc rate (lower under emulation)")


class Access(Strict):
    """How to reach devices. Only names of variables and files, never secrets."""

    username: str | None = Field(None, pattern=r"^[A-Za-z0-9_][A-Za-z0-9_.@-]{0,63}$",
                                 description="login name (or from username_env)")
    username_env: str = Field("FABRIC_USERNAME", pattern=ENV_KEY,
                              description="environment variable holding the login name")
    password_env: str = Field("FABRIC_PASSWORD", pattern=ENV_KEY,
                              description="environment variable holding the password (never in the inventory)")
    key_file: FilePath | None = Field(None, description="SSH private key file")
    known_hosts: FilePath = Field("~/.ssh/known_hosts", description="SSH known_hosts file")
    port: int = Field(22, ge=1, le=65535, description="SSH port")


class Kubernetes(Strict):
    """Pods on the rails: sriov-network-device-plugin resources, one multus network per rail (its CNI config
    lives on each node, fabric.render.k8s) and the VF settings the host agent applies."""

    namespace: str = Field("default", pattern=r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$", max_length=63,
                           description="namespace of the networks (NADs) and acceptance jobs")
    device_plugin_namespace: str = Field("kube-system", pattern=r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$", max_length=63,
                                         description="namespace of the SR-IOV device plugin's config")
    resource_prefix: str = Field("nvidia.com", max_length=200,
                                 pattern=r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$",
     description="prefix of the device plugin's resources")
    resources: Literal["per-rail", "pooled"] = Field(
        "per-rail", description="per-rail: one resource per rail NIC; pooled: one resource for all "
        "(multi-NIC hosts: vfs 0 or 1 and a PCI address per NIC; the pod finds its rails)")
    resource_name: str = Field("rail", pattern=r"^[A-Za-z][A-Za-z0-9_]*$", max_length=40,
                               description="per-rail: this name + the rail number (rail1); pooled: the resource")
    network_name: str = Field("rail", pattern=r"^[a-z][a-z0-9]*$", max_length=12,
                              description="network (NAD) per rail: this name + the rail number; the pod's interface")
    rdma_netns: Literal["exclusive", "shared"] | None = Field(
        None, description="RDMA subsystem netns mode; default: exclusive on hosts whose NICs have VFs, else unmanaged")
    vf_trust: bool = Field(True, description="VF trust on (needed for RoCE in pods on some NICs)")
    vf_spoof_check: bool = Field(False, description="VF spoof check")


class Monitoring(Strict):
    """Alert thresholds of `fabric export -f prometheus` (fabric/export/prometheus.py); each default is documented
    there and shown by `fabric explain DEVICE monitoring`."""

    rate_window: Seconds = Field(120, ge=1, description="range of every rate() (2m = 120s)")
    pending: Seconds = Field(120, ge=0, description="`for:` of every alert")
    pause_storm_fraction: float = Field(0.5, gt=0, le=1, allow_inf_nan=False,
                                        description="share of time a port is paused on a lossless priority")
    ecn_marked_fraction: float = Field(0.05, gt=0, le=1, allow_inf_nan=False,
                                       description="ECN-marked share of a rail's RoCE packets received")
    cnp_sender_min_fraction: float = Field(0.05, gt=0, le=1, allow_inf_nan=False,
                                           description="lossless send rate, as a share of the link, to judge a sender")
    out_of_sequence_per_s: float = Field(1.0, ge=0, allow_inf_nan=False,
                                         description="alert above this rate of NIC out-of-sequence packets")
    lossless_drops_per_s: float = Field(0.0, ge=0, allow_inf_nan=False,
                                        description="alert above this rate of drops on a lossless queue")
    optics_rx_power_min_dbm: float | None = Field(None, ge=-40, le=10, allow_inf_nan=False,
                                                  description="alert below this + optics_margin_db (SONiC only)")
    optics_margin_db: float = Field(1.0, ge=0, le=20, allow_inf_nan=False,
                                    description="margin above the optics' own rx-power alarm threshold")
    node_exporter_port: int = Field(9100, ge=1, le=65535, description="node_exporter port on hosts")
    switch_exporter_port: int | None = Field(None, ge=1, le=65535,
                                             description="default: the NOS exporter's (fabric/export/sources.py)")


class Inventory(Strict):
    """All sections, merged from every YAML file of the inventory directory."""

    fabric: FabricInfo
    topology: Topology
    roles: dict[Role, RoleSettings]
    switches: list[SwitchDef] = Field(default_factory=list)
    cabling: Cabling = Cabling()
    links: list[LinkDef] = Field(default_factory=list)
    addressing: Addressing
    qos: dict[str, Any] = Field(default_factory=lambda: {"preset": "nvidia-roce"},
                                description="preset plus any single-value override of QosPolicy")
    switching: Switching = Switching()
    hosts: Hosts = Hosts()
    lint: LintSettings = LintSettings()
    lab: LabSettings = LabSettings()
    access: Access = Access()
    kubernetes: Kubernetes = Kubernetes()
    monitoring: Monitoring = Monitoring()


__all__ = ["Bytes", "Inventory"]
