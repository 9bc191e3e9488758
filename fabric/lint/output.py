"""Render a lint Result: rich table, JSON, JUnit XML, SARIF 2.1.0 and GitHub workflow annotations."""

from __future__ import annotations

import json
from pathlib import Path

from rich.console import Console
from rich.table import Table

from fabric.lint.core import Finding, Rule, Severity
from fabric.lint.engine import Result
from fabric.lint.rules import all_rules

FORMATS = ("table", "json", "junit", "sarif", "github")
SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
_SARIF_LEVEL = {Severity.error: "error", Severity.warning: "warning", Severity.info: "note"}
_GH_LEVEL = {Severity.error: "error", Severity.warning: "warning", Severity.info: "notice"}


def _rules() -> dict[str, Rule]:
    return {r.id: r for r in all_rules()}


def table(result: Result, console: Console) -> None:
    """Findings grouped by severity (errors first), then a one-line summary."""
    for sev in Severity:
        rows = [f for f in result.active() if f.severity is sev]
        if not rows:
            continue
        t = Table(title=f"{sev.value}s ({len(rows)})", title_justify="left", show_lines=False, expand=False)
        for col in ("rule", "object", "where", "finding"):
            t.add_column(col, overflow="fold")
        for f in rows:
            t.add_row(f.rule, f.target, f.where, f.message)
        console.print(t)
    waived = [f for f in result.findings if f.waived]
    if waived:
        t = Table(title=f"waived ({len(waived)})", title_justify="left")
        for col in ("rule", "object", "reason"):
            t.add_column(col, overflow="fold")
        for f in waived:
            t.add_row(f.rule, f.target, f.waived or "")
        console.print(t)
    c = result.counts()
    console.print(
        f"{c['error']} errors, {c['warning']} warnings, {c['info']} info, {c['waived']} waived "
        f"({len(result.rules)} rules)"
    )


def to_json(result: Result) -> str:
    data = {
        "summary": result.counts(),
        "rules": result.rules,
        "findings": [f.model_dump(mode="json") for f in result.findings],
    }
    return json.dumps(data, indent=2, sort_keys=True) + "\n"


def to_junit(result: Result, fail_on: Severity) -> str:
    """One testsuite per rule; one testcase per rule and object (unique); a passing case per clean rule."""
    from xml.etree import ElementTree as ET  # only here: its parser costs every other lint 13 ms to import

    rules = _rules()
    root = ET.Element("testsuites", name="fabric lint")
    by_rule: dict[str, dict[str, list[Finding]]] = {rid: {} for rid in result.rules}
    for f in result.findings:
        by_rule.setdefault(f.rule, {}).setdefault(f.object, []).append(f)
    total = failures = skipped = 0
    for rid, objects in by_rule.items():
        suite = ET.SubElement(root, "testsuite", name=f"{rid} {rules[rid].title}")
        cases = objects or {"": []}
        s_fail = s_skip = 0
        for obj, fs in cases.items():
            case = ET.SubElement(
                suite, "testcase", classname=f"fabric.lint.{rid}", name=obj or "all objects", time="0"
            )
            active = [f for f in fs if not f.waived]
            failing = [f for f in active if f.severity.rank >= fail_on.rank]
            text = "\n".join(f"{f.where}: {f.severity.value}: {f.message}" for f in fs)
            if failing:
                ET.SubElement(
                    case, "failure", message=failing[0].message, type=failing[0].severity.value
                ).text = text
                s_fail += 1
            elif fs and not active:
                ET.SubElement(case, "skipped", message=f"waived: {fs[0].waived}")
                s_skip += 1
            elif fs:
                ET.SubElement(case, "system-out").text = text
        suite.set("tests", str(len(cases)))
        suite.set("failures", str(s_fail))
        suite.set("errors", "0")
        suite.set("skipped", str(s_skip))
        total, failures, skipped = total + len(cases), failures + s_fail, skipped + s_skip
    root.set("tests", str(total))
    root.set("failures", str(failures))
    root.set("errors", "0")
    root.set("skipped", str(skipped))
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"


