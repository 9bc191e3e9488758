"""What the stand-in switches answer to counter and route reads, in each NOS's own output format.

State: `telemetry.json` in the device directory, written by the test (a neutral form)::

    {"ports": {"<port>": {"queues": {"<tc>": {"bytes": 0, "packets": 0, "drops": 0, "ecn": 0}},
                          "pfc": {"<prio>": {"rx": 0, "tx": 0}}, "wd": {"<tc>": {"stuck": 0, "recovered": 0}},
                          "flow": {"tc": 3, "bps": 0, "since": 0}}},  # SONiC: traffic now, see _flowing
     "routes": {"<prefix>": <next hops>}}

Formats (see fabric.parsers.switch_counters for the sources): SONiC `queuestat -j`, `wredstat -j` (sonic-utilities
`json_dump`: indent 4, counter values as strings, a `time` key per port, MC queues beside UC), `pfcstat -s all`
(tabulate "simple", right-aligned, numbers with thousands commas), `show pfcwd stats` and FRR's
`show ip route json`; NVUE `nv show interface <swp> counters qos -o json` and `… qos pfc-watchdog -o json`
(tests/fixtures/nvue/outputs);
EOS eAPI `| json` of `show priority-flow-control counters`, `show qos interfaces ecn counters queue`,
`show interfaces counters queue drops`, `show priority-flow-control counters watchdog`, `show ip route`.
LLDP: SONiC `show lldp table`, NVUE `nv show interface <swp> lldp -o json`, EOS `show lldp neighbors detail | json`
from `lldp.<kind>` in the device directory (`_lldp`).
Each `answer_*` returns the text, or None when the command is not a telemetry read.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from tests.standins.common import on_frrcfgd, read_json, tsa_enabled

TIME = "2026-11-22T18:00:00.000000"


def _state(d: Path) -> dict[str, Any]:
    return read_json(d / "telemetry.json", {"ports": {}, "routes": {}})


def _q(port: dict, tc: int) -> dict[str, int]:
    return {"bytes": 0, "packets": 0, "drops": 0, "ecn": 0, **port.get("queues", {}).get(str(tc), {})}


def _flowing(st: dict[str, Any], d: Path) -> dict[str, Any]:
    """`ports.<p>.flow = {"tc": 3, "bps": 8e7, "since": <epoch s>}`: traffic through that queue at that rate
    since then, added to its byte and packet counters (4096-byte packets) at each read. On SONiC a drain (BGP_GLOBALS
    graceful_shutdown, RFC 8326, with frrcfgd; TSA's BGP_DEVICE_GLOBAL|STATE tsa_enabled, with bgpcfgd) makes the
    peers route around the switch: the flow stops when the running config that set it was written."""
    running = read_json(d / "running.json", {})
    drained = (running.get("BGP_GLOBALS", {}).get("default", {}).get("graceful_shutdown") == "true"
               if on_frrcfgd(running) else tsa_enabled(running) and bool(running.get("BGP_NEIGHBOR")))
    until = (d / "running.json").stat().st_mtime if drained else time.time()
    for port in st["ports"].values():
        if flow := port.get("flow"):
            sent = int(flow["bps"] / 8 * max(0.0, until - flow["since"]))
            q = port.setdefault("queues", {}).setdefault(str(flow["tc"]), {})
            q["bytes"] = q.get("bytes", 0) + sent
            q["packets"] = q.get("packets", 0) + sent // 4096
    return st


def _simple_table(header: list[str], rows: list[list[str]]) -> str:
    """tabulate(..., tablefmt="simple", stralign="right")."""
    widths = [max(len(str(c)) for c in col) for col in zip(header, *rows, strict=True)]
    line = lambda cells: "  ".join(str(c).rjust(w) for c, w in zip(cells, widths, strict=True))  # noqa: E731
    return "\n".join([line(header), "  ".join("-" * w for w in widths), *(line(r) for r in rows)])


def _frr_routes(routes: dict[str, int]) -> dict:
    return {p: [{"prefix": p, "protocol": "bgp", "selected": True, "installed": True,
                 "nexthops": [{"ip": f"fe80::{k + 1}", "afi": "ipv6", "interfaceName": f"Ethernet{8 * k}",
                               "active": True, "fib": True} for k in range(n)]}] for p, n in routes.items()}


EMPTY_LLDP_TABLE = """Capability codes: (R) Router, (B) Bridge, (O) Other
LocalPort    RemoteDevice    RemotePortID    Capability    RemotePortDescr
-----------  --------------  --------------  ------------  -----------------
--------------------------------------------------
Total entries displayed:  0"""


def _lldp(d: Path, kind: str) -> str | None:
    """The device's LLDP as its NOS prints it: `lldp.<kind>` in the device directory, written by the test
    (tests/support/lldp_outputs.py renders it in the formats of tests/fixtures/lldp); none: no neighbour."""
    path = d / f"lldp.{kind}"
    return path.read_text() if path.exists() else None


def answer_sonic(command: str, d: Path) -> str | None:
    if command == "show lldp table":
        return _lldp(d, "lldp-sonic") or EMPTY_LLDP_TABLE
    st = _flowing(_state(d), d)
    ports = st["ports"]
    if command in ("queuestat -j", "show queue counters --json"):
        return json.dumps({p: {"time": TIME, **{f"UC{tc}": {"totalpacket": str(_q(v, tc)["packets"]),
                                                            "totalbytes": str(_q(v, tc)["bytes"]),
                                                            "droppacket": str(_q(v, tc)["drops"]), "dropbytes": "N/A"}
                                                for tc in range(8)},
                               **{f"MC{tc}": {"totalpacket": "0", "totalbytes": "0", "droppacket": "0",
                                              "dropbytes": "0"} for tc in range(8, 16)}}
                           for p, v in ports.items()}, indent=4)
    if command in ("wredstat -j", "show queue wredcounters --json"):
        return json.dumps({p: {"time": TIME, **{f"UC{tc}": {"wreddroppacket": "0", "wreddropbytes": "0",
                                                            "ecnmarkedpacket": str(_q(v, tc)["ecn"]),
                                                            "ecnmarkedbytes": str(_q(v, tc)["ecn"] * 4096)}
                                                for tc in range(8)}} for p, v in ports.items()}, indent=4)
    if command in ("pfcstat -s all", "show pfc counters"):
        tables = []
        for way, title in (("rx", "Port Rx"), ("tx", "Port Tx")):
            rows = [[p, *(f"{v.get('pfc', {}).get(str(k), {}).get(way, 0):,}" for k in range(8))]
                    for p, v in ports.items()]
            tables.append(_simple_table([title, *(f"PFC{k}" for k in range(8))], rows))
        return tables[0] + "\n\n" + tables[1]
    if command == "show pfcwd stats":
        rows = [[f"{p}:{tc}", "operational", f"{w.get('stuck', 0)}/{w.get('recovered', 0)}", "0/0", "0/0", "0/0",
                 "0/0"] for p, v in ports.items() for tc, w in v.get("wd", {}).items()]
        return _simple_table(["QUEUE", "STATUS", "STORM DETECTED/RESTORED", "TX OK/DROP", "RX OK/DROP",
                              "TX LAST OK/DROP", "RX LAST OK/DROP"], rows)
    if command == "show ip route json":
        return json.dumps(_frr_routes(st["routes"]), indent=2)
    return None


def answer_nvue(args: list[str], d: Path) -> str | None:
    """`nv show interface <swp> counters qos -o json` and `nv show interface <swp> qos pfc-watchdog -o json`."""
    path = [a for a in args if not a.startswith("-") and a != "json"]
    if len(path) < 3 or path[0] != "interface":
        return None
    if path[2:] == ["lldp"]:  # one port's document of the object of port → document the test wrote
        return json.dumps(json.loads(_lldp(d, "lldp-nvue") or "{}").get(path[1], {}), indent=2)
    port = _state(d)["ports"].get(path[1], {})
    if path[2:] == ["counters", "qos"]:
        return json.dumps({
            "egress-queue-stats": {str(tc): {"tx-bytes": _q(port, tc)["bytes"], "tx-frames": _q(port, tc)["packets"],
                                             "tx-uc-buffer-discards": _q(port, tc)["drops"], "wred-discards": 0}
                                   for tc in range(8)},
            "ingress-buffer-stats": {str(pg): {"rx-buffer-discards": 0, "rx-frames": 0, "rx-shared-buffer-discards": 0}
                                     for pg in range(8)},
            "pfc-stats": {str(k): {"rx-pause-duration": 0, "rx-pause-frames": port.get("pfc", {}).get(str(k), {})
                                   .get("rx", 0), "tx-pause-duration": 0,
                                   "tx-pause-frames": port.get("pfc", {}).get(str(k), {}).get("tx", 0)}
                          for k in range(8)},
            "port-stats": {"rx-stats": {"pause-frames": 0},
                           "tx-stats": {"ecn-marked-packets": sum(_q(port, tc)["ecn"] for tc in range(8)),
                                        "mc-buffer-discards": 0, "pause-frames": 0}},
        }, indent=2)
    if path[2:] == ["qos", "pfc-watchdog"]:
        wd = port.get("wd", {})
        return json.dumps({"state": "enabled", "status": {
            str(tc): {"deadlock-count": wd.get(str(tc), {}).get("stuck", 0),
                      "status": "DEADLOCK" if wd.get(str(tc), {}).get("stuck", 0) > wd.get(str(tc), {})
                      .get("recovered", 0) else "OK"} for tc in range(8)}}, indent=2)
    return None


def answer_eos(command: str, d: Path) -> str | None:
    if command == "show lldp neighbors detail | json":
        return _lldp(d, "lldp-eos") or json.dumps({"lldpNeighbors": {}})
    st = _state(d)
    ports = st["ports"]
    if command == "show priority-flow-control counters | json":
        return json.dumps({"interfaceCounters": {p: {"rxFrames": sum(x.get("rx", 0) for x in v.get("pfc", {}).values()),
                                                     "txFrames": sum(x.get("tx", 0) for x in v.get("pfc", {}).values())}
                                                 for p, v in ports.items()}}, indent=2)
    if command == "show qos interfaces ecn counters queue | json":
        return json.dumps({"intfQueueCounters": {p: {"queueCounters": {
            str(tc): str(_q(v, tc)["ecn"]) if str(tc) in v.get("queues", {}) else "-" for tc in range(8)}}
            for p, v in ports.items()}}, indent=2)
    if command == "show interfaces counters queue drops | json":
        return json.dumps({"interfaces": {p: {"trafficClasses": {
            f"TC{tc}": {"egressQueueCounters": {"countersSum": {"droppedPackets": _q(v, tc)["drops"]}}}
            for tc in range(8)}} for p, v in ports.items()}}, indent=2)
    if command == "show priority-flow-control counters watchdog | json":
        return json.dumps({"interfaces": {p: {"txQueues": {tc: {"stuckCount": w.get("stuck", 0),
                                                                "recoveryCount": w.get("recovered", 0)}
                                                           for tc, w in v.get("wd", {}).items()}}
                                          for p, v in ports.items() if v.get("wd")}}, indent=2)
    if command == "show ip route | json":
        return json.dumps({"vrfs": {"default": {"routes": {p: {"routeType": "eBGP", "vias": [
            {"nexthopAddr": f"10.255.0.{2 * k + 1}", "interface": f"Ethernet{k + 1}/1"} for k in range(n)]}
            for p, n in st["routes"].items()}}}}, indent=2)
    return None
