"""Parsers for acceptance-test and host-state outputs: pure functions from text to pydantic models.

Each `parse_*(text, file)` returns a model or raises fabric.errors.InputError naming `file`, the line
and what was expected vs found. Lines that look like data but cannot be read are never turned into
numbers: they are listed in the result's `skipped` (or cause the error when nothing else was read).
"""

from __future__ import annotations

import importlib
import io
import sys
from collections.abc import Callable, Iterable
from functools import cache
from typing import TYPE_CHECKING, Any

from fabric.parsers._common import Model, Skipped, capped_lines, fail, regular_file, without_long_lines

if TYPE_CHECKING:  # what `__getattr__` gives, for type checkers and the import graph (tests/project/test_imports.py)
    from fabric.parsers.ethtool import EthtoolStats, ethtool_delta, parse_ethtool_stats
    from fabric.parsers.gids import (
        GidRow,
        GidTable,
        gid_index_for,
        parse_ibv_devinfo_gids,
        parse_show_gids,
    )
    from fabric.parsers.iperf3 import Iperf3Interval, Iperf3Result, Iperf3Sum, parse_iperf3
    from fabric.parsers.lldp import Lldp, Neighbor, parse_eos, parse_lldpctl, parse_nvue, parse_sonic_table
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
        peak_busbw,
    )
    from fabric.parsers.perftest import (
        BwRow,
        LatRow,
        PerftestResult,
        parse_perftest,
        parse_perftest_json,
        parse_perftest_text,
        perftest_bw_gbps,
    )

# Each parser's module is imported on first use of one of its names (PEP 562): they are pydantic models, and a
# command that reads one output (the host agent: mlnx_qos and mlxconfig) would otherwise build all of them.
_MODULES: dict[str, tuple[str, ...]] = {
    "ethtool": ("EthtoolStats", "ethtool_delta", "parse_ethtool_stats"),
    "gids": ("GidRow", "GidTable", "gid_index_for", "parse_ibv_devinfo_gids", "parse_show_gids"),
    "iperf3": ("Iperf3Interval", "Iperf3Result", "Iperf3Sum", "parse_iperf3"),
    "lldp": ("Lldp", "Neighbor", "parse_eos", "parse_lldpctl", "parse_nvue", "parse_sonic_table"),
    "mlnx_qos": ("MlnxQos", "TcConfig", "parse_mlnx_qos"),
    "mlxconfig": ("Mlxconfig", "MlxconfigDevice", "parse_mlxconfig"),
    "nccl": ("NcclOp", "NcclRank", "NcclResult", "NcclRow", "busbw_at_largest", "parse_nccl", "parse_nccl_json",
             "parse_nccl_lines", "peak_busbw"),
    "perftest": ("BwRow", "LatRow", "PerftestResult", "parse_perftest", "parse_perftest_json",
                 "parse_perftest_stream", "parse_perftest_text", "perftest_bw_gbps"),
}
_MODULE_OF = {name: module for module, names in _MODULES.items() for name in names}


@cache
def _parsers() -> dict[str, Callable[[str, str], Model]]:
    """Kind → parser of a whole output (`fabric parse KIND FILE`)."""
    return {"perftest": __getattr__("parse_perftest"), "nccl": __getattr__("parse_nccl"),
            "iperf3": __getattr__("parse_iperf3"), "mlnx_qos": __getattr__("parse_mlnx_qos"),
            "mlxconfig": __getattr__("parse_mlxconfig"), "show_gids": __getattr__("parse_show_gids"),
            "ethtool": __getattr__("parse_ethtool_stats"), "lldp-sonic": __getattr__("parse_sonic_table"),
            "lldpctl": __getattr__("parse_lldpctl"), "lldp-nvue": __getattr__("parse_nvue"),
            "lldp-eos": __getattr__("parse_eos")}


@cache
def _streamed() -> dict[str, Callable[[Iterable[str], str], Model]]:
    """Outputs that can be large (a long nccl-tests sweep, a perftest run with many iterations): read line by
    line."""
    return {"perftest": __getattr__("parse_perftest_stream"), "nccl": __getattr__("parse_nccl_lines")}


def __getattr__(name: str) -> Any:
    """A parser's name, from its module (imported now); `PARSERS` and `STREAMED`, the tables of `parse_file`."""
    if name in ("PARSERS", "STREAMED"):
        value: Any = _parsers() if name == "PARSERS" else _streamed()
    elif name in _MODULE_OF:
        value = getattr(importlib.import_module(f"fabric.parsers.{_MODULE_OF[name]}"), name)
    else:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    globals()[name] = value
    return value


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


def parse_file(kind: str, path: str) -> Model:
    """Parse `path` ('-' = stdin) as `kind` (a key of PARSERS); perftest and nccl-tests outputs are streamed,
    the others (small by nature) read whole up to MAX_INPUT."""
    parsers, streamed = _parsers(), _streamed()
    if kind not in parsers:
        raise fail(path, None, "kind", f"one of {', '.join(parsers)}", repr(kind))
    if kind not in streamed:
        text = read_input(path)
        whole = kind in ("iperf3", "lldpctl", "lldp-nvue", "lldp-eos")  # JSON: a long line is data
        return parsers[kind](text if whole else without_long_lines(text), path)
    if path == "-":
        return streamed[kind](capped_lines(io.TextIOWrapper(sys.stdin.buffer, "utf-8", "replace", newline="")), path)
    regular_file(path)
    try:
        with open(path, encoding="utf-8", errors="replace", newline="") as fh:
            return streamed[kind](capped_lines(fh), path)
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
    "Lldp",
    "MlnxQos",
    "Mlxconfig",
    "MlxconfigDevice",
    "Model",
    "NcclOp",
    "NcclRank",
    "NcclResult",
    "NcclRow",
    "Neighbor",
    "PerftestResult",
    "Skipped",
    "TcConfig",
    "busbw_at_largest",
    "ethtool_delta",
    "gid_index_for",
    "parse_eos",
    "parse_ethtool_stats",
    "parse_file",
    "parse_ibv_devinfo_gids",
    "parse_iperf3",
    "parse_lldpctl",
    "parse_mlnx_qos",
    "parse_mlxconfig",
    "parse_nccl",
    "parse_nccl_json",
    "parse_nvue",
    "parse_perftest",
    "parse_perftest_json",
    "parse_perftest_text",
    "parse_show_gids",
    "parse_sonic_table",
    "peak_busbw",
    "perftest_bw_gbps",
    "read_input",
]
