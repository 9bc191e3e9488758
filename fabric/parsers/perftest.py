"""perftest (ib_write_bw, ib_write_lat, …): the text report and the `--out_json` file."""

from __future__ import annotations

import re
from collections.abc import Iterable
from itertools import chain
from typing import Any, Literal

from fabric.parsers._common import (
    CUT,
    MAX_ROWS,
    MAX_SKIPPED,
    Lines,
    Model,
    SkipList,
    Skipped,
    fail,
    integer,
    json_line,
    json_shaped,
    load_json,
    num,
    require_text,
    show,
    text_lines,
)
from fabric.replies import reader

MAX_JSON = 64 * 2**20  # an --out_json file is a few KB

_RESULT_LINE = re.compile(r"^\s*-{20,}\s*$")
_TITLE = re.compile(r"^\s*(\S.*\b(?:BW|Latency) Test)\s*$")
_HEADER = re.compile(r"^\s*#bytes\b")
_ROW = re.compile(r"^\s*\d+\s+\d+\s+[-+.\d]")
_KV = re.compile(r"([A-Za-z][\w*.\-/ ]*?)\s*:\s*(\S+)")
_ADDR = re.compile(r"^\s*(local|remote) address:")
_GID = re.compile(r"^\s*GID:\s*(\S+)")
# perftest's stderr when its cycle counter would not fit the wall clock (get_clock.c, sample_get_cpu_mhz: a linear
# fit of 200 samples, refused under r² 0.9): with -F it goes on with a clock rate of 0 (zeros for rates)
CLOCK_FAILED = "Correlation coefficient r^2:"
_UNCALIBRATED = re.compile(rf"^\s*{re.escape(CLOCK_FAILED)} ([-+]?[\d.]+(?:e[-+]?\d+)?) < 0\.9\b")
# Multi-word column names become one token each before the header is split on whitespace.
_MULTIWORD = [
    (re.compile(r"BW peak\["), "bw_peak["),
    (re.compile(r"BW average\["), "bw_average["),
    (re.compile(r"BW Port(\d)\["), r"bw_port\1["),
    (re.compile(r"MsgRate Port(\d)\["), r"msg_rate_port\1["),
    (re.compile(r"99\.9% percentile\["), "t_p99_9["),
    (re.compile(r"99% percentile\["), "t_p99["),
    (re.compile(r"tps average"), "tps_average"),
]
_COLUMNS = {
    "#bytes": "bytes",
    "#iterations": "iterations",
    "#sl": "sl",
    "bw_peak": "bw_peak",
    "bw_average": "bw_average",
    "MsgRate": "msg_rate_mpps",
    "bw_port1": "bw_port1",
    "msg_rate_port1": "msg_rate_port1",
    "bw_port2": "bw_port2",
    "msg_rate_port2": "msg_rate_port2",
    "t_min": "t_min",
    "t_max": "t_max",
    "t_typical": "t_typical",
    "t_avg": "t_avg",
    "t_stdev": "t_stdev",
    "t_p99": "t_p99",
    "t_p99_9": "t_p99_9",
    "tps_average": "tps_average",
    "CPU_Util": "cpu_util",
}
_INT_FIELDS = {"bytes", "iterations", "sl"}
_BW_NEEDED = {"bw_peak", "bw_average", "msg_rate_mpps"}
_LAT_ANY = {"t_min", "t_max", "t_typical", "t_avg", "tps_average"}
# --out_json result keys (perftest_parameters.c write_*_to_file) → row fields.
_JSON_KEYS = {
    "MsgSize": "bytes",
    "n_iterations": "iterations",
    "BW_peak": "bw_peak",
    "BW_average": "bw_average",
    "MsgRate": "msg_rate_mpps",
    "CPU_util": "cpu_util",
    "t_min": "t_min",
    "t_max": "t_max",
    "t_typical": "t_typical",
    "t_avg": "t_avg",
    "t_stdev": "t_stdev",
    "percentile_99": "t_p99",
    "percentile_99.9": "t_p99_9",
    "tps_average": "tps_average",
}
_BW_UNITS = {"Gb/sec": 1.0, "MB/sec": 1048576 * 8 / 1e9, "MiB/sec": 1048576 * 8 / 1e9}


