"""Parsers for acceptance-test and host-state outputs: pure functions from text to pydantic models.

Each `parse_*(text, file)` returns a model or raises fabric.errors.InputError naming `file`, the line
and what was expected vs found. Lines that look like data but cannot be read are never turned into
numbers: they are listed in the result's `skipped` (or cause the error when nothing else was read).
"""

from __future__ import annotations

import io
import sys
from collections.abc import Callable, Iterable

from fabric.parsers._common import Model, Skipped, capped_lines, fail, regular_file, without_long_lines
from fabric.parsers.ethtool import EthtoolStats, ethtool_delta, parse_ethtool_stats
from fabric.parsers.gids import (
    GidRow,
    GidTable,
    gid_index_for,
    parse_ibv_devinfo_gids,
    parse_show_gids,
)
from fabric.parsers.iperf3 import Iperf3Interval, Iperf3Result, Iperf3Sum, parse_iperf3
from fabric.parsers.mlnx_qos import MlnxQos, TcConfig, parse_mlnx_qos
from fabric.parsers.mlxconfig import Mlxconfig, MlxconfigDevice, parse_mlxconfig
from fabric.parsers.nccl import (
    NcclOp,
    NcclRank,
    NcclResult,
    NcclRow,
    busbw_at_largest,
    parse_nccl,
    parse_nccl_json,
    parse_nccl_lines,
    peak_busbw,
)
from fabric.parsers.perftest import (
    BwRow,
    LatRow,
    PerftestResult,
    parse_perftest,
    parse_perftest_json,
    parse_perftest_stream,
    parse_perftest_text,
    perftest_bw_gbps,
)

PARSERS: dict[str, Callable[[str, str], Model]] = {
    "perftest": parse_perftest,
    "nccl": parse_nccl,
    "iperf3": parse_iperf3,
    "mlnx_qos": parse_mlnx_qos,
    "mlxconfig": parse_mlxconfig,
    "show_gids": parse_show_gids,
    "ethtool": parse_ethtool_stats,
}


MAX_INPUT = 64 * 2**20  # iperf3 -J, mlnx_qos, show_gids, ethtool -S, mlxconfig: kilobytes in practice


def read_input(path: str) -> str:
    """Text of `path` ('-' = stdin), at most MAX_INPUT bytes; undecodable bytes become U+FFFD, a missing or
    special file is an InputError."""
    try:
        if path == "-":
            data = sys.stdin.buffer.read(MAX_INPUT + 1)
        else:
            regular_file(path)
            with open(path, "rb") as fh:
                data = fh.read(MAX_INPUT + 1)
    except OSError as exc:
        raise fail(path, None, "", "a readable file", exc.strerror or str(exc)) from None
    if len(data) > MAX_INPUT:
        raise fail(path, None, "", f"an output of at most {MAX_INPUT // 2**20} MiB", "more")
    return data.decode("utf-8", errors="replace")


# Outputs that can be large (a long nccl-tests sweep, a perftest run with many iterations): read line by line.
STREAMED: dict[str, Callable[[Iterable[str], str], Model]] = {"perftest": parse_perftest_stream,
                                                               "nccl": parse_nccl_lines}


def parse_file(kind: str, path: str) -> Model:
    """Parse `path` ('-' = stdin) as `kind` (a key of PARSERS); perftest and nccl-tests outputs are streamed,
    the others (small by nature) read whole up to MAX_INPUT."""
    if kind not in PARSERS:
        raise fail(path, None, "kind", f"one of {', '.join(PARSERS)}", repr(kind))
    if kind not in STREAMED:
        text = read_input(path)
        return PARSERS[kind](text if kind == "iperf3" else without_long_lines(text), path)  # iperf3 -J: JSON
    if path == "-":
        return STREAMED[kind](capped_lines(io.TextIOWrapper(sys.stdin.buffer, "utf-8", "replace", newline="")), path)
    regular_file(path)
    try:
        with open(path, encoding="utf-8", errors="replace", newline="") as fh:
            return STREAMED[kind](capped_lines(fh), path)
    except OSError as exc:
        raise fail(path, None, "", "a readable file", exc.strerror or str(exc)) from None


__all__ = [
    "PARSERS",
    "BwRow",
    "EthtoolStats",
    "GidRow",
    "GidTable",
    "Iperf3Interval",
    "Iperf3Result",
    "Iperf3Sum",
    "LatRow",
    "MlnxQos",
    "Mlxconfig",
    "MlxconfigDevice",
    "Model",
    "NcclOp",
    "NcclRank",
    "NcclResult",
    "NcclRow",
    "PerftestResult",
    "Skipped",
    "TcConfig",
    "busbw_at_largest",
    "ethtool_delta",
    "gid_index_for",
    "parse_ethtool_stats",
    "parse_file",
    "parse_ibv_devinfo_gids",
    "parse_iperf3",
    "parse_mlnx_qos",
    "parse_mlxconfig",
    "parse_nccl",
    "parse_nccl_json",
    "parse_perftest",
    "parse_perftest_json",
    "parse_perftest_text",
    "parse_show_gids",
    "peak_busbw",
    "perftest_bw_gbps",
    "read_input",
]
