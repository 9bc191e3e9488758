"""`fabric diagnose`: every catalog signature against a real-looking line, cross-line rules, the CLI."""

from __future__ import annotations

import io
import json
import re
import sys
from pathlib import Path

import pytest

from fabric.cli import main
from fabric.diagnose import Report, diagnose, load_catalog
from fabric.diagnose.catalog import required_literals
from fabric.diagnose.logs import read_lines
from fabric.diagnose.rules import RULE_IDS
from tests.support.paths import FIXTURES, ROOT

LOGS = FIXTURES / "logs"
SIGNATURES = LOGS / "signatures"
CATALOG = load_catalog()


def run_logs(*paths: Path, expected_tos: int = 106, catalog: Path | None = None) -> Report:
    sigs = load_catalog(catalog) if catalog else CATALOG
    return diagnose([(str(p), read_lines(p)) for p in paths], sigs, expected_tos)


def ids(report: Report) -> set[str]:
    return {f.id for f in report.findings}


def cli(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, *args: object,
        stdin: str | None = None) -> tuple[int, str, str]:
    """Run `fabric diagnose ...` through the real entry point; return exit code, stdout, stderr."""
    monkeypatch.setattr(sys, "argv", ["fabric", "diagnose", *map(str, args)])
    if stdin is not None:
        monkeypatch.setattr(sys, "stdin", io.StringIO(stdin))
    try:
        main()
        code = 0
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else int(exc.code is not None)
    out = capsys.readouterr()
    return code, out.out, out.err


def expectations(path: Path) -> dict[str, str]:
    """`# expect: key=value key=value ...` from a fixture's header (values may contain spaces)."""
    for line in path.read_text().splitlines():
        if line.startswith("# expect:"):
            return dict(re.findall(r"(\w+)=(.*?)(?=\s+\w+=|$)", line.removeprefix("# expect:").strip()))
    return {}


# ------------------------------------------------------------------------------------------ catalog

def test_catalog_ids_are_stable_and_unique() -> None:
    seen = [s.id for s in CATALOG]
    assert len(seen) == len(set(seen))
    assert all(re.fullmatch(r"DG[1-5]\d\d", i) for i in seen)
    assert not RULE_IDS & set(seen)
    families = {"1": "nccl", "3": "perftest", "4": "nccl-tests"}
    for sig in CATALOG:
        if sig.id[2] in families:
            assert families[sig.id[2]] in sig.sources, sig.id


@pytest.mark.parametrize("sig", CATALOG, ids=[s.id for s in CATALOG])
def test_every_signature_matches_its_fixture(sig) -> None:
    path = SIGNATURES / f"{sig.id}.log"
    assert path.exists(), f"add a real-looking log line for {sig.id} in {path}"
    assert path.read_text().startswith("# source:"), "say where the line comes from"
    report = run_logs(path)
    hit = [f for f in report.findings if f.id == sig.id]
    assert len(hit) == 1, f"{sig.id} did not match {path.name}: {ids(report)}"
    finding = hit[0]
    assert finding.severity == sig.severity and finding.rule == "catalog"
    assert finding.cause == sig.cause and finding.next_step == sig.next_step
    want = expectations(path)
    if want:
        seen = [{**s, **{k: v[0] for k, v in finding.details.items()}} for s in finding.subjects] or [
            {k: v[0] for k, v in finding.details.items()}]
        assert any(all(s.get(k) == v for k, v in want.items()) for s in seen), (want, seen)


def test_no_orphan_signature_fixtures() -> None:
    assert {p.stem for p in SIGNATURES.glob("*.log")} == {s.id for s in CATALOG}


def test_needles_are_required_literals() -> None:
    assert required_literals(r"NET/IB\s?: Got completion (?:from peer \S+ )?with") == (": Got completion ",)
    assert required_literals(r"(?:a)?\bfoo_bar\b") == ("foo_bar",)
    needles = required_literals(r"Connect to x|Call to connect")  # re factors out the common "C"
    assert all(any(n in text for n in needles) for text in ("Connect to x", "Call to connect"))
    assert not any(n in "Connect to y" for n in needles[1:]) and len(needles) == 2
    assert required_literals(r"(?i)link down") == ()  # case-insensitive: no needle, always searched
    assert required_literals(r"^\s*\d+\s+\d+") == ()


# ------------------------------------------------------------------------------------------ matching

