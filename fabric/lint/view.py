"""One QoS view of a device, whether it comes from the derived intent or a parsed config file.

The QoS rules are written once against this view, so a policy and a hand-edited config are judged alike.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from fabric.model.qos import QosPolicy

Where = tuple[str, int | None]


@dataclass(frozen=True)
class Ecn:
    enabled: bool
    min_bytes: int
    max_bytes: int
    probability: int


@dataclass
class QosView:
    """Classification, PFC, ETS and ECN of one device (or one policy shared by many)."""

    name: str
    dscp_to_priority: dict[int, int] | None  # None: not configured, the NOS default applies
    default_priority: int
    priority_to_tc: dict[int, int]
    lossless: list[int]
    strict_tcs: list[int]
    dwrr: dict[int, int]
    ecn: dict[int, Ecn]
    buffer_bytes: int | None = None
    watchdog: bool = True
    at: Callable[[str], Where] = field(default=lambda key: ("", None))

    def priority_of_dscp(self, dscp: int) -> int:
        return (self.dscp_to_priority or {}).get(dscp, self.default_priority)

    def tc_of_priority(self, prio: int) -> int:
        return self.priority_to_tc.get(prio, prio)

    @property
    def lossless_tcs(self) -> list[int]:
        return sorted({self.tc_of_priority(p) for p in self.lossless})


def policy_view(
    name: str, q: QosPolicy, at: Callable[[str], Where], buffer_bytes: int | None = None
) -> QosView:
    return QosView(
        name=name,
        dscp_to_priority=dict(q.dscp_to_priority),
        default_priority=q.default_priority,
        priority_to_tc={p: q.tc_of_priority(p) for p in range(8)},
        lossless=sorted(q.lossless_priorities),
        strict_tcs=sorted(q.ets_strict),
        dwrr=dict(q.ets_dwrr),
        ecn={
            tc: Ecn(e.enabled, int(e.min_bytes), int(e.max_bytes), e.probability) for tc, e in q.ecn.items()
        },
        buffer_bytes=buffer_bytes,
        watchdog=q.pfc_watchdog.enabled,
        at=at,
    )
