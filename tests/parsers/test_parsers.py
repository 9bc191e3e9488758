"""Parsers of acceptance/host outputs: real samples, messy variants, errors, CLI."""

from __future__ import annotations

import json
import random
import subprocess
import sys
from collections.abc import Callable

import pytest
from typer.testing import CliRunner

from fabric.errors import InputError
from fabric.parsers import (
    PARSERS,
    busbw_at_largest,
    ethtool_delta,
    gid_index_for,
    parse_ethtool_stats,
    parse_ibv_devinfo_gids,
    parse_iperf3,
    parse_mlnx_qos,
    parse_nccl,
    parse_perftest,
    parse_perftest_json,
    parse_perftest_text,
    parse_show_gids,
    peak_busbw,
    perftest_bw_gbps,
)
from tests.support.paths import FIXTURES, ROOT

SAMPLES = FIXTURES / "samples"


def text(name: str) -> str:
    return (SAMPLES / name).read_text()


def kind_of(name: str) -> str:
    """Which parser a fixture is for, from its name."""
    for key, kind in (
        ("ib_", "perftest"),
        ("perftest", "perftest"),
        ("nccl", "nccl"),
        ("iperf3", "iperf3"),
        ("mlnx_qos", "mlnx_qos"),
        ("mlxconfig", "mlxconfig"),
        ("gids", "show_gids"),
        ("devinfo", "show_gids"),
        ("ethtool", "ethtool"),
    ):
        if key in name:
            return kind
    raise AssertionError(f"no parser kind for fixture {name}")


def error_of(exc: pytest.ExceptionInfo[InputError]) -> str:
    return str(exc.value)


# ---------------------------------------------------------------- perftest: shared samples


def test_perftest_all_sizes_report_gbits() -> None:
    name = "ib_write_bw_client_all_sizes_report_gbits.txt"
    res = parse_perftest(text(name), name)
    assert (res.source, res.kind, res.test, res.bw_unit) == ("text", "bw", "RDMA_Write BW Test", "Gb/sec")
    assert not res.server and not res.bidirectional and not res.duration_mode
    assert [r.bytes for r in res.bw_rows] == [2**n for n in range(1, 24)]
    by_size = {r.bytes: r for r in res.bw_rows}
    assert by_size[65536].bw_average == 88.08 and by_size[65536].bw_peak == 88.08
    assert by_size[2].bw_peak == 0.073998 and by_size[2].msg_rate_mpps == 4.535869  # inc_accuracy row
    assert by_size[8388608].bw_average == 83.75 and by_size[8388608].iterations == 5000
    assert perftest_bw_gbps(res, 65536) == 88.08
    assert perftest_bw_gbps(res) == 83.75  # default: largest size
    assert (res.device, res.link_type, res.mtu, res.gid_index, res.num_qps) == (
        "mlx5_0",
        "Ethernet",
        1024,
        2,
        1,
    )
    assert res.info["Data ex. method"] == "Ethernet" and res.info["CQ Moderation"] == "100"
    assert (res.local_ip, res.remote_ip) == ("10.110.16.182", "10.110.16.103")
    assert res.local_gid == "00:00:00:00:00:00:00:00:00:00:255:255:10:110:16:182"
    assert res.skipped == [] and res.lat_rows == []


def test_perftest_bidirectional_duration_new_header_with_noise() -> None:
    name = "ib_write_bw_client_bidir_duration_newheader.txt"
    res = parse_perftest(text(name), name)
    assert res.bidirectional and res.duration_mode and res.test == "RDMA_Write Bidirectional BW Test"
    assert len(res.bw_rows) == 1  # the 'Conflicting CPU frequency' line between header and row is ignored
    row = res.bw_rows[0]
    assert (row.bytes, row.iterations, row.bw_peak, row.bw_average, row.msg_rate_mpps) == (
        65536,
        560845,
        0.0,
        98.02,
        0.18695,
    )
    assert res.gid_index == 4 and res.mtu == 4096
    assert res.info["Using Enhanced Reorder"] == "OFF" and res.info["CQE Poll Batch"] == "Dynamic"
    assert any("peak won't be measured" in w for w in res.warnings)