def test_repeated_hits_are_grouped_with_count_and_line_span() -> None:
    report = run_logs(LOGS / "kernel_link_flap.log")
    down = next(f for f in report.findings if f.id == "DG201")
    assert (down.count, down.first_line, down.last_line) == (3, 2, 7)
    assert down.file.endswith("kernel_link_flap.log")
    assert down.subjects == [{"host": "gpu-c12", "pci": "0000:3b:00.0", "ifname": "ens3np0"}]
    up = next(f for f in report.findings if f.id == "DG202")
    assert up.count == 4 and len(up.subjects) == 2


@pytest.mark.parametrize("name", ["clean_nccl_allreduce.log", "clean_ib_write_bw.txt", "clean_dmesg_boot.log"])
def test_clean_logs_have_no_error_or_warning(name: str) -> None:
    report = run_logs(LOGS / name)
    assert not [f for f in report.findings if f.severity != "info"], report.findings


def test_signature_for_another_tool_is_ignored() -> None:
    """A file that is only kernel log does not get NCCL-only signatures."""
    report = diagnose([("dmesg", ["[    9.30] mlx5_core 0000:3b:00.0 ens3np0: Link up",
                                  "[    9.31] some daemon: Using network Socket"])], CATALOG)
    assert ids(report) == {"DG202"}


# ------------------------------------------------------------------------------------------ cross-line rules

def test_nccl_ib_tc_mismatch() -> None:
    report = run_logs(LOGS / "nccl_tc_mismatch.log")
    (tc,) = [f for f in report.findings if f.id == "DG901"]
    assert tc.severity == "error" and tc.rule == "cross-line"
    assert tc.subjects == [{"host": "gpu-a02", "tc": "96"}]
    assert "DSCP 24" in tc.evidence and "106" in tc.evidence
    assert "lossy" in tc.cause


def test_nccl_ib_tc_ecn_only_mismatch_uses_expected_tos() -> None:
    report = run_logs(LOGS / "clean_nccl_allreduce.log", expected_tos=104)
    (tc,) = [f for f in report.findings if f.id == "DG901"]
    assert tc.count == 2 and "ECN" in tc.cause and "DSCP 26" in tc.evidence
    assert "DG901" not in ids(run_logs(LOGS / "clean_nccl_allreduce.log", expected_tos=106))


def test_nccl_ib_tc_unset_on_roce() -> None:
    report = run_logs(LOGS / "nccl_tc_unset.log")
    (unset,) = [f for f in report.findings if f.id == "DG902"]
    assert unset.severity == "warning"
    assert {s["host"] for s in unset.subjects} == {"gpu-a01", "gpu-a02"}


def test_nccl_ib_hca_names_missing_device() -> None:
    (hca,) = [f for f in run_logs(LOGS / "nccl_hca_missing.log").findings if f.id == "DG903"]
    assert hca.severity == "error"
    assert {(s["host"], s["dev"]) for s in hca.subjects} == {("gpu-a01", "mlx5_2"), ("gpu-a02", "mlx5_2")}
    nodev = run_logs(LOGS / "nccl_hca_no_device.log")
    assert {"DG903", "DG113", "DG122"} <= ids(nodev)


@pytest.mark.parametrize("spec", ["mlx5", "^mlx5_2", "=mlx5_0,mlx5_3", "mlx5_0:1,mlx5_3:1"])
def test_nccl_ib_hca_prefix_exclusion_and_ports_are_understood(spec: str) -> None:
    lines = [f"gpu-a01:10:10 [0] NCCL INFO NCCL_IB_HCA set to {spec}",
             "gpu-a01:10:10 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/RoCE [1]mlx5_3:1/RoCE [RO]; OOB bond0:10.0.0.1<0>"]
    assert "DG903" not in ids(diagnose([("x", lines)], CATALOG))


def test_cnps_sent_but_never_handled() -> None:
    (cnp,) = [f for f in run_logs(LOGS / "counters_cnp_unhandled.txt").findings if f.id == "DG904"]
    assert cnp.severity == "error"
    assert cnp.subjects == [{"host": "gpu-a01", "dev": "mlx5_0"}]
    assert "+90000" in cnp.evidence
    assert "DG904" not in ids(run_logs(LOGS / "counters_cnp_ok.txt"))


def test_cnps_handled_on_another_host_are_fine_across_files(tmp_path: Path) -> None:
    """The notification and reaction points are on different hosts: rules see all logs together."""
    lines = (LOGS / "counters_cnp_ok.txt").read_text().splitlines()
    a, b = tmp_path / "a.txt", tmp_path / "b.txt"
    a.write_text("\n".join(line for line in lines if "gpu-a02" not in line))
    b.write_text("\n".join(line for line in lines if "gpu-a01" not in line))
    assert "DG904" not in ids(run_logs(a, b))
    assert "DG904" in ids(run_logs(a))


