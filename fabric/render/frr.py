"""`frr` target: frr.conf plus the Linux interface and dcb QoS setup of a Linux/FRR white-box."""

from __future__ import annotations

from fabric.design.intent import FabricIntent, SwitchIntent
from fabric.render import Files, template


def render(sw: SwitchIntent, fabric: FabricIntent) -> Files:
    q = sw.qos
    fabric_ports = [p for p in sw.ports if p.kind == "fabric"]
    dscp = " ".join(f"{d}:{q.priority_of_dscp(d)}" for d in range(64))
    tsa = " ".join(f"{tc}:{'strict' if tc in q.ets_strict else 'ets'}" for tc in range(8))
    bw = " ".join(f"{tc}:{q.ets_dwrr.get(tc, 0) if tc not in q.ets_strict else 0}" for tc in range(8))
    qos = template("frr/qos.sh.j2", sw=sw, q=q, dscp_prio=dscp,
                   prio_tc=" ".join(f"{p}:{q.tc_of_priority(p)}" for p in range(8)), tc_tsa=tsa, tc_bw=bw,
                   prio_pfc=" ".join(f"{p}:{'on' if p in q.lossless_priorities else 'off'}" for p in range(8)),
                   ecn=[(tc, e) for tc, e in sorted(q.ecn.items()) if e.enabled])
    return {
        "frr.conf": template("frr/frr.conf.j2", sw=sw, fabric_ports=fabric_ports),
        "interfaces.sh": template("frr/interfaces.sh.j2", sw=sw),
        "qos.sh": qos,
    }
