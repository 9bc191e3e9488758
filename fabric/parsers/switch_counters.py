"""Switch queue, PFC and watchdog counters as each NOS prints them → the common names of
fabric.accept.counters (`queue:<tc>:tx_bytes|tx_packets|drops|ecn_marked`, `pfc:<prio>:rx_pause|tx_pause`,
`pfcwd:<prio>:storm_detected|storm_restored`; `pfc:all:…` where the NOS counts per port only).

Sources of the formats:
- SONiC (sonic-net/sonic-utilities `scripts/`): `queuestat -j` (`show queue counters --json`: port → `UC<n>` →
  totalpacket/totalbytes/droppacket/dropbytes, strings or "N/A"), `wredstat -j` (`show queue wredcounters
  --json`: port → `UC<n>` → wreddroppacket/…/ecnmarkedpacket/ecnmarkedbytes), `pfcstat -s all` (`show pfc
  counters`: two tabulate "simple" tables, `Port Rx` and `Port Tx` × PFC0…PFC7, numbers with commas),
  `show pfcwd stats` (pfcwd/main.py: rows `<port>:<queue>  <status>  <detected>/<restored>  …`, queues whose
  counters are all 0/0 left out).
- NVUE (tests/fixtures/nvue/outputs/SOURCE.md): `nv show interface <swp> counters qos -o json`
  (egress-queue-stats per TC, pfc-stats per switch priority, port-stats tx-stats ecn-marked-packets) and
  `nv show interface <swp> qos pfc-watchdog -o json` (status per TC with deadlock-count).
- EOS (eAPI JSON, the shapes ANTA's VerifyInterfacesPFCCounters/ECNCounters/VoqAndEgressQueueDrops read):
  `show priority-flow-control counters | json` (interfaceCounters → rxFrames/txFrames), `show qos interfaces
  ecn counters queue | json` (intfQueueCounters → queueCounters → TC → count as a string, "-" when ECN is
  off), `show interfaces counters queue drops | json` (interfaces → trafficClasses → TC<n> →
  egressQueueCounters.countersSum.droppedPackets), `show priority-flow-control counters watchdog | json`
  (interfaces → txQueues → TC → stuckCount/recoveryCount), `show ip route | json` (vrfs.default.routes →
  prefix → vias).
"""

from __future__ import annotations

import re
from typing import Any

Counters = dict[str, dict[str, int]]  # port → counter → value


def _int(v: Any) -> int | None:
    s = str(v).replace(",", "").strip()
    return int(s) if s.isdigit() else None


def _put(out: Counters, port: str, name: str, value: Any) -> None:
    n = _int(value)
    if n is not None:
        out.setdefault(port, {})[name] = n


_PFCWD_ROW = re.compile(r"^\s*(\S+):(\d+)\s+\S+\s+(\d+)/(\d+)\s")


def sonic(queuestat: dict, wredstat: dict, pfcstat: str, pfcwd: str = "") -> Counters:
    out: Counters = {}
    for port, queues in (queuestat or {}).items():
        for q, v in queues.items() if isinstance(queues, dict) else ():
            if isinstance(v, dict) and q.startswith("UC"):
                tc = q[2:]
                _put(out, port, f"queue:{tc}:tx_packets", v.get("totalpacket"))
                _put(out, port, f"queue:{tc}:tx_bytes", v.get("totalbytes"))
                _put(out, port, f"queue:{tc}:drops", v.get("droppacket"))
    for port, queues in (wredstat or {}).items():
        for q, v in queues.items() if isinstance(queues, dict) else ():
            if isinstance(v, dict) and q.startswith("UC"):
                _put(out, port, f"queue:{q[2:]}:ecn_marked", v.get("ecnmarkedpacket"))
    direction = ""
    for line in pfcstat.splitlines():
        cells = line.split()
        if len(cells) >= 3 and cells[0] == "Port" and cells[1] in ("Rx", "Tx"):
            direction = cells[1].lower()
        elif direction and len(cells) == 9 and not set(line.strip()) <= {"-", " "}:
            for prio, v in enumerate(cells[1:]):
                _put(out, cells[0], f"pfc:{prio}:{direction}_pause", v)
    for m in map(_PFCWD_ROW.match, pfcwd.splitlines()):
        if m:
            _put(out, m[1], f"pfcwd:{m[2]}:storm_detected", m[3])
            _put(out, m[1], f"pfcwd:{m[2]}:storm_restored", m[4])
    return out


def nvue(port: str, qos: dict, watchdog: dict) -> Counters:
    out: Counters = {}
    for tc, v in (qos.get("egress-queue-stats") or {}).items():
        _put(out, port, f"queue:{tc}:tx_bytes", v.get("tx-bytes"))
        _put(out, port, f"queue:{tc}:tx_packets", v.get("tx-frames"))
        drops = (_int(v.get("tx-uc-buffer-discards")) or 0) + (_int(v.get("wred-discards")) or 0)
        _put(out, port, f"queue:{tc}:drops", drops)
    for prio, v in (qos.get("pfc-stats") or {}).items():
        _put(out, port, f"pfc:{prio}:rx_pause", v.get("rx-pause-frames"))
        _put(out, port, f"pfc:{prio}:tx_pause", v.get("tx-pause-frames"))
    tx = (qos.get("port-stats") or {}).get("tx-stats") or {}
    _put(out, port, "port:ecn_marked", tx.get("ecn-marked-packets"))  # NVUE counts ECN marks per port
    for tc, v in ((watchdog or {}).get("status") or {}).items():
        _put(out, port, f"pfcwd:{tc}:storm_detected", v.get("deadlock-count"))
    return out


def eos(pfc: dict, ecn: dict, drops: dict, watchdog: dict) -> Counters:
    out: Counters = {}
    for port, v in (pfc.get("interfaceCounters") or {}).items():
        _put(out, port, "pfc:all:rx_pause", v.get("rxFrames"))
        _put(out, port, "pfc:all:tx_pause", v.get("txFrames"))
    for port, v in (ecn.get("intfQueueCounters") or {}).items():
        for tc, n in (v.get("queueCounters") or {}).items():
            _put(out, port, f"queue:{tc}:ecn_marked", n)  # "-": ECN not configured on the queue, left out
    for port, v in (drops.get("interfaces") or {}).items():
        for name, tc in (v.get("trafficClasses") or {}).items():
            m = re.fullmatch(r"TC(\d)", name)
            if m:
                summed = ((tc.get("egressQueueCounters") or {}).get("countersSum") or {})
                _put(out, port, f"queue:{m[1]}:drops", summed.get("droppedPackets"))
    for port, v in (watchdog.get("interfaces") or {}).items():
        for tc, q in (v.get("txQueues") or {}).items():
            _put(out, port, f"pfcwd:{tc}:storm_detected", q.get("stuckCount"))
            _put(out, port, f"pfcwd:{tc}:storm_restored", q.get("recoveryCount"))
    return out


def eos_route_widths(doc: dict) -> dict[str, int]:
    """`show ip route | json` → prefix → number of next hops."""
    routes = ((doc.get("vrfs") or {}).get("default") or {}).get("routes") or {}
    return {p: len(r.get("vias") or []) for p, r in routes.items() if isinstance(r, dict)}