def test_perftest_server_rdma_cm_cuda_with_tabs() -> None:
    name = "ib_write_bw_server_rdma_cm_use_cuda.txt"
    res = parse_perftest(text(name), name)
    assert res.server and res.kind == "bw" and res.gid_index == 3
    assert res.info["rdma_cm QPs"] == "ON" and res.info["Data ex. method"] == "rdma_cm"
    assert [(r.bytes, r.bw_peak, r.bw_average, r.msg_rate_mpps) for r in res.bw_rows] == [
        (65536, 10.46, 10.42, 0.019882)
    ]
    assert len(res.warnings) == 2 and "relaxed ordering" in res.warnings[0]
    assert res.local_ip == "192.168.3.227"


def test_perftest_latency_all_sizes() -> None:
    name = "ib_write_lat_all_sizes_client.txt"
    res = parse_perftest(text(name), name)
    assert res.kind == "lat" and res.lat_unit == "usec" and res.bw_rows == []
    assert len(res.lat_rows) == 23
    first, last = res.lat_rows[0], res.lat_rows[-1]
    assert (first.bytes, first.iterations, first.t_min, first.t_typical, first.t_avg) == (
        2,
        20000,
        0.88,
        0.98,
        1.03,
    )
    assert (first.t_p99, first.t_p99_9) == (1.21, 5.42)
    assert (last.bytes, last.t_max, last.t_stdev, last.t_p99_9) == (8388608, 2345.48, 6.43, 2335.48)
    assert {r.bytes: r.t_max for r in res.lat_rows}[4096] == 49.03
    assert res.link_type == "IB" and res.gid_index is None and res.local_gid is None


# ---------------------------------------------------------------- perftest: variants and errors


def test_perftest_default_mb_per_sec_converts_to_gbps() -> None:
    name = "extra_ib_write_bw_mbsec_default.txt"
    res = parse_perftest(text(name), name)
    assert res.bw_unit == "MB/sec" and res.bw_rows[0].bw_average == 11036.54
    assert perftest_bw_gbps(res, 65536) == pytest.approx(11036.54 * 1048576 * 8 / 1e9)
    assert res.device == "mlx5_1" and res.info["rdma_cm QPs"] == "OFF"


def test_perftest_server_without_table_is_valid() -> None:
    name = "extra_ib_write_lat_server_no_table.txt"
    res = parse_perftest(text(name), name)
    assert res.server and res.kind == "lat" and res.lat_rows == [] and res.bw_rows == []
    assert res.gid_index == 3 and res.remote_ip == "10.20.1.11"


def test_perftest_truncated_keeps_complete_rows_only() -> None:
    name = "extra_ib_write_bw_truncated.txt"
    res = parse_perftest(text(name), name)
    assert [r.bytes for r in res.bw_rows] == [2**n for n in range(1, 11)]
    assert [(s.line, s.reason) for s in res.skipped] == [(33, "no newline at end of input (truncated?)")]
    res = parse_perftest(text(name) + "\n", name)  # same short row, but terminated
    assert [(s.line, s.reason, s.text) for s in res.skipped] == [
        (33, "3 of 5 columns", "4096       5000             85.92")
    ]


def test_unterminated_last_line_never_gives_a_number() -> None:
    """'rx_packets: 9182' may be the start of 'rx_packets: 918273645': without its newline it is not used."""
    res = parse_ethtool_stats("NIC statistics:\n     tx_packets: 1\n     rx_packets: 9182")
    assert res.counters == {"tx_packets": 1} and [s.line for s in res.skipped] == [3]
    assert (
        parse_show_gids(
            "mlx5_0\t1\t0\tfe80:0000:0000:0000:0ac0:ebff:fe21:03da\t\t\tv1\trdma0\nn_gids_found=1"
        ).n_gids_found
        is None
    )
    head = text("mlnx_qos_trust_dscp_os_controlled.txt").split("\ntc: 0")[0]  # ends in the 'enabled' line
    with pytest.raises(InputError):
        parse_mlnx_qos(head)  # the unterminated 'enabled' line is not trusted
    qos = parse_mlnx_qos(head + "\ntc: 0 ratelimit: unlim")
    assert qos.pfc_enabled[3] and qos.tcs == [] and any("no newline" in w for w in qos.warnings)


def test_perftest_latency_duration_mode() -> None:
    name = "extra_ib_write_lat_duration.txt"
    res = parse_perftest(text(name), name)
    assert res.duration_mode and res.kind == "lat"
    row = res.lat_rows[0]
    assert (row.bytes, row.iterations, row.t_avg, row.tps_average, row.t_min) == (
        2,
        4901960,
        1.02,
        490195.8,
        None,
    )