class BwRow(Model):
    """One row of a bandwidth table; BW in the result's `bw_unit`."""

    bytes: int
    iterations: int
    bw_peak: float
    bw_average: float
    msg_rate_mpps: float
    sl: int | None = None
    cpu_util: float | None = None
    bw_port1: float | None = None
    msg_rate_port1: float | None = None
    bw_port2: float | None = None
    msg_rate_port2: float | None = None


class LatRow(Model):
    """One row of a latency table (times in `lat_unit`, one-way for write/send); absent columns are None."""

    bytes: int
    iterations: int
    t_min: float | None = None
    t_max: float | None = None
    t_typical: float | None = None
    t_avg: float | None = None
    t_stdev: float | None = None
    t_p99: float | None = None
    t_p99_9: float | None = None
    tps_average: float | None = None
    cpu_util: float | None = None


class PerftestResult(Model):
    """A perftest run as reported by one side (client or server)."""

    source: Literal["text", "json"]
    test: str | None = None
    kind: Literal["bw", "lat"] | None = None
    bidirectional: bool = False
    server: bool = False
    duration_mode: bool = False
    bw_unit: str | None = None
    lat_unit: str | None = None
    info: dict[str, str] = {}
    device: str | None = None
    link_type: str | None = None
    mtu: int | None = None
    gid_index: int | None = None
    num_qps: int | None = None
    local_gid: str | None = None
    remote_gid: str | None = None
    local_ip: str | None = None
    remote_ip: str | None = None
    warnings: list[str] = []
    bw_rows: list[BwRow] = []
    lat_rows: list[LatRow] = []
    complete: bool = False  # the result table ended with its closing line: no row cut off, nothing after
    skipped: list[Skipped] = []
    skipped_more: int = 0  # skipped lines beyond the ones listed


def perftest_bw_gbps(result: PerftestResult, size: int | None = None) -> float:
    """BW average in Gb/s (10^9 bit/s) at message `size` (default: the largest size measured).

    Raises LookupError when there is no such row and ValueError when the unit is unknown
    (`--out_json` files do not record whether `--report_gbits` was used).
    """
    rows = [r for r in result.bw_rows if size is None or r.bytes == size]
    if not rows:
        raise LookupError(f"no bandwidth row for size {size}" if size else "no bandwidth rows")
    row = max(rows, key=lambda r: r.bytes)
    if result.bw_unit not in _BW_UNITS:
        raise ValueError(f"unknown bandwidth unit {result.bw_unit!r}")
    return row.bw_average * _BW_UNITS[result.bw_unit]


@reader('ib_write_bw / ib_write_lat')
def parse_perftest(text: str, file: str = "-", bw_unit: str | None = None) -> PerftestResult:
    """Parse perftest output: the `--out_json` file if it looks like JSON, else the text report."""
    if text.lstrip().startswith("{"):
        return parse_perftest_json(text, file, bw_unit)
    return parse_perftest_text(text, file)


def parse_perftest_stream(lines: Iterable[str], file: str = "-") -> PerftestResult:
    """`parse_perftest` over lines as a file gives them (endings kept): the text report in constant memory."""
    it = iter(lines)
    head: list[str] = []
    for raw in it:
        head.append(raw)
        if raw.strip():
            break
    if head and head[-1].lstrip().startswith("{"):
        text, size = [], 0
        for raw in chain(head, it):
            size += len(raw)
            if size > MAX_JSON:
                raise fail(file, None, "perftest", f"an --out_json file of at most {MAX_JSON // 2**20} MiB", "more")
            text.append(raw)
        return parse_perftest_json("".join(text), file)
    return parse_perftest_lines(chain(head, it), file)


def _ip_from_decimal_gid(gid: str) -> str | None:
    parts = gid.split(":")
    if len(parts) != 16 or not all(p.isdigit() for p in parts):
        return None
    b = [int(p) for p in parts]
    if b[:10] == [0] * 10 and b[10:12] == [255, 255] and all(x < 256 for x in b[12:]):
        return ".".join(str(x) for x in b[12:])
    return None


