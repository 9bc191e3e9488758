"""Derivation, QoS: the policy decided once into what every NOS configures, and the PFC headroom per port kind."""

from __future__ import annotations

from functools import lru_cache

from fabric.design.headroom import Headroom, headroom
from fabric.design.intent import EcnFacts, QosFacts, QueueFacts, WatchdogFacts
from fabric.model.platforms import ASIC_BUFFER
from fabric.model.qos import QosPolicy


@lru_cache(maxsize=4096)
def port_headroom(asic: str, speed: int, cable: int, mtu: int, lanes: int, lossless_mtu: int, spp: int,
              shp: bool) -> Headroom:
    return headroom(ASIC_BUFFER[asic], speed_mbps=speed * 1000, cable_m=cable, port_mtu=mtu, lanes=lanes,
                    lossless_mtu=lossless_mtu, small_packet_percentage=spp, shared_headroom_pool=shp)


def qos_facts(q: QosPolicy) -> QosFacts:
    """The policy decided into what every NOS configures: full maps, one queue per scheduled or marked TC
    (strict or DWRR weight, lossless, ECN), and the watchdog where something is lossless."""
    prio_tc = [q.tc_of_priority(p) for p in range(8)]
    dscp_prio = [q.priority_of_dscp(d) for d in range(64)]
    lossless_tcs = sorted({prio_tc[p] for p in q.lossless_priorities})
    queues: dict[int, QueueFacts] = {}
    for tc in sorted(set(q.ets_strict) | set(q.ets_dwrr) | set(q.ecn)):
        strict = tc in q.ets_strict
        e = q.ecn.get(tc)
        queues[tc] = QueueFacts(
            tc=tc, priorities=[p for p in range(8) if prio_tc[p] == tc], lossless=tc in lossless_tcs,
            scheduler="strict" if strict else "dwrr" if tc in q.ets_dwrr else None,
            weight=None if strict else q.ets_dwrr.get(tc),
            ecn=EcnFacts(enabled=e.enabled, min_bytes=e.min_bytes, max_bytes=e.max_bytes, probability=e.probability)
            if e else None)
    wd = q.pfc_watchdog
    return QosFacts(
        trust=q.trust, dscp_to_priority=dscp_prio, dscp_explicit=sorted(q.dscp_to_priority),
        default_priority=q.default_priority, dscp_to_tc=[prio_tc[p] for p in dscp_prio], priority_to_tc=prio_tc,
        lossless_priorities=sorted(q.lossless_priorities), lossless_tcs=lossless_tcs, roce_dscp=q.roce_dscp,
        cnp_dscp=q.cnp_dscp, cnp_priority=q.cnp_priority, queues=queues,
        watchdog=WatchdogFacts(detection_ms=wd.detection, restoration_ms=wd.restoration, action=wd.action,
                               poll_interval_ms=wd.poll_interval, robustness=wd.robustness)
        if wd.enabled and q.lossless_priorities else None,
        headroom_mode=q.headroom.mode, lossless_mtu=q.headroom.lossless_mtu,
        small_packet_percentage=q.headroom.small_packet_percentage, lossless_pool_percent=q.lossless_pool_percent)