def test_single_counter_snapshot_only_warns() -> None:
    (cnp,) = [f for f in run_logs(LOGS / "counters_cnp_snapshot.txt").findings if f.id == "DG904"]
    assert cnp.severity == "warning" and cnp.subjects == [{"dev": "mlx5_3"}]


def test_link_flap() -> None:
    (flap,) = [f for f in run_logs(LOGS / "kernel_link_flap.log").findings if f.id == "DG905"]
    assert flap.severity == "error" and flap.count == 3
    assert flap.subjects == [{"host": "gpu-c12", "ifname": "ens3np0", "pci": "0000:3b:00.0"}]
    assert "DG905" not in ids(run_logs(LOGS / "clean_dmesg_boot.log"))


# ------------------------------------------------------------------------------------------ user catalog

USER_CATALOG = """\
version: 1
signatures:
  - id: DG122            # replace: sockets are an outage on this cluster
    title: NCCL fell back to sockets
    severity: error
    sources: [nccl]
    regex: 'Using network Socket'
    cause: RoCE is mandatory here.
    next_step: Page the platform team.
  - id: SITE001          # add: a site-specific line
    title: Scheduler killed the job for a hung collective
    severity: warning
    sources: [any]
    regex: 'slurmstepd: error: \\*\\*\\* STEP (?P<step>[\\d.]+) ON (?P<host>[\\w.-]+) CANCELLED'
    cause: The job hung and hit its time limit.
    next_step: Look for DG125 in the same job.
"""


def test_user_catalog_overrides_and_adds(tmp_path: Path) -> None:
    user = tmp_path / "site.yaml"
    user.write_text(USER_CATALOG)
    merged = load_catalog(user)
    assert [s.id for s in merged].index("DG122") == [s.id for s in CATALOG].index("DG122")
    assert merged[-1].id == "SITE001" and len(merged) == len(CATALOG) + 1
    log = tmp_path / "job.log"
    log.write_text((SIGNATURES / "DG122.log").read_text()
                   + "slurmstepd: error: *** STEP 4411.0 ON gpu-a01 CANCELLED AT 2026-05-02T10:11:12 ***\n")
    report = run_logs(log, catalog=user)
    by_id = {f.id: f for f in report.findings}
    assert by_id["DG122"].severity == "error" and by_id["DG122"].next_step == "Page the platform team."
    assert by_id["SITE001"].subjects == [{"host": "gpu-a01"}] and by_id["SITE001"].details == {"step": ["4411.0"]}


# ------------------------------------------------------------------------------------------ CLI

def test_cli_clean_logs_exit_0(capsys, monkeypatch) -> None:
    code, out, err = cli(capsys, monkeypatch, LOGS / "clean_nccl_allreduce.log", LOGS / "clean_ib_write_bw.txt")
    assert code == 0, err
    assert "No known failure signatures in 2 file(s)" in out


def test_cli_error_finding_exits_1_with_table(capsys, monkeypatch) -> None:
    code, out, _ = cli(capsys, monkeypatch, SIGNATURES / "DG101.log", LOGS / "kernel_link_flap.log")
    assert code == 1
    assert out.index("error (") < out.index("warning (") < out.index("info (")
    assert "DG101" in out and "DG905" in out and "mlx5_4" in out


def test_cli_warning_only_exits_0(capsys, monkeypatch) -> None:
    code, out, _ = cli(capsys, monkeypatch, LOGS / "nccl_tc_unset.log")
    assert code == 0 and "DG902" in out


def test_cli_json_shape(capsys, monkeypatch) -> None:
    code, out, _ = cli(capsys, monkeypatch, "--format", "json", SIGNATURES / "DG110.log")
    assert code == 1
    doc = json.loads(out)
    assert list(doc) == sorted(doc) == ["expected_tos", "files", "findings", "inventory"]
    assert doc["inventory"] is None
    assert doc["files"] == [{"kinds": ["nccl"], "lines": 4, "name": str(SIGNATURES / "DG110.log")}]
    (finding,) = doc["findings"]
    assert list(finding) == sorted(finding)
    assert set(finding) == {"cause", "count", "details", "evidence", "file", "first_line", "id", "last_line",
                            "located", "next_step", "rule", "severity", "sources", "subjects", "title"}
    assert finding["located"] == []
    assert finding["id"] == "DG110" and finding["severity"] == "error" and finding["count"] == 2
    assert {"host": "host-01.example.com", "dev": "mlx5_5", "port": "1", "addr": "10.5.1.21",
            "peer_addr": "10.5.1.37", "gid_index": "3"} in finding["subjects"]


