"""`frr` target: frr.conf plus the Linux interface and dcb QoS setup of a Linux/FRR white-box."""

from __future__ import annotations

from fabric.design.intent import FabricIntent, SwitchIntent
from fabric.render import Files, template


def render(sw: SwitchIntent, fabric: FabricIntent, *, extras: bool = True) -> Files:
    q = sw.qos
    fabric_ports = [p for p in sw.ports if p.kind == "fabric"]
    qos = template("frr/qos.sh.j2", sw=sw, q=q,
                   dscp_prio=" ".join(f"{d}:{prio}" for d, prio in enumerate(q.dscp_to_priority)),
                   prio_tc=" ".join(f"{p}:{tc}" for p, tc in enumerate(q.priority_to_tc)),
                   tc_tsa=" ".join(f"{tc}:{a}" for tc, a in enumerate(q.tsa)),
                   tc_bw=" ".join(f"{tc}:{w}" for tc, w in enumerate(q.tcbw)),
                   prio_pfc=" ".join(f"{p}:{'on' if p in q.lossless_priorities else 'off'}" for p in range(8)),
                   ecn=[(tc, qu.ecn) for tc, qu in q.queues.items() if qu.ecn and qu.ecn.enabled])
    return {
        "frr.conf": template("frr/frr.conf.j2", sw=sw, fabric_ports=fabric_ports),
        "interfaces.sh": template("frr/interfaces.sh.j2", sw=sw),
        "qos.sh": qos,
    }
