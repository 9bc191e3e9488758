"""Reading logs: files (`-` is stdin, `.gz` decompressed), their display names, which tools' output a
file holds (kind markers), and the host that logged a line."""

from __future__ import annotations

import gzip
import re
import sys
from collections.abc import Iterator
from pathlib import Path

from fabric.diagnose.regex import linear
from fabric.errors import InputError, Problem
from fabric.parsers._common import capped_lines, regular_file

MAX_GZIP = 8 * 2**30  # characters a .gz log may decompress to (a gzip bomb stops here)


def read_lines(path: Path) -> Iterator[str]:
    """Lines of a log file (`-` is stdin, `.gz` is decompressed), each at most MAX_LINE characters, so memory
    stays flat whatever the input; unreadable files are user errors."""
    if str(path) == "-":
        yield from capped_lines(sys.stdin)
        return
    regular_file(str(path), "a readable log file")
    try:
        gz = path.suffix == ".gz"
        opener = gzip.open if gz else open
        with opener(path, "rt", encoding="utf-8", errors="replace") as fh:
            yield from capped_lines(fh, MAX_GZIP if gz else None, str(path))
    except (OSError, EOFError, gzip.BadGzipFile) as exc:
        raise InputError(Problem(str(path), None, "", "a readable log file",
                                 getattr(exc, "strerror", None) or str(exc))) from None


def log_name(path: Path) -> str:
    return "<stdin>" if str(path) == "-" else str(path)


# Cheap substring markers that tell which tools' output a file holds. A signature applies to a file
# if one of its sources was detected there, if it says `any`, or if nothing was detected at all.
_KIND_MARKERS: dict[str, tuple[str, ...]] = {
    "nccl": ("NCCL INFO", "NCCL WARN", "NCCL version", "ProcessGroupNCCL", "NCCL error", "NCCL failure"),
    "kernel": ("kernel:", "mlx5_core", "mlx5_ib", "NETDEV WATCHDOG", "PCIe Bus Error"),
    "perftest": (" BW Test", "Latency Test", "#bytes", "Data ex. method", "Completion with error at",
                 "Couldn't connect to", "Unable to init the socket", "Failed to modify QP",
                 "ethernet_read_keys", "IB device", "GID types"),
    "nccl-tests": ("# nThread", "Avg bus bandwidth", "Out of bounds values", "#wrong", "Test NCCL failure",
                   "# Collective test"),
}

MARKER_KIND = {marker: kind for kind, markers in _KIND_MARKERS.items() for marker in markers}
COMMON_MARKERS = frozenset({"NCCL INFO"})  # on most lines of an NCCL log: not worth a gate pass
KIND_GATE = re.compile("|".join(map(re.escape, sorted(MARKER_KIND, key=len, reverse=True))))

_NCCL_PREFIX = linear(r"(?:^|[\s\]])(?P<host>[A-Za-z0-9][\w.-]*):\d+:\d+ \[\d+\]")
_SYSLOG_PREFIX = re.compile(
    r"^(?:[A-Z][a-z]{2}\s+\d+\s+\d\d:\d\d:\d\d(?:\.\d+)?|\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d\S*)\s+"
    r"(?!(?:INFO|WARN|WARNING|ERROR|DEBUG|NOTICE|CRITICAL)\b)(?P<host>[A-Za-z0-9][\w.-]*)\s")
# pdsh/clush output: "gpu-a01: " before a dmesg timestamp or a sysfs path
_PDSH_PREFIX = re.compile(r"^(?P<host>[A-Za-z0-9][\w.-]*): (?=\[\s*\d+\.\d+\]|/sys/)")


# Launchers that prefix every line with the rank that printed it (the rank is kept for binding to hosts):
# Open MPI `--tag-output` "[jobid,rank]<stdout>:" (PRRTE: "[nspace@jobid,rank]<stderr>: "), Slurm
# `srun --label` "rank: " (right-aligned to the widest rank). PyTorch's own "[rankN]:" stays in the line.
_SRUN_PREFIX = re.compile(r"^ {0,5}(\d{1,6}): ")
_TORCH_RANK = re.compile(r"\[rank(\d+)\]:")


def split_rank(line: str) -> tuple[str | None, str]:
    """(rank, line without the launcher's prefix); the rank from PyTorch's `[rankN]:` if no launcher
    prefix names it, else None. String scans first: this runs on every line of every log."""
    first = line[:1]
    if first == "[":
        end = line.find("]<std", 1, 96)
        if end > 0:
            comma = line.rfind(",", 1, end)
            colon = line.find(">:", end, end + 12)
            if comma > 0 and colon > 0 and line[comma + 1:end].isdigit():
                rest = line[colon + 2:]
                return line[comma + 1:end], rest[1:] if rest[:1] == " " else rest
    elif (first == " " or first.isdigit()) and (m := _SRUN_PREFIX.match(line)):
        return m.group(1), line[m.end():]
    if "[rank" in line and (t := _TORCH_RANK.search(line)):
        return t.group(1), line
    return None, line


def host_of(line: str) -> str | None:
    """The host that logged `line`: NCCL `host:pid:tid [dev]`, syslog/journal or pdsh prefix."""
    m = _NCCL_PREFIX.search(line) or _SYSLOG_PREFIX.search(line) or _PDSH_PREFIX.search(line)
    return m.group("host") if m else None