def test_cli_reads_stdin(capsys, monkeypatch) -> None:
    code, out, _ = cli(capsys, monkeypatch, "-", "-f", "json", stdin=(SIGNATURES / "DG306.log").read_text())
    assert code == 1
    doc = json.loads(out)
    assert doc["files"][0]["name"] == "<stdin>"
    assert {f["id"] for f in doc["findings"]} == {"DG305", "DG306"}


def test_cli_expected_tos_option(capsys, monkeypatch) -> None:
    code, out, _ = cli(capsys, monkeypatch, "--expected-tos", "104", LOGS / "clean_nccl_allreduce.log")
    assert code == 1 and "DG901" in out


EXAMPLE = ROOT / "inventories" / "example"
# gpu-su1-02 reports a retry-exceeded completion on mlx5_1 towards gpu-su1-03's rail-2 address (inventory
# example: rail R of host X is 10.100.R-1.X+1); leaf-su1-r3 reports a PFC storm on its host port swp2.
BOUND_LOG = """\
gpu-su1-02:984:1502 [1] transport/net_ib/p2p.cc:812 NCCL WARN NET/IB: Got completion from peer 198.18.0.9<55921> \
with status=IBV_WC_RETRY_EXC_ERR(12) opcode=IBV_WC_RDMA_WRITE(1) vendor_err=129  localGid ::ffff:10.100.1.3 \
remoteGids::ffff:10.100.1.4 hca mlx5_1
Jun  5 10:01:02.123456 leaf-su1-r3 NOTICE swss#orchagent: :- PfcWdActionHandler: PFC Watchdog detected PFC storm on \
port swp2, queue index 3, queue id 0x15000000000623 and port id 0x1000000000017.
Jun  5 10:01:03 gpu-su1-04 kernel: mlx5_core 0000:5e:00.1 rail3: Link down
Jun  5 10:01:09 gpu-su1-04 kernel: mlx5_core 0000:5e:00.1 rail3: Link up
Jun  5 10:01:13 gpu-su1-04 kernel: mlx5_core 0000:5e:00.1 rail3: Link down
"""


def test_cli_inventory_binds_addresses_devices_and_switch_ports(capsys, monkeypatch, tmp_path) -> None:
    log = tmp_path / "mixed.log"
    log.write_text(BOUND_LOG)
    code, out, err = cli(capsys, monkeypatch, "--inventory", EXAMPLE, "-f", "json", log)
    assert code == 1 and err == ""
    doc = json.loads(out)
    assert doc["inventory"] == "example"
    by_id = {f["id"]: f for f in doc["findings"]}
    fields = ("host", "nic", "netdev", "rail", "address", "leaf", "leaf_port", "cable_m")
    local, peer = by_id["DG101"]["located"]
    assert {k: local[k] for k in fields} == {
        "host": "gpu-su1-02", "nic": "mlx5_1", "netdev": "rail2", "rail": 2, "address": "10.100.1.3/24",
        "leaf": "leaf-su1-r2", "leaf_port": "swp2", "cable_m": 5}
    assert local["via"] == "dev=mlx5_1"
    assert {k: peer[k] for k in fields} == {
        "host": "gpu-su1-03", "nic": "mlx5_1", "netdev": "rail2", "rail": 2, "address": "10.100.1.4/24",
        "leaf": "leaf-su1-r2", "leaf_port": "swp3", "cable_m": 5}
    assert peer["via"] == "peer_addr=10.100.1.4"
    # the switch port behind a PFC storm is the host NIC cabled to it
    (storm,) = by_id["DG501"]["located"]
    assert (storm["host"], storm["nic"], storm["rail"], storm["leaf"], storm["leaf_port"]) == (
        "gpu-su1-02", "mlx5_2", 3, "leaf-su1-r3", "swp2")
    assert storm["via"] == "switch_port=leaf-su1-r3:swp2"
    # a flapping netdev of a host: its rail NIC and cable
    (flap,) = by_id["DG905"]["located"]
    assert (flap["host"], flap["nic"], flap["leaf"], flap["leaf_port"]) == ("gpu-su1-04", "mlx5_2", "leaf-su1-r3",
                                                                           "swp4")


