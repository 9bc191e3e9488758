"""`fabric export -f prometheus`: alerting and recording rules that know the fabric, from its derived facts.

Three rule groups per fabric, in `<fabric>.rules.yml`:

1. `topology` — `fabric:port_speed_expected:bps` (the link speed the inventory cables), from
   `fabric_port_info{fabric, su, rail, role, device, port, nic, peer, cable, speed, adaptive_routing, nos} 1`,
   one series per port in `topology/<fabric>.prom` (a static file scraped once, `topology_exposition`).
   Everything the alerts say about *where* comes from there.
2. `signals` — the exporters' counters (fabric/export/sources.py) turned into rates and shares and joined to
   `fabric_port_info`, so every `fabric:…` series names the device, port, NIC, peer and cable. A switch's rules
   read only the metrics its NOS release and ASIC emit (fabric/nos/<nos>/telemetry.yaml, selected by the `nos`,
   `release` and `platform` labels of its ports); where a signal has none, the rule file's head and stderr say
   which switches and why.
3. `alerts` — one rule per failure, thresholds from the QoS policy, the link speed and `monitoring:`:

- `RocePfcPauseStorm`: a port pauses its peer on a lossless priority more than `pause_storm_fraction` (0.5) of
  the time (mlx5 `*_prio{p}_pause_duration`, µs per second);
- `RocePfcWatchdogFired`: a NIC's pause watchdog (mlx5 `tx_pause_storm_error_events`) or, where its exporter
  publishes one, a switch's PFC watchdog acted;
- `RoceEcnMarksClimbing`: more than `ecn_marked_fraction` (0.05) of a (SU, rail)'s RoCE packets arrive
  ECN-marked (only where the policy's lossless queue marks ECN);
- `RoceCnpNotHandled`: a sender sends on the lossless class (≥ `cnp_sender_min_fraction` (0.05) × its link
  speed), CNPs flow on its rail and other senders react, but its `rp_cnp_handled` is flat — or it counts
  `rp_cnp_ignored`;
- `RoceOutOfSequence`: `out_of_sequence` grows faster than `out_of_sequence_per_s` (1/s) behind a leaf without
  adaptive routing;
- `RoceLosslessQueueDrops`: a lossless queue (the TCs of the PFC priorities) of a switch port, or a NIC's
  lossless priority, drops more than `lossless_drops_per_s` (0);
- `RoceLinkBelowSpeed`: a port runs below the speed the inventory cables;
- `RoceOpticsNearThreshold`: a module's RX power is within `optics_margin_db` of `optics_rx_power_min_dbm`
  (generated only when that is set).

Every alert waits `pending` (2m) and rates use `rate_window` (2m). The `node` label of each scrape target (the
inventory name, as the written file_sd files set it) joins an exporter's series to the fabric.
Pure: no I/O; the same inventory gives the same bytes.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from ipaddress import IPv4Interface

import yaml

from fabric.design.intent import FabricIntent, HostIntent, SwitchIntent
from fabric.export import sources as src
from fabric.model.inventory import Monitoring
from fabric.model.load import Loaded
from fabric.nos import NOS

INFO = "fabric_port_info"
EXPECTED = "fabric:port_speed_expected:bps"
# labels every fabric:… series and alert carries (besides device/port/nic, which are join keys)
FABRIC_LABELS = ("fabric", "su", "rail", "role", "peer", "cable", "speed", "adaptive_routing", "nos")


def port_labels(fabric: FabricIntent) -> list[dict[str, str]]:
    """One label set per host rail NIC and per switch port, in a stable order."""
    out: list[dict[str, str]] = []
    sw_of = fabric.switches
    for name in sorted(fabric.hosts):
        h = fabric.hosts[name]
        for r in sorted(h.rails, key=lambda r: r.rail):
            leaf = sw_of.get(r.leaf)
            out.append(_clean({
                "fabric": fabric.name, "su": str(h.su), "rail": str(r.rail), "role": "host", "device": name,
                "port": r.netdev, "nic": r.rdma, "peer": f"{r.leaf}:{r.leaf_port}",
                "cable": cable(name, r.netdev, r.leaf, r.leaf_port, r.cable_m), "speed": str(r.speed),
                "adaptive_routing": str(bool(leaf and leaf.adaptive_routing)).lower(), "nos": ""}))
    for name in sorted(sw_of):
        sw = sw_of[name]
        for p in sw.ports:
            ends = (p.peer, p.peer_port, name, p.name) if p.kind == "host" else (name, p.name, p.peer, p.peer_port)
            out.append(_clean({
                "fabric": fabric.name, "su": "" if sw.su is None else str(sw.su),
                "rail": "" if sw.rail is None else str(sw.rail), "role": sw.role, "device": name, "port": p.name,
                "nic": "", "peer": f"{p.peer}:{p.peer_port}", "cable": cable(*ends, p.cable_m), "speed": str(p.speed),
                "adaptive_routing": str(sw.adaptive_routing).lower(), "nos": sw.target, "platform": sw.platform,
                "release": sw.release}))
    return out


def cable(a: str, a_port: str, b: str, b_port: str, metres: int) -> str:
    """The cable as both ends name it: host (or lower tier) first, `gpu-su1-01:eth1 <-> leaf-su1-r1:swp1, 5 m`."""
    return f"{a}:{a_port} <-> {b}:{b_port}, {metres} m"


def _clean(labels: dict[str, str]) -> dict[str, str]:
    return {k: v for k, v in labels.items() if v != ""}


# -- PromQL builders ---------------------------------------------------------------------------------------------

def _relabel(expr: str, port_from: str, class_from: str | None = None, class_to: str = "queue",
             class_value: str | None = None, key: str = "port") -> str:
    """An exporter series → `device` (from the target's `node`) and `port` (or `nic`) [+ class] labels only."""
    e = expr
    if class_value is not None:
        e = f'label_replace({e}, "{class_to}", "{class_value}", "", "")'
    elif class_from is not None and class_from != class_to:
        e = f'label_replace({e}, "{class_to}", "$1", "{class_from}", "(.*)")'
    if port_from != key:
        e = f'label_replace({e}, "{key}", "$1", "{port_from}", "(.*)")'
    e = f'label_replace({e}, "device", "$1", "node", "(.+)")'
    by = ["device", key] + ([class_to] if class_from is not None or class_value is not None else [])
    return f"sum by ({', '.join(by)}) ({e})"


def _join(expr: str, key: str = "port", where: str = "") -> str:
    other = "nic" if key == "port" else "port"
    labels = ", ".join((*FABRIC_LABELS, other))
    sel = f"{INFO}{{{where}}}" if where else INFO
    return f"({expr}) * on(device, {key}) group_left({labels}) {sel}"


def _per_priority(template: str, priorities: Iterable[int], fn: str, window: str, scale: str = "") -> str:
    terms = [_relabel(f"{fn}({template.format(p=p)}[{window}]){scale}", "device", class_to="priority",
                      class_value=str(p)) for p in priorities]
    return " or ".join(f"({t})" for t in terms)


def _sum_priorities(template: str, priorities: Iterable[int], fn: str, window: str, scale: str = "") -> str:
    terms = [f"{fn}({template.format(p=p)}[{window}]){scale}" for p in priorities]
    return _relabel(" + ".join(terms), "device")


@dataclass(frozen=True, slots=True)
class Rule:
    name: str  # record name or alert name
    expr: str
    labels: dict[str, str] | None = None
    annotations: dict[str, str] | None = None
    pending: int | None = None

    def doc(self) -> dict:
        d: dict = ({"alert": self.name} if self.annotations is not None else {"record": self.name})
        d["expr"] = self.expr
        if self.annotations is not None:
            d["for"] = f"{self.pending or 0}s"
        if self.labels:
            d["labels"] = dict(self.labels)
        if self.annotations is not None:
            d["annotations"] = dict(self.annotations)
        return d


def _topology(fabric: FabricIntent) -> list[Rule]:
    speeds = sorted({int(lb["speed"]) for lb in port_labels(fabric)})
    expr = " or ".join(f'({INFO}{{speed="{s}"}} * {s}e9)' for s in speeds) or "vector(0) == 1"
    return [Rule(EXPECTED, expr)]


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def topology_exposition(fabric: FabricIntent) -> str:
    """`fabric_port_info` of every port in the Prometheus text format: a static file for node_exporter's textfile
    collector (or any web server), scraped once by the topology job with `honor_labels` — one series per port,
    where rules would cost one rule evaluation per port and interval."""
    lines = [f"# HELP {INFO} Where a port of fabric {fabric.name} sits: device, port, NIC, peer, cable, SU, rail "
             "(generated by `fabric export -f prometheus`).", f"# TYPE {INFO} gauge"]
    for lb in port_labels(fabric):
        inner = ",".join(f'{k}="{_escape(v)}"' for k, v in sorted(lb.items()))
        lines.append(f"{INFO}{{{inner}}} 1")
    return "\n".join(lines) + "\n"


def lossless(fabric: FabricIntent) -> tuple[list[int], list[int], bool]:
    """Lossless priorities, their TCs (union over switches) and whether a lossless queue marks ECN."""
    prios: set[int] = set()
    tcs: set[int] = set()
    ecn = False
    for sw in fabric.switches.values():
        prios.update(sw.qos.lossless_priorities)
        tcs.update(sw.qos.lossless_tcs)
        ecn |= any(q.ecn is not None and q.ecn.enabled for q in sw.qos.queues.values() if q.lossless)
    for h in fabric.hosts.values():
        prios.update(i for i, on in enumerate(h.nic_qos.pfc) if on)
    return sorted(prios), sorted(tcs), ecn


# normalized switch series: record, signal (fabric/export/sources.py), function, scale, class label
_SWITCH_RECORDS = (
    ("fabric:switch_queue_drops:rate", "queue_drops", "rate", "", "queue"),
    ("fabric:switch_queue_ecn_marked:rate", "queue_ecn_marked", "rate", "", "queue"),
    ("fabric:switch_rx_pause:ratio", "rx_pause_us", "rate", " / 1e6", "priority"),
    ("fabric:switch_tx_pause:ratio", "tx_pause_us", "rate", " / 1e6", "priority"),
    ("fabric:switch_watchdog_storms:increase", "watchdog_storms", "increase", "", "priority"),
    ("fabric:switch_speed:bps", "speed_bps", "", "", "queue"),
    ("fabric:switch_optics_rx_power:dbm", "optics_rx_power_dbm", "", "", "lane"))


@dataclass(frozen=True, slots=True)
class SwitchGroup:
    """Switches of one NOS and release whose release and ASIC emit the same series (fabric/nos/*/telemetry.yaml)."""

    nos: str
    release: str
    switches: tuple[SwitchIntent, ...]
    counters: dict[str, src.Counter]  # signal → the exporter's metric, for the signals these switches emit


def switch_groups(fabric: FabricIntent) -> list[SwitchGroup]:
    """The fabric's switches grouped by NOS, release and the signals their release and ASIC emit."""
    groups: dict[tuple[str, str, tuple[str, ...]], list[SwitchIntent]] = {}
    for name in sorted(fabric.switches):
        sw = fabric.switches[name]
        source = src.SWITCH_SOURCES.get(sw.target)
        signals = tuple(sorted(source.emitted(sw.release, sw.asic))) if source else ()
        groups.setdefault((sw.target, sw.release, signals), []).append(sw)
    out = []
    for (nos, release, signals), switches in groups.items():
        source = src.SWITCH_SOURCES.get(nos)
        counters = source.emitted(release, switches[0].asic) if source else {}
        out.append(SwitchGroup(nos, release, tuple(switches), {s: counters[s] for s in signals}))
    return out


def telemetry_gaps(groups: list[SwitchGroup], m: Monitoring) -> list[str]:
    """One line per group of switches (`switch_groups`) whose exporter lacks a switch series an alert reads: which
    switches, which series, and why (the NOS's telemetry table) — the alerts then hold only the hosts' side of their
    cables."""
    lines = []
    for g in groups:
        source = src.SWITCH_SOURCES.get(g.nos)
        wanted = [s for s in src.ALERTED if s != "optics_rx_power_dbm" or m.optics_rx_power_min_dbm is not None]
        if source is not None:
            wanted = [s for s in wanted if s not in source.not_applicable]
        lacking = [s for s in wanted if s not in g.counters]
        if not lacking:
            continue
        names = [sw.name for sw in g.switches]
        who = (f"{NOS[g.nos].title} {g.release} on "
               f"{', '.join(sorted({f'{sw.platform} ({sw.asic})' for sw in g.switches}))}, "
               f"{len(names)} switch{'es' if len(names) > 1 else ''} ({', '.join(names[:3])}"
               f"{', …' if len(names) > 3 else ''})")
        if not g.counters:
            why = (source.why_none(g.release, g.switches[0].asic) if source else
                   f"no exporter is known for this NOS (no fabric/nos/{g.nos}/telemetry.yaml)")
            lines.append(f"{who}: no switch series, {why}; the alerts hold these switches' cables to the hosts' "
                         "side only")
            continue
        reasons = "; ".join(f"{src.ALERTED[s]}: {source.why_missing(s, g.release) if source else 'no exporter'}"
                            for s in lacking)
        lines.append(f"{who}: no switch series for {reasons}")
    return lines


def _signals(fabric: FabricIntent, m: Monitoring, groups: list[SwitchGroup]) -> list[Rule]:
    w = f"{m.rate_window}s"
    prios, _tcs, _ = lossless(fabric)
    host = 'role="host"'
    rules: list[Rule] = []
    if fabric.hosts and prios:
        rules += [
            Rule("fabric:nic_tx_pause:ratio", _join(_per_priority(src.HOST_TX_PAUSE_US, prios, "rate", w, " / 1e6"),
                                                    where=host)),
            Rule("fabric:nic_rx_pause:ratio", _join(_per_priority(src.HOST_RX_PAUSE_US, prios, "rate", w, " / 1e6"),
                                                    where=host)),
            Rule("fabric:nic_lossless_discards:rate",
                 _join(_sum_priorities(src.HOST_RX_DISCARDS, prios, "rate", w), where=host)),
            Rule("fabric:nic_tx_lossless:bps", _join(_sum_priorities(src.HOST_TX_BYTES, prios, "rate", w, " * 8"),
                                                     where=host)),
            Rule("fabric:nic_rx_lossless:pps", _join(_sum_priorities(src.HOST_RX_PACKETS, prios, "rate", w),
                                                     where=host)),
        ]
    if fabric.hosts:
        rules += [
            Rule("fabric:nic_pause_storm_events:increase",
                 _join(_relabel(f"increase({src.HOST_STORM_EVENTS}[{w}])", "device"), where=host)),
            Rule("fabric:nic_speed:bps", _join(_relabel(f"{src.HOST_SPEED_BYTES} * 8", "device"), where=host)),
            *(Rule(f"fabric:nic_{name}:rate",
                   _join(_relabel(f"rate({metric}[{w}])", "device", key="nic"), key="nic", where=host))
              for name, metric in (("cnp_sent", src.IB_CNP_SENT), ("cnp_handled", src.IB_CNP_HANDLED),
                                   ("cnp_ignored", src.IB_CNP_IGNORED), ("ecn_marked", src.IB_ECN_MARKED),
                                   ("out_of_sequence", src.IB_OUT_OF_SEQUENCE))),
        ]
    for group in groups:
        where = (f'nos="{group.nos}",release="{group.release}",'
                 f'platform=~"{"|".join(sorted({sw.platform for sw in group.switches}))}"')
        for record, signal, fn, scale, cls in _SWITCH_RECORDS:
            if (c := group.counters.get(signal)) is not None:
                sc = scale if c.scale == 1.0 else f"{scale} * {c.scale:g}"
                scaled = f"{fn}({c.metric}[{w}]){sc}" if fn else f"{c.metric}{sc}"
                rules.append(Rule(record, _join(_relabel(scaled, c.port_label, c.class_label, class_to=cls),
                                                where=where)))
    return rules


_WHERE = "{{ $labels.device }} {{ $labels.port }}{{ if $labels.nic }} ({{ $labels.nic }}){{ end }}"
_LOCATION = (_WHERE + "{{ if $labels.rail }} rail {{ $labels.rail }}{{ end }} -> {{ $labels.peer }}, "
             "cable {{ $labels.cable }}")


def _alert(name: str, expr: str, severity: str, summary: str, meaning: str, next_step: str,
           m: Monitoring) -> Rule:
    return Rule(name, expr, labels={"severity": severity},
                annotations={"summary": summary, "location": _LOCATION, "description": meaning,
                             "next_step": next_step}, pending=m.pending)


def _alerts(fabric: FabricIntent, m: Monitoring, records: set[str]) -> list[Rule]:
    prios, tcs, ecn = lossless(fabric)
    out: list[Rule] = []

    def any_of(*terms: str) -> str:
        got = [t for t, rec in ((t, t.split(" ", 1)[0].split("{", 1)[0]) for t in terms) if rec in records]
        return " or ".join(f"({t})" for t in got)

    f = f"{m.pause_storm_fraction:g}"
    if e := any_of(f"fabric:nic_tx_pause:ratio > {f}", f"fabric:switch_tx_pause:ratio > {f}"):
        out.append(_alert(
            "RocePfcPauseStorm", e, "critical",
            _WHERE + " pauses {{ $labels.peer }} on priority {{ $labels.priority }} more than " + f"{float(f):.0%}"
            + " of the time",
            "The port sends PFC pause frames on a lossless priority nearly all the time: the receiver behind it "
            "cannot drain (a stalled NIC or host, a PCIe problem, a slow receiver), and the pause spreads upstream "
            "to every sender through the leaf.",
            "Check the NIC (`ethtool -S` tx_prio*_pause, tx_pause_storm_*), PCIe and host health on the pausing "
            "device; `fabric counters INV --watch 1` shows the spread; `fabric diagnose` on its kernel log names "
            "the NIC and cable.", m))
    if e := any_of("fabric:nic_pause_storm_events:increase > 0", "fabric:switch_watchdog_storms:increase > 0"):
        out.append(_alert(
            "RocePfcWatchdogFired", e, "critical",
            _WHERE + " PFC watchdog acted (pause storm detected)",
            ("A PFC watchdog (the NIC's stall watchdog or the switch's PFC watchdog) detected a pause storm and "
             "stopped honouring or sending pauses: lossless traffic on that priority may now drop."
             if "fabric:switch_watchdog_storms:increase" in records else
             "The NIC's pause-storm watchdog (tx_pause_storm_error_events) detected a pause storm and stopped "
             "sending pauses: lossless traffic on that priority may now drop. The switches' PFC watchdog is not "
             "monitored here: their exporters publish no watchdog counter (the warnings at the top of the rule "
             "file say which)."),
            "Find the storm's source (RocePfcPauseStorm on the same cable); run `fabric diagnose` on the host's "
            "dmesg (DG215 pause TX disabled, DG216 pause storm warning) and `fabric accept INV --tags "
            "pfc-watchdog`.", m))
    if ecn and "fabric:nic_ecn_marked:rate" in records and "fabric:nic_rx_lossless:pps" in records:
        e = (f"sum by (fabric, su, rail) (fabric:nic_ecn_marked:rate) / "
             f"(sum by (fabric, su, rail) (fabric:nic_rx_lossless:pps) > 0) > {m.ecn_marked_fraction:g}")
        out.append(Rule(
            "RoceEcnMarksClimbing", e, labels={"severity": "warning"}, pending=m.pending,
            annotations={
                "summary": "SU {{ $labels.su }} rail {{ $labels.rail }}: more than "
                           f"{m.ecn_marked_fraction:.0%} of the RoCE packets received arrive ECN-marked",
                "location": "fabric {{ $labels.fabric }} SU {{ $labels.su }} rail {{ $labels.rail }}",
                "description": "The rail's lossless queues run above the ECN threshold of the QoS policy for long: "
                               "persistent congestion (incast, an uplink down, uneven ECMP) on this rail.",
                "next_step": "Look at the rail's leaf queues and uplinks in the dashboard; `fabric accept INV "
                             "--tags incast` on the rail; `fabric counters INV --watch 1`."}))
    if {"fabric:nic_cnp_handled:rate", "fabric:nic_cnp_sent:rate", "fabric:nic_tx_lossless:bps"} <= records:
        share = f"{m.cnp_sender_min_fraction:g}"
        e = ("((fabric:nic_cnp_handled:rate == 0)"
             " and on(device, port) (fabric:nic_tx_lossless:bps > on(device, port) group_left()"
             f" ({share} * {EXPECTED}))"
             " and on(fabric, rail) (sum by (fabric, rail) (fabric:nic_cnp_sent:rate) > 0)"
             " and on(fabric, rail) (sum by (fabric, rail) (fabric:nic_cnp_handled:rate) > 0))"
             " or (fabric:nic_cnp_ignored:rate > 0)")
        out.append(_alert(
            "RoceCnpNotHandled", e, "warning",
            _WHERE + " sends RoCE while CNPs flow on its rail, but handles none",
            "Receivers on this rail send CNPs (np_cnp_sent) and other senders slow down (rp_cnp_handled), but this "
            "sender's rp_cnp_handled stays flat (or it counts rp_cnp_ignored): DCQCN's reaction point is off on the "
            "RoCE priority, or the CNPs do not reach it (CNP DSCP/priority mismatch).",
            "Compare `fabric host plan` on this host (roce_rp enabled on the lossless priority, CNP DSCP/802.1p); "
            "`fabric diagnose` (DG908) on the job's logs names the sender.", m))
    if "fabric:nic_out_of_sequence:rate" in records:
        out.append(_alert(
            "RoceOutOfSequence",
            f'fabric:nic_out_of_sequence:rate{{adaptive_routing="false"}} > {m.out_of_sequence_per_s:g}', "warning",
            _WHERE + " receives RoCE packets out of sequence behind a leaf without adaptive routing",
            "Without adaptive routing a flow keeps one path, so out-of-sequence packets mean loss and retransmission "
            "(a dropping queue, a bad cable or optic on the path).",
            "Look for RoceLosslessQueueDrops and link errors on the rail; `fabric accept INV --tags lossless` and "
            "`fabric optics INV` for the cable.", m))
    d = f"{m.lossless_drops_per_s:g}"
    q = "|".join(map(str, tcs))
    if tcs and (e := any_of(f'fabric:switch_queue_drops:rate{{queue=~"{q}"}} > {d}',  # no lossless class: no alert
                            f"fabric:nic_lossless_discards:rate > {d}")):
        out.append(_alert(
            "RoceLosslessQueueDrops", e, "critical",
            _WHERE + " drops packets on the lossless class{{ if $labels.queue }} (queue {{ $labels.queue }})"
            "{{ end }}",
            f"A lossless queue (TC {q}, priority {','.join(map(str, prios))}) dropped: PFC is not protecting it "
            "(PFC off on this port or its peer, headroom too small for the cable, the PFC watchdog dropping, a "
            "DSCP/priority mismatch).",
            "`fabric explain DEVICE qos` for the port's PFC/headroom, `fabric plan INV --running` for drift, "
            "`fabric accept INV --tags lossless`.", m))
    if e := any_of(f"fabric:nic_speed:bps < on(device, port) group_left() {EXPECTED}",
                   f"fabric:switch_speed:bps < on(device, port) group_left() {EXPECTED}"):
        out.append(_alert(
            "RoceLinkBelowSpeed", e, "warning",
            _WHERE + " runs below its designed {{ $labels.speed }}G",
            "The link renegotiated below the speed the inventory cables (a bad cable/optic, FEC or lane fault): the "
            "rail's bandwidth and the PFC headroom sized for this speed no longer match.",
            "`fabric optics INV` for the cable's lanes, `ethtool` on the NIC; `fabric diagnose` on dmesg for link "
            "flaps; replace the cable named here.", m))
    if m.optics_rx_power_min_dbm is not None and "fabric:switch_optics_rx_power:dbm" in records:
        limit = m.optics_rx_power_min_dbm + m.optics_margin_db
        out.append(_alert(
            "RoceOpticsNearThreshold", f"fabric:switch_optics_rx_power:dbm < {limit:g}", "warning",
            _WHERE + " lane {{ $labels.lane }} RX power near its threshold",
            f"RX power below {limit:g} dBm (monitoring.optics_rx_power_min_dbm + optics_margin_db).",
            "`fabric optics INV --limit DEVICE` for all lanes and the module's own thresholds; clean or replace.",
            m))
    return out


def rule_groups(fabric: FabricIntent, m: Monitoring, groups: list[SwitchGroup]) -> dict:
    """The rule file (as a dict) for `fabric`, its switches grouped as `switch_groups` groups them."""
    signals = _signals(fabric, m, groups)
    records = {r.name for r in signals}
    groups = [("topology", _topology(fabric)), ("signals", signals), ("alerts", _alerts(fabric, m, records))]
    return {"groups": [{"name": f"fabric-{fabric.name}-{name}", "rules": [r.doc() for r in rules]}
                       for name, rules in groups]}


def alert_names(fabric: FabricIntent, m: Monitoring) -> list[str]:
    rules = rule_groups(fabric, m, switch_groups(fabric))
    return [r["alert"] for g in rules["groups"] for r in g["rules"] if "alert" in r]


def targets(fabric: FabricIntent, m: Monitoring) -> dict[str, list[dict]]:
    """file_sd target files: one per exporter, each target labelled with its inventory `node` name."""
    out: dict[str, list[dict]] = {}
    hosts = [{"targets": [f"{IPv4Interface(h.management_address).ip}:{m.node_exporter_port}"],
              "labels": {"node": name, "fabric": fabric.name, "role": "host"}}
             for name, h in sorted(fabric.hosts.items())]
    if hosts:
        out["hosts"] = hosts
    for name, sw in sorted(fabric.switches.items()):
        s = src.SWITCH_SOURCES.get(sw.target)
        port = m.switch_exporter_port or (s.port if s else None)
        if port is None:
            continue
        out.setdefault(sw.target, []).append(
            {"targets": [f"{IPv4Interface(sw.management).ip}:{port}"],
             "labels": {"node": name, "fabric": fabric.name, "role": sw.role}})
    return out


def prometheus_config(fabric: FabricIntent, m: Monitoring, target_files: Iterable[str]) -> str:
    """A prometheus.yml fragment: the rule file and one file_sd scrape job per exporter."""
    topology = {"job_name": f"fabric-{fabric.name}-topology", "honor_labels": True,
                "static_configs": [{"targets": ["localhost:9100"]}],
                "metric_relabel_configs": [{"source_labels": ["__name__"], "regex": INFO, "action": "keep"}]}
    doc = {"rule_files": [f"{fabric.name}.rules.yml"],
           "scrape_configs": [topology, *({"job_name": f"fabric-{name}",
                                           "file_sd_configs": [{"files": [f"targets/{name}.json"]}]}
                                          for name in target_files)]}
    return (f"# Prometheus configuration for fabric {fabric.name} (generated by `fabric export -f prometheus`).\n"
            f"# fabric-{fabric.name}-topology: a node_exporter on this server with --collector.textfile.directory "
            f"holding topology/{fabric.name}.prom\n# (or any web server serving that file), scraped once.\n"
            + yaml.safe_dump(doc, sort_keys=False))


def dump(doc: dict) -> str:
    return yaml.safe_dump(doc, sort_keys=False, width=1000, allow_unicode=True)


def explain_rows(loaded: Loaded, fabric: FabricIntent, device: SwitchIntent | HostIntent,
                    path: str = "monitoring") -> list[tuple[str, str, str]]:
    """(path, value, origin) of the alert thresholds `fabric export -f prometheus` holds `device` to: the
    `monitoring:` settings and, per port, the numbers derived from the link speed and the QoS policy."""
    m = loaded.inv.monitoring
    rows: list[tuple[str, str, str]] = []
    for key, value in m.model_dump(mode="json").items():
        loc = ("monitoring", key)
        where = f"inventory ({loaded.where(*loc)})" if loc in loaded.smap.lines else f"default (monitoring.{key})"
        rows.append((f"monitoring.{key}", "" if value is None else str(value), where))
    prios, tcs, ecn = lossless(fabric)
    rows += [("monitoring.lossless_priorities", str(prios), "derived from the QoS policy (PFC priorities)"),
             ("monitoring.lossless_queues", str(tcs), "derived from the QoS policy (their TCs)"),
             ("monitoring.ecn_alert", str(ecn).lower(), "derived: the lossless queue marks ECN in the QoS policy")]
    for lb in (lb for lb in port_labels(fabric) if lb["device"] == device.name):
        speed = int(lb["speed"]) * 10**9
        base = f"monitoring.ports.{lb['port']}"
        rows.append((f"{base}.expected_speed_bps", str(speed), "derived: the link speed of the cabling"))
        if lb["role"] == "host":
            rows.append((f"{base}.cnp_min_send_bps", f"{m.cnp_sender_min_fraction * speed:.0f}",
                         "formula: monitoring.cnp_sender_min_fraction × link speed"))
        rows.append((f"{base}.cable", lb["cable"], "derived: topology and cabling"))
    return [r for r in rows if r[0] == path or r[0].startswith(path + ".") or path in ("", "monitoring")]
