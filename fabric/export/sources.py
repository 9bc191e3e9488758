"""Where the counters of `fabric export -f prometheus` come from: one exporter mapping for the hosts and one per NOS.

Every alert reads *normalized* series (`fabric:…` recording rules, fabric/export/prometheus.py) that carry the
fabric's labels; the rules that build them read the metric names of the exporters below. A signal a source does
not export is `None` here, and its alerts are not generated for that NOS (the README's table says which).

Hosts — prometheus/node_exporter (`--collector.ethtool`, the `netclass` and `infiniband` collectors):
- ethtool collector (collector/ethtool_linux.go, `buildEthtoolFQName`): each `ethtool -S` stat becomes
  `node_ethtool_<name>` with the name lower-cased, non-alphanumerics → `_`, and `rx`/`tx` words → `received`/
  `transmitted` (so mlx5's `tx_prio3_pause_duration` is `node_ethtool_transmitted_prio3_pause_duration`), one label
  `device` (the netdev). mlx5 names: kernel Documentation/networking/device_drivers/ethernet/mellanox/mlx5/
  counters.rst (`rx_prio{p}_pause_duration` in µs, `rx_prio{p}_discards`, `tx_pause_storm_error_events`).
- infiniband collector: RDMA `hw_counters` since node_exporter v1.11.0 (commit f3154c97, PR #2827):
  `node_infiniband_np_cnp_packets_sent_total`, `…_rp_cnp_packets_handled_total`,
  `…_rp_cnp_ignored_packets_received_total`, `…_np_ecn_marked_roce_packets_received_total`,
  `…_out_of_sequence_packets_received_total`; labels `device` (mlx5_0) and `port` ("1").
- netclass collector: `node_network_speed_bytes{device}` = the negotiated speed in Mb/s × 10⁶ / 8
  (collector/netclass_linux.go).

The joins need the fabric's name of each scraped node: every target carries a `node` label (the inventory name),
as `fabric export -f prometheus` writes it into its file_sd target files.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Counter:
    """One exporter metric: its name, the label naming the port and the label naming the queue (TC) or priority."""

    metric: str
    port_label: str
    class_label: str | None = None
    scale: float = 1.0  # multiply to get the normalized unit (packets, bits/s, µs)


@dataclass(frozen=True, slots=True)
class SwitchSource:
    """A NOS row's exporter: what it is, where it is documented and the metric of each normalized signal."""

    exporter: str
    source: str
    port: int | None  # default scrape port; None: no exporter to scrape
    queue_drops: Counter | None = None  # packets dropped on an egress queue (TC)
    queue_ecn_marked: Counter | None = None  # packets ECN-marked on an egress queue
    rx_pause_us: Counter | None = None  # µs paused by the peer, per priority
    tx_pause_us: Counter | None = None  # µs the switch paused its peer, per priority
    watchdog_storms: Counter | None = None  # PFC watchdog storms detected, per priority
    speed_bps: Counter | None = None  # operational speed (bits/s)
    optics_rx_power_dbm: Counter | None = None
    notes: str = ""


# Host NIC series (node_exporter); `{p}` is a lossless priority.
HOST_EXPORTER = "prometheus/node_exporter ≥ 1.11 (--collector.ethtool; netclass, infiniband)"
HOST_PORT = 9100
ETHTOOL = "node_ethtool_"
HOST_TX_PAUSE_US = "node_ethtool_transmitted_prio{p}_pause_duration"  # mlx5 tx_prio{p}_pause_duration (µs)
HOST_RX_PAUSE_US = "node_ethtool_received_prio{p}_pause_duration"
HOST_RX_DISCARDS = "node_ethtool_received_prio{p}_discards"  # mlx5 rx_prio{p}_discards
HOST_TX_BYTES = "node_ethtool_transmitted_prio{p}_bytes"
HOST_RX_PACKETS = "node_ethtool_received_prio{p}_packets"
HOST_STORM_EVENTS = "node_ethtool_transmitted_pause_storm_error_events"  # mlx5: pause TX stopped by the NIC watchdog
HOST_SPEED_BYTES = "node_network_speed_bytes"
IB_CNP_SENT = "node_infiniband_np_cnp_packets_sent_total"
IB_CNP_HANDLED = "node_infiniband_rp_cnp_packets_handled_total"
IB_CNP_IGNORED = "node_infiniband_rp_cnp_ignored_packets_received_total"
IB_ECN_MARKED = "node_infiniband_np_ecn_marked_roce_packets_received_total"
IB_OUT_OF_SEQUENCE = "node_infiniband_out_of_sequence_packets_received_total"