def test_cli_inventory_located_in_table(capsys, monkeypatch, tmp_path) -> None:
    log = tmp_path / "mixed.log"
    log.write_text(BOUND_LOG)
    code, out, _ = cli(capsys, monkeypatch, "--inventory", EXAMPLE, log)
    assert code == 1 and "not available" not in out and "@ gpu-su1-02" in out
    from rich.console import Console

    from fabric.cli.diagnose import print_table
    from fabric.design.derive import derive
    from fabric.diagnose.report import bind
    from fabric.model.load import load

    wide = Console(file=io.StringIO(), width=1000, highlight=False)
    print_table(bind(run_logs(log), derive(load(EXAMPLE))), wide)
    flat = wide.file.getvalue()  # type: ignore[attr-defined]
    assert "@ gpu-su1-02 rail 2 mlx5_1/rail2 → leaf-su1-r2:swp2, 5 m cable" in flat
    assert "@ gpu-su1-03 rail 2 mlx5_1/rail2 → leaf-su1-r2:swp3, 5 m cable" in flat


def test_binding_without_host_and_unknown_names() -> None:
    from fabric.design.derive import derive
    from fabric.diagnose.bind import FabricIndex, bind_subjects
    from fabric.model.load import load

    index = FabricIndex(derive(load(EXAMPLE)))
    (rail_only,) = bind_subjects([{"dev": "mlx5_3"}], index)  # every host: mlx5_3 is rail 4
    assert (rail_only.host, rail_only.nic, rail_only.rail, rail_only.leaf) == (None, "mlx5_3", 4, None)
    assert bind_subjects([{"host": "gpu-a07", "dev": "mlx5_4", "addr": "10.3.4.21"}], index) == []
    # the example's names are short: it has no domain, so an FQDN is no host of it (fabric.design.names)
    (fqdn,) = bind_subjects([{"host": "gpu-su1-01.cluster.local", "ifname": "rail1"}], index)
    assert (fqdn.host, fqdn.rail, fqdn.netdev) == (None, 1, "rail1")  # the rail every host names rail1, no host
    (by_mgmt,) = bind_subjects([{"oob_addr": "198.18.0.8"}], index)
    assert (by_mgmt.host, by_mgmt.nic) == ("gpu-su1-02", None)
    # a switch of another domain is not the leaf either: no host behind its port is located (nor drained)
    assert bind_subjects([{"host": "leaf-su1-r1.evil.example", "switch_port": "swp1"}], index) == []
    (uplink,) = bind_subjects([{"host": "leaf-su1-r1", "switch_port": "swp5"}], index)
    assert uplink.host is None and uplink.leaf == "leaf-su1-r1" and uplink.peer and uplink.peer.startswith("spine")


# NCCL on RoCE with NCCL_IB_TC set, per host (NCCL's "host:pid:tid [dev]" prefix): the inventory decides what is right.
def _tc_log(tcs: dict[str, int | None]) -> str:
    lines = []
    for n, (host, tc) in enumerate(tcs.items()):
        pre = f"{host}:{1000 + n}:{1000 + n} [0] NCCL INFO"
        lines.append(f"{pre} NCCL_SOCKET_IFNAME set by environment to eth0")
        if tc is not None:
            lines.append(f"{pre} NCCL_IB_TC set by environment to {tc}.")
        lines.append(f"{pre} NET/IB : Using [0]mlx5_0:1/RoCE [1]mlx5_1:1/RoCE [RO]; OOB eth0:198.18.0.{7 + n}<0>")
    return "\n".join(lines) + "\n"


def _dg90x(doc: dict) -> dict[str, list[dict]]:
    out: dict[str, list[dict]] = {}
    for f in doc["findings"]:
        if f["id"] in ("DG901", "DG902"):
            out.setdefault(f["id"], []).append(f)
    return out