def _columns(line: str, file: str, lineno: int) -> tuple[list[str | None], str | None, str | None]:
    """Header row → field name per column (None = unknown column, values ignored), BW unit, LAT unit."""
    normalized = line
    for pattern, repl in _MULTIWORD:
        normalized = pattern.sub(repl, normalized)
    fields: list[str | None] = []
    bw_unit = lat_unit = None
    for token in normalized.split():
        name, _, unit = token.partition("[")
        unit = unit.rstrip("]")
        field = _COLUMNS.get(name)
        if field == "bw_average":
            bw_unit = unit
        elif field == "t_avg" or (field == "t_min" and lat_unit is None):
            lat_unit = unit
        fields.append(field)
    starts_ok = fields[:2] == ["bytes", "iterations"] or fields[:3] == ["bytes", "sl", "iterations"]
    is_bw = "bw_average" in fields
    if (
        not starts_ok
        or (is_bw and not set(fields) >= _BW_NEEDED)
        or (not is_bw and not _LAT_ANY & set(fields))
    ):
        raise fail(
            file,
            lineno,
            "perftest.header",
            "'#bytes #iterations' then BW peak/BW average/MsgRate or t_* latency columns",
            show(line),
        )
    return fields, bw_unit, lat_unit


def _row(fields: list[str | None], line: str, lineno: int) -> dict[str, Any] | Skipped:
    tokens = line.split()
    if len(tokens) != len(fields):
        return Skipped(line=lineno, text=line.strip(), reason=f"{len(tokens)} of {len(fields)} columns")
    values: dict[str, Any] = {}
    for field, token in zip(fields, tokens, strict=True):
        if field is None:
            continue
        value = integer(token) if field in _INT_FIELDS else num(token)
        if value is None:
            return Skipped(line=lineno, text=line.strip(), reason=f"{field} is not a number: {token!r}")
        values[field] = value
    return values


def parse_perftest_text(text: str, file: str = "-") -> PerftestResult:
    """Parse the text report of an ib_*_bw / ib_*_lat run (client or server side)."""
    return parse_perftest_lines(text_lines(text), file)


def parse_perftest_lines(stream: Iterable[str], file: str = "-") -> PerftestResult:
    """The text report from lines with their endings (a file, streamed: memory does not grow with the input)."""
    lines = Lines(stream)
    reader = _TextReader(file)
    for lineno, raw, cut in lines:
        line = raw.rstrip()
        stripped = line.strip()
        if not stripped:
            continue
        if cut:
            if _ROW.match(line):
                reader.skipped.append(Skipped(line=lineno, text=stripped, reason=CUT))
            continue
        reader.read(line, stripped, lineno)
    return reader.result(lines)