def test_perftest_out_json_bw_and_unknown_unit() -> None:
    name = "extra_perftest_out_json_bw.json"
    res = parse_perftest(text(name), name)
    assert res.source == "json" and res.kind == "bw" and res.bw_unit is None
    assert (res.bw_rows[0].bytes, res.bw_rows[0].bw_average, res.bw_rows[0].msg_rate_mpps) == (
        65536,
        391.87,
        0.747429,
    )
    assert (res.device, res.gid_index, res.mtu, res.link_type) == ("mlx5_0", 3, 4096, "Ethernet")
    with pytest.raises(ValueError):
        perftest_bw_gbps(res)
    assert perftest_bw_gbps(parse_perftest_json(text(name), name, bw_unit="Gb/sec")) == 391.87


def test_perftest_out_json_latency() -> None:
    res = parse_perftest_json(text("extra_perftest_out_json_lat.json"))
    assert res.kind == "lat" and res.test == "RDMA_Write_Latency_Test"
    row = res.lat_rows[0]
    assert (row.bytes, row.t_typical, row.t_p99, row.t_p99_9) == (2, 1.76, 2.35, 5.38)


def test_perftest_out_json_trailing_commas_and_bare_words() -> None:
    res = parse_perftest_json(text("extra_perftest_out_json_quirks.json"))
    assert res.bidirectional and res.device == "mlx5_0" and res.bw_rows[0].bw_average == 98.02


# ---------------------------------------------------------------- nccl-tests


def test_nccl_v218_sample() -> None:
    name = "nccl_all_reduce_2node_h200_v2.18_format.txt"
    res = parse_nccl(text(name), name)
    assert (res.test, res.version, res.nccl_version) == ("all_reduce_perf", "2.18.3", "2.30.4+cuda13.2")
    assert res.settings["nGpus"] == "8" and res.settings["maxBytes"] == "17179869184"
    assert res.settings["warmup_iters"] == "50" and res.settings["step"] == "2(factor)"
    assert len(res.ranks) == 16 and {r.host for r in res.ranks} == {
        "nvidiatools-dell-h200-2-workload",
        "nvidiatools-dell-h200-3-workload",
    }
    assert res.ranks[8].bus_id == "0000:1b:00" and res.ranks[8].gpu == "NVIDIA H200"
    assert len(res.rows) == 25 and res.rows[0].size == 1024 and res.rows[-1].size == 17179869184
    last = res.rows[-1]
    assert (last.count, last.type, last.redop, last.root) == (4294967296, "float", "sum", -1)
    assert (last.out_of_place.time_us, last.out_of_place.algbw, last.out_of_place.busbw) == (
        66326.9,
        259.02,
        485.66,
    )
    assert (last.in_place.time_us, last.in_place.busbw, last.in_place.wrong) == (66345.5, 485.52, 0)
    assert {r.size: r for r in res.rows}[4294967296].out_of_place.time_us == 16715.2
    assert res.avg_busbw == 178.222 and res.complete and res.out_of_bounds == 0 and res.out_of_bounds_ok
    assert busbw_at_largest(res) == 485.52  # what acceptance judges on, not the 178 average
    assert busbw_at_largest(res, 3) == 481.74 and busbw_at_largest(res, 4) == 473.6
    assert peak_busbw(res) == 485.66
    assert all(r.out_of_place.wrong == 0 and r.in_place.wrong == 0 for r in res.rows)
    assert res.skipped == []


def test_nccl_legacy_format() -> None:
    name = "extra_nccl_all_reduce_legacy_format.txt"
    res = parse_nccl(text(name), name)
    assert res.version is None and res.test is None and res.nccl_version == "2.18.5+cuda12.2"
    assert len(res.ranks) == 16 and res.ranks[0].bus_id == "0x18"
    assert [r.size for r in res.rows] == [1048576, 16777216, 268435456, 1073741824, 4294967296, 17179869184]
    assert busbw_at_largest(res) == 485.6 and res.rows[-1].out_of_place.busbw == 485.72
    assert res.avg_busbw == 325.41


def test_nccl_srun_labels_and_unvalidated_rows() -> None:
    name = "extra_nccl_alltoall_srun_label_na.txt"
    res = parse_nccl(text(name), name)
    assert [r.size for r in res.rows] == [8388608, 67108864, 536870912]
    assert all(
        r.redop == "none" and r.out_of_place.wrong is None and r.in_place.wrong is None for r in res.rows
    )
    assert busbw_at_largest(res) == 175.68 and res.avg_busbw == 98.4917 and len(res.ranks) == 16


