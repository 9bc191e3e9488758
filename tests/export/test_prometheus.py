"""`fabric export -f prometheus`: rules, their promtool unit tests and dashboards for every shipped inventory, and
the rules running in a real Prometheus server (Debian's `prometheus` 2.42) that scrapes a stand-in exporter.

The stand-in exporter serves what node_exporter and the frr row's textfile collector would serve, in their metric
names (fabric/export/sources.py), computed from real output formats through the parsers `fabric counters` uses:
`ethtool -S` (tests/fixtures/samples/extra_ethtool_S_mlx5_prio3.txt, mlx5 names) and RDMA hw_counters through
`parse_host_dump`, a lab leaf port's `tc -s class show` (captured in the lab, tests/nos/frr/test_render.py) through
`queue_counters`. Each scrape advances the counters at the rates of a simulated healthy fabric, then with four
faults injected, and the test asserts through Prometheus' HTTP API which alerts fire, with which labels.
"""

from __future__ import annotations

import json
import re
import shutil
import socket
import subprocess
import sys
import threading
import time
import urllib.parse
import urllib.request
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from fabric.accept.counters import parse_host_dump
from fabric.cli import app
from fabric.design.derive import derive
from fabric.export import monitoring
from fabric.export import prometheus as prom
from fabric.export import sources as src
from fabric.model.inventory import Monitoring
from fabric.model.load import load
from fabric.model.platforms import PLATFORMS
from fabric.nos import NOS
from fabric.parsers.iproute import queue_counters
from tests.conftest import require
from tests.support.paths import ROOT

INVENTORIES = sorted(p for p in (ROOT / "inventories").iterdir() if (p / "fabric.yaml").exists())
ETHTOOL = (ROOT / "tests" / "fixtures" / "samples" / "extra_ethtool_S_mlx5_prio3.txt").read_text()
PROMTOOL = shutil.which("promtool")
PROMETHEUS = shutil.which("prometheus")


def _write(files: dict[str, str], out: Path) -> None:
    for rel, text in files.items():
        (out / rel).parent.mkdir(parents=True, exist_ok=True)
        (out / rel).write_text(text)


