"""`fabric optics INV`: every host rail NIC's and switch port's pluggable module, judged and located."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from fabric.cli.console import console as make_console
from fabric.cli.console import styled
from fabric.cli.site import open_site
from fabric.errors import UsageError, printable

_STYLE = {"alarm": "bold red", "mismatch": "red", "warning": "yellow", "near": "cyan", "ok": "green",
          "no module": "dim", "not read": "dim", "error": "bold red"}


def optics(
    inventory: Annotated[Path, typer.Argument(help="Inventory directory.")],
    lab: Annotated[bool, typer.Option("--lab", help="the running lab of this inventory")] = False,
    expect: Annotated[Path | None, typer.Option(
        "--expect", help="YAML: expected vendor/part/firmware/revision per link class (host:, fabric:).")] = None,
    hosts: Annotated[bool, typer.Option(help="read the host rail NICs' modules")] = True,
    switches: Annotated[bool, typer.Option(help="read the switch ports' modules (through each NOS driver)")] = True,
    limit: Annotated[str | None, typer.Option("--limit", help="host/switch name glob(s), comma-separated")] = None,
    fmt: Annotated[str, typer.Option("--format", help="table or json")] = "table",
    all_rows: Annotated[bool, typer.Option("--all", help="also list modules that are fine and ports without one")
                        ] = False,
) -> None:
    """Read every module (ethtool -m on hosts, the NOS on switches); report lanes outside the module's own
    thresholds, modules near one, and identity mismatches. Exit 1 on an alarm, a mismatch or an unreadable device."""
    from fabric.optics.collect import assess, read
    from fabric.optics.judge import load_expectations

    if fmt not in ("table", "json"):
        raise UsageError(f"--format: expected table or json, found {fmt!r}")
    expectations = load_expectations(expect) if expect is not None else None
    _loaded, site = open_site(inventory, lab=lab)
    pats = [p.strip() for p in (limit or "").split(",") if p.strip()]
    rows = assess(read(site, hosts=hosts, switches=switches, limit=pats), expectations)
    if pats and not rows:
        raise UsageError(f"--limit: expected a pattern matching hosts or switches of {site.fabric.name}, "
                         f"found {limit!r}")
    if fmt == "json":
        typer.echo(json.dumps([{**r.model_dump(mode="json"), "status": r.status, "where": r.where} for r in rows],
                              indent=2))
    else:
        _table(rows, all_rows)
    sys.exit(1 if any(r.status in ("alarm", "mismatch", "error") for r in rows) else 0)


def _table(rows, all_rows: bool) -> None:
    console = make_console(width=None if sys.stdout.isatty() else 200)
    shown = [r for r in rows if all_rows or r.status not in ("ok", "no module")]
    t = Table(title="optics", show_lines=False)
    for col in ("where", "cable to", "module", "status", "details"):
        t.add_column(col, overflow="fold")
    for r in shown:
        m = r.module
        ident = " ".join(x for x in (m.vendor, m.part, m.serial, f"rev {m.revision}" if m.revision else "",
                                     f"fw {m.firmware}" if m.firmware else "") if x) if m else ""
        details = "; ".join([i.text for i in r.issues] + r.mismatch) or r.reason
        cable = r.peer + (f", {r.cable_m} m" if r.cable_m is not None else "")
        # module identity and details come from device and host replies: control characters escaped
        t.add_row(r.where, printable(cable), printable(ident), styled(r.status, _STYLE[r.status]), printable(details))
    if shown:
        console.print(t)
    counts: dict[str, int] = {}
    for r in rows:
        counts[r.status] = counts.get(r.status, 0) + 1
    console.print(f"{len(rows)} ports: " + ", ".join(f"{n} {s}" for s, n in sorted(counts.items())), markup=False)