def ethtool_metric(stat: str) -> str:
    """node_exporter's name for an `ethtool -S` stat (collector/ethtool_linux.go `buildEthtoolFQName`)."""
    import re

    name = re.sub(r"_*[^0-9A-Za-z_]+_*", "_", stat).lower().lstrip("_")
    name = re.sub(r"(^|_)rx(_|$)", r"\1received\2", name)
    name = re.sub(r"(^|_)tx(_|$)", r"\1transmitted\2", name)
    return ETHTOOL + name


SWITCH_SOURCES: dict[str, SwitchSource] = {
    # vinted/sonic-exporter @ 3759410 (internal/collector/queue_collector.go, interface_collector.go): reads
    # COUNTERS_DB/STATE_DB from redis. Queue drops per COUNTERS_QUEUE_NAME_MAP entry (`Ethernet0:3` → device,
    # queue); speed comes from CONFIG_DB (the configured speed: a renegotiated link is invisible there, the
    # host side alerts on it); RX power per lane from TRANSCEIVER_DOM_SENSOR. It exports no PFC, WRED/ECN or
    # PFC-watchdog counters (those stay in COUNTERS_DB: SAI_PORT_STAT_PFC_3_RX_PKTS, PFC_WD_*).
    "sonic": SwitchSource(
        exporter="vinted/sonic-exporter", source="github.com/vinted/sonic-exporter internal/collector", port=9101,
        queue_drops=Counter("sonic_queue_dropped_packets_total", "device", "queue"),
        optics_rx_power_dbm=Counter("sonic_interface_optic_receive_power_dbm", "device"),
        notes="no PFC, ECN or watchdog counters exported; speed is CONFIG_DB's"),
    # Cumulus Linux OpenTelemetry export (docs.nvidia.com/networking-ethernet-software/cumulus-linux-511/
    # Monitoring-and-Troubleshooting/Open-Telemetry-Export/), OTLP → an OpenTelemetry Collector with its
    # prometheus exporter: gauges named as listed, attribute `interface`; the TC / switch-priority series need
    # `nv set system telemetry interface-stats egress-buffer traffic-class <tc>` / `… switch-priority <p>`.
    # The attribute naming the class is not in NVIDIA's table: `traffic_class` / `switch_priority` here are an
    # assumption to check against the collector's output. No PFC watchdog metric is exported.
    "nvue": SwitchSource(
        exporter="Cumulus Linux OTLP export via an OpenTelemetry Collector (or NetQ)",
        source="docs.nvidia.com cumulus-linux-511 Open-Telemetry-Export", port=8889,
        queue_drops=Counter("nvswitch_interface_tc_tx_no_buffer_discard_uc", "interface", "traffic_class"),
        queue_ecn_marked=Counter("nvswitch_interface_tc_tx_ecn_marked_tc", "interface", "traffic_class"),
        rx_pause_us=Counter("nvswitch_interface_sp_rx_pause_duration", "interface", "switch_priority"),
        tx_pause_us=Counter("nvswitch_interface_sp_tx_pause_duration", "interface", "switch_priority"),
        speed_bps=Counter("nvswitch_interface_oper_aggregate_speed", "interface"),
        notes="no PFC watchdog metric; class attribute names unverified; one collector serves every switch: "
              "relabel the switch's host name attribute to `node`"),
    # EOS: OpenConfig over gNMI (openconfig-qos /qos/interfaces/interface/output/queues/queue/state/dropped-pkts;
    # openconfig-if-ethernet's negotiated-port-speed is an identity, not a number) into gnmic's prometheus output:
    # openconfig/gnmic outputs/prometheus_output/prometheus_common.go `MetricName` = [prefix_][subscription_] +
    # the value's path with non-alphanumerics → `_`, left `_` trimmed; `GetLabels` = each event tag's base name
    # sanitized the same way. The event format names a list key `<element>_<key>` (interface_interface-id →
    # `interface_interface_id`, `queue_name`): taken from gnmic's event-format docs, not re-checked here; run it
    # with no metric prefix and without append-subscription-name. EOS has no OpenConfig leaf for PFC frames, ECN
    # marks or the PFC watchdog.
    "eos": SwitchSource(
        exporter="gnmic prometheus output (OpenConfig over gNMI)",
        source="openconfig/gnmic outputs/prometheus_output/prometheus_common.go; openconfig-qos-interfaces.yang",
        port=9804,
        queue_drops=Counter("qos_interfaces_interface_output_queues_queue_state_dropped_pkts",
                            "interface_interface_id", "queue_name"),
        notes="no PFC, ECN, watchdog or numeric speed leaf in EOS's OpenConfig; one gnmic serves every switch: "
              "relabel its `source` tag to `node`"),
    # Linux/FRR white box (and the lab): no exporter publishes the per-class counters of a tc tree —
    # node_exporter's qdisc collector reports root qdiscs only (collector/qdisc_linux.go skips `Parent != 0`).
    # These are the names fabric expects from a textfile-collector script reading `tc -s class show` and
    # `tc -s -j qdisc show` (fabric.parsers.iproute.queue_counters); tests/test_export_prometheus.py serves them.
    "frr": SwitchSource(
        exporter="none: node_exporter textfile collector fed from `tc -s` (names fabric defines)",
        source="fabric.parsers.iproute.queue_counters", port=9100,
        queue_drops=Counter("fabric_tc_queue_dropped_packets_total", "device", "queue"),
        queue_ecn_marked=Counter("fabric_tc_queue_ecn_marked_packets_total", "device", "queue"),
        speed_bps=Counter("node_network_speed_bytes", "device", scale=8.0),
        notes="Linux has no PFC: no pause or watchdog counters"),
}


