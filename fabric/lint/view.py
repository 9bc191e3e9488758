"""One QoS view of a device, whether it comes from the derived intent or a parsed config file.

The QoS rules are written once against this view, so a policy and a hand-edited config are judged alike.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from fabric.design.intent import QosFacts

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


def facts_view(name: str, q: QosFacts, at: Callable[[str], Where], buffer_bytes: int | None = None) -> QosView:
    """The view of the QoS facts a derived switch carries (the same the renderers format)."""
    return QosView(
        name=name,
        dscp_to_priority={d: q.dscp_to_priority[d] for d in q.dscp_explicit},
        default_priority=q.default_priority,
        priority_to_tc=dict(enumerate(q.priority_to_tc)),
        lossless=list(q.lossless_priorities),
        strict_tcs=[tc for tc, qu in q.queues.items() if qu.scheduler == "strict"],
        dwrr={tc: qu.weight for tc, qu in q.queues.items() if qu.scheduler == "dwrr" and qu.weight is not None},
        ecn={tc: Ecn(e.enabled, e.min_bytes, e.max_bytes, e.probability) for tc, qu in q.queues.items()
             if (e := qu.ecn) is not None},
        buffer_bytes=buffer_bytes,
        watchdog=q.watchdog is not None,
        at=at,
    )