def test_cli_inventory_tos_from_roce_dscp(capsys, monkeypatch, tmp_path, example_copy) -> None:
    """qos.roce_dscp 24 makes every host's RoCE ToS 98: NCCL_IB_TC=98 is right, 106 is the mismatch."""
    (example_copy / "qos.yaml").write_text("qos:\n  preset: nvidia-roce\n  roce_dscp: 24\n")
    log = tmp_path / "nccl.log"
    log.write_text(_tc_log({"gpu-su1-01": 98, "gpu-su1-02": 106, "gpu-su1-03": None}))
    code, out, err = cli(capsys, monkeypatch, "--inventory", example_copy, "-f", "json", log)
    assert code == 1, err
    doc = json.loads(out)
    assert doc["expected_tos"] == 98
    found = _dg90x(doc)
    (tc,) = found["DG901"]
    assert tc["subjects"] == [{"host": "gpu-su1-02", "tc": "106"}]
    assert "the fabric expects 98 (DSCP 24, ECN ECT(0))" in tc["evidence"] and "NCCL_IB_TC=98" in tc["next_step"]
    (unset,) = found["DG902"]
    assert unset["subjects"] == [{"host": "gpu-su1-03"}] and "expects 98" in unset["evidence"]
    # without the inventory the same log is judged against the nvidia-roce default, 106
    code, out, _ = cli(capsys, monkeypatch, "-f", "json", log)
    assert [f["subjects"] for f in _dg90x(json.loads(out))["DG901"]] == [[{"host": "gpu-su1-01", "tc": "98"}]]
    # an explicit --expected-tos wins over the inventory
    code, out, _ = cli(capsys, monkeypatch, "--inventory", example_copy, "--expected-tos", "106", "-f", "json", log)
    doc = json.loads(out)
    assert doc["expected_tos"] == 106
    assert [f["subjects"] for f in _dg90x(doc)["DG901"]] == [[{"host": "gpu-su1-01", "tc": "98"}]]


def test_cli_inventory_tos_per_host(capsys, monkeypatch, tmp_path, example_copy) -> None:
    """hosts.defaults.roce_tos 98 with one host back at 106: each host is judged against its own ToS."""
    hosts = example_copy / "hosts.yaml"
    hosts.write_text(hosts.read_text() + "    roce_tos: 98\n  list:\n    - {name: gpu-su1-03, roce_tos: 106}\n")
    log = tmp_path / "nccl.log"
    log.write_text(_tc_log({"gpu-su1-01": 98, "gpu-su1-02": 106, "gpu-su1-03": 106, "gpu-su1-04.cluster.local": 98}))
    code, out, err = cli(capsys, monkeypatch, "--inventory", example_copy, "-f", "json", log)
    assert code == 1, err
    doc = json.loads(out)
    assert doc["expected_tos"] == 98  # what most hosts use
    (tc,) = _dg90x(doc)["DG901"]
    assert tc["subjects"] == [{"host": "gpu-su1-02", "tc": "106"}] and "expects 98" in tc["evidence"]
    log.write_text(_tc_log({"gpu-su1-01": 98, "gpu-su1-03": 98}))
    code, out, _ = cli(capsys, monkeypatch, "--inventory", example_copy, "-f", "json", log)
    (tc,) = _dg90x(json.loads(out))["DG901"]
    assert tc["subjects"] == [{"host": "gpu-su1-03", "tc": "98"}]
    assert "the fabric expects 106 (DSCP 26, ECN ECT(0))" in tc["evidence"]


def test_cli_bad_inventory_is_a_user_error(capsys, monkeypatch, tmp_path) -> None:
    code, _, err = cli(capsys, monkeypatch, "--inventory", tmp_path, LOGS / "clean_dmesg_boot.log")
    assert code == 2 and err.startswith("error:")


def test_cli_user_catalog(capsys, monkeypatch, tmp_path) -> None:
    user = tmp_path / "site.yaml"
    user.write_text(USER_CATALOG)
    code, out, _ = cli(capsys, monkeypatch, "--catalog", user, "-f", "json", SIGNATURES / "DG122.log")
    assert code == 1
    assert json.loads(out)["findings"][0]["title"] == "NCCL fell back to sockets"


BAD_CATALOG = """\
version: 1
signatures:
  - id: SITE001
    title: broken
    severity: fatal
    sources: [nccl]
    regex: 'foo(bar'
    cause: x
    next_step: y
    colour: red
"""


