"""The table of network operating systems: one row per NOS, one folder per NOS.

A row says what the rest of the tool needs to know about a NOS without importing its code: how it
names ports, which files a switch gets, which of them the push diffs and applies, the releases the
renderer writes for, how a saved running configuration is named and shaped, where its config keeps
secrets, whether it renders QoS at all, and the netmiko device type. The folder `fabric/nos/<name>/`
holds the code and data, found by convention:

    render.py       render(switch_intent, fabric_intent) -> {file name: text}    pure (fabric.render calls it)
    configs.py      parse(path, device, text) -> DeviceConfig                     pure (`fabric lint --configs`)
    driver.py       DRIVER: a fabric.targets.base.Driver subclass                 effectful (plan/apply/rollback)
    telemetry.yaml  its exporter's metrics (fabric.export.sources); optional      `fabric export -f prometheus`

Adding a NOS is one folder with those three modules (plus its templates/<name>/ if it uses Jinja)
and one row below; no other module branches on a NOS's name. This module imports nothing of the project, so every
layer may read it: what a layer below the NOS folders needs of a NOS is a field here.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from importlib import import_module
from types import ModuleType
from typing import Literal

PortNaming = Callable[[int, int, int], str]  # (sub-ports per physical port, lanes per port, 0-based index)


def ethernet_by_lane(ways: int, lanes: int, index: int) -> str:
    """SONiC: `Ethernet<first lane>` — Ethernet0, Ethernet8, … (2x breakout: Ethernet0, Ethernet4)."""
    n, k = divmod(index, ways)
    return f"Ethernet{n * lanes + k * (lanes // ways)}"


def ethernet_slash(ways: int, lanes: int, index: int) -> str:
    """EOS: `Ethernet<port>/<first lane>` — Ethernet1/1, Ethernet1/5 (2x breakout of an 8-lane port)."""
    n, k = divmod(index, ways)
    return f"Ethernet{n + 1}/{k * (lanes // ways) + 1}"


def swp(ways: int, lanes: int, index: int) -> str:
    """Cumulus/NVUE and Linux switchdev: swp1, swp2 … (breakout: swp1s0, swp1s1)."""
    n, k = divmod(index, ways)
    return f"swp{n + 1}s{k}" if ways > 1 else f"swp{n + 1}"


# What a NOS's LLDP agent sends as a port's Port ID: its interface `name` (Cumulus' lldpd, EOS), the platform's
# `alias` (SONiC's lldpmgrd: etp1 for Ethernet0), or its `mac` with the name as port description (stock lldpd on
# Linux); a plan checked against LLDP (PTM's topology.dot) names a neighbour's port the way it is sent
LldpPortId = Literal["name", "alias", "mac"]
RunningShape = Literal["config_db", "nvue", "text"]  # the shape of a saved running configuration
SecretScheme = Literal["config_db", "nvue", "eos_cli", "frr_cli", "words"]  # where a config keeps its secrets
WatchdogFields = dict[str, frozenset[str] | None]  # qos.pfc_watchdog field → the values the NOS takes (None: any)
# What a NOS does with the requested watchdog ({detection, restoration, poll_interval: ms, action, robustness}):
# field → (what the switch then runs, how); a field left out runs as requested, a value None is no setting of
# the NOS with no effect of its own (robustness where detection is a time).
WatchdogEffect = Callable[[dict[str, object]], dict[str, tuple[object, str]]]


def timed_watchdog(req: dict[str, object]) -> dict[str, tuple[object, str]]:
    """SONiC PFC_WD: detection_time, restoration_time, action and POLL_INTERVAL in ms, as requested; no
    robustness count (it detects by time)."""
    return {"robustness": (None, "no robustness count: it detects after detection_time")}


def eos_watchdog(req: dict[str, object]) -> dict[str, tuple[object, str]]:
    """EOS `priority-flow-control pause watchdog`: timeout and recovery-time in seconds with 2 decimals,
    polling-interval with 3, action drop|no-drop (no alert-only action: none is rendered, EOS's default
    applies); no robustness count."""
    out: dict[str, tuple[object, str]] = {"robustness": (None, "no robustness count: it detects after the timeout")}
    for key, word, places in (("detection", "timeout", 2), ("restoration", "recovery-time", 2),
                              ("poll_interval", "polling-interval", 3)):
        ms = int(str(req[key]))
        took = round(float(f"{ms / 1000:.{places}f}") * 1000)
        if took != ms:
            out[key] = (took, f"EOS takes the {word} in seconds with {places} decimals: {took / 1000:g} s")
    if req["action"] == "alert":
        out["action"] = ("EOS's default action", "EOS has drop and no-drop, no alert-only action")
    return out


def nvue_watchdog(req: dict[str, object]) -> dict[str, tuple[object, str]]:
    """NVUE `qos pfc-watchdog`: only polling-interval and robustness (tests/fixtures/nvue/paths.yaml): the switch
    declares a storm after robustness polls, so it detects after poll_interval × robustness; its mitigation
    drops; there is no restoration setting."""
    poll, n = int(str(req["poll_interval"])), int(str(req["robustness"]))
    return {"detection": (poll * n, f"NVUE detects after poll_interval × robustness = {poll} ms × {n}"),
            "restoration": ("the switch's own", "NVUE has no restoration setting"),
            "action": ("drop", "NVUE's watchdog drops the stalled queue (no action setting)")}


@dataclass(frozen=True)
class CablingCheck:
    """The NOS's own check of its cables against a plan (docs/cabling.md, "On the switch")."""

    mechanism: str | None  # what checks, and the rendered file it reads; None: the NOS has no such check
    note: str  # how it is turned on, or why there is none and what to run instead