def tc_textfile(ports: dict[str, dict[str, int]]) -> str:
    """The `frr` row's series in the Prometheus text format, for node_exporter's textfile collector on a Linux
    switch: `queue:<tc>:drops|ecn_marked` per port, as `fabric.parsers.iproute.queue_counters` reads them from
    `tc -s class show` / `tc -s -j qdisc show`."""
    s = SWITCH_SOURCES["frr"]
    assert s.queue_drops is not None and s.queue_ecn_marked is not None
    names = {"drops": s.queue_drops.metric, "ecn_marked": s.queue_ecn_marked.metric}
    out: dict[str, list[str]] = {metric: [] for metric in names.values()}
    for port, counters in sorted(ports.items()):
        for key, value in sorted(counters.items()):
            kind, _, rest = key.partition(":")
            tc, _, what = rest.partition(":")
            if kind == "queue" and what in names:
                out[names[what]].append(f'{names[what]}{{device="{port}",queue="{tc}"}} {value}')
    helps = {"drops": "packets dropped", "ecn_marked": "packets ECN-marked"}
    return "".join(f"# HELP {metric} Egress queue (TC) {helps[what]}, from tc -s (fabric).\n# TYPE {metric} counter\n"
                   + "".join(f"{ln}\n" for ln in out[metric])
                   for what, metric in names.items() if out[metric])
