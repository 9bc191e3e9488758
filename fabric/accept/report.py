"""Reports of an acceptance run: rich table, JSON, JUnit XML, Markdown, self-contained HTML with a
rail × host bandwidth heatmap (inline CSS, no external assets)."""

from __future__ import annotations

import html
import json
from pathlib import Path
from statistics import median
from xml.etree import ElementTree as ET

from rich.console import Console
from rich.table import Table
from rich.text import Text

from fabric.accept.results import AcceptReport, CheckResult
from fabric.safefile import private_dir, write_private

FORMATS = ("table", "json", "junit", "markdown", "html")
FILES = {"json": "accept.json", "junit": "accept-junit.xml", "markdown": "accept.md", "html": "accept.html"}
_STYLE = {"pass": "green", "fail": "bold red", "skipped": "yellow", "error": "bold magenta"}


def table(report: AcceptReport, console: Console) -> None:
    t = Table(title=f"fabric accept {report.fabric} ({report.mode}{', quick' if report.quick else ''})")
    for col in ("check", "status", "tests", "rounds", "seconds", "result"):
        t.add_column(col, overflow="fold")
    for r in report.results:
        bad = sum(not m.ok for m in r.measurements)
        tests = f"{len(r.measurements) - bad}/{len(r.measurements)}" if r.measurements else "-"
        t.add_row(r.name, Text(r.status, style=_STYLE[r.status]), tests, str(r.rounds or "-"), f"{r.seconds:.1f}",
                  r.message)
    console.print(t)
    for r in report.results:
        for line in r.evidence[:30]:
            console.print(Text.assemble((f"{r.name}:", "dim"), f" {line}"))
    if report.switch_counters:
        console.print(counters_table(report))
    c = report.counts()
    console.print(f"{c['pass']} passed, {c['fail']} failed, {c['skipped']} skipped, {c['error']} errors "
                  f"in {report.seconds:.1f}s")


def counter_rows(report: AcceptReport, min_bytes: int = 1 << 20) -> list[list[str]]:
    """One row per switch port and queue (or PFC priority) that carried ≥ `min_bytes` or marked, dropped or paused
    anything: the counters before → after (every change is in the JSON report)."""
    groups: dict[tuple[str, str, str], dict[str, tuple[int, int]]] = {}
    for c in report.switch_counters:
        kind, _, rest = c.counter.partition(":")
        n, _, name = rest.partition(":")
        label = f"TC{n}" if kind == "queue" else f"{kind} prio {n}"
        groups.setdefault((c.node, c.port, label), {})[name] = (c.before, c.after)
    rows = []
    for (node, port, label), cs in groups.items():
        moved = {k: b - a for k, (a, b) in cs.items()}
        if moved.get("tx_bytes", 0) < min_bytes and not any(v for k, v in moved.items() if k not in ("tx_bytes",
                                                                                                      "tx_packets")):
            continue
        cells = [f"{cs[k][0]:,} → {cs[k][1]:,}" if k in cs else "-" for k in ("tx_bytes", "ecn_marked", "drops")]
        others = ", ".join(f"{k} {a:,} → {b:,}" for k, (a, b) in sorted(cs.items())
                           if k not in ("tx_bytes", "tx_packets", "ecn_marked", "drops"))
        rows.append([node, port, label, *cells, others])
    return rows


def counters_table(report: AcceptReport) -> Table:
    t = Table(title="switch counters before → after the traffic checks (queues that carried ≥ 1 MiB or "
              "marked, dropped or paused)")
    for col in ("switch", "port", "queue", "tx bytes", "CE-marked", "drops", "other"):
        t.add_column(col, overflow="fold")
    for row in counter_rows(report):
        t.add_row(*row)
    return t


def to_json(report: AcceptReport) -> str:
    data = report.model_dump()
    data["ok"], data["counts"] = report.ok, report.counts()
    return json.dumps(data, indent=2, sort_keys=True) + "\n"


def _case_name(r: CheckResult, used: set[str]) -> str:
    name, n = r.name, 2
    while name in used:
        name, n = f"{r.name}-{n}", n + 1
    used.add(name)
    return name


