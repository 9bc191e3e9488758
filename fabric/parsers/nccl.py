"""nccl-tests (all_reduce_perf, all_gather_perf, …) text output, current and legacy formats."""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from fabric.parsers._common import (
    CUT,
    MAX_ROWS,
    Lines,
    Model,
    SkipList,
    Skipped,
    fail,
    integer,
    json_shaped,
    num,
    require_text,
    show,
    text_lines,
)
from fabric.replies import reader

# Launcher prefixes: `srun --label` ("0: "), Open MPI --tag-output ("[1,0]<stdout>:"), "[0] ".
_PREFIX = re.compile(r"^\s*(?:\d+:\s|\[\d+(?:,\d+)?\](?:<std(?:out|err)>)?:\s?|\[\d+\]\s)")
_ROW = re.compile(r"^\s*\d+\s+\d+\s+\S+\s+\S+\s+")
_RANK = re.compile(
    r"^#\s+Rank\s+(\d+)\s+(?:Group\s+(\d+)\s+)?Pid\s+(\d+)\s+on\s+(\S+)\s+device\s+(\d+)\s+"
    r"\[([^\]]*)\]\s*(.*?)\s*$"
)
_SETTINGS = re.compile(r"^#\s*nThread\s")
_AVG = re.compile(r"^#\s*Avg bus bandwidth\s*:\s*(\S+)\s*(OK|FAILED)?")
_OOB = re.compile(r"^#\s*Out of bounds values\s*:\s*(\d+)\s*(OK|FAILED)?")
_FAILURE = re.compile(r"Test (?:NCCL )?failure|Test CUDA failure", re.IGNORECASE)
# Header names → canonical column names (the very old format has no root and 'error' for #wrong).
_NAMES = {
    "size": "size",
    "bytes": "size",
    "count": "count",
    "N": "count",
    "type": "type",
    "redop": "redop",
    "op": "redop",
    "root": "root",
    "time": "time",
    "cputime": "time",
    "algbw": "algbw",
    "busbw": "busbw",
    "#wrong": "wrong",
    "error": "error",
    "res": "error",
}
_DEFAULT_HEADER = [
    "size",
    "count",
    "type",
    "redop",
    "root",
    "time",
    "algbw",
    "busbw",
    "wrong",
    "time",
    "algbw",
    "busbw",
    "wrong",
]


class NcclOp(Model):
    """One measurement (out-of-place or in-place): time in µs, bandwidths in GB/s."""

    time_us: float
    algbw: float
    busbw: float
    wrong: int | None = None
    error: float | None = None


class NcclRow(Model):
    """One message size; `wrong` is None when validation was off (-c 0, printed N/A)."""

    size: int
    count: int
    type: str
    redop: str
    root: int | None = None
    out_of_place: NcclOp
    in_place: NcclOp


class NcclRank(Model):
    """A `#  Rank …` line: where each rank ran."""

    rank: int
    group: int | None = None
    pid: int
    host: str
    device: int
    bus_id: str
    gpu: str


class NcclResult(Model):
    """A nccl-tests run. `avg_busbw` is the mean over every row: judge on `busbw_at_largest()` instead."""

    test: str | None = None
    version: str | None = None
    nccl_version: str | None = None
    settings: dict[str, str] = {}
    ranks: list[NcclRank] = []
    rows: list[NcclRow]
    out_of_bounds: int | None = None
    out_of_bounds_ok: bool | None = None
    avg_busbw: float | None = None
    avg_busbw_check: str | None = None
    complete: bool
    skipped: list[Skipped] = []
    skipped_more: int = 0  # skipped lines beyond the ones listed


def busbw_at_largest(result: NcclResult, sizes: int = 1) -> float:
    """Lowest busbw (out-of-place or in-place, GB/s) over the rows of the `sizes` largest message sizes."""
    largest = sorted({r.size for r in result.rows}, reverse=True)[: max(sizes, 1)]
    rows = [r for r in result.rows if r.size in largest]
    return min(min(r.out_of_place.busbw, r.in_place.busbw) for r in rows)


def peak_busbw(result: NcclResult) -> float:
    """Highest busbw (GB/s) of any row, out-of-place or in-place."""
    return max(max(r.out_of_place.busbw, r.in_place.busbw) for r in result.rows)


def _settings(line: str) -> dict[str, str]:
    """'# nThread 1 nGpus 8 … step: 2(factor) warmup iters: 50 …' → {'nThread': '1', …}."""
    body = line.lstrip("#").strip()
    pairs = re.findall(r"([A-Za-z][A-Za-z ]*?):?\s+(\S+)(?=\s+[A-Za-z]|\s*$)", body)
    return {key.strip().replace(" ", "_"): value for key, value in pairs}


def _header(line: str) -> list[str] | None:
    """The '#  size  count  type …' column header as canonical names, or None if not a header."""
    tokens = line.lstrip("#").split()
    if "algbw" not in tokens or "busbw" not in tokens:
        return None
    return [_NAMES.get(t, t) for t in tokens]