def _uri(file: str, base: Path | None) -> str:
    p = Path(file)
    if base is not None:
        try:
            return p.resolve().relative_to(base.resolve()).as_posix()
        except ValueError:
            pass
    return p.as_posix()


def to_sarif(result: Result, base: Path | None = None) -> str:
    """SARIF 2.1.0 for code scanning: rule metadata, physical locations, waivers as suppressions."""
    rules = _rules()
    ids = result.rules
    descriptors = [
        {
            "id": rid,
            "name": type(rules[rid]).__name__,
            "shortDescription": {"text": rules[rid].title},
            "fullDescription": {"text": rules[rid].explanation},
            "help": {
                "text": f"{rules[rid].explanation}\n\nFix: {rules[rid].fix}",
                "markdown": f"{rules[rid].explanation}\n\n**Fix:** {rules[rid].fix}",
            },
            "defaultConfiguration": {"level": _SARIF_LEVEL[rules[rid].severity]},
            "properties": {"tags": [{"1": "qos", "2": "host", "3": "l1-l3", "4": "operations"}[rid[2]]]},
        }
        for rid in ids
    ]
    results = []
    for f in result.findings:
        loc: dict = {
            "physicalLocation": {"artifactLocation": {"uri": _uri(f.file, base) if f.file else "."}},
            "logicalLocations": [{"name": f.target, "kind": "object"}],
        }
        if f.line:
            loc["physicalLocation"]["region"] = {"startLine": f.line}
        r: dict = {
            "ruleId": f.rule,
            "ruleIndex": ids.index(f.rule) if f.rule in ids else -1,
            "level": _SARIF_LEVEL[f.severity],
            "message": {"text": f"{f.target}: {f.message}"},
            "locations": [loc],
            "partialFingerprints": {"object/v1": f"{f.rule}:{f.target}"},
        }
        if f.waived:
            r["suppressions"] = [{"kind": "inSource", "justification": f.waived}]
        results.append(r)
    log = {
        "$schema": SARIF_SCHEMA,
        "version": "2.1.0",
        "runs": [{"tool": {"driver": {"name": "fabric lint", "rules": descriptors}}, "results": results}],
    }
    return json.dumps(log, indent=2, sort_keys=True) + "\n"


def _gh_escape(text: str, prop: bool = False) -> str:
    text = text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")
    return text.replace(":", "%3A").replace(",", "%2C") if prop else text


def to_github(result: Result) -> str:
    """`::error file=…,line=…,title=RF101::…` lines; GitHub shows them on the pull request's diff."""
    out = []
    for f in result.active():
        props = [f"file={_gh_escape(f.file, True)}"] if f.file else []
        if f.line:
            props.append(f"line={f.line}")
        props.append(f"title={_gh_escape(f'{f.rule} {f.title}', True)}")
        out.append(f"::{_GH_LEVEL[f.severity]} {','.join(props)}::{_gh_escape(f'{f.target}: {f.message}')}")
    return "\n".join(out) + ("\n" if out else "")


def rule_table(console: Console) -> None:
    t = Table(title="fabric lint rules", title_justify="left")
    for col in ("id", "severity", "configs", "title"):
        t.add_column(col)
    for r in all_rules():
        t.add_row(r.id, r.severity.value, "yes" if r.configs else "", r.title)
    console.print(t)


def rule_markdown() -> str:
    """The rule table as Markdown, for the docs (tools/docs_reference.py)."""
    lines = ["| id | severity | --configs | title |", "| --- | --- | --- | --- |"]
    lines += [
        f"| {r.id} | {r.severity.value} | {'yes' if r.configs else ''} | {r.title} |" for r in all_rules()
    ]
    return "\n".join(lines) + "\n"


def explain(rule: Rule) -> str:
    return f"{rule.id} ({rule.severity.value}): {rule.title}\n\n{rule.explanation}\n\nFix: {rule.fix}\n" + (
        "\nAlso checked on device configs (--configs).\n" if rule.configs else ""
    )