def to_junit(report: AcceptReport) -> str:
    """One testsuite; a testcase per check and per failed measurement, all names unique."""
    suite = ET.Element("testsuite", name=f"fabric-accept-{report.fabric}", timestamp=report.started,
                       time=f"{report.seconds:.2f}")
    used: set[str] = set()
    counts = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
    for r in report.results:
        cases = [(r.name, r.status, r.message, r.seconds)]
        for m in r.measurements:
            if not m.ok:
                where = "-".join(x for x in (m.src, m.dst, f"rail{m.rail}" if m.rail is not None else "") if x)
                cases.append((f"{r.name}[{where}]", "fail", f"Expected {m.expected()}. Actual: {m.actual()}", 0.0))
        for name, status, message, secs in cases:
            tc = ET.SubElement(suite, "testcase", classname=f"accept.{r.check}",
                               name=_case_name(CheckResult(name=name, check=r.check, status="pass"), used),
                               time=f"{secs:.2f}")
            counts["tests"] += 1
            if status == "fail":
                ET.SubElement(tc, "failure", message=message[:500]).text = "\n".join([message, *r.evidence])
                counts["failures"] += 1
            elif status == "error":
                ET.SubElement(tc, "error", message=message[:500]).text = message
                counts["errors"] += 1
            elif status == "skipped":
                ET.SubElement(tc, "skipped", message=message[:500])
                counts["skipped"] += 1
    for k, v in counts.items():
        suite.set(k, str(v))
    return ET.tostring(suite, encoding="unicode", xml_declaration=True) + "\n"


def to_markdown(report: AcceptReport) -> str:
    c = report.counts()
    lines = [f"# Acceptance: {report.fabric}", "",
             f"{report.how}, started {report.started}, {report.seconds:.1f}s: "
             f"**{c['pass']} passed, {c['fail']} failed, {c['skipped']} skipped, {c['error']} errors**", "",
             "| check | status | rounds | result |", "| --- | --- | --- | --- |"]
    for r in report.results:
        msg = r.message.replace("|", "\\|")
        lines.append(f"| {r.name} | {r.status} | {r.rounds or '-'} | {msg} |")
    for r in report.results:
        if r.evidence:
            lines += ["", f"## {r.name}: evidence", "", "```", *r.evidence, "```"]
    if report.switch_counters:
        lines += ["", "## Switch counters before → after the traffic checks", "",
                  "| switch | port | queue | tx bytes | CE-marked | drops | other |",
                  "| --- | --- | --- | --- | --- | --- | --- |"]
        lines += ["| " + " | ".join(row) + " |" for row in counter_rows(report)]
    return "\n".join(lines) + "\n"


def heatmap(report: AcceptReport) -> tuple[list[str], list[int], dict[tuple[str, int], tuple[float, float, str]]]:
    """(hosts, rails, cell → (bandwidth, threshold, detail)) for each NIC: the lower of the medians of the
    tests it sent and of those it received.

    Medians, not the minimum: one slow NIC drags down one test of each partner but all of its own, so only
    its cell turns red; per direction, because a fault (a bad transmitter, a shaper, a dirty fibre) is
    often one-way and would otherwise hide in a two-way median."""
    seen: dict[tuple[str, int], dict[str, list[tuple[float, float]]]] = {}
    for r in report.results:
        for m in r.measurements:
            if m.unit not in ("Gb/s", "GB/s") or m.rail is None:
                continue
            value = m.value if m.value is not None else 0.0
            for h, way in ((m.src, "sent"), (m.dst, "received")):
                if h:
                    seen.setdefault((h, m.rail), {}).setdefault(way, []).append((value, m.threshold or 0.0))
    cells = {}
    for key, ways in seen.items():
        way, vals = min(ways.items(), key=lambda kv: median(v for v, _ in kv[1]))
        values = [v for v, _ in vals]
        thr = max(t for _, t in vals)
        below = sum(v < t for v, t in vals)
        cells[key] = (median(values), thr, f"{way}: median of {len(values)} tests, {below} below {thr:g}, "
                                           f"lowest {min(values):.2f}")
    hosts = sorted({h for h, _ in cells})
    rails = sorted({r for _, r in cells})
    return hosts, rails, cells