def test_cli_bad_catalog_exits_2_with_file_and_line(capsys, monkeypatch, tmp_path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text(BAD_CATALOG)
    code, out, err = cli(capsys, monkeypatch, "--catalog", bad, LOGS / "clean_dmesg_boot.log")
    assert code == 2 and out == ""
    assert "Traceback" not in err
    assert f"{bad}:5: signatures[0].severity: expected 'error', 'warning' or 'info', found 'fatal'" in err
    assert f"{bad}:7: signatures[0].regex: expected a valid Python regular expression" in err
    assert f"{bad}:10: signatures[0].colour:" in err


@pytest.mark.parametrize(("text", "message"), [
    ("version: 1\nsignatures:\n  - id: DG901\n    title: t\n    severity: error\n    sources: [any]\n"
     "    regex: x\n    cause: c\n    next_step: n\n", ":3: signatures[0].id: expected an id not reserved"),
    ("version: 1\nsignatures:\n  - id: SITE1\n    title: t\n    severity: error\n    sources: [any]\n"
     "    regex: x\n    cause: c\n    next_step: n\n  - id: SITE1\n    title: t\n    severity: info\n"
     "    sources: [any]\n    regex: y\n    cause: c\n    next_step: n\n",
     ":10: signatures[1].id: expected a unique id"),
    ("signatures: [\n", ": expected valid YAML"),
    ("- just\n- a list\n", ":1: expected a mapping with a 'signatures' list"),
])
def test_cli_bad_catalog_variants(capsys, monkeypatch, tmp_path, text, message) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text(text)
    code, _, err = cli(capsys, monkeypatch, "--catalog", bad, LOGS / "clean_dmesg_boot.log")
    assert code == 2 and "Traceback" not in err
    assert message in err


def test_cli_missing_log_exits_2(capsys, monkeypatch, tmp_path) -> None:
    code, _, err = cli(capsys, monkeypatch, tmp_path / "nope.log")
    assert code == 2 and "nope.log: expected a readable log file" in err and "Traceback" not in err


def test_gzip_logs_are_read(tmp_path: Path) -> None:
    import gzip

    gz = tmp_path / "dmesg.log.gz"
    gz.write_bytes(gzip.compress((LOGS / "kernel_link_flap.log").read_bytes()))
    assert "DG905" in ids(run_logs(gz))


# ------------------------------------------------------------------------------------------ jobs: stragglers, slowdowns

JOB = LOGS / "job_straggler_tagged.log"


def _straggler(report: Report):
    (found,) = [f for f in report.findings if f.id == "DG906"]
    return found


def test_straggler_named_with_rank_host_and_nic_from_open_mpi_tagged_output() -> None:
    found = _straggler(run_logs(JOB))
    assert found.severity == "error"
    assert found.subjects == [{"host": "gpu-su1-02", "rank": "5", "dev": "mlx5_1"}]
    assert found.evidence.startswith("PG 0: rank 5 (gpu-su1-02, mlx5_1) last completed SeqNum 806; "
                                     "7 other rank(s) completed 807 and timed out in 808 (ALLREDUCE)")
    assert found.details["behind"] == ["5"] and found.details["silent"] == []
    # the rank's own watchdog lines are where the finding points
    lines = JOB.read_text().splitlines()
    assert "[Rank 5] Watchdog caught" in lines[found.first_line - 1]


def test_straggler_from_srun_label_files_per_host(tmp_path: Path) -> None:
    """The same job launched by `srun --label`, one file per host: ranks are global across files."""
    text = re.sub(r"^\[1,(\d+)\]<std(?:out|err)>:", lambda m: f"{int(m.group(1)):>2}: ", JOB.read_text(), flags=re.M)
    files = []
    for host in ("gpu-su1-01", "gpu-su1-02"):
        first = 0 if host.endswith("01") else 4
        path = tmp_path / f"{host}.log"
        path.write_text("\n".join(line for line in text.splitlines()
                                  if re.match(r"^ ?(\d+): ", line) and first <= int(line.split(":")[0]) < first + 4))
        files.append(path)
    found = _straggler(run_logs(*files))
    assert found.subjects == [{"host": "gpu-su1-02", "rank": "5", "dev": "mlx5_1"}]
    assert found.file.endswith("gpu-su1-02.log")


def test_silent_rank_is_named_when_it_never_timed_out(tmp_path: Path) -> None:
    log = tmp_path / "job.log"
    log.write_text("\n".join(line for line in JOB.read_text().splitlines()
                             if not (line.startswith("[1,5]<stderr>:") or (line.startswith("[1,5]<stdout>:")
                                     and "Channel" not in line and "ncclCommInitRank" not in line))))
    found = _straggler(run_logs(log))
    assert found.details["silent"] == ["5"] and found.details["behind"] == []
    assert found.subjects == [{"host": "gpu-su1-02", "rank": "5", "dev": "mlx5_1"}]
    assert "rank 5 (gpu-su1-02, mlx5_1) never reported a timeout" in found.evidence


def test_no_straggler_when_every_rank_is_at_the_same_collective() -> None:
    """Real watchdog lines of four ranks all stuck in SeqNum 1580 (LlamaFactory #7396): nobody is behind."""
    assert "DG906" not in ids(run_logs(SIGNATURES / "DG125.log"))
    lines = [line.replace("SeqNum=807", "SeqNum=808").replace("work: 807,", "work: 808,")
             .replace("NCCL work: 806.", "NCCL work: 807.") for line in JOB.read_text().splitlines()]
    assert "DG906" not in ids(diagnose([("job", lines)], CATALOG))


def test_straggler_binds_to_leaf_port_with_inventory(capsys, monkeypatch) -> None:
    code, out, _ = cli(capsys, monkeypatch, "--inventory", EXAMPLE, "-f", "json", JOB)
    assert code == 1
    (found,) = [f for f in json.loads(out)["findings"] if f["id"] == "DG906"]
    (loc,) = found["located"]
    assert (loc["host"], loc["nic"], loc["rail"], loc["leaf"], loc["leaf_port"]) == (
        "gpu-su1-02", "mlx5_1", 2, "leaf-su1-r2", "swp2")


def test_launcher_prefix_does_not_hide_signatures_and_keeps_rank() -> None:
    line = ("[1,8]<stdout>:gpu-su1-03:4105:4372 [0] NCCL INFO NET/IB : No device found.")
    (hit,) = [f for f in diagnose([("x", [line])], CATALOG).findings if f.id == "DG113"]
    assert hit.subjects == [{"host": "gpu-su1-03", "rank": "8"}]
    srun = diagnose([("x", ["12: gpu-su1-03:4105:4372 [0] NCCL INFO NET/IB : No device found."])], CATALOG)
    assert srun.findings[0].subjects == [{"host": "gpu-su1-03", "rank": "12"}]


def test_iteration_slowdown_and_when_it_began() -> None:
    (slow,) = [f for f in run_logs(LOGS / "megatron_slowdown.log").findings if f.id == "DG907"]
    assert slow.severity == "warning"
    assert slow.details["began_at_step"] == ["31"] and slow.details["began_at"] == ["2026-05-02 10:01:02"]
    assert "1.55x the baseline (1.91 vs 1.23 s/step)" in slow.evidence
    assert slow.first_line == 33  # the line of iteration 31


def test_one_slow_step_or_a_short_log_is_not_a_slowdown() -> None:
    lines = (LOGS / "megatron_slowdown.log").read_text().splitlines()[:32]  # the checkpoint spike, then steady
    assert "DG907" not in ids(diagnose([("x", lines)], CATALOG))
    assert "DG907" not in ids(diagnose([("x", lines[:8] + lines[-30:-25])], CATALOG))


@pytest.mark.parametrize("fmt", ["deepspeed", "torchtitan"])
def test_iteration_slowdown_from_throughput_formats(fmt: str) -> None:
    """Throughput lines (DeepSpeed CurrSamplesPerSec, torchtitan tps) in their real formats: a drop is a slowdown."""
    def line(step: int, rate: float) -> str:
        if fmt == "deepspeed":  # https://github.com/deepspeedai/DeepSpeed/issues/5779
            return (f"[2024-07-17 19:{step // 60:02d}:{step % 60:02d},981] [INFO] [timer.py:258:stop] epoch=0/"
                    f"micro_step={step}/global_step={step}, RunningAvgSamplesPerSec=16.12, "
                    f"CurrSamplesPerSec={rate}, MemAllocated=0.02GB, MaxMemAllocated=0.97GB")
        # https://github.com/pytorch/torchtitan/pull/1287
        return (f"[rank0]:[titan] 2025-06-16 22:{step // 60:02d}:{step % 60:02d},322 - root - INFO - step: {step}  "
                f"loss:  6.1384  memory: 49.66GiB(52.28%)  tps: {rate:,.0f}  tflops: 339.16  mfu: 34.29%")
    rates = [16.8] * 20 + [9.1] * 10 if fmt == "deepspeed" else [5856.0] * 20 + [3100.0] * 10
    (slow,) = [f for f in diagnose([("x", [line(i + 1, r) for i, r in enumerate(rates)])], CATALOG).findings
               if f.id == "DG907"]
    assert slow.details["began_at_step"] == ["21"]
    if fmt == "torchtitan":
        assert slow.subjects == [{"rank": "0"}]


def test_cnp_asymmetry_names_the_one_sender_that_does_not_react() -> None:
    report = run_logs(LOGS / "counters_cnp_asymmetric.txt")
    (asym,) = [f for f in report.findings if f.id == "DG908"]
    assert asym.severity == "error" and asym.subjects == [{"host": "gpu-su1-04", "dev": "mlx5_1"}]
    assert "rp_cnp_handled +0 on mlx5_1 (gpu-su1-04); 3 other device(s) handled +38000" in asym.evidence
    assert "DG904" not in ids(report)
    assert "DG908" not in ids(run_logs(LOGS / "counters_cnp_ok.txt"))
