"""The lossless QoS policy: presets expanded to concrete values, then single-value overrides."""

from __future__ import annotations

import copy
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from fabric.model.units import Bytes, Millis

Priority = Annotated[int, Field(ge=0, le=7)]  # an 802.1p / switch priority
TC = Annotated[int, Field(ge=0, le=7)]  # a traffic class (== egress queue here)
Dscp = Annotated[int, Field(ge=0, le=63)]


class EcnProfile(BaseModel):
    """ECN/WRED marking of one egress queue (thresholds in bytes, probability in percent)."""

    model_config = ConfigDict(extra="forbid")
    enabled: bool = Field(True, description="ECN marking on this traffic class")
    min_bytes: Bytes = Field(description="queue depth where marking starts")
    max_bytes: Bytes = Field(description="queue depth where marking reaches its probability")
    probability: int = Field(ge=0, le=100, description="marking probability at max_bytes, percent")


class PfcWatchdog(BaseModel):
    """PFC watchdog on lossless ports: SONiC detect/restore/action, NVUE poll/robustness, EOS timers."""

    model_config = ConfigDict(extra="forbid")
    enabled: bool = Field(True, description="PFC watchdog on lossless ports")
    detection: Millis = Field(description="time a queue must stay paused to be a storm")
    restoration: Millis = Field(description="time without pauses before the queue is restored")
    action: Literal["drop", "forward", "alert"] = Field("drop", description="what a storm gets: drop, forward or alert")
    poll_interval: Millis = Field(description="how often the watchdog looks")
    robustness: int = Field(3, ge=1, le=1000, description="polls a storm must last (NVUE)")


class HeadroomPolicy(BaseModel):
    """`static`: render xon/xoff/size from the formula; `dynamic`: let the NOS compute from cable length."""

    model_config = ConfigDict(extra="forbid")
    mode: Literal["static", "dynamic"] = Field(
        description="static: rendered from the formula; dynamic: the NOS computes it from the cable length")
    small_packet_percentage: int = Field(ge=0, le=100,
                                         description="share of small packets assumed in the headroom formula")
    lossless_mtu: int = Field(1024, ge=64, le=9216,
                              description="largest lossless frame assumed in the headroom formula")
    shared_headroom_pool: bool = Field(False, description="a shared headroom pool where the NOS has one")


class QosPolicy(BaseModel):
    """Every number of the lossless policy, as rendered on switches and hosts."""

    model_config = ConfigDict(extra="forbid")
    trust: Literal["dscp", "pcp"] = Field(description="what the switch classifies by: dscp or pcp")
    dscp_to_priority: dict[Dscp, Priority] = Field(description="DSCP to switch priority")
    default_priority: Priority = Field(description="priority of every DSCP the map does not name")
    priority_to_tc: dict[Priority, TC] = Field(description="priority to traffic class (egress queue)")
    lossless_priorities: list[Priority] = Field(description="priorities with PFC")
    roce_dscp: int = Field(ge=0, le=63, description="DSCP of RoCE data")
    cnp_dscp: int = Field(ge=0, le=63, description="DSCP of congestion notification packets")
    cnp_priority: int = Field(ge=0, le=7, description="priority of congestion notification packets")
    ets_strict: list[TC] = Field(description="traffic classes served strict priority")
    ets_dwrr: dict[TC, Annotated[int, Field(ge=0, le=100)]] = Field(
        description="traffic class to DWRR weight in percent")
    ecn: dict[TC, EcnProfile] = Field(description="traffic class to ECN marking profile")
    pfc_watchdog: PfcWatchdog = Field(description="PFC watchdog")
    headroom: HeadroomPolicy = Field(description="PFC headroom policy")
    lossless_pool_percent: int = Field(50, ge=1, le=99, description=(
        "share of the switch buffer in the lossless pool where the NOS takes one (NVUE `qos traffic-pool "
        "default-lossless memory-percent`, the rest default-lossy: Cumulus gives 100 % to the lossy pool by default "
        "and its QoS guide splits 50/50 before PFC); SONiC and EOS size their pools from the platform"))

    def priority_of_dscp(self, dscp: int) -> int:
        return self.dscp_to_priority.get(dscp, self.default_priority)

    def tc_of_priority(self, prio: int) -> int:
        return self.priority_to_tc.get(prio, 0)

    def tc_of_dscp(self, dscp: int) -> int:
        return self.tc_of_priority(self.priority_of_dscp(dscp))

    @property
    def lossless_tcs(self) -> list[int]:
        return sorted({self.tc_of_priority(p) for p in self.lossless_priorities})