def test_nccl_very_old_format_without_root() -> None:
    name = "extra_nccl_very_old_no_root.txt"
    res = parse_nccl(text(name), name)
    row = res.rows[0]
    assert (row.size, row.root, row.out_of_place.time_us, row.out_of_place.busbw) == (
        1310720000,
        None,
        1206245.0,
        1.09,
    )
    assert (row.out_of_place.error, row.out_of_place.wrong) == (5e-07, None)
    assert [(r.rank, r.group, r.host) for r in res.ranks] == [
        (0, None, "ip-172-31-20-228"),
        (1, None, "ip-172-31-22-230"),
    ]


def test_nccl_noise_and_split_row_are_not_turned_into_numbers() -> None:
    name = "extra_nccl_noise_interleaved.txt"
    res = parse_nccl(text(name), name)
    assert 8192 not in {r.size for r in res.rows} and len(res.rows) == 24
    assert [s.line for s in res.skipped] == [34] and "root" in res.skipped[0].reason
    assert busbw_at_largest(res) == 485.52


def test_nccl_truncated_run() -> None:
    name = "extra_nccl_truncated.txt"
    res = parse_nccl(text(name), name)
    assert not res.complete and res.avg_busbw is None
    assert res.rows[-1].size == 134217728 and len(res.rows) == 18
    assert [s.line for s in res.skipped] == [48]
    assert busbw_at_largest(res) == 336.57


# ---------------------------------------------------------------- outputs that are no result: a located error

# (parser, the output's name, the output: its text, or None for the sample of that name, the error it gives,
# whether the error is all of it or where it starts, words it also holds)
ERRORS = [
    pytest.param(parse_perftest, "extra_ib_write_bw_client_no_table.txt", None,
                 "extra_ib_write_bw_client_no_table.txt:20: perftest: expected a '#bytes' result table", "starts", "",
                 id="perftest-client-without-table"),
    pytest.param(parse_perftest, "extra_ib_write_bw_clock_uncalibrated.txt", None,
                 "extra_ib_write_bw_clock_uncalibrated.txt:1: perftest.clock: expected a run perftest could time (its "
                 "cycle counter calibrated against the clock, r² ≥ 0.9), found r² 0.668728: perftest went on with a "
                 "clock rate of 0", "starts", "run it again", id="perftest-clock-not-calibrated"),
    pytest.param(parse_perftest, "extra_ib_send_lat_fused_columns.txt", None,
                 "extra_ib_send_lat_fused_columns.txt:17: perftest.row: expected a complete result row, found 8 of 9 "
                 "columns", "starts", "", id="perftest-fused-columns-only-row"),
    pytest.param(parse_perftest, "extra_perftest_out_json_truncated.json", None,
                 "extra_perftest_out_json_truncated.json:12: json: expected valid JSON", "starts", "truncated",
                 id="perftest-out-json-truncated"),
    pytest.param(parse_perftest, "run.json",
                 '{"test_info": {"test": "RDMA_Write_BW_Test"},\n"results": {"MsgSize": 65536, "n_iterations": 5000,\n'
                 '"BW_peak": "-nan", "BW_average": 1.0, "MsgRate": 1.0}}',
                 "run.json:3: results.BW_peak: expected a number, found '-nan'", "is", "",
                 id="perftest-out-json-non-numeric-value"),
    pytest.param(parse_perftest, "h.txt", " #bytes     #iterations    BW average[Gb/sec]\n 65536      5000       1.0\n",
                 "h.txt:1: perftest.header: expected '#bytes #iterations' then BW peak", "starts",
                 "found '#bytes     #iterations    BW average[Gb/sec]'", id="perftest-unknown-table-header"),
    pytest.param(parse_perftest_text, "x.txt", "hello\nworld\n", "", "starts", "expected perftest output",
                 id="perftest-text-of-other-output"),
    pytest.param(parse_nccl, "extra_nccl_test_failure.txt", None,
                 "extra_nccl_test_failure.txt:11: nccl.rows: expected nccl-tests result rows", "starts",
                 "Test NCCL failure", id="nccl-failure-line"),
    pytest.param(parse_nccl, "-",
                 "#  size count type redop root time algbw busbw #wrong time algbw busbw #wrong\n"
                 "  1024   256  float  sum  -1  45.06  0.02  x.04  0  43.74  0.02  0.04  0\n",
                 "-:2: nccl.row: expected a complete result row, found busbw is not a number: 'x.04'", "starts", "",
                 id="nccl-only-broken-rows"),
]


