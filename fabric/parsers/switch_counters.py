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

from fabric.replies import reader

Counters = dict[str, dict[str, int]]  # port → counter → value


def _int(v: Any) -> int | None:
    """A counter (64 bits at most): an int, or a string of ASCII digits (commas allowed); anything else is None."""
    if isinstance(v, str) and len(v) <= 40:  # 2**64 has 20 digits and 6 commas; a longer string is no counter
        s = v.replace(",", "").strip()
        v = int(s) if s.isascii() and s.isdigit() else None
    return v if isinstance(v, int) and not isinstance(v, bool) and 0 <= v < 2**64 else None


def _d(v: Any) -> dict:
    """`v` where it is a mapping, else an empty one: a reply of another shape has no counters (never an error)."""
    return v if isinstance(v, dict) else {}


def _put(out: Counters, port: str, name: str, value: Any) -> None:
    n = _int(value)
    if n is not None:
        out.setdefault(port, {})[name] = n


_PFCWD_ROW = re.compile(r"^\s*(\S+):(\d+)\s+\S+\s+(\d+)/(\d+)\s")


@reader('queuestat -j; wredstat -j; pfcstat -s all; show pfcwd stats')
def sonic(queuestat: dict, wredstat: dict, pfcstat: str, pfcwd: str = "") -> Counters:
    out: Counters = {}
    for port, queues in _d(queuestat).items():
        for q, v in _d(queues).items():
            if isinstance(v, dict) and str(q).startswith("UC"):
                tc = q[2:]
                _put(out, port, f"queue:{tc}:tx_packets", v.get("totalpacket"))
                _put(out, port, f"queue:{tc}:tx_bytes", v.get("totalbytes"))
                _put(out, port, f"queue:{tc}:drops", v.get("droppacket"))
    for port, queues in _d(wredstat).items():
        for q, v in _d(queues).items():
            if isinstance(v, dict) and str(q).startswith("UC"):
                _put(out, port, f"queue:{q[2:]}:ecn_marked", v.get("ecnmarkedpacket"))
    direction = ""
    for line in (pfcstat if isinstance(pfcstat, str) else "").splitlines():
        cells = line.split()
        if len(cells) >= 3 and cells[0] == "Port" and cells[1] in ("Rx", "Tx"):
            direction = cells[1].lower()
        elif direction and len(cells) == 9 and not set(line.strip()) <= {"-", " "}:
            for prio, v in enumerate(cells[1:]):
                _put(out, cells[0], f"pfc:{prio}:{direction}_pause", v)
    for m in map(_PFCWD_ROW.match, (pfcwd if isinstance(pfcwd, str) else "").splitlines()):
        if m:
            _put(out, m[1], f"pfcwd:{m[2]}:storm_detected", m[3])
            _put(out, m[1], f"pfcwd:{m[2]}:storm_restored", m[4])
    return out


@reader('nv show interface <swp> counters qos / qos pfc-watchdog -o json')
def nvue(port: str, qos: dict, watchdog: dict) -> Counters:
    out: Counters = {}
    qos = _d(qos)
    for tc, v in _d(qos.get("egress-queue-stats")).items():
        v = _d(v)
        _put(out, port, f"queue:{tc}:tx_bytes", v.get("tx-bytes"))
        _put(out, port, f"queue:{tc}:tx_packets", v.get("tx-frames"))
        drops = (_int(v.get("tx-uc-buffer-discards")) or 0) + (_int(v.get("wred-discards")) or 0)
        _put(out, port, f"queue:{tc}:drops", drops)
    for prio, v in _d(qos.get("pfc-stats")).items():
        _put(out, port, f"pfc:{prio}:rx_pause", _d(v).get("rx-pause-frames"))
        _put(out, port, f"pfc:{prio}:tx_pause", _d(v).get("tx-pause-frames"))
    tx = _d(_d(qos.get("port-stats")).get("tx-stats"))
    _put(out, port, "port:ecn_marked", tx.get("ecn-marked-packets"))  # NVUE counts ECN marks per port
    for tc, v in _d(_d(watchdog).get("status")).items():
        _put(out, port, f"pfcwd:{tc}:storm_detected", _d(v).get("deadlock-count"))
    return out


@reader('show priority-flow-control counters | json (and ECN, drops, watchdog)')
def eos(pfc: dict, ecn: dict, drops: dict, watchdog: dict) -> Counters:
    out: Counters = {}
    for port, v in _d(_d(pfc).get("interfaceCounters")).items():
        _put(out, port, "pfc:all:rx_pause", _d(v).get("rxFrames"))
        _put(out, port, "pfc:all:tx_pause", _d(v).get("txFrames"))
    for port, v in _d(_d(ecn).get("intfQueueCounters")).items():
        for tc, n in _d(_d(v).get("queueCounters")).items():
            _put(out, port, f"queue:{tc}:ecn_marked", n)  # "-": ECN not configured on the queue, left out
    for port, v in _d(_d(drops).get("interfaces")).items():
        for name, tc in _d(_d(v).get("trafficClasses")).items():
            m = re.fullmatch(r"TC(\d)", str(name))
            if m:
                summed = _d(_d(_d(tc).get("egressQueueCounters")).get("countersSum"))
                _put(out, port, f"queue:{m[1]}:drops", summed.get("droppedPackets"))
    for port, v in _d(_d(watchdog).get("interfaces")).items():
        for tc, q in _d(_d(v).get("txQueues")).items():
            _put(out, port, f"pfcwd:{tc}:storm_detected", _d(q).get("stuckCount"))
            _put(out, port, f"pfcwd:{tc}:storm_restored", _d(q).get("recoveryCount"))
    return out


@reader('show ip route | json')
def eos_route_widths(doc: dict) -> dict[str, int]:
    """`show ip route | json` → prefix → number of next hops."""
    routes = _d(_d(_d(_d(doc).get("vrfs")).get("default")).get("routes"))
    return {p: len(vias) if isinstance(vias := r.get("vias"), list) else 0
            for p, r in routes.items() if isinstance(r, dict)}