PRESETS: dict[str, dict[str, Any]] = {
    # NVIDIA RoCE defaults (Cumulus `nv set qos roce`, reference switch-qos.md §2.1).
    "nvidia-roce": {
        "trust": "dscp",
        "dscp_to_priority": {26: 3, 48: 6},
        "default_priority": 0,
        "priority_to_tc": {0: 0, 1: 0, 2: 0, 3: 3, 4: 0, 5: 0, 6: 6, 7: 0},
        "lossless_priorities": [3],
        "roce_dscp": 26,
        "cnp_dscp": 48,
        "cnp_priority": 6,
        "ets_strict": [6],
        "ets_dwrr": {0: 50, 3: 50},
        "ecn": {0: {"min_bytes": 150000, "max_bytes": 1500000, "probability": 100},
                3: {"min_bytes": 150000, "max_bytes": 1500000, "probability": 100}},
        "pfc_watchdog": {"detection": "200ms", "restoration": "200ms", "action": "drop",
                         "poll_interval": "100ms", "robustness": 3},
        "headroom": {"mode": "static", "small_packet_percentage": 100, "lossless_mtu": 1024},
    },
    # SONiC's own default (files/build_templates/qos_config.j2, reference switch-qos.md §1.1), with one change:
    # CNPs (DSCP 48 → TC6) are served strict so they overtake the congestion they report (lint RF103); SONiC's
    # DWRR weights of the other queues (14, lossless 15) are rescaled to shares of 100 % (16, lossless 18).
    "sonic-azure": {
        "trust": "dscp",
        "dscp_to_priority": {3: 3, 4: 4, 5: 2, 8: 0, 46: 5, 48: 6},
        "default_priority": 1,
        "priority_to_tc": {i: i for i in range(8)},
        "lossless_priorities": [3, 4],
        "roce_dscp": 3,
        "cnp_dscp": 48,
        "cnp_priority": 6,
        "ets_strict": [6],
        "ets_dwrr": {0: 16, 1: 16, 2: 16, 3: 18, 4: 18, 5: 16},
        "ecn": {3: {"min_bytes": 1048576, "max_bytes": 2097152, "probability": 5},
                4: {"min_bytes": 1048576, "max_bytes": 2097152, "probability": 5}},
        "pfc_watchdog": {"detection": "200ms", "restoration": "200ms", "action": "drop",
                         "poll_interval": "200ms", "robustness": 3},
        "headroom": {"mode": "dynamic", "small_packet_percentage": 50, "lossless_mtu": 1024},
    },
    "custom": {},
}


def merge(base: dict[Any, Any], over: dict[Any, Any]) -> dict[Any, Any]:
    """Deep-merge `over` onto a copy of `base`: mappings merge key by key, anything else replaces."""
    out = copy.deepcopy(base)
    for key, value in over.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = merge(out[key], value)
        else:
            out[key] = copy.deepcopy(value)
    return out


def override_paths(over: dict[Any, Any], prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Leaf paths the user set explicitly (used by `explain` to say 'override')."""
    paths: list[tuple[Any, ...]] = []
    for key, value in over.items():
        if isinstance(value, dict) and value:
            paths += override_paths(value, (*prefix, key))
        else:
            paths.append((*prefix, key))
    return paths