@dataclass(frozen=True)
class Nos:
    name: str
    title: str
    short: str  # the one word engineers call it by (error messages): SONiC, NVUE, EOS, FRR
    releases: tuple[str, ...]  # releases the renderer writes for (oldest first)
    port_name: PortNaming
    files: tuple[str, ...]  # files rendered per switch
    intended: str  # the file the push diffs against and applies
    running_suffix: str  # a saved running configuration: <switch><suffix> (plan --running, lint --configs)
    # its shape, checked before any parser or diff reads it (fabric.model.running.SHAPES): `config_db` (SONiC
    # CONFIG_DB JSON), `nvue` (an NVUE YAML tree or list of documents), `text` (indented CLI text)
    running_shape: RunningShape
    # where its config keeps secrets, masked in every diff shown (fabric.secrets.SECRETS): the leaves of CONFIG_DB
    # or the NVUE tree, the value slots of EOS or FRR commands, or `words` (after any secret keyword)
    secrets: SecretScheme
    device_type: str  # netmiko device type
    mtu_max: int  # the largest port/L3 MTU the NOS takes; derivation caps switching.mtu to it
    watchdog: WatchdogFields | None  # PFC watchdog settings it renders; None: the NOS has no PFC watchdog
    # it renders the QoS policy (trust, DSCP maps, PFC, ECN, buffers): a lossless policy on a switch whose NOS
    # renders none is a located inventory error (fabric.design.topology), never a switch silently without QoS
    renders_qos: bool
    watchdog_effect: WatchdogEffect | None = None  # what it does with each requested watchdog value
    adaptive_routing: bool = False  # renders adaptive routing (NVIDIA AR on the ports the platform allows)
    # Ownership (fabric/targets/owned.py): the tool owns every leaf its render has, what an earlier apply
    # rendered, and every leaf under an entry of its render matching one of these paths ("/"-joined globs)
    owned_whole: tuple[str, ...] = ()
    # text NOS (fabric.targets.owned.scope): objects owned whole where the render names them (a BGP neighbour or
    # peer group, in its instance; a community list), device settings that contradict a rendered one, keys of
    # multi-word settings, and the one instance the tool never renumbers (`router bgp <asn>`: another ASN is a
    # plan error)
    owned_objects: tuple[tuple[str, str], ...] = ()
    owned_implied: tuple[tuple[str, str, str], ...] = ()
    setting_keys: tuple[str, ...] = ()
    no_renumber: str = ""
    # settings the tool never owns, though its render has them (path patterns as in `owned_whole`): a new switch
    # gets the rendered line, a running one keeps its own; the "never touched" column of docs/plan-apply.md names each
    never_owned: tuple[str, ...] = ()
    default_release: dict[str, str] = field(default_factory=dict)  # platform → release; others: the newest
    # rendered files the push does not apply, each with the reason (every other file is applied by the driver:
    # tests/nos/test_everything_pushed.py)
    not_pushed: tuple[tuple[str, str], ...] = ()
    # ports come from the platform's own port map (SONiC `platform.json`/`port_config.ini`: lanes, index,
    # alias and the breakouts it defines), refused where the platform lacks them
    platform_ports: bool = False
    # DSCPs a map leaves out fall to the NOS's own default rather than to best effort: list all 64
    dscp_map_complete: bool = False
    lldp_port_id: LldpPortId = "name"
    cabling_check: CablingCheck = CablingCheck(None, "")

    def module(self, part: str) -> ModuleType:
        """`render`, `configs` or `driver` of this NOS."""
        return import_module(f"fabric.nos.{self.name}.{part}")

    def release_for(self, platform: str) -> str:
        """The release a switch of `platform` renders for when the inventory declares none."""
        return self.default_release.get(platform, self.releases[-1])


