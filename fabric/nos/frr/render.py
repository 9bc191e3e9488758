"""`frr` target: frr.conf plus the Linux interface and QoS setup of a Linux/FRR white-box (switchdev).

QoS is what a Spectrum switchdev (mlxsw) switch takes: iproute2 `dcb` for DSCP→priority, ETS and PFC, and the
tc egress tree that carries the queues: an `ets` qdisc with 8 bands (mlxsw maps band b to traffic class 7−b,
so strict TCs are the first bands), quanta from the DWRR shares and a priomap from priority→TC, and a `red …
ecn` qdisc on every ECN-enabled band with the policy's thresholds — mlxsw wiki "Queues Management" (ETS, Band
Number Mapping, RED; https://github.com/Mellanox/mlxsw/wiki/Queues-Management) and tc-ets(8), tc-red(8).
"""

from __future__ import annotations

from pydantic import BaseModel

from fabric.design.intent import FabricIntent, QosFacts, SwitchIntent
from fabric.fast.memo import Memo
from fabric.render.files import Files, template

AVPKT = 1500  # tc-red avpkt: the average packet the RED average is computed in
QUANTUM = 100  # bytes of ETS quantum per percent of DWRR share (mlxsw takes the quanta's ratios as weights)


class EtsBand(BaseModel):
    band: int  # 0-7; the tc class is <handle>:<band + 1>
    tc: int
    strict: bool
    quantum: int | None  # DWRR bands
    red: str | None  # `red …` arguments of an ECN-enabled band


class EtsTree(BaseModel):
    """The egress tc tree of one port, from the QoS facts (nothing decided here)."""

    strict: int
    bands: list[EtsBand]
    priomap: list[int]  # priority 0-15 → band

    @property
    def quanta(self) -> list[int]:
        return [b.quantum or 1 for b in self.bands[self.strict:]]

    def tc_of_class(self, handle: int = 1) -> dict[str, int]:
        """`<handle>:<band+1>` class id → traffic class (what the lab reads counters by)."""
        return {f"{handle}:{b.band + 1}": b.tc for b in self.bands}


def ets_tree(q: QosFacts) -> EtsTree:
    """Band b = TC 7−b; the strict bands must come first, so every band down to the lowest strict TC is strict."""
    strict_tcs = [tc for tc, qu in q.queues.items() if qu.scheduler == "strict"]
    strict = 8 - min(strict_tcs) if strict_tcs else 0
    bands = []
    for band in range(8):
        tc = 7 - band
        qu = q.queues.get(tc)
        red = None
        if qu and qu.ecn and qu.ecn.enabled:
            e = qu.ecn
            # the EWMA burst: mlxsw marks on the instantaneous queue and ignores it; for the software qdisc,
            # min/avpkt + 1 (tc-red(8)'s (2·min + max)/(3·avpkt) overflows tc's EWMA weight at these thresholds)
            burst = e.min_bytes // AVPKT + 1
            red = (f"limit {2 * e.max_bytes} min {e.min_bytes} max {e.max_bytes} avpkt {AVPKT} burst {burst} "
                   f"probability {e.probability / 100:g} ecn")
        bands.append(EtsBand(band=band, tc=tc, strict=band < strict,
                             quantum=None if band < strict else max(1, (qu.weight or 0) * QUANTUM if qu else 1),
                             red=red))
    prio_band = [7 - q.priority_to_tc[p] for p in range(8)]
    return EtsTree(strict=strict, bands=bands, priomap=prio_band + [7 - q.priority_to_tc[0]] * 8)


def render(sw: SwitchIntent, fabric: FabricIntent, *, extras: bool = True,
           memo: Memo | None = None) -> Files:
    q = sw.qos
    fabric_ports = [p for p in sw.ports if p.kind == "fabric"]
    qos = template("frr/qos.sh.j2", sw=sw, q=q, ets=ets_tree(q),
                   dscp_prio=" ".join(f"{d}:{prio}" for d, prio in enumerate(q.dscp_to_priority)),
                   prio_tc=" ".join(f"{p}:{tc}" for p, tc in enumerate(q.priority_to_tc)),
                   tc_tsa=" ".join(f"{tc}:{a}" for tc, a in enumerate(q.tsa)),
                   tc_bw=" ".join(f"{tc}:{w}" for tc, w in enumerate(q.tcbw)),
                   prio_pfc=" ".join(f"{p}:{'on' if p in q.lossless_priorities else 'off'}" for p in range(8)))
    return {
        "frr.conf": template("frr/frr.conf.j2", sw=sw, fabric_ports=fabric_ports),
        "interfaces.sh": template("frr/interfaces.sh.j2", sw=sw),
        "qos.sh": qos,
    }
