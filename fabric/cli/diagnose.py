"""`fabric diagnose LOG...`: known failure signatures in NCCL, kernel, perftest and nccl-tests logs."""

from __future__ import annotations

import json
from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table
from rich.text import Text

from fabric.cli.console import console as make_console
from fabric.cli.remediate import (
    MaxHostsOpt,
    RemediateOpt,
    WindowOpt,
    budget,
    diagnose_faults,
    hand_over,
    schedulers,
)
from fabric.diagnose.bind import FabricIndex, fabric_roce_tos
from fabric.diagnose.catalog import load_catalog
from fabric.diagnose.logs import log_name, read_lines
from fabric.diagnose.match import diagnose as run_diagnose
from fabric.diagnose.report import SEVERITIES, Finding, Report, bind
from fabric.diagnose.rules import DEFAULT_TOS
from fabric.errors import UsageError, printable
from fabric.findings import Severity
from fabric.remediate import MAX_HOSTS, WINDOW

_STYLE = {Severity.error: "bold red", Severity.warning: "yellow", Severity.info: "cyan"}


class OutputFormat(StrEnum):
    table = "table"
    json = "json"


def diagnose(
    logs: Annotated[list[Path], typer.Argument(
        metavar="LOG...", help="NCCL, kernel (dmesg/journal), perftest or nccl-tests logs; '-' reads stdin; "
                               ".gz is decompressed.")],
    format: Annotated[OutputFormat, typer.Option("--format", "-f")] = OutputFormat.table,
    catalog: Annotated[Path | None, typer.Option(
        "--catalog", help="YAML catalog whose signatures add to or replace the shipped ones by id.")] = None,
    expected_tos: Annotated[int | None, typer.Option(
        "--expected-tos", min=0, max=255, show_default=False,
        help=f"RoCE ToS byte the fabric is built for (NCCL_IB_TC); default: each host's roce_tos with "
             f"--inventory, else {DEFAULT_TOS}.")
    ] = None,
    inventory: Annotated[Path | None, typer.Option(
        "--inventory", help="Inventory to name the host, NIC, rail, leaf port and cable behind a finding.")
    ] = None,
    scheduler: Annotated[str | None, typer.Option(
        "--scheduler", help="with --inventory: print (or --remediate) the drain/cordon/taint of the hosts named by "
                            "error findings, for any of slurm, kubernetes, volcano (comma-separated)")] = None,
    remediate: RemediateOpt = False,
    max_hosts: MaxHostsOpt = MAX_HOSTS,
    window: WindowOpt = WINDOW,
) -> None:
    """Match logs against known RoCE/NCCL failure signatures; exit 1 if any is error-level."""
    names = schedulers(scheduler) if scheduler else []
    limit = budget(max_hosts, window)
    if (names or remediate) and inventory is None:
        raise UsageError("--scheduler/--remediate: expected --inventory as well (the scheduler needs the hosts)")
    if remediate and not names:
        raise UsageError("--remediate: expected --scheduler as well")
    signatures = load_catalog(catalog)
    fabric = None
    if inventory is not None:  # load first: a bad inventory is a user error before any log is read
        from fabric.design.load import load_fabric

        fabric = load_fabric(inventory).intent
    tos_of = None
    if expected_tos is None and fabric is not None:  # judge NCCL_IB_TC against the inventory's ToS
        index = FabricIndex(fabric)
        tos_of, expected_tos = index.roce_tos, fabric_roce_tos(fabric, DEFAULT_TOS)
    report = run_diagnose(((log_name(p), read_lines(p)) for p in logs), signatures,
                          DEFAULT_TOS if expected_tos is None else expected_tos, tos_of)
    if fabric is not None:
        report = bind(report, fabric)
    if format is OutputFormat.json:
        typer.echo(json.dumps(report.model_dump(mode="json"), indent=2, sort_keys=True, ensure_ascii=False))
    else:
        print_table(report)
    say = make_console(stderr=True, soft_wrap=True) if format is OutputFormat.json else make_console(soft_wrap=True)
    handed = hand_over(fabric, diagnose_faults(report, fabric), names, remediate, limit=limit, say=say) \
        if fabric is not None and names else True
    if report.has_errors or not handed:
        raise SystemExit(1)  # not typer.Exit: it must survive app(standalone_mode=False)


def print_table(report: Report, console: Console | None = None) -> None:
    """One table per severity (errors first), then a one-line summary."""
    console = console or make_console()
    for severity in SEVERITIES:
        rows = [f for f in report.findings if f.severity == severity]
        if not rows:
            continue
        table = Table(title=Text(f"{severity} ({len(rows)})", style=_STYLE[severity]), title_justify="left",
                      show_lines=True, expand=True)
        table.add_column("ID", no_wrap=True, style=_STYLE[severity])
        table.add_column("Finding", ratio=3)
        table.add_column("Where", ratio=2, overflow="fold")
        table.add_column("About", ratio=2)
        table.add_column("Likely cause → check next", ratio=5)
        for f in rows:
            table.add_row(Text(f.id), _what(f), Text(_where(f)), _about(f),
                          Text(f"{f.cause}\n→ {f.next_step}"))
        console.print(table)
    counts = report.counts()
    lines = sum(f.lines for f in report.files)
    scope = f"{len(report.files)} file(s), {lines} lines"
    if not report.findings:
        console.print(f"No known failure signatures in {scope}.", markup=False)
    else:
        found = ", ".join(f"{n} {sev}{'s' if n > 1 and sev is not Severity.info else ''}"
                          for sev, n in counts.items() if n)
        console.print(f"{found} in {scope}.", markup=False)


def _what(f: Finding) -> Text:
    text = Text(printable(f.title))  # log text: control characters escaped, never markup (Text)
    evidence = printable(f.evidence if len(f.evidence) <= 200 else f.evidence[:199] + "…")
    text.append(f"\n{evidence}", style="dim")
    return text


def _where(f: Finding) -> str:
    return printable(f.where) + (f"\n×{f.count}" if f.count > 1 else "")


def _about(f: Finding) -> Text:
    """Subjects as named in the logs, where they are in the fabric (with --inventory), other values dimmed."""
    lines = [printable(" ".join(f"{k}={v}" for k, v in s.items())) for s in f.subjects[:4]]
    if len(f.subjects) > 4:
        lines.append(f"+{len(f.subjects) - 4} more")
    text = Text("\n".join(lines))
    if f.located:
        located = [f"@ {loc.text()}" for loc in f.located[:4]]
        if len(f.located) > 4:
            located.append(f"@ +{len(f.located) - 4} more")
        text.append(("\n" if lines else "") + "\n".join(located), style="bold")
    details = printable(" ".join(f"{k}={','.join(v[:3])}" for k, v in list(f.details.items())[:4]))
    if details:
        text.append(("\n" if lines else "") + details, style="dim")
    return text


def _is_tty() -> bool:
    return Console().is_terminal