def _op(values: dict[str, str], side: int) -> NcclOp | str:
    """Build one side's measurement from '<name><side>' keys, or return the reason it cannot be."""
    op: dict[str, Any] = {}
    for name in ("time", "algbw", "busbw"):
        value = num(values.get(f"{name}{side}", ""))
        if value is None:
            return f"{name} is not a number: {values.get(f'{name}{side}', '')!r}"
        op["time_us" if name == "time" else name] = value
    if f"wrong{side}" in values:
        token = values[f"wrong{side}"]
        wrong = num(token)
        if token != "N/A" and (wrong is None or wrong != int(wrong)):
            return f"#wrong is not a count: {token!r}"
        op["wrong"] = None if wrong is None else int(wrong)
    if f"error{side}" in values:
        op["error"] = num(values[f"error{side}"])
        if op["error"] is None and values[f"error{side}"] != "N/A":
            return f"error is not a number: {values[f'error{side}']!r}"
    return NcclOp(**op)


def _row(columns: list[str], line: str, lineno: int) -> NcclRow | Skipped:
    tokens = line.split()
    if len(tokens) < len(columns):
        return Skipped(line=lineno, text=line.strip(), reason=f"{len(tokens)} of {len(columns)} columns")
    values: dict[str, str] = {}
    seen: dict[str, int] = {}
    for name, token in zip(columns, tokens, strict=False):
        seen[name] = seen.get(name, 0) + 1
        values[f"{name}{seen[name]}" if name in {"time", "algbw", "busbw", "wrong", "error"} else name] = (
            token
        )
    size, count = integer(values.get("size", "")), integer(values.get("count", ""))
    root = integer(values["root"]) if "root" in values else None
    if size is None or count is None or ("root" in values and root is None):
        bad = f"root {values['root']!r}" if size is not None and count is not None else "size/count"
        return Skipped(line=lineno, text=line.strip(), reason=f"{bad} is not an integer")
    ops = [_op(values, 1), _op(values, 2)]
    for op in ops:
        if isinstance(op, str):
            return Skipped(line=lineno, text=line.strip(), reason=op)
    return NcclRow(
        size=size,
        count=count,
        type=values.get("type", ""),
        redop=values.get("redop", ""),
        root=root,
        out_of_place=ops[0],
        in_place=ops[1],
    )


@reader('nccl-tests (all_reduce_perf …)')
def parse_nccl(text: str, file: str = "-") -> NcclResult:
    """Parse nccl-tests stdout (stderr noise and launcher prefixes tolerated); rows matched by regex."""
    return parse_nccl_lines(text_lines(text), file)


def parse_nccl_lines(stream: Iterable[str], file: str = "-") -> NcclResult:
    """nccl-tests stdout from lines with their endings (a file, streamed: memory does not grow with the input)."""
    lines = Lines(stream)
    skipped = SkipList()
    res: dict[str, Any] = {"settings": {}, "ranks": [], "rows": [], "skipped": skipped, "complete": False}
    columns: list[str] | None = None
    failure: tuple[int, str] | None = None
    for lineno, raw, cut in lines:
        line = _PREFIX.sub("", raw, count=1).rstrip()
        if cut:
            if _ROW.match(line):
                skipped.append(Skipped(line=lineno, text=line.strip(), reason=CUT))
        elif line.startswith("#"):
            if len(res["ranks"]) > MAX_ROWS:
                raise fail(file, lineno, "nccl.ranks", f"at most {MAX_ROWS} ranks", "more")
            columns = _comment(line, res, columns)
        elif m := re.match(r"^NCCL version\s+(\S+)", line.strip()):
            res["nccl_version"] = m[1]
        elif _ROW.match(line):
            columns = columns if columns is not None else _default_columns(line)
            row = _row(columns, line, lineno)
            (skipped if isinstance(row, Skipped) else res["rows"]).append(row)
            if len(res["rows"]) > MAX_ROWS:
                raise fail(file, lineno, "nccl.row", f"at most {MAX_ROWS} result rows", "more")
        elif failure is None and _FAILURE.search(line):
            failure = (lineno, line)
    _require_rows(res, lines, failure, file)
    res["skipped_more"] = skipped.more
    return NcclResult(**res)


def _default_columns(line: str) -> list[str]:
    """A row before any header: the default columns, with `root` where the row has 13 or more."""
    return _DEFAULT_HEADER if len(line.split()) >= 13 else [c for c in _DEFAULT_HEADER if c != "root"]


def _comment(line: str, res: dict[str, Any], columns: list[str] | None) -> list[str] | None:
    """A '#' line: the table header (its columns returned), a rank, the settings, the version, the test, the
    out-of-bounds count or the average bus bandwidth (the run completed)."""
    if (cols := _header(line)) is not None:
        return cols
    if m := _RANK.match(line):
        res["ranks"].append(NcclRank(rank=int(m[1]), group=integer(m[2] or ""), pid=int(m[3]), host=m[4],
                                     device=int(m[5]), bus_id=m[6], gpu=m[7]))
    elif _SETTINGS.match(line) and not res["settings"]:
        res["settings"] = _settings(line)
    elif m := re.match(r"^#\s*nccl-tests version\s+(\S+)", line):
        res["version"] = m[1]
    elif m := re.match(r"^#\s*Collective test starting:\s*(\S+)", line):
        res["test"] = m[1]
    elif m := _OOB.match(line):
        res["out_of_bounds"] = int(m[1])
        res["out_of_bounds_ok"] = None if m[2] is None else m[2] == "OK"
    elif m := _AVG.match(line):
        res["avg_busbw"] = num(m[1])
        res["avg_busbw_check"] = m[2]
        res["complete"] = True
    return columns