def _color(value: float, threshold: float) -> str:
    if threshold <= 0:
        return "#e8f0fe"
    ratio = value / threshold
    if ratio < 1:
        light = 45 + int(40 * max(ratio, 0))
        return f"hsl(0, 75%, {light}%)"
    return f"hsl(130, 45%, {max(40, 80 - int(10 * min(ratio - 1, 4)))}%)"


_CSS = """body{font-family:system-ui,sans-serif;margin:2em;color:#222}table{border-collapse:collapse;margin:1em 0}
td,th{border:1px solid #ccc;padding:4px 8px;text-align:left;vertical-align:top}th{background:#f3f3f3}
.pass{color:#137333;font-weight:600}.fail{color:#c5221f;font-weight:700}.skipped{color:#b06000}.error{color:#a0a}
.heat td{text-align:center;min-width:5em;font-variant-numeric:tabular-nums}
pre{background:#f6f6f6;padding:1em;white-space:pre-wrap;overflow-wrap:anywhere}td{overflow-wrap:anywhere}"""


def to_html(report: AcceptReport) -> str:
    e = html.escape
    c = report.counts()
    out = ["<!DOCTYPE html>", "<html><head><meta charset='utf-8'>", f"<title>Acceptance {e(report.fabric)}</title>",
           f"<style>{_CSS}</style></head><body>", f"<h1>Acceptance: {e(report.fabric)}</h1>",
           f"<p>{e(report.how)}, started {e(report.started)}, "
           f"{report.seconds:.1f}s — {c['pass']} passed, {c['fail']} failed, {c['skipped']} skipped, "
           f"{c['error']} errors</p>",
           "<table><tr><th>check</th><th>status</th><th>rounds</th><th>result</th></tr>"]
    for r in report.results:
        out.append(f"<tr><td>{e(r.name)}</td><td class='{r.status}'>{r.status}</td><td>{r.rounds or '-'}</td>"
                   f"<td>{e(r.message)}</td></tr>")
    out.append("</table>")
    hosts, rails, cells = heatmap(report)
    if cells:
        out.append("<h2>Bandwidth: rail × host (per NIC: the lower median of the tests it sent and received)"
                   "</h2><table class='heat'>")
        out.append("<tr><th>host \\ rail</th>" + "".join(f"<th>rail {r}</th>" for r in rails) + "</tr>")
        for h in hosts:
            row = [f"<tr><th>{e(h)}</th>"]
            for rail in rails:
                if (h, rail) not in cells:
                    row.append("<td>-</td>")
                    continue
                v, thr, detail = cells[(h, rail)]
                row.append(f"<td style='background:{_color(v, thr)}' title='{e(detail)}'>{v:.2f}</td>")
            out.append("".join(row) + "</tr>")
        out.append("</table>")
    for r in report.results:
        if r.evidence:
            out.append(f"<h2>{e(r.name)}: evidence</h2><pre>{e(chr(10).join(r.evidence))}</pre>")
    if report.switch_counters:
        out.append("<h2>Switch counters before → after the traffic checks</h2><table><tr>"
                   + "".join(f"<th>{h}</th>" for h in ("switch", "port", "queue", "tx bytes", "CE-marked", "drops",
                                                       "other")) + "</tr>")
        out += ["<tr>" + "".join(f"<td>{e(c)}</td>" for c in row) + "</tr>" for row in counter_rows(report)]
        out.append("</table>")
    out.append("</body></html>")
    return "\n".join(out) + "\n"


RENDER = {"json": to_json, "junit": to_junit, "markdown": to_markdown, "html": to_html}


def write(report: AcceptReport, out_dir: Path, formats: list[str]) -> list[Path]:
    private_dir(out_dir)
    paths = []
    for f in formats:
        if f in RENDER:
            p = out_dir / FILES[f]
            write_private(p, RENDER[f](report))
            paths.append(p)
    return paths