@pytest.mark.parametrize("inv", INVENTORIES, ids=lambda p: p.name)
def test_promtool_accepts_rules_and_their_unit_tests(inv: Path, tmp_path: Path) -> None:
    """Every shipped inventory: `promtool check rules`/`check config`/`check metrics` accept the rule file, the
    configuration and the topology file, `promtool test rules` passes one test per alert (the fault fires exactly
    that alert with its labels) plus a healthy fabric that fires none."""
    require(PROMTOOL is not None, "promtool (Debian package prometheus)")
    loaded = load(inv)
    fabric = derive(loaded)
    files = monitoring.files(fabric, loaded.inv.monitoring).texts
    _write(files, tmp_path)
    rules = tmp_path / f"{fabric.name}.rules.yml"
    check = subprocess.run([PROMTOOL, "check", "rules", str(rules)], capture_output=True, text=True, timeout=60)
    assert check.returncode == 0, check.stdout + check.stderr
    check = subprocess.run([PROMTOOL, "check", "config", "prometheus.yml"], cwd=tmp_path, capture_output=True,
                           text=True, timeout=60)
    assert check.returncode == 0 and "1 rule files found" in check.stdout, check.stdout + check.stderr
    check = subprocess.run([PROMTOOL, "check", "metrics"], input=files[f"topology/{fabric.name}.prom"],
                           capture_output=True, text=True, timeout=60)
    assert check.returncode == 0, check.stdout + check.stderr
    tests = yaml.safe_load(files[f"{fabric.name}.rules.test.yml"])["tests"]
    tested = {t["alert_rule_test"][0]["alertname"] for t in tests if t["alert_rule_test"][0]["exp_alerts"]}
    alerts = set(prom.alert_names(fabric, loaded.inv.monitoring))
    assert alerts - tested <= {"RoceOutOfSequence"}, alerts - tested  # OOS: AR on everywhere → tested not firing
    run = subprocess.run([PROMTOOL, "test", "rules", f"{fabric.name}.rules.test.yml"], cwd=tmp_path,
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 0 and "SUCCESS" in run.stdout, run.stdout[-3000:] + run.stderr[-2000:]
    for name in (n for n in files if n.startswith("dashboards/")):
        dash = json.loads(files[name])
        exprs = [t["expr"] for p in dash["panels"] for t in p.get("targets", [])]
        assert exprs and all(e.startswith("fabric:") for e in exprs)
    info = files[f"topology/{fabric.name}.prom"].splitlines()
    assert len([ln for ln in info if ln.startswith("fabric_port_info{")]) == len(prom.port_labels(fabric))
    for name in (n for n in files if n.startswith("targets/")):
        assert all(t["labels"]["node"] in {**fabric.hosts, **fabric.switches} for t in json.loads(files[name]))


def test_promtool_unit_test_fails_on_a_wrong_label(tmp_path: Path) -> None:
    """The generated unit tests can fail: the expected cable of the storm alert changed → promtool fails."""
    require(PROMTOOL is not None, "promtool (Debian package prometheus)")
    loaded = load(ROOT / "inventories" / "example")
    files = monitoring.files(derive(loaded), loaded.inv.monitoring).texts
    doc = yaml.safe_load(files["example.rules.test.yml"])
    storm = next(t for t in doc["tests"] if t["alert_rule_test"][0]["alertname"] == "RocePfcPauseStorm")
    storm["alert_rule_test"][0]["exp_alerts"][0]["exp_labels"]["cable"] = "gpu-su1-01:rail1 <-> leaf-su1-r1:swp9, 5 m"
    files["example.rules.test.yml"] = yaml.safe_dump(doc, sort_keys=False)
    _write(files, tmp_path)
    run = subprocess.run([PROMTOOL, "test", "rules", "example.rules.test.yml"], cwd=tmp_path, capture_output=True,
                         text=True, timeout=60)
    assert run.returncode != 0 and "RocePfcPauseStorm" in run.stdout + run.stderr


def test_labels_name_host_nic_leaf_port_and_cable() -> None:
    """A host NIC and the leaf port it is cabled to carry the same cable; thresholds follow the policy and speed."""
    fabric = derive(load(ROOT / "inventories" / "example"))
    info = {(lb["device"], lb["port"]): lb for lb in prom.port_labels(fabric)}
    host = info[("gpu-su1-02", "rail1")]
    leaf = info[("leaf-su1-r1", host["peer"].split(":")[1])]
    assert host == {"fabric": "example", "su": "1", "rail": "1", "role": "host", "device": "gpu-su1-02",
                    "port": "rail1", "nic": "mlx5_0", "peer": "leaf-su1-r1:swp2",
                    "cable": "gpu-su1-02:rail1 <-> leaf-su1-r1:swp2, 5 m", "speed": "100",
                    "adaptive_routing": "false"}
    assert leaf["cable"] == host["cable"] and leaf["peer"] == "gpu-su1-02:rail1" and leaf["nos"] == "frr"
    rules = prom.rule_groups(fabric, Monitoring(), prom.switch_groups(fabric))
    alerts = {r["alert"]: r for g in rules["groups"] for r in g["rules"] if "alert" in r}
    assert 'queue=~"3"' in alerts["RoceLosslessQueueDrops"]["expr"]  # TC of the PFC priority
    assert "prio3_pause_duration" in json.dumps(rules) and "RocePfcWatchdogFired" in alerts
    assert "RoceOpticsNearThreshold" not in alerts  # no threshold set, no SONiC exporter optics here
    # SONiC's exporter has no PFC/ECN counters: on a SONiC-only fabric the switch-side pause rules are absent
    sonic = derive(load(ROOT / "inventories" / "sonic-example"))
    rules = prom.rule_groups(sonic, Monitoring(), prom.switch_groups(sonic))
    recs = {r["record"] for g in rules["groups"] for r in g["rules"] if "record" in r}
    assert "fabric:switch_queue_drops:rate" in recs and "fabric:switch_tx_pause:ratio" not in recs


def test_ethtool_metric_names_follow_node_exporter() -> None:
    """collector/ethtool_linux.go buildEthtoolFQName: rx/tx words become received/transmitted, lower case."""
    assert src.ethtool_metric("tx_prio3_pause_duration") == src.HOST_TX_PAUSE_US.format(p=3)
    assert src.ethtool_metric("rx_prio3_discards") == "node_ethtool_received_prio3_discards"
    assert src.ethtool_metric("tx_pause_storm_error_events") == src.HOST_STORM_EVENTS
    assert src.ethtool_metric("rx_vport_RDMA_unicast.bytes") == "node_ethtool_received_vport_rdma_unicast_bytes"


# -- what each switch can emit -----------------------------------------------------------------------------------

TELEMETRY_FIXTURE = ROOT / "tests" / "fixtures" / "inventories" / "nvue-telemetry"
_PROMQL_WORDS = {"sum", "by", "rate", "increase", "label_replace", "on", "group_left", "or", "and", "unless", "vector"}


def _export(inv: Path, out: Path) -> subprocess.CompletedProcess:
    cli = [sys.executable, "-c", "from fabric.cli import main; main()", "export"]
    return subprocess.run([*cli, str(inv), "-f", "prometheus", "-o", str(out)], capture_output=True, text=True,
                          timeout=120)


def _metrics_read(expr: str) -> set[str]:
    """The metric names a PromQL expression of these rules reads (strings, matchers, ranges and numbers removed)."""
    e = re.sub(r'"[^"]*"', "", expr)
    e = re.sub(r"\{[^}]*\}|\[[^\]]*\]", "", e)
    e = re.sub(r"\b(by|on|group_left)\s*\([^)]*\)", "", e)
    e = re.sub(r"\b\d+(\.\d+)?(e\d+)?\b", "", e)
    return {w for w in re.findall(r"[A-Za-z_:][A-Za-z0-9_:]*", e) if w not in _PROMQL_WORDS}


def _table(nos: str) -> dict:
    return yaml.safe_load((ROOT / "fabric" / "nos" / nos / "telemetry.yaml").read_text())


def _switch_rules(rules_text: str) -> list[tuple[str, dict[str, str], set[str]]]:
    """(record, selector of fabric_port_info, metrics read) of every rule that reads a switch exporter's series."""
    out = []
    for group in yaml.safe_load(rules_text)["groups"]:
        for rule in group["rules"]:
            sel = re.search(r"fabric_port_info\{([^}]*)\}", rule["expr"])
            labels = {k: v for k, _, v in re.findall(r'(\w+)(=~|=)"([^"]*)"', sel.group(1))} if sel else {}
            if "nos" in labels:
                out.append((rule["record"], labels, _metrics_read(rule["expr"]) - {"fabric_port_info"}))
    return out


@pytest.mark.parametrize("inv", [*INVENTORIES, TELEMETRY_FIXTURE], ids=lambda p: p.name)
def test_every_switch_rule_reads_what_its_release_and_asic_emit(inv: Path, tmp_path: Path) -> None:
    """`fabric export -f prometheus`: each switch rule selects its switches by NOS, release and platform, and every
    metric it reads is one the NOS's telemetry table (fabric/nos/<nos>/telemetry.yaml, with its sources) lists for
    that release and the platform's ASIC; promtool accepts the rules."""
    run = _export(inv, tmp_path)
    assert run.returncode == 0, run.stderr
    fabric_name = yaml.safe_load((inv / "fabric.yaml").read_text())["fabric"]["name"]
    rules_text = (tmp_path / f"{fabric_name}.rules.yml").read_text()
    for record, sel, metrics in _switch_rules(rules_text):
        assert {"nos", "release", "platform"} <= sel.keys(), (record, sel)
        rows = _table(sel["nos"])["releases"]
        for platform in sel["platform"].split("|"):
            asic = PLATFORMS[platform].asic
            row = next((r for r in rows if sel["release"] in r["releases"] and
                        ("any" in r["asics"] or asic in r["asics"])), None)
            assert row is not None, f"{record}: no table row for {sel['nos']} {sel['release']} on {asic}"
            assert row["source"] and metrics and metrics <= set(row["metrics"]), (record, metrics, row)
    if PROMTOOL is not None:
        check = subprocess.run([PROMTOOL, "check", "rules", str(tmp_path / f"{fabric_name}.rules.yml")],
                               capture_output=True, text=True, timeout=60)
        assert check.returncode == 0, check.stdout + check.stderr


def test_a_switch_that_emits_nothing_is_named_not_given_rules(tmp_path: Path) -> None:
    """An MSN2700 (Spectrum-1) on Cumulus Linux 5.9 exports nothing: no rule reads its ports, and the rule file's
    head and stderr name it with the reason; the SN4700s on 5.15 get their queue, pause and speed series, and the
    storm alert reads the switch side."""
    run = _export(TELEMETRY_FIXTURE, tmp_path)
    assert run.returncode == 0, run.stderr
    rules_text = (tmp_path / "nvue-telemetry.rules.yml").read_text()
    switch = _switch_rules(rules_text)
    assert all("msn2700" not in sel["platform"] for _, sel, _ in switch)
    read = {m for _, sel, ms in switch if sel["platform"] == "sn4700" and sel["release"] == "5.15" for m in ms}
    assert read == {"nvswitch_interface_tc_tx_no_buffer_discard_uc", "nvswitch_interface_tc_tx_ecn_marked_tc",
                    "nvswitch_interface_sp_rx_pause_duration", "nvswitch_interface_sp_tx_pause_duration",
                    "nvswitch_interface_oper_aggregate_speed"}
    storm = next(r for g in yaml.safe_load(rules_text)["groups"] for r in g["rules"]
                 if r.get("alert") == "RocePfcPauseStorm")
    assert "fabric:switch_tx_pause:ratio" in storm["expr"]
    line = next(ln for ln in run.stderr.splitlines() if "msn2700" in ln)
    assert line.startswith("warning: NVIDIA Cumulus Linux (NVUE) 5.9 on msn2700 (spectrum-1), 2 switches "
                           "(leaf-su1-r1, leaf-su1-r2): no switch series, Cumulus Linux 5.9 has no OpenTelemetry")
    assert f"# {line}" in rules_text.splitlines()[:5]


def test_the_switch_watchdog_gap_is_said_where_no_exporter_has_one(tmp_path: Path) -> None:
    """Every NOS that renders a PFC watchdog either maps a watchdog series or its table says why it has none; the
    export names that gap (head and stderr) and the watchdog alert claims only the NIC's watchdog."""
    for name, nos in NOS.items():
        if nos.watchdog is not None:
            table = _table(name)
            assert "watchdog_storms" in table["signals"] or table["missing"].get("watchdog_storms"), name
    inv = ROOT / "inventories" / "h100-400g"
    run = _export(inv, tmp_path)
    assert run.returncode == 0, run.stderr
    assert any("PFC watchdog (RocePfcWatchdogFired)" in ln and ln.startswith("warning: NVIDIA Cumulus Linux")
               for ln in run.stderr.splitlines()), run.stderr
    rules = yaml.safe_load((tmp_path / "h100-400g.rules.yml").read_text())
    alert = next(r for g in rules["groups"] for r in g["rules"] if r.get("alert") == "RocePfcWatchdogFired")
    assert "switch_watchdog" not in alert["expr"]
    assert "The switches' PFC watchdog is not monitored" in alert["annotations"]["description"]


def test_the_nvue_table_follows_nvidias_release_notes() -> None:
    """The table's reader: 5.9 emits nothing anywhere; 5.10 only the TC series, on Spectrum-4 only; 5.11 adds the
    switch-priority pause series on Spectrum-2 and later but no speed (that comes with 5.12); never Spectrum-1."""
    nvue = src.SWITCH_SOURCES["nvue"]
    assert nvue.emitted("5.9", "spectrum-4") == {}
    assert nvue.emitted("5.10", "spectrum-3") == {}
    assert set(nvue.emitted("5.10", "spectrum-4")) == {"queue_drops", "queue_ecn_marked"}
    assert set(nvue.emitted("5.11", "spectrum-3")) == {"queue_drops", "queue_ecn_marked", "rx_pause_us",
                                                       "tx_pause_us"}
    assert nvue.emitted("5.11", "spectrum-1") == {} and nvue.emitted("5.15", "spectrum-1") == {}
    assert "speed_bps" in nvue.emitted("5.12", "spectrum-2") and "speed_bps" in nvue.emitted("5.14", "spectrum-3")
    assert "Spectrum-2 and later, not on spectrum-1" in nvue.why_none("5.11", "spectrum-1")


def test_tc_textfile_is_the_frr_rows_series() -> None:
    """`tc -s` of a lab leaf port through queue_counters → the frr row's textfile series, valid exposition."""
    counters = queue_counters(TC_CLASSES.format(b7=0, p7=0, root=10, proot=2, b3=9, p3=1, d3=7, b0=1, p0=1, d0=0),
                              [{"kind": "red", "dev": "swp1", "parent": "1:5", "marked": 4711, "drops": 0}], "swp1")
    text = src.tc_textfile(src.SWITCH_SOURCES["frr"], {"swp1": counters})
    assert 'fabric_tc_queue_dropped_packets_total{device="swp1",queue="3"} 7' in text.splitlines()
    assert 'fabric_tc_queue_ecn_marked_packets_total{device="swp1",queue="3"} 4711' in text.splitlines()
    if PROMTOOL:
        check = subprocess.run([PROMTOOL, "check", "metrics"], input=text, capture_output=True, text=True, timeout=30)
        assert check.returncode == 0, check.stdout + check.stderr


def test_monitoring_overrides_and_located_errors(example_copy: Path, tmp_path: Path) -> None:
    """`monitoring:` changes one threshold; a bad value is a located error, exit 2; `explain` shows the values."""
    (example_copy / "monitoring.yaml").write_text("monitoring:\n  pause_storm_fraction: 0.8\n  pending: 30s\n")
    out = tmp_path / "out"
    res = CliRunner().invoke(app, ["export", str(example_copy), "-f", "prometheus", "-o", str(out)])
    assert res.exit_code == 0, res.output
    text = (out / "example.rules.yml").read_text()
    assert "fabric:nic_tx_pause:ratio > 0.8" in text and "for: 30s" in text and "for: 120s" not in text
    res = CliRunner().invoke(app, ["explain", str(example_copy), "gpu-su1-02", "monitoring"])
    assert res.exit_code == 0, res.output
    assert "pause_storm_fraction" in res.output and "monitoring.yaml:2" in res.output
    assert "100G" in res.output or "100000000000" in res.output  # the speed the speed alert holds the NIC to
    (example_copy / "monitoring.yaml").write_text("monitoring:\n  pause_storm_fraction: 2\n")
    cli = [sys.executable, "-c", "from fabric.cli import main; main()", "export"]
    run = subprocess.run([*cli, str(example_copy), "-f", "prometheus", "-o", str(out)], capture_output=True,
                         text=True, timeout=60)
    assert run.returncode == 2 and "monitoring.yaml:2: monitoring.pause_storm_fraction: expected less than or " \
        "equal to 1, found 2" in run.stderr and "Traceback" not in run.stderr
    run = subprocess.run([*cli, str(ROOT / "inventories" / "example"), "-f", "prometheus"], capture_output=True,
                         text=True, timeout=60)
    assert run.returncode == 2 and "--output" in run.stderr and "Traceback" not in run.stderr


# -- the real Prometheus ------------------------------------------------------------------------------------------

# `tc -s class show dev swp1` of a lab leaf port (HTB bands, iproute2 6.1), captured in the lab
TC_CLASSES = """class htb 1:1 parent 1:100 prio 0 rate 1Gbit ceil 1Gbit burst 65375b cburst 65375b
 Sent {b7} bytes {p7} pkt (dropped 0, overlimits 0 requeues 0)
 backlog 0b 0p requeues 0
class htb 1:100 root rate 1Gbit ceil 1Gbit burst 65375b cburst 65375b
 Sent {root} bytes {proot} pkt (dropped 0, overlimits 0 requeues 0)
 backlog 0b 0p requeues 0
class htb 1:5 parent 1:100 prio 1 rate 500Mbit ceil 1Gbit burst 1500b cburst 1375b
 Sent {b3} bytes {p3} pkt (dropped {d3}, overlimits 6690 requeues 0)
 backlog 0b 0p requeues 0
class htb 1:8 parent 1:100 prio 1 rate 500Mbit ceil 1Gbit burst 1500b cburst 1375b
 Sent {b0} bytes {p0} pkt (dropped {d0}, overlimits 0 requeues 0)
 backlog 0b 0p requeues 0
"""
HW = {"np_cnp_sent": src.IB_CNP_SENT, "rp_cnp_handled": src.IB_CNP_HANDLED, "rp_cnp_ignored": src.IB_CNP_IGNORED,
      "np_ecn_marked_roce_packets": src.IB_ECN_MARKED, "out_of_sequence": src.IB_OUT_OF_SEQUENCE}


class Fabric:
    """Counters of a simulated fabric: per host NIC and leaf port, a value that grows at a rate per second."""

    def __init__(self, labels: list[dict[str, str]]):
        self.t0 = time.monotonic()
        self.ports = labels
        self.faults: set[str] = set()
        self.topology = ""
        self.base = {k: int(v) for k, v in (ln.strip().split(": ") for ln in ETHTOOL.splitlines()[2:] if ": " in ln)}

    def rates(self, lb: dict[str, str]) -> dict[str, float]:
        key = f"{lb['device']}:{lb['port']}"
        gbps = int(lb["speed"])
        if lb["role"] == "host":
            r = {"tx_prio3_bytes": gbps * 1e9 / 8 * 0.5, "rx_prio3_bytes": gbps * 1e9 / 8 * 0.5,
                 "rx_prio3_packets": 1e6, "tx_prio3_packets": 1e6, "tx_prio3_pause": 20,
                 "tx_prio3_pause_duration": 10_000, "rx_prio3_pause_duration": 20_000, "rx_prio3_discards": 0,
                 "np_cnp_sent": 50, "rp_cnp_handled": 50, "np_ecn_marked_roce_packets": 100}
            if "storm" in self.faults and key == "gpu-su1-02:rail1":
                r |= {"tx_prio3_pause": 12_000, "tx_prio3_pause_duration": 900_000}
            if "cnp" in self.faults and key == "gpu-su1-03:rail2":
                r["rp_cnp_handled"] = 0
            return r
        r = {"b3": 40e6, "p3": 5e3, "d3": 0, "b0": 1e6, "p0": 800, "d0": 3, "b7": 1e3, "p7": 10}
        if "drops" in self.faults and key == "leaf-su1-r3:swp4":
            r["d3"] = 40
        return r

    def speed_mbps(self, lb: dict[str, str]) -> int:
        renegotiated = "speed" in self.faults and f"{lb['device']}:{lb['port']}" in (
            "gpu-su1-01:rail4", "leaf-su1-r4:swp1")
        return int(lb["speed"]) * 1000 // (2 if renegotiated else 1)

    def advance(self) -> None:
        """Integrate the current rates since the last scrape (a fault changes the slope, never the past)."""
        now = time.monotonic()
        dt, self.t0 = now - self.t0, now
        for lb in self.ports:
            acc = lb.setdefault("_acc", {})  # type: ignore[arg-type]
            for k, v in self.rates(lb).items():
                acc[k] = acc.get(k, 0.0) + v * dt

    def host_dump(self, node: str) -> tuple[str, list[dict[str, str]]]:
        """What the counters host script prints (ethtool -S, link, hw_counters sections) for `node`."""
        parts = []
        nics = [lb for lb in self.ports if lb["device"] == node]
        for lb in nics:
            acc = lb["_acc"]  # type: ignore[index]
            stats = dict(self.base)
            for k in stats:
                if k in acc:
                    stats[k] = self.base[k] + int(acc[k])
            body = "\n".join(f"     {k}: {v}" for k, v in stats.items())
            hw = "\n".join(f"     {k}: {int(acc.get(k, 0))}" for k in HW)
            parts.append(f"@@ {lb['port']} ethtool\nNIC statistics:\n{body}\n@@ {lb['port']} link\n\n"
                         f"@@ {lb['port']} hw\n{hw}\n")
        return "".join(parts), nics

    def metrics(self, node: str) -> str:
        self.advance()
        lines: list[str] = []
        hosts = {lb["device"] for lb in self.ports if lb["role"] == "host"}
        if node in hosts:
            dump, nics = self.host_dump(node)
            parsed = parse_host_dump(dump)  # the parser `fabric counters` reads hosts with
            for lb in nics:
                for name, value in sorted(parsed[lb["port"]].items()):
                    kind, _, stat = name.partition(":")
                    if kind == "ethtool":
                        lines.append(f'{src.ethtool_metric(stat)}{{device="{lb["port"]}"}} {value}')
                    elif kind == "hw" and stat in HW:
                        lines.append(f'{HW[stat]}{{device="{lb["nic"]}",port="1"}} {value}')
                lines.append(f'{src.HOST_SPEED_BYTES}{{device="{lb["port"]}"}} '
                             f'{self.speed_mbps(lb) * 1000 * 1000 // 8}')
            return "\n".join(lines) + "\n"
        queues: dict[str, dict[str, int]] = {}
        for lb in (lb for lb in self.ports if lb["device"] == node):
            acc = lb["_acc"]  # type: ignore[index]
            text = TC_CLASSES.format(**{k: int(acc.get(k, 0)) for k in ("b3", "p3", "d3", "b0", "p0", "d0", "b7",
                                                                            "p7")},
                                     root=int(acc["b3"] + acc["b0"] + acc["b7"]), proot=int(acc["p3"] + acc["p0"]))
            queues[lb["port"]] = queue_counters(text, [], lb["port"])  # as the frr driver reads them
            lines.append(f'node_network_speed_bytes{{device="{lb["port"]}"}} {self.speed_mbps(lb) * 1000 * 1000 // 8}')
        return src.tc_textfile(src.SWITCH_SOURCES["frr"], queues) + "\n".join(lines) + "\n"


@pytest.fixture
def exporter() -> Iterator[tuple[Fabric, int]]:
    fabric = Fabric([dict(lb) for lb in prom.port_labels(derive(load(ROOT / "inventories" / "example")))])
    for lb in fabric.ports:
        lb["_acc"] = {}  # type: ignore[assignment]
    lock = threading.Lock()

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            node = self.path.rsplit("/", 1)[-1]
            with lock:
                body = (fabric.topology if self.path == "/topology" else fabric.metrics(node)).encode()
            self.send_response(200)
            self.send_header("Content-Type", "text/plain; version=0.0.4")
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield fabric, server.server_address[1]
    finally:
        server.shutdown()
        server.server_close()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


_DIRECT = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # loopback only, never a proxy


def _ready(port: int) -> bool:
    try:
        with _DIRECT.open(f"http://127.0.0.1:{port}/-/ready", timeout=2) as r:
            return r.status == 200
    except OSError:
        return False


def _api(port: int, query: str) -> list[dict]:
    url = f"http://127.0.0.1:{port}/api/v1/query?" + urllib.parse.urlencode({"query": query})
    with _DIRECT.open(url, timeout=5) as r:
        doc = json.loads(r.read())
    assert doc["status"] == "success", doc
    return doc["data"]["result"]


def _firing(port: int) -> set[tuple[str, ...]]:
    keys = ("alertname", "device", "port", "nic", "peer", "cable", "queue")
    return {tuple(a["metric"].get(k, "") for k in keys) for a in _api(port, 'ALERTS{alertstate="firing"}')}


def _wait(what: str, until: float, probe) -> object:  # type: ignore[no-untyped-def]
    while True:
        got = probe()
        if got or time.monotonic() > until:
            return got
        time.sleep(0.5)


def test_real_prometheus_fires_exactly_the_injected_faults(exporter: tuple[Fabric, int], example_copy: Path,
                                                           tmp_path: Path) -> None:
    """A real Prometheus on loopback (1 s scrape and evaluation, 4 s rate window and `for: 0s` from the inventory's
    `monitoring:`) with the generated rules and file_sd targets: healthy, no alert; then a PFC storm on gpu-su1-02
    rail 1, gpu-su1-03 rail 2 not handling CNPs, drops on TC3 of leaf-su1-r3:swp4 and gpu-su1-01 rail 4 at 50G fire
    exactly their four alerts, named to host, NIC, leaf port and cable."""
    require(PROMETHEUS is not None, "prometheus (Debian package prometheus)")
    sim, exporter_port = exporter
    (example_copy / "monitoring.yaml").write_text("monitoring:\n  rate_window: 4s\n  pending: 0s\n")
    out = tmp_path / "export"
    res = CliRunner().invoke(app, ["export", str(example_copy), "-f", "prometheus", "-o", str(out)])
    assert res.exit_code == 0, res.output
    for f in (out / "targets").glob("*.json"):  # the generated targets, pointed at the stand-in exporter
        groups = json.loads(f.read_text())
        for g in groups:
            g["targets"] = [f"127.0.0.1:{exporter_port}"]
            g["labels"]["__metrics_path__"] = f"/metrics/{g['labels']['node']}"
        f.write_text(json.dumps(groups))
    config = yaml.safe_load((out / "prometheus.yml").read_text())
    config["global"] = {"scrape_interval": "1s", "evaluation_interval": "1s", "scrape_timeout": "900ms"}
    topology = config["scrape_configs"][0]  # the generated topology file, served by the stand-in
    assert topology["honor_labels"] is True
    topology["static_configs"] = [{"targets": [f"127.0.0.1:{exporter_port}"],
                                   "labels": {"__metrics_path__": "/topology"}}]
    sim.topology = (out / "topology" / "example.prom").read_text()
    (out / "prometheus.yml").write_text(yaml.safe_dump(config))
    port = _free_port()
    log = (tmp_path / "prometheus.log").open("w")
    proc = subprocess.Popen([PROMETHEUS, f"--config.file={out / 'prometheus.yml'}",
                             f"--storage.tsdb.path={tmp_path / 'tsdb'}", f"--web.listen-address=127.0.0.1:{port}",
                             "--storage.tsdb.retention.time=1h"], stdout=log, stderr=subprocess.STDOUT, cwd=out)
    try:
        deadline = time.monotonic() + 30
        assert _wait("ready", deadline, lambda: _ready(port)), (tmp_path / "prometheus.log").read_text()[-3000:]
        ready = _wait("series", deadline, lambda: len(_api(port, "fabric:nic_tx_lossless:bps")) == 16
                      and len(_api(port, "fabric:nic_cnp_handled:rate")) == 16
                      and len(_api(port, "fabric:switch_queue_drops:rate")) > 0)
        assert ready, (tmp_path / "prometheus.log").read_text()[-3000:]
        time.sleep(3)
        assert _firing(port) == set(), "healthy fabric fires nothing"
        # every target answers: the latest scrape of each is up (a scrape can time out once on a loaded machine,
        # so wait for a round where all are up; a target that never answers still fails)
        all_up = _wait("up", time.monotonic() + 15, lambda: not _api(port, "up == 0"))
        assert all_up, _api(port, "up == 0")
        sim.faults = {"storm", "cnp", "drops", "speed"}
        expected = {
            ("RocePfcPauseStorm", "gpu-su1-02", "rail1", "mlx5_0", "leaf-su1-r1:swp2",
             "gpu-su1-02:rail1 <-> leaf-su1-r1:swp2, 5 m", ""),
            ("RoceCnpNotHandled", "gpu-su1-03", "rail2", "mlx5_1", "leaf-su1-r2:swp3",
             "gpu-su1-03:rail2 <-> leaf-su1-r2:swp3, 5 m", ""),
            ("RoceLosslessQueueDrops", "leaf-su1-r3", "swp4", "", "gpu-su1-04:rail3",
             "gpu-su1-04:rail3 <-> leaf-su1-r3:swp4, 5 m", "3"),
            ("RoceLinkBelowSpeed", "gpu-su1-01", "rail4", "mlx5_3", "leaf-su1-r4:swp1",
             "gpu-su1-01:rail4 <-> leaf-su1-r4:swp1, 5 m", ""),
            ("RoceLinkBelowSpeed", "leaf-su1-r4", "swp1", "", "gpu-su1-01:rail4",
             "gpu-su1-01:rail4 <-> leaf-su1-r4:swp1, 5 m", ""),
        }
        _wait("alerts", time.monotonic() + 20, lambda: _firing(port) >= expected)
        time.sleep(2)
        assert _firing(port) == expected
        dash = json.loads((out / "dashboards" / "example-lossless.json").read_text())
        empty = []
        for panel in (p for p in dash["panels"] if p["type"] == "timeseries"):  # every panel is valid PromQL here
            expr = panel["targets"][0]["expr"].replace("$su", ".*").replace("$rail", ".*").replace("$lossless_tc", "3")
            if not _api(port, expr):
                empty.append(panel["title"])
        assert empty == ["ECN-marked on leaf queues (pkt/s)"], empty  # the stand-in serves no red qdisc marks
        storm = _api(port, 'ALERTS{alertname="RocePfcPauseStorm"}')[0]["metric"]
        assert storm["rail"] == "1" and storm["su"] == "1" and storm["priority"] == "3" and storm["role"] == "host"
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.close()