_ANY = None
NOS: dict[str, Nos] = {n.name: n for n in (
    # SONiC: PORT mtu 1312-9216 (sonic-port.yang); PFC_WD has detection_time, restoration_time, action
    # drop|forward|alert and a global POLL_INTERVAL (sonic-pfcwd.yang), no robustness.
    Nos(name="sonic", title="SONiC (community, frrcfgd)", short="SONiC", releases=("202405", "202411"),
        port_name=ethernet_by_lane,
        files=("config_db.json", "sysctl.conf"), intended="config_db.json", running_suffix=".json",
        running_shape="config_db", secrets="config_db", device_type="linux", mtu_max=9216, platform_ports=True,
        dscp_map_complete=True, lldp_port_id="alias",
        cabling_check=CablingCheck(None, "community SONiC compares no neighbour with a plan: DEVICE_NEIGHBOR only "
                                   "lists the expected ones (`show interfaces neighbor expected`); run `fabric "
                                   "cabling` or `fabric accept`"),
        watchdog={"detection": _ANY, "restoration": _ANY, "action": _ANY, "poll_interval": _ANY},
        watchdog_effect=timed_watchdog, renders_qos=True,
        # the QoS maps, profiles and BGP objects the tool names: a field its render lacks is removed
        owned_whole=("DSCP_TO_TC_MAP/*", "TC_TO_QUEUE_MAP/*", "TC_TO_PRIORITY_GROUP_MAP/*",
                     "MAP_PFC_PRIORITY_TO_QUEUE/*", "PFC_PRIORITY_TO_PRIORITY_GROUP_MAP/*", "WRED_PROFILE/*",
                     "SCHEDULER/*", "BGP_NEIGHBOR/*", "BGP_NEIGHBOR_AF/*", "ROUTE_MAP/*", "COMMUNITY_SET/*")),
    # NVUE: `link mtu` 552-9216; the watchdog has only `qos pfc-watchdog polling-interval` and `robustness`
    # (tests/fixtures/nvue/paths.yaml). Default release per platform: NVIDIA's minimum release and life cycle
    # per switch model (same table, `platforms`): Spectrum-4/-3 400G+ on 5.15, the older ones on the 5.9 ESR.
    Nos(name="nvue", title="NVIDIA Cumulus Linux (NVUE)", short="NVUE", releases=("5.9", "5.15"), port_name=swp,
        files=("nvue-patch.yaml", "nv-set.txt", "topology.dot"), intended="nvue-patch.yaml", running_suffix=".yaml",
        running_shape="nvue", secrets="nvue", device_type="cumulus_linux", mtu_max=9216,
        watchdog={"poll_interval": _ANY, "robustness": _ANY}, renders_qos=True,
        watchdog_effect=nvue_watchdog, adaptive_routing=True,
        not_pushed=(("nv-set.txt", "the same change as `nv set` lines, for review or a hand session; the push "
                     "applies nvue-patch.yaml"),
                    ("topology.dot", "PTM's cabling plan, rendered with --all: NVUE has no object for "
                     "/etc/ptm.d/topology.dot, so it is copied there by hand or by the site's file tooling and read "
                     "with `sudo systemctl restart ptmd.service`")),
        cabling_check=CablingCheck("PTM (ptmd) checks each port's LLDP neighbour against /etc/ptm.d/topology.dot "
                                   "on every link change: `sudo ptmctl` (cbl status pass, fail or N/A)",
                                   "copy topology.dot (`fabric render --all`) to /etc/ptm.d/ and restart "
                                   "ptmd.service; NVUE's `router ptm` (`nv show router ptm`) also keeps routing "
                                   "off ports that fail"),
        owned_whole=("vrf/*/router/bgp/neighbor/*", "qos/mapping/*", "qos/egress-scheduler/*",
                     "qos/congestion-control/*", "qos/egress-queue-mapping/*", "router/policy/route-map/*"),
        default_release={"sn5600": "5.15", "sn5400": "5.15", "sn4700": "5.15", "sn4600c": "5.9", "msn2700": "5.9"}),
    # EOS: L3 MTU 68-9214 (arista.com EOS L3 MTU; AVD's p2p_uplinks_mtu default 9214); the watchdog has
    # timeout, recovery-time, polling-interval and action drop|no-drop, no robustness and no `alert`.
    Nos(name="eos", title="Arista EOS", short="EOS", releases=("4.32",), port_name=ethernet_slash,
        files=("running-config.cfg",), intended="running-config.cfg", running_suffix=".cfg",
        running_shape="text", secrets="eos_cli", device_type="arista_eos", mtu_max=9214, renders_qos=True,
        watchdog={"detection": _ANY, "restoration": _ANY, "poll_interval": _ANY,
                  "action": frozenset({"drop", "forward"})},
        watchdog_effect=eos_watchdog,
        cabling_check=CablingCheck(None, "EOS has no on-box check of LLDP neighbours against a plan (Arista's "
                                   "is off the switch: ANTA's VerifyLLDPNeighbors); run `fabric cabling` or "
                                   "`fabric accept`"),
        owned_whole=("interface */tx-queue *", "route-map *"),
        owned_objects=((r"router bgp \d+", r"neighbor (interface \S+|\S+)"),
                       (r"ip community-list .*", r"ip community-list (\S+)")),
        # EOS command reference, Ethernet interfaces: `switchport` / `no switchport` (a routed port takes no
        # switchport settings, a switched port no L3 `ip address`), `channel-group` (a member's L2/L3 settings come
        # from its port-channel), `shutdown`: each contradicts a rendered port's mode, so it belongs to the setting
        owned_implied=(("interface Ethernet*", r"switchport (access vlan|mode|trunk allowed vlan)",
                        r"no switchport|switchport( .*)?|ip address \S+( secondary)?|channel-group .*|shutdown"),
                       ("interface Ethernet*", r"switchport", r"switchport .*|channel-group .*|shutdown")),
        setting_keys=(r"maximum-paths", r"random-detect ecn"), no_renumber=r"router bgp (\d+)"),
    # Linux/FRR white-box: iproute2 dcb has no PFC watchdog; the lab realizes every inventory on this target.
    Nos(name="frr", title="Linux white-box with FRR (what the lab runs)", short="FRR",
        releases=("8.4", "10.2"), port_name=swp,
        files=("frr.conf", "interfaces.sh", "qos.sh"), intended="frr.conf", running_suffix=".conf",
        running_shape="text", secrets="frr_cli", device_type="linux", mtu_max=9216, watchdog=None, renders_qos=True,
        lldp_port_id="mac",
        cabling_check=CablingCheck(None, "neither FRR nor lldpd compares neighbours with a plan (Cumulus' ptmd is "
                                   "not packaged for Debian); run `fabric cabling` or `fabric accept`"),
        owned_whole=("route-map *",),
        owned_objects=((r"router bgp \d+", r"neighbor (\S+)"),
                       (r"bgp community-list .*", r"bgp community-list (?:standard |expanded )?(\S+)")),
        no_renumber=r"router bgp (\d+)",
        never_owned=("log *",)),
)}


def names() -> str:
    """The table's NOS names as a help text says them: `sonic, nvue, eos or frr`."""
    *rest, last = NOS
    return f"{', '.join(rest)} or {last}" if rest else last


def row_of(module: str) -> Nos:
    """The row of the NOS whose folder holds `module` (a module's `__name__`): inside a folder the NOS's name and
    settings come from here, never from a repeated string."""
    parts = module.split(".")
    if parts[:2] != ["fabric", "nos"] or len(parts) < 3 or parts[2] not in NOS:
        raise LookupError(f"{module} is not inside a NOS folder of the table")
    return NOS[parts[2]]