class _TextReader:
    """The report read so far and where the reader is: inside the info block, which side's address comes next,
    the columns of the open table, how many rows, and whether the last table was closed after its rows."""

    def __init__(self, file: str) -> None:
        self.file = file
        self.skipped = SkipList()
        self.res: dict[str, Any] = {"source": "text", "info": {}, "warnings": [], "bw_rows": [], "lat_rows": [],
                                    "skipped": self.skipped}
        self.rows = 0
        self.closed = False
        self.in_info = False
        self.side = "local"
        self.fields: list[str | None] | None = None
        self.seen_header = self.seen_title = False
        self.uncalibrated: tuple[int, str] | None = None  # the line where perftest said its clock failed, r²

    def read(self, line: str, stripped: str, lineno: int) -> None:
        """One non-blank line: the first step that knows it takes it; anything else is ignored."""
        for step in (self._note, self._result_line, self._title, self._info, self._address, self._header,
                     self._row):
            if step(line, stripped, lineno):
                return

    def _note(self, line: str, stripped: str, lineno: int) -> bool:
        """'Waiting for client' (a server), WARNING lines, and the calibration that failed (no figure holds)."""
        if "Waiting for client" in stripped:
            self.res["server"] = True
            return True
        if m := _UNCALIBRATED.match(line):
            self.uncalibrated = self.uncalibrated or (lineno, m.group(1))
            return True
        if not stripped.startswith("WARNING:"):
            return False
        if len(self.res["warnings"]) < MAX_SKIPPED:
            self.res["warnings"].append(stripped)
        if "peak won't be measured" in stripped:
            self.res["duration_mode"] = True
        return True

    def _result_line(self, line: str, stripped: str, lineno: int) -> bool:
        """A dashed line: it closes the info block and the table."""
        if not _RESULT_LINE.match(line):
            return False
        self.closed = self.closed or (self.fields is not None and self.rows > 0)
        self.in_info = False
        self.fields = None
        return True

    def _title(self, line: str, stripped: str, lineno: int) -> bool:
        """'RDMA_Write BW Test' before any table: the test, its kind, bidirectional or not."""
        if self.seen_header or not (m := _TITLE.match(line)):
            return False
        self.seen_title = self.in_info = True
        self.res["test"] = m.group(1)
        self.res["kind"] = "bw" if m.group(1).endswith("BW Test") else "lat"
        self.res["bidirectional"] = "Bidirectional" in m.group(1)
        return True

    def _info(self, line: str, stripped: str, lineno: int) -> bool:
        if not self.in_info:
            return False
        for key, value in _KV.findall(line):
            self.res["info"][key.strip()] = value
        return True

    def _address(self, line: str, stripped: str, lineno: int) -> bool:
        """'local address:' / 'remote address:' and the GID line under it."""
        if m := _ADDR.match(line):
            self.side = m.group(1)
            return True
        if m := _GID.match(line):
            self.res[f"{self.side}_gid"] = m.group(1)
            self.res[f"{self.side}_ip"] = _ip_from_decimal_gid(m.group(1))
            return True
        return False

    def _header(self, line: str, stripped: str, lineno: int) -> bool:
        """'#bytes #iterations …': the columns of the table that follows and its units."""
        if not _HEADER.match(line):
            return False
        self.fields, bw_unit, lat_unit = _columns(line, self.file, lineno)
        self.seen_header = True
        self.res["bw_unit"] = self.res.get("bw_unit") or bw_unit
        self.res["lat_unit"] = self.res.get("lat_unit") or lat_unit
        if "tps_average" in self.fields:
            self.res["duration_mode"] = True
        return True

    def _row(self, line: str, stripped: str, lineno: int) -> bool:
        """A result row of the open table (skipped, with the reason, outside one or when incomplete)."""
        if not _ROW.match(line):
            return False
        if self.fields is None:
            self.skipped.append(Skipped(line=lineno, text=stripped, reason="row outside a '#bytes' table"))
            return True
        row = _row(self.fields, line, lineno)
        if isinstance(row, Skipped):
            self.skipped.append(row)
            return True
        self.rows += 1
        self.closed = False
        if self.rows > MAX_ROWS:
            raise fail(self.file, lineno, "perftest.row", f"at most {MAX_ROWS} result rows", "more")
        if "bw_average" in row:
            self.res["bw_rows"].append(BwRow(**row))
        else:
            self.res["lat_rows"].append(LatRow(**row))
        return True

    def result(self, lines: Lines) -> PerftestResult:
        """The result, or a located error: an empty input, no perftest output, no complete row."""
        res, file = self.res, self.file
        if lines.blank:
            raise fail(file, None, "", "perftest output", "empty input")
        if self.uncalibrated:
            line, r2 = self.uncalibrated
            raise fail(file, line, "perftest.clock", "a run perftest could time (its cycle counter calibrated "
                       "against the clock, r² ≥ 0.9)", f"r² {r2}: perftest went on with a clock rate of 0, so no "
                       "figure in it is a measurement (a busy or virtual host disturbed the calibration; run it again)")
        if not self.seen_title and not self.seen_header:
            raise fail(file, None, "perftest",
                       "perftest output (a '… BW Test' / '… Latency Test' title or a '#bytes' table)",
                       f"neither in {lines.count} lines")
        if not res["bw_rows"] and not res["lat_rows"]:
            self._no_rows(lines)
        if res.get("kind") is None and (res["bw_rows"] or res["lat_rows"]):
            res["kind"] = "bw" if res["bw_rows"] else "lat"
        _typed_info(res)
        res["complete"] = self.closed and not any(s.reason == CUT for s in self.skipped)
        res["skipped_more"] = self.skipped.more
        return PerftestResult(**res)

    def _no_rows(self, lines: Lines) -> None:
        """No row at all: the first skipped row says why, else only a server may have none."""
        if self.skipped:
            first = self.skipped[0]
            raise fail(self.file, first.line, "perftest.row", "a complete result row",
                       f"{first.reason} in {show(first.text)}")
        if not self.res.get("server"):
            raise fail(self.file, lines.count, "perftest", "a '#bytes' result table (only a server may have none)",
                       "end of input" if not self.seen_header else "a table header with no rows")


