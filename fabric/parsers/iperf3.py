"""iperf3 `-J` JSON output (TCP or UDP, client or server)."""

from __future__ import annotations

from typing import Any

from fabric.parsers._common import Model, fail, json_line, json_shaped, load_json, require_text
from fabric.replies import reader


class Iperf3Interval(Model):
    """One reporting interval, summed over streams."""

    start: float
    end: float
    seconds: float
    bytes: int
    bits_per_second: float
    retransmits: int | None = None
    omitted: bool = False


class Iperf3Sum(Model):
    """An end-of-test summary (`end.sum_sent`, `end.sum_received` or the UDP `end.sum`)."""

    seconds: float
    bytes: int
    bits_per_second: float
    retransmits: int | None = None
    jitter_ms: float | None = None
    lost_packets: int | None = None
    packets: int | None = None
    lost_percent: float | None = None


class Iperf3Result(Model):
    """An iperf3 run; `error` is iperf3's own message when the test failed (sums may then be None)."""

    version: str | None = None
    protocol: str | None = None
    num_streams: int | None = None
    reverse: bool = False
    sent: Iperf3Sum | None = None
    received: Iperf3Sum | None = None
    udp: Iperf3Sum | None = None
    intervals: list[Iperf3Interval] = []
    error: str | None = None


def _obj(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _model(cls: type[Model], data: Any, path: str, text: str, file: str) -> Any:
    """Validate an iperf3 JSON object against `cls`, keeping only the fields it declares."""
    fields = {k: v for k, v in _obj(data).items() if k in cls.model_fields}
    try:
        return cls(**fields)
    except ValueError as exc:
        first = str(exc).splitlines()
        detail = f"{first[1].strip()}: {first[2].strip()}" if len(first) > 2 else first[0]
        key = path.rsplit(".", 1)[-1].split("[")[0]
        raise fail(file, json_line(text, key), path, f"an iperf3 {path} summary", detail) from None


@json_shaped("iperf3 -J output")
@reader('iperf3 -J')
def parse_iperf3(text: str, file: str = "-") -> Iperf3Result:
    """Parse `iperf3 -J` output; lines before the opening '{' (ssh banners, warnings) are ignored."""
    lines = require_text(text, file, "iperf3 -J output")
    first = next((i for i, line in enumerate(lines) if line.startswith("{")), None)
    if first is None:
        raise fail(
            file, 1, "json", "iperf3 -J output (a JSON object starting with '{')", "no line starting with '{'"
        )
    body = "\n" * first + "\n".join(lines[first:])
    doc = load_json(body, file)
    if not isinstance(doc, dict) or not any(k in doc for k in ("start", "end", "intervals")):
        raise fail(
            file,
            first + 1,
            "json",
            "an iperf3 -J object with start/intervals/end",
            f"keys {sorted(doc)}" if isinstance(doc, dict) else type(doc).__name__,
        )
    start, end = _obj(doc.get("start")), _obj(doc.get("end"))
    test_start = _obj(start.get("test_start"))
    intervals = doc.get("intervals") if isinstance(doc.get("intervals"), list) else []
    res: dict[str, Any] = {
        "version": start.get("version"),
        "protocol": test_start.get("protocol"),
        "num_streams": test_start.get("num_streams"),
        "reverse": bool(test_start.get("reverse", 0)),
        "error": doc.get("error"),
        "intervals": [
            _model(Iperf3Interval, _obj(iv).get("sum"), f"intervals[{n}].sum", body, file)
            for n, iv in enumerate(intervals)
            if "sum" in _obj(iv)
        ],
    }
    for field, key in (("sent", "sum_sent"), ("received", "sum_received"), ("udp", "sum")):
        if key in end:
            res[field] = _model(Iperf3Sum, end[key], f"end.{key}", body, file)
    if res["error"] is None and not any(k in res for k in ("sent", "received", "udp")):
        raise fail(
            file,
            json_line(body, "end") or first + 1,
            "end",
            "an end summary (sum_sent/sum_received)",
            "none (truncated output?)",
        )
    try:
        return Iperf3Result(**res)
    except ValueError as exc:
        raise fail(
            file,
            json_line(body, "start") or first + 1,
            "start",
            "iperf3 start fields (version, test_start.protocol/num_streams)",
            str(exc).splitlines()[-1].strip(),
        ) from None
