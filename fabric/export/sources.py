"""Where the counters of `fabric export -f prometheus` come from: one exporter mapping for the hosts and one per NOS.

Every alert reads *normalized* series (`fabric:…` recording rules, fabric/export/prometheus.py) that carry the
fabric's labels; the rules that build them read the metric names of the exporters below. A switch's exporter is in
its NOS folder, fabric/nos/<nos>/telemetry.yaml: the metric of each signal, the signals it lacks (and why), and per
release and ASIC the metrics it emits, with the document that says so. A switch gets the rules of the metrics its
release and ASIC emit; where a signal has none, the export says so instead of writing a rule that cannot fire.

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

from importlib import resources
from typing import Literal

import yaml
from pydantic import BaseModel, ConfigDict

from fabric.nos import NOS


class Counter(BaseModel):
    """One exporter metric: its name, the label naming the port and the label naming the queue (TC) or priority."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    metric: str
    port_label: str
    class_label: str | None = None
    scale: float = 1.0  # multiply to get the normalized unit (packets, bits/s, µs)


Signal = Literal["queue_drops", "queue_ecn_marked", "rx_pause_us", "tx_pause_us", "watchdog_storms", "speed_bps",
                 "optics_rx_power_dbm"]
# the signals an alert reads (a switch lacking one is named in the export's warnings), in the warnings' words
ALERTED: dict[str, str] = {
    "queue_drops": "lossless queue drops (RoceLosslessQueueDrops)",
    "tx_pause_us": "PFC pause sent (RocePfcPauseStorm)",
    "watchdog_storms": "PFC watchdog (RocePfcWatchdogFired)",
    "speed_bps": "link speed (RoceLinkBelowSpeed)",
    "optics_rx_power_dbm": "optics RX power (RoceOpticsNearThreshold)",
}


class ReleaseRow(BaseModel):
    """The releases and ASICs for which the exporter emits `metrics`, with where that is documented."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    releases: tuple[str, ...]
    asics: tuple[str, ...]  # ASIC generations (fabric.model.platforms), or `any`
    why: str
    source: str  # URL (or repository, path, commit) and release
    metrics: frozenset[str]

    def covers(self, release: str, asic: str) -> bool:
        return release in self.releases and ("any" in self.asics or asic in self.asics)


class SwitchSource(BaseModel):
    """A NOS's exporter (fabric/nos/<nos>/telemetry.yaml): the metric of each normalized signal, the signals it
    lacks and why, and per release and ASIC the metrics it emits."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    exporter: str
    port: int | None  # default scrape port; None: no exporter to scrape
    notes: str = ""
    signals: dict[Signal, Counter] = {}
    missing: dict[Signal, str] = {}  # a signal the exporter never provides → why
    not_applicable: frozenset[Signal] = frozenset()  # signals the NOS has no use for (Linux: no PFC)
    releases: tuple[ReleaseRow, ...]

    def counter(self, signal: str) -> Counter | None:
        return self.signals.get(signal)  # type: ignore[call-overload]

    @property
    def queue_drops(self) -> Counter | None:
        return self.counter("queue_drops")

    @property
    def queue_ecn_marked(self) -> Counter | None:
        return self.counter("queue_ecn_marked")

    @property
    def optics_rx_power_dbm(self) -> Counter | None:
        return self.counter("optics_rx_power_dbm")

    def row(self, release: str, asic: str) -> ReleaseRow | None:
        """The table row saying what a switch of this release and ASIC emits; None: nothing documented."""
        return next((r for r in self.releases if r.covers(release, asic)), None)

    def why_none(self, release: str, asic: str) -> str:
        """Why a switch of this release and ASIC emits nothing: its release's row, or the table's silence."""
        row = next((r for r in self.releases if release in r.releases), None)
        if row is None:
            return f"the telemetry table lists no export for release {release} (fabric/nos/<nos>/telemetry.yaml)"
        return f"{row.why} ({row.source})" if not row.asics or not row.metrics else \
            f"{row.why}, not on {asic} ({row.source})"

    def why_missing(self, signal: str, release: str) -> str:
        """Why the exporter lacks `signal` on `release`."""
        if signal in self.missing:
            return self.missing[signal]  # type: ignore[index]
        return f"not exported by release {release}"

    def emitted(self, release: str, asic: str) -> dict[str, Counter]:
        """signal → counter, for the signals whose metric a switch of this release and ASIC emits."""
        row = self.row(release, asic)
        return {s: c for s, c in self.signals.items() if row is not None and c.metric in row.metrics}


def _load_sources() -> dict[str, SwitchSource]:
    out: dict[str, SwitchSource] = {}
    for name in NOS:
        ref = resources.files("fabric") / "nos" / name / "telemetry.yaml"
        if ref.is_file():
            out[name] = SwitchSource.model_validate(yaml.safe_load(ref.read_text()))
    return out


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


SWITCH_SOURCES: dict[str, SwitchSource] = _load_sources()  # NOS name → its exporter (fabric/nos/*/telemetry.yaml)


def tc_textfile(s: SwitchSource, ports: dict[str, dict[str, int]]) -> str:
    """The series of a Linux switch's exporter `s` (the `frr` row's) in the Prometheus text format, for
    node_exporter's textfile collector: `queue:<tc>:drops|ecn_marked` per port, as
    `fabric.parsers.iproute.queue_counters` reads them from `tc -s class show` / `tc -s -j qdisc show`."""
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