def _typed_info(res: dict[str, Any]) -> None:
    info = res["info"]
    res["device"] = info.get("Device")
    res["link_type"] = info.get("Link type")
    for field, key in (("mtu", "Mtu"), ("gid_index", "GID index"), ("num_qps", "Number of qps")):
        value = info.get(key, "").removesuffix("[B]")
        res[field] = integer(value) if value else None


def _json_row(results: dict[str, Any], text: str, file: str) -> dict[str, Any]:
    """The row fields of a `results` object (numbers, or numbers as text); other keys are left out."""
    row: dict[str, Any] = {}
    for key, value in results.items():
        field = _JSON_KEYS.get(key)
        if field is None:
            continue
        number = value if isinstance(value, int | float) and not isinstance(value, bool) else None
        if number is None and isinstance(value, str):
            number = num(value)
        if number is None:
            raise fail(file, json_line(text, key), f"results.{key}", "a number", repr(value))
        row[field] = int(number) if field in _INT_FIELDS else float(number)
    return row


def _json_fields(test_info: dict[str, Any], test: str | None, is_bw: bool, bw_unit: str | None) -> dict[str, Any]:
    """The result's fields besides its row, from `test_info`."""
    info = {str(k): str(v) for k, v in test_info.items() if k != "test"}
    return {
        "source": "json",
        "test": test,
        "kind": "bw" if is_bw else "lat",
        "info": info,
        "bidirectional": "Bidirectional" in (test or ""),
        "bw_unit": bw_unit if is_bw else None,
        "lat_unit": None if is_bw else "usec",
        "device": info.get("Device"),
        "link_type": info.get("Link_type"),
        "mtu": integer(info.get("Mtu", "")),
        "gid_index": integer(info.get("GID_index", "")),
        "num_qps": integer(info.get("Number_of_qps", "")),
    }


@json_shaped("a perftest --out_json document")
@reader('ib_write_bw --out_json')
def parse_perftest_json(text: str, file: str = "-", bw_unit: str | None = None) -> PerftestResult:
    """Parse a perftest `--out_json` file (one result: the last size run). Pass `bw_unit` if known."""
    require_text(text, file, "perftest --out_json output")
    doc = load_json(text, file)
    if not isinstance(doc, dict) or not isinstance(doc.get("results"), dict):
        raise fail(
            file,
            1,
            "results",
            'a perftest --out_json object with a "results" object',
            type(doc).__name__ if not isinstance(doc, dict) else f"keys {sorted(doc)}",
        )
    test_info = doc.get("test_info") if isinstance(doc.get("test_info"), dict) else {}
    row = _json_row(doc["results"], text, file)
    for key in ("bytes", "iterations"):
        if key not in row:
            name = "MsgSize" if key == "bytes" else "n_iterations"
            raise fail(file, json_line(text, "results"), f"results.{name}", "a number", "missing")
    test = str(test_info.get("test", "")) or None
    is_bw = "bw_average" in row
    if not is_bw and not any(k.startswith("t_") for k in row):
        raise fail(
            file,
            json_line(text, "results"),
            "results",
            "BW_average or t_* latency values",
            f"keys {sorted(doc['results'])}",
        )
    res = _json_fields(test_info, test, is_bw, bw_unit)
    try:
        res["bw_rows" if is_bw else "lat_rows"] = [BwRow(**row) if is_bw else LatRow(**row)]
    except ValueError as exc:
        raise fail(
            file,
            json_line(text, "results"),
            "results",
            "BW_peak, BW_average and MsgRate",
            str(exc).splitlines()[0],
        ) from None
    return PerftestResult(**res, complete=True)  # a JSON document that parsed is whole