@pytest.mark.parametrize(("parse", "name", "output", "error", "how", "holds"), ERRORS)
def test_an_output_that_is_no_result_is_an_error_at_its_line(parse: Callable[[str, str], object], name: str,
                                                             output: str | None, error: str, how: str,
                                                             holds: str) -> None:
    with pytest.raises(InputError) as exc:
        parse(text(name) if output is None else output, name)
    assert error_of(exc) == error if how == "is" else error_of(exc).startswith(error)
    assert holds in error_of(exc)


# ---------------------------------------------------------------- iperf3


def test_iperf3_tcp_two_streams() -> None:
    name = "extra_iperf3_tcp_2streams.json"
    res = parse_iperf3(text(name), name)
    assert (res.version, res.protocol, res.num_streams, res.error) == ("iperf 3.12", "TCP", 2, None)
    assert res.sent is not None and res.received is not None and res.udp is None
    assert res.sent.bits_per_second == pytest.approx(22554283348.632938)
    assert res.received.bits_per_second == pytest.approx(22553877389.394867)
    assert (res.sent.retransmits, res.sent.bytes, res.received.retransmits) == (0, 8458076160, None)
    assert (
        len(res.intervals) == 3 and res.intervals[0].bytes == 2942566400 and res.intervals[0].retransmits == 0
    )


def test_iperf3_udp() -> None:
    res = parse_iperf3(text("extra_iperf3_udp.json"))
    assert res.protocol == "UDP" and res.udp is not None and res.received is not None
    assert (res.udp.packets, res.udp.lost_packets, res.udp.lost_percent) == (763, 0, 0.0)
    assert res.received.bits_per_second == pytest.approx(99989687.88196154)
    assert len(res.intervals) == 2 and res.intervals[1].retransmits is None


def test_iperf3_failed_run_reports_iperf_error() -> None:
    res = parse_iperf3(text("extra_iperf3_conn_refused.json"))
    assert res.error == "unable to connect to server: Connection refused"
    assert res.sent is None and res.received is None and res.intervals == []


def test_iperf3_truncated_and_leading_noise() -> None:
    name = "extra_iperf3_truncated.json"
    with pytest.raises(InputError) as exc:
        parse_iperf3(text(name), name)
    assert error_of(exc).startswith(f"{name}:112: json: expected valid JSON") and "truncated" in error_of(exc)
    noisy = "Warning: Permanently added 'h2' (ED25519) to the list of known hosts.\n"
    assert parse_iperf3(noisy + text("extra_iperf3_udp.json")).protocol == "UDP"
    with pytest.raises(InputError) as exc:
        parse_iperf3(noisy + text(name), name)
    assert error_of(exc).startswith(f"{name}:113: json:")


def test_iperf3_rejects_other_json_and_missing_summary() -> None:
    with pytest.raises(InputError) as exc:
        parse_iperf3("[1, 2]\n", "x.json")
    assert "expected iperf3 -J output" in error_of(exc)
    with pytest.raises(InputError) as exc:
        parse_iperf3('{"start": {"version": "iperf 3.12"},\n"intervals": [],\n"end": {}\n}\n', "x.json")
    assert (
        error_of(exc)
        == "x.json:3: end: expected an end summary (sum_sent/sum_received), found none (truncated output?)"
    )
    with pytest.raises(InputError) as exc:
        parse_iperf3(
            '{"start": {},\n"end": {"sum_sent": {"seconds": 1, "bytes": "many",\n"bits_per_second": 1}}}',
            "y.json",
        )
    assert error_of(exc).startswith("y.json:2: end.sum_sent: expected an iperf3 end.sum_sent summary")


# ---------------------------------------------------------------- mlnx_qos


def test_mlnx_qos_trust_dscp_sample() -> None:
    name = "mlnx_qos_trust_dscp_os_controlled.txt"
    res = parse_mlnx_qos(text(name), name)
    assert (res.dcbx_mode, res.trust, res.cable_len) == ("OS controlled", "dscp", 7)
    assert (
        len(res.dscp2prio) == 64
        and res.dscp2prio[26] == 3
        and res.dscp2prio[48] == 6
        and res.dscp2prio[0] == 0
    )
    assert res.pfc_enabled == [False, False, False, True, False, False, False, False]
    assert res.buffer_sizes is None and res.pfc_buffer is None
    assert [(t.tc, t.priorities) for t in res.tcs][:2] == [(0, [1]), (1, [0])]
    assert all(t.tsa == "vendor" and t.ratelimit_gbps is None and t.bw_percent is None for t in res.tcs)
    assert len(res.tcs) == 8 and res.blocks == 1


