"""Grafana dashboards (JSON model, schemaVersion 39) for the series of fabric/export/prometheus.py. Pure.

One dashboard per fabric, `<fabric>-lossless`, with `su` and `rail` variables read from `fabric_port_info`
(multi-select, "All" included) and one row per concern: lossless queue health on the leaves, PFC pauses, ECN and
CNPs per sender, PFC watchdog events, link speed. Every panel queries only `fabric:` series, so the legend names
the device, port and NIC, and only panels whose series the rules record are drawn.
"""

from __future__ import annotations

from typing import Any

from fabric.export.prometheus import lossless

SCHEMA = 39
DATASOURCE = {"type": "prometheus", "uid": "${datasource}"}
SEL = 'su=~"$su", rail=~"$rail"'

# (row, title, expr, unit, legend)
_PANELS: list[tuple[str, str, str, str, str]] = [
    ("Lossless queues", "Drops on lossless queues (pkt/s)",
     "fabric:switch_queue_drops:rate{%s, queue=~\"$lossless_tc\"}", "pps", "{{device}} {{port}} q{{queue}} ({{peer}})"),
    ("Lossless queues", "ECN-marked on leaf queues (pkt/s)", "fabric:switch_queue_ecn_marked:rate{%s}", "pps",
     "{{device}} {{port}} q{{queue}}"),
    ("Lossless queues", "NIC discards on the lossless priority (pkt/s)", "fabric:nic_lossless_discards:rate{%s}",
     "pps", "{{device}} {{nic}}"),
    ("PFC pauses", "Share of time a NIC pauses its leaf", "fabric:nic_tx_pause:ratio{%s}", "percentunit",
     "{{device}} {{nic}} prio {{priority}}"),
    ("PFC pauses", "Share of time a NIC is paused", "fabric:nic_rx_pause:ratio{%s}", "percentunit",
     "{{device}} {{nic}} prio {{priority}}"),
    ("PFC pauses", "Share of time a switch port pauses its peer", "fabric:switch_tx_pause:ratio{%s}", "percentunit",
     "{{device}} {{port}} prio {{priority}}"),
    ("ECN and CNP per sender", "CNPs handled per sender (1/s)", "fabric:nic_cnp_handled:rate{%s}", "pps",
     "{{device}} {{nic}}"),
    ("ECN and CNP per sender", "CNPs sent per receiver (1/s)", "fabric:nic_cnp_sent:rate{%s}", "pps",
     "{{device}} {{nic}}"),
    ("ECN and CNP per sender", "CNPs ignored (1/s)", "fabric:nic_cnp_ignored:rate{%s}", "pps", "{{device}} {{nic}}"),
    ("ECN and CNP per sender", "ECN-marked RoCE packets received (1/s)", "fabric:nic_ecn_marked:rate{%s}", "pps",
     "{{device}} {{nic}}"),
    ("ECN and CNP per sender", "Lossless send rate", "fabric:nic_tx_lossless:bps{%s}", "bps", "{{device}} {{nic}}"),
    ("PFC watchdog", "NIC pause watchdog events", "fabric:nic_pause_storm_events:increase{%s}", "short",
     "{{device}} {{nic}}"),
    ("PFC watchdog", "Switch PFC watchdog storms", "fabric:switch_watchdog_storms:increase{%s}", "short",
     "{{device}} {{port}} prio {{priority}}"),
    ("Links", "Link speed (NIC)", "fabric:nic_speed:bps{%s}", "bps", "{{device}} {{nic}} ({{speed}}G designed)"),
    ("Links", "Link speed (switch)", "fabric:switch_speed:bps{%s}", "bps", "{{device}} {{port}} ({{speed}}G designed)"),
]


def _variable(name: str, query: str, multi: bool = True) -> dict[str, Any]:
    return {"name": name, "type": "query", "datasource": DATASOURCE, "query": {"query": query, "refId": name},
            "definition": query, "refresh": 1, "multi": multi, "includeAll": multi, "allValue": ".*",
            "current": {"text": "All", "value": "$__all"} if multi else {}, "sort": 3}


def dashboards(fabric: Any, rules: dict) -> dict[str, dict[str, Any]]:
    """`<fabric>-lossless` → the dashboard JSON model."""

    records = {r["record"] for g in rules["groups"] for r in g["rules"] if "record" in r}
    _, tcs, _ = lossless(fabric)
    panels: list[dict[str, Any]] = []
    y = 0
    pid = 1
    row_open = None
    col = 0
    for row, title, expr, unit, legend in _PANELS:
        if expr.split("{", 1)[0] not in records:
            continue
        if row != row_open:
            y += 8 if col else 0
            panels.append({"id": pid, "type": "row", "title": row, "collapsed": False,
                           "gridPos": {"h": 1, "w": 24, "x": 0, "y": y}, "panels": []})
            pid += 1
            y += 1
            col = 0
            row_open = row
        panels.append({
            "id": pid, "type": "timeseries", "title": title, "datasource": DATASOURCE,
            "gridPos": {"h": 8, "w": 12, "x": 12 * col, "y": y},
            "fieldConfig": {"defaults": {"unit": unit}, "overrides": []},
            "options": {"legend": {"displayMode": "table", "placement": "bottom", "calcs": ["max", "last"]},
                        "tooltip": {"mode": "multi", "sort": "desc"}},
            "targets": [{"refId": "A", "datasource": DATASOURCE, "expr": expr % SEL, "legendFormat": legend}]})
        pid += 1
        col ^= 1
        if col == 0:
            y += 8
    info = f'fabric_port_info{{fabric="{fabric.name}"}}'
    name = f"{fabric.name}-lossless"
    return {name: {
        "uid": f"roce-{fabric.name}"[:40], "title": f"RoCE fabric {fabric.name}: lossless health per SU and rail",
        "tags": ["roce-fabric", fabric.name], "schemaVersion": SCHEMA, "version": 1, "editable": True,
        "time": {"from": "now-6h", "to": "now"}, "refresh": "30s",
        "annotations": {"list": [{"name": "fabric alerts", "datasource": DATASOURCE, "enable": True,
                                  "expr": f'ALERTS{{alertstate="firing", fabric="{fabric.name}"}}',
                                  "iconColor": "red", "titleFormat": "{{alertname}}",
                                  "textFormat": "{{device}} {{port}} {{peer}}"}]},
        "templating": {"list": [
            {"name": "datasource", "type": "datasource", "query": "prometheus", "current": {}},
            _variable("su", f"label_values({info}, su)"),
            _variable("rail", f"label_values({info}, rail)"),
            {"name": "lossless_tc", "type": "constant", "hide": 2, "query": "|".join(map(str, tcs)) or "3"}]},
        "panels": panels}}
