"""`promtool test rules` unit tests for the rules of fabric/export/prometheus.py, generated with them.

One test per alert: the exporter series of one fault on one host rail NIC (or one leaf port), in the metric names
of fabric/export/sources.py, beside `fabric_port_info` of every port (as the topology file serves it), and the
alert expected with its exact labels and annotations; one healthy fabric in which no alert fires. Pure.
"""

from __future__ import annotations

import re

from fabric.design.intent import FabricIntent
from fabric.export import sources as src
from fabric.export.prometheus import FABRIC_LABELS, INFO, SwitchGroup, lossless, port_labels
from fabric.model.inventory import Monitoring

_IF = re.compile(r"\{\{ if \$labels\.(\w+) \}\}(.*?)\{\{ end \}\}")
_REF = re.compile(r"\{\{ \$labels\.(\w+) \}\}")
STEPS = 15  # samples, one a minute
EVAL = "10m"


def render(template: str, labels: dict[str, str]) -> str:
    """Expand the only Go template forms the rules use: `{{ $labels.x }}` and `{{ if $labels.x }}…{{ end }}`."""
    text = _IF.sub(lambda m: m.group(2) if labels.get(m.group(1)) else "", template)
    return _REF.sub(lambda m: labels.get(m.group(1), ""), text)


def _series(metric: str, labels: dict[str, str], values: str) -> dict:
    inner = ", ".join(f'{k}="{v}"' for k, v in sorted(labels.items()))
    return {"series": f"{metric}{{{inner}}}", "values": values}


_NODE = re.compile(r'node="([^"]*)"')


def topology(info: list[dict[str, str]], series: list[dict]) -> list[dict]:
    """`fabric_port_info` of every port of the devices the series come from (as the topology file serves it)."""
    nodes = {m.group(1) for s in series if (m := _NODE.search(s["series"]))}
    return [_series(INFO, lb, _flat(1)) for lb in info if lb["device"] in nodes]


def _grow(per_minute: float) -> str:
    return f"0+{per_minute:g}x{STEPS}"


def _flat(value: float) -> str:
    return f"{value:g}x{STEPS}"