def test_mlnx_qos_firmware_buffers_ets_tabs() -> None:
    res = parse_mlnx_qos(text("extra_mlnx_qos_fw_buffers_tabs.txt"))
    assert (res.dcbx_mode, res.trust, res.dscp2prio) == ("Firmware controlled", "pcp", {})
    assert res.buffer_sizes == [130944, 130944, 0, 0, 0, 0, 0, 0] and res.max_buffer_size == 1041664
    assert res.pfc_buffer == [0, 0, 0, 1, 0, 0, 0, 0] and res.pfc_enabled[3]
    tcs = {t.tc: t for t in res.tcs}
    assert (tcs[0].tsa, tcs[0].bw_percent, tcs[0].priorities) == ("ets", 50, [0, 1, 2, 4, 5, 7])
    assert (tcs[3].ratelimit_gbps, tcs[3].bw_percent, tcs[3].priorities) == (25.0, 50, [3])
    assert (tcs[6].tsa, tcs[6].priorities) == ("vendor", [6])


def test_mlnx_qos_last_of_several_outputs_wins() -> None:
    res = parse_mlnx_qos(text("extra_mlnx_qos_two_runs.txt"))
    assert res.blocks == 2 and res.pfc_enabled[3] and res.dscp2prio[26] == 3
    assert any("lldpad" in w for w in res.warnings)


def test_mlnx_qos_errors_name_the_line() -> None:
    name = "extra_mlnx_qos_bad_pfc.txt"
    with pytest.raises(InputError) as exc:
        parse_mlnx_qos(text(name), name)
    assert error_of(exc).startswith(f"{name}:5: pfc.enabled: expected 8 values in 0..1")
    with pytest.raises(InputError) as exc:
        parse_mlnx_qos("Priority trust state: dscp\ndscp2prio mapping:\n\tprio:3 dscp:26,99,\n", "q")
    assert error_of(exc).startswith("q:3: dscp2prio: expected")
    with pytest.raises(InputError) as exc:
        parse_mlnx_qos("Priority trust state: dscp\n", "q")
    assert "expected mlnx_qos output with a 'PFC configuration:' section" in error_of(exc)


# ---------------------------------------------------------------- GID tables


def test_show_gids_sample_tabs() -> None:
    name = "show_gids_single_dev_tabs.txt"
    res = parse_show_gids(text(name), name)
    assert res.source == "show_gids" and res.n_gids_found == 4 == len(res.rows)
    assert gid_index_for(res, "192.168.211.242") == 3
    assert gid_index_for(res, "192.168.211.242", version="v1") == 2
    row = res.rows[3]
    assert (row.dev, row.port, row.gid, row.version, row.ndev) == (
        "mlx5_0",
        1,
        "0000:0000:0000:0000:0000:ffff:c0a8:d3f2",
        "v2",
        "rdma0",
    )
    assert res.rows[0].ipv4 is None and res.rows[0].version == "v1"


def test_show_gids_two_devices_spaces_and_empty_columns() -> None:
    res = parse_show_gids(text("extra_show_gids_two_devs_spaces.txt"))
    assert len(res.rows) == 9 == res.n_gids_found
    assert gid_index_for(res, "10.20.2.11", dev="mlx5_1") == 3
    assert gid_index_for(res, "10.20.2.11", dev="mlx5_0") is None
    odd = res.rows[-1]
    assert (odd.dev, odd.index, odd.ipv4, odd.version, odd.ndev) == ("mlx5_1", 4, None, "v2", None)


def test_ibv_devinfo_gid_lines() -> None:
    name = "ibv_devinfo_gid_table.txt"
    res = parse_show_gids(text(name), name)  # recognised and handed to the ibv_devinfo parser
    assert res.source == "ibv_devinfo" and [r.index for r in res.rows] == [0, 1, 2, 3]
    assert (res.rows[3].gid, res.rows[3].ipv4, res.rows[3].version) == (
        "::ffff:200.0.209.6",
        "200.0.209.6",
        "v2",
    )
    assert res.rows[2].ipv4 == "200.0.209.6" and res.rows[2].version == "v1"
    assert gid_index_for(res, "200.0.209.6") == 3
    full = parse_ibv_devinfo_gids(text("extra_ibv_devinfo_two_ports.txt"))
    assert gid_index_for(full, "10.20.2.11", dev="mlx5_1", port=1) == 3
    assert {(r.dev, r.port) for r in full.rows} == {("mlx5_0", 1), ("mlx5_1", 1)}