def _require_rows(res: dict[str, Any], lines: Lines, failure: tuple[int, str] | None, file: str) -> None:
    """A located error for an empty input or one without result rows: the test's failure line, else the first
    skipped row, else none found."""
    if lines.blank:
        raise fail(file, None, "", "nccl-tests output", "empty input")
    if res["rows"]:
        return
    expected = "nccl-tests result rows (size count type redop root time algbw busbw #wrong …)"
    if failure:
        raise fail(file, failure[0], "nccl.rows", expected, f"test failure {show(failure[1])}")
    if res["skipped"]:
        first = res["skipped"][0]
        raise fail(file, first.line, "nccl.row", "a complete result row", f"{first.reason} in {show(first.text)}")
    raise fail(file, None, "nccl.rows", expected, f"none in {lines.count} lines")


def _json_op(op: dict[str, Any] | None) -> NcclOp | None:
    if not isinstance(op, dict) or not all(isinstance(op.get(k), int | float) for k in ("alg_bw", "bus_bw")):
        return None
    time_us = op.get("time", op.get("cpu_time"))
    wrong = op.get("nwrong")
    return NcclOp(time_us=float(time_us) if isinstance(time_us, int | float) else 0.0, algbw=float(op["alg_bw"]),
                  busbw=float(op["bus_bw"]), wrong=int(wrong) if isinstance(wrong, int | float) else None)


def _json_row(i: int, r: Any, file: str) -> NcclRow:
    """One entry of `results`: its size, count, type, reduction, root and both operations."""
    oop, inp = _json_op(r.get("out_of_place")), _json_op(r.get("in_place"))
    if not isinstance(r, dict) or not isinstance(r.get("size"), int) or inp is None:
        raise fail(file, None, f"nccl.json.results[{i}]", "size, in_place.alg_bw/bus_bw", show(str(r)[:80]))
    root = str(r.get("root", "")).strip()
    return NcclRow(size=r["size"], count=int(r.get("count") or 0), type=str(r.get("type", "")),
                   redop=str(r.get("redop", "")), root=int(root) if root.lstrip("-").isdigit() else None,
                   out_of_place=oop or inp, in_place=inp)


def _json_rank(d: dict[str, Any]) -> NcclRank:
    """One entry of `config.devices`."""
    return NcclRank(rank=d["rank"], group=d.get("group"), pid=d.get("pid", 0), host=str(d.get("hostname", "")),
                    device=d.get("device", 0), bus_id=str(d.get("device_hex", "")), gpu=str(d.get("device_info", "")))


@json_shaped("a nccl-tests JSON document (-J)")
@reader('nccl-tests -J')
def parse_nccl_json(text: str, file: str = "-") -> NcclResult:
    """nccl-tests `-J/--output_file` JSON (nccl-tests ≥ 2.17, `JSON_FILE_VERSION` 2, src/util.cu): `config`
    (ngpus, bytes, iterations, `devices`), `results` — per size `out_of_place`/`in_place` with `time`,
    `alg_bw`, `bus_bw`, `nwrong` — `out_of_bounds` {count, okay} and `average_bus_bandwidth` {bandwidth, okay}.
    An interrupted run leaves no closing brace: an InputError, so the caller falls back to the text."""
    import json

    require_text(text, file, "nccl-tests JSON (-J)")
    try:
        doc = json.loads(text)
    except (ValueError, RecursionError) as exc:
        raise fail(file, getattr(exc, "lineno", None), "nccl.json", "a complete nccl-tests JSON document",
                   str(exc)) from None
    if not isinstance(doc, dict) or not isinstance(doc.get("results"), list):
        raise fail(file, None, "nccl.json.results", "a list of results", show(str(doc)[:80]))
    rows = [_json_row(i, r, file) for i, r in enumerate(doc["results"])]
    devices = (doc.get("config") or {}).get("devices") or []
    ranks = [_json_rank(d) for d in devices if isinstance(d, dict) and isinstance(d.get("rank"), int)]
    oob = doc.get("out_of_bounds") or {}
    avg = doc.get("average_bus_bandwidth") or {}
    okay = avg.get("okay")
    return NcclResult(
        nccl_version=str(doc["nccl_version"]) if "nccl_version" in doc else None, ranks=ranks, rows=rows,
        settings={k: str(v) for k, v in (doc.get("config") or {}).items() if not isinstance(v, list | dict)},
        out_of_bounds=oob.get("count"), out_of_bounds_ok=None if "okay" not in oob else str(oob["okay"]) == "true",
        avg_busbw=avg.get("bandwidth"), avg_busbw_check=None if okay in (None, "unchecked") else
        ("OK" if str(okay) == "true" else "FAILED"), complete="end_time" in doc)