def unit_tests(fabric: FabricIntent, m: Monitoring, rules: dict, groups: list[SwitchGroup]) -> dict:
    """The promtool test file for `rules` (rule_groups' result of `groups`), rule file named `<fabric>.rules.yml`."""
    alerts = {r["alert"]: r for g in rules["groups"] for r in g["rules"] if "alert" in r}
    info = port_labels(fabric)
    hosts = [lb for lb in info if lb["role"] == "host"]
    prios, tcs, _ = lossless(fabric)
    tests: list[dict] = []

    def expect(alert: str, labels: dict[str, str], extra: dict[str, str] | None = None) -> dict:
        # an alert the rules leave out (no lossless priority: no pause alerts) expects nothing: `case` skips it
        rule = alerts.get(alert, {"annotations": {}})
        lb = {**labels, **(extra or {}), **rule.get("labels", {})}
        return {"exp_labels": lb, "exp_annotations": {k: render(v, lb) for k, v in rule["annotations"].items()}}

    def case(name: str, series: list[dict], alert: str, expected: list[dict]) -> None:
        if alert in alerts:
            tests.append({"name": name, "interval": "1m", "input_series": topology(info, series) + series,
                          "alert_rule_test": [{"eval_time": EVAL, "alertname": alert, "exp_alerts": expected}]})

    def nic(lb: dict[str, str]) -> dict[str, str]:  # the labels an alert carries: the join's, not the selector's
        return {k: v for k, v in lb.items() if k in (*FABRIC_LABELS, "device", "port", "nic")}

    if not hosts:
        return {"rule_files": [f"{fabric.name}.rules.yml"], "evaluation_interval": "1m", "tests": tests}
    h = hosts[0]
    eth = {"node": h["device"], "device": h["port"]}
    ib = {"node": h["device"], "device": h["nic"], "port": "1"}
    p = prios[0] if prios else 3
    speed_bytes = int(h["speed"]) * 1e9 / 8

    case("pause storm on one host NIC", [_series(src.HOST_TX_PAUSE_US.format(p=p), eth, _grow(54e6))],
         "RocePfcPauseStorm", [expect("RocePfcPauseStorm", nic(h), {"priority": str(p)})])
    case("NIC pause watchdog", [_series(src.HOST_STORM_EVENTS, eth, _grow(1))],
         "RocePfcWatchdogFired", [expect("RocePfcWatchdogFired", nic(h))])
    case("ECN marks on a rail", [_series(src.IB_ECN_MARKED, ib, _grow(600)),
                                 _series(src.HOST_RX_PACKETS.format(p=p), eth, _grow(6000))],
         "RoceEcnMarksClimbing",
         [expect("RoceEcnMarksClimbing", {"fabric": h["fabric"], "su": h["su"], "rail": h["rail"]})])
    peers = [lb for lb in hosts if lb["rail"] == h["rail"] and lb["device"] != h["device"]]
    if peers:
        o = peers[0]
        o_ib = {"node": o["device"], "device": o["nic"], "port": "1"}
        case("a sender ignores the CNPs of its rail",
             [_series(src.IB_CNP_HANDLED, ib, _flat(0)),
              _series(src.HOST_TX_BYTES.format(p=p), eth, _grow(speed_bytes * 60 * 0.5)),
              _series(src.IB_CNP_SENT, o_ib, _grow(600)), _series(src.IB_CNP_HANDLED, o_ib, _grow(600))],
             "RoceCnpNotHandled", [expect("RoceCnpNotHandled", nic(h))])
    behind_off = [lb for lb in hosts if lb.get("adaptive_routing") == "false"]
    on = [lb for lb in hosts if lb.get("adaptive_routing") == "true"]
    oos = []
    exp = []
    for lb in (behind_off[:1] + on[:1]):
        oos.append(_series(src.IB_OUT_OF_SEQUENCE, {"node": lb["device"], "device": lb["nic"], "port": "1"},
                           _grow(600)))
        if lb.get("adaptive_routing") == "false":
            exp.append(expect("RoceOutOfSequence", nic(lb)))
    case("out of sequence: alerts without adaptive routing only", oos, "RoceOutOfSequence", exp)
    leaf_ports = [lb for lb in info if lb["role"] == "leaf" and lb["peer"] == f"{h['device']}:{h['port']}"] or \
                 [lb for lb in info if lb["role"] != "host"]
    emits = {sw.name: g.counters for g in groups for sw in g.switches}
    c = emits.get(leaf_ports[0]["device"], {}).get("queue_drops") if leaf_ports else None
    if c is not None and tcs:
        lp = leaf_ports[0]
        case("drops on the lossless queue of a leaf port",
             [_series(c.metric, {"node": lp["device"], c.port_label: lp["port"], c.class_label or "queue": str(tcs[0])},
                      _grow(60)),
              _series(c.metric, {"node": lp["device"], c.port_label: lp["port"], c.class_label or "queue": "0"},
                      _grow(600))],
             "RoceLosslessQueueDrops", [expect("RoceLosslessQueueDrops", nic(lp), {"queue": str(tcs[0])})])
    else:
        case("drops on a NIC's lossless priority", [_series(src.HOST_RX_DISCARDS.format(p=p), eth, _grow(60))],
             "RoceLosslessQueueDrops", [expect("RoceLosslessQueueDrops", nic(h))])
    ok = [_series(src.HOST_SPEED_BYTES, {"node": lb["device"], "device": lb["port"]},
                  _flat(int(lb["speed"]) * 1e9 / 8)) for lb in hosts[1:3]]
    case("a link renegotiated to half its speed",
         [_series(src.HOST_SPEED_BYTES, eth, _flat(speed_bytes / 2)), *ok],
         "RoceLinkBelowSpeed", [expect("RoceLinkBelowSpeed", nic(h))])
    if "RoceOpticsNearThreshold" in alerts and m.optics_rx_power_min_dbm is not None:
        lp, optics = next((lb, c) for lb in info if (s := src.SWITCH_SOURCES.get(lb.get("nos", ""))) is not None
                          and (c := s.optics_rx_power_dbm) is not None)  # the first port whose NOS exports it
        case("optics near the RX power threshold",
             [_series(optics.metric, {"node": lp["device"], optics.port_label: lp["port"], "unit": "1"},
                      _flat(m.optics_rx_power_min_dbm + m.optics_margin_db / 2))],
             "RoceOpticsNearThreshold", [expect("RoceOpticsNearThreshold", nic(lp), {"lane": "1"})])
    tests.append(_healthy(fabric, hosts, prios, sorted(alerts), info))
    return {"rule_files": [f"{fabric.name}.rules.yml"], "evaluation_interval": "1m", "tests": tests}


def _healthy(fabric: FabricIntent, hosts: list[dict[str, str]], prios: list[int], alerts: list[str],
             info: list[dict[str, str]]) -> dict:
    """Every host NIC sending at half its speed with light pausing, CNPs sent and handled, ECN rare, full speed."""
    series: list[dict] = []
    p = prios[0] if prios else 3
    for lb in hosts[:8]:
        eth = {"node": lb["device"], "device": lb["port"]}
        ib = {"node": lb["device"], "device": lb["nic"], "port": "1"}
        bytes_s = int(lb["speed"]) * 1e9 / 8
        series += [_series(src.HOST_TX_BYTES.format(p=p), eth, _grow(bytes_s * 60 * 0.5)),
                   _series(src.HOST_RX_PACKETS.format(p=p), eth, _grow(60e6)),
                   _series(src.HOST_TX_PAUSE_US.format(p=p), eth, _grow(60e6 * 0.01)),
                   _series(src.HOST_STORM_EVENTS, eth, _flat(0)),
                   _series(src.HOST_RX_DISCARDS.format(p=p), eth, _flat(0)),
                   _series(src.HOST_SPEED_BYTES, eth, _flat(bytes_s)),
                   _series(src.IB_CNP_SENT, ib, _grow(600)), _series(src.IB_CNP_HANDLED, ib, _grow(600)),
                   _series(src.IB_CNP_IGNORED, ib, _flat(0)), _series(src.IB_ECN_MARKED, ib, _grow(600)),
                   _series(src.IB_OUT_OF_SEQUENCE, ib, _flat(0))]
    return {"name": f"healthy {fabric.name}: no alert", "interval": "1m",
            "input_series": topology(info, series) + series,
            "alert_rule_test": [{"eval_time": EVAL, "alertname": a, "exp_alerts": []} for a in alerts]}