def test_gid_errors() -> None:
    with pytest.raises(InputError) as exc:
        parse_show_gids("DEV\tPORT\tINDEX\tGID\nmlx5_0\t1\t0\tfe80:zzzz\t\tv1\trdma0\n", "g.txt")
    assert error_of(exc).startswith(
        "g.txt:2: show_gids: expected"
    ) and "not 8 groups of 4 hex digits" in error_of(exc)
    assert parse_show_gids("n_gids_found=0\n").rows == []


# ---------------------------------------------------------------- ethtool -S


def test_ethtool_real_virtio_capture() -> None:
    res = parse_ethtool_stats(text("extra_ethtool_S_virtio_eth0.txt"))
    assert len(res.counters) == 20 and res.counters["rx_drops"] == 0 and res.counters["rx_kicks"] == 549
    assert list(res.counters)[:2] == ["rx_drops", "rx_xdp_packets"]


def test_ethtool_mlx5_prio_counters_and_delta() -> None:
    before = parse_ethtool_stats(text("extra_ethtool_S_mlx5_prio3.txt"))
    after = parse_ethtool_stats(text("extra_ethtool_S_mlx5_prio3_after.txt"))
    assert before.counters["rx_prio3_pause"] == 1523 and before.counters["rx_bytes"] == 7340032001234
    delta = ethtool_delta(before, after)
    assert (delta["rx_prio3_pause"], delta["rx_discards_phy"], delta["rx_prio3_marked"]) == (77, 2, 269)
    assert delta["rx_prio3_discards"] == 0


def test_ethtool_truncated_and_unsupported() -> None:
    res = parse_ethtool_stats(text("extra_ethtool_S_truncated.txt"))
    assert len(res.counters) == 19 and [s.line for s in res.skipped] == [22]
    name = "extra_ethtool_S_unsupported.txt"
    with pytest.raises(InputError) as exc:
        parse_ethtool_stats(text(name), name)
    assert (
        error_of(exc) == f"{name}:1: ethtool: expected 'NIC statistics:' then '     name: value' lines, "
        "found 'no stats available'"
    )
    dup = parse_ethtool_stats("NIC statistics:\n     a: 1\n     a: 2\n     b: 3\nnext command\n     c: 9\n")
    assert dup.counters == {"a": 1, "b": 3} and [s.line for s in dup.skipped] == [3]


# ---------------------------------------------------------------- every parser, every fixture, messy input


@pytest.mark.parametrize("name", sorted(p.name for p in SAMPLES.iterdir() if p.suffix != ".md"))
def test_every_fixture_parses_or_fails_cleanly(name: str) -> None:
    try:
        result = PARSERS[kind_of(name)](text(name), name)
    except InputError as exc:
        assert str(exc).startswith(name)
        return
    json.dumps(result.model_dump(mode="json"))
    assert type(result).model_validate(result.model_dump()) == result


@pytest.mark.parametrize("kind", sorted(PARSERS))
@pytest.mark.parametrize("junk", ["", "   \n\n", "\x00\x01garbage\xff", "{", "#\n#\n", "1 2 3\n4 5 6\n"])
def test_junk_input_gives_input_error(kind: str, junk: str) -> None:
    with pytest.raises(InputError) as exc:
        PARSERS[kind](junk, "junk.txt")
    assert str(exc.value).startswith("junk.txt")


@pytest.mark.parametrize(
    "name",
    [
        "ib_write_bw_client_all_sizes_report_gbits.txt",
        "ib_write_lat_all_sizes_client.txt",
        "nccl_all_reduce_2node_h200_v2.18_format.txt",
        "mlnx_qos_trust_dscp_os_controlled.txt",
        "show_gids_single_dev_tabs.txt",
        "extra_ethtool_S_mlx5_prio3.txt",
        "extra_iperf3_tcp_2streams.json",
    ],
)
def test_truncation_never_invents_rows(name: str) -> None:
    """Cut the file anywhere: the result is an InputError or a subset of the full file's data."""
    parse = PARSERS[kind_of(name)]
    content = text(name)
    full = parse(content, name).model_dump()
    for cut in range(0, len(content), 23):
        try:
            part = parse(content[:cut], name).model_dump()
        except InputError:
            continue
        for key in ("rows", "bw_rows", "lat_rows", "intervals", "tcs"):
            for row in part.get(key) or []:
                if key == "tcs":
                    match = next(t for t in full["tcs"] if t["tc"] == row["tc"])
                    assert set(row["priorities"]) <= set(match["priorities"])
                    assert {k: v for k, v in row.items() if k != "priorities"} == {
                        k: v for k, v in match.items() if k != "priorities"
                    }
                else:
                    assert row in full[key], (cut, row)
        for name_, value in (part.get("counters") or {}).items():
            assert full["counters"][name_] == value, (cut, name_)
        for dscp, prio in (part.get("dscp2prio") or {}).items():
            assert full["dscp2prio"][dscp] == prio


@pytest.mark.parametrize("name", sorted(p.name for p in SAMPLES.iterdir() if p.suffix != ".md"))
def test_mutated_input_never_raises_anything_but_input_error(name: str) -> None:
    """Drop, repeat, mangle and fuse lines at random: a result or an InputError, never another exception."""
    rng = random.Random(name)
    parse = PARSERS[kind_of(name)]
    lines = text(name).splitlines(keepends=True)
    for _ in range(150):
        mutated = list(lines)
        i = rng.randrange(len(mutated))
        op = rng.choice(["drop", "repeat", "digits", "fuse", "tabs", "garbage"])
        if op == "drop":
            del mutated[i]
        elif op == "repeat":
            mutated.insert(i, mutated[i])
        elif op == "digits":
            mutated[i] = "".join(
                rng.choice("0x.-9 ") if c.isdigit() and rng.random() < 0.3 else c for c in mutated[i]
            )
        elif op == "fuse" and i + 1 < len(mutated):
            mutated[i] = mutated[i].rstrip("\n") + mutated.pop(i + 1)
        elif op == "tabs":
            mutated[i] = mutated[i].replace("\t", " ").replace("  ", "\t")
        else:
            mutated[i] = "".join(chr(rng.randrange(1, 0x2FF)) for _ in range(rng.randrange(1, 60))) + "\n"
        try:
            result = parse("".join(mutated), name)
        except InputError as exc:
            assert str(exc).startswith(name)
            continue
        json.dumps(result.model_dump(mode="json"), allow_nan=False)


# ---------------------------------------------------------------- CLI


def test_cli_parse_nccl_json_sorted() -> None:
    from fabric.cli import app

    path = SAMPLES / "nccl_all_reduce_2node_h200_v2.18_format.txt"
    result = CliRunner().invoke(app, ["parse", "nccl", str(path)])
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert result.stdout.strip() == json.dumps(doc, sort_keys=True, indent=2)
    assert doc["avg_busbw"] == 178.222 and doc["rows"][-1]["in_place"]["busbw"] == 485.52


def test_cli_parse_stdin() -> None:
    from fabric.cli import app

    result = CliRunner().invoke(app, ["parse", "show_gids", "-"], input=text("show_gids_single_dev_tabs.txt"))
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["rows"][3]["index"] == 3


def run_fabric(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    code = "import sys; from fabric.cli import main; sys.argv[0] = 'fabric'; main()"
    return subprocess.run(
        [sys.executable, "-c", code, *args],
        input=stdin,
        capture_output=True,
        text=True,
        check=False,
        cwd=ROOT,
    )


def test_cli_bad_input_exits_2_without_traceback() -> None:
    proc = run_fabric("parse", "nccl", str(SAMPLES / "extra_nccl_test_failure.txt"))
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert f"error: {SAMPLES / 'extra_nccl_test_failure.txt'}:11: nccl.rows: expected" in proc.stderr
    proc = run_fabric("parse", "perftest", "-", stdin="garbage\n")
    assert (
        proc.returncode == 2
        and "Traceback" not in proc.stderr
        and proc.stderr.startswith("error: -: perftest:")
    )
    clock = SAMPLES / "extra_ib_write_bw_clock_uncalibrated.txt"  # perftest's zeros after its failed calibration
    proc = run_fabric("parse", "perftest", str(clock))
    assert proc.returncode == 2 and "Traceback" not in proc.stderr and proc.stdout == ""
    assert proc.stderr.startswith(f"error: {clock}:1: perftest.clock: expected a run perftest could time"), proc.stderr
    proc = run_fabric("parse", "ethtool", str(SAMPLES / "does-not-exist.txt"))
    assert (
        proc.returncode == 2 and "expected a readable file" in proc.stderr and "Traceback" not in proc.stderr
    )


def test_cli_good_input_subprocess() -> None:
    proc = run_fabric("parse", "mlnx_qos", str(SAMPLES / "mlnx_qos_trust_dscp_os_controlled.txt"))
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["dscp2prio"]["26"] == 3
