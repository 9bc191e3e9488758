"""`fabric accept` (acceptance run and reports) and `fabric counters` (lossless counter rates)."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn
from rich.table import Table

from fabric.errors import UsageError

out = Console(highlight=False, width=None if sys.stdout.isatty() else 160)
err = Console(stderr=True, highlight=False)
InventoryArg = Annotated[Path, typer.Argument(help="inventory directory of YAML files", show_default=False)]


def _setup(inventory: Path, lab: bool, via: str):
    """(loaded, intent, transport, lab state or None)."""
    from fabric.accept.transport import LabTransport, SshTransport
    from fabric.design.derive import derive
    from fabric.model.load import load

    loaded = load(inventory)
    if lab:
        from fabric.lab.sh import require_root
        from fabric.lab.state import load_state

        require_root()
        fabric = derive(loaded, target="frr")
        st = load_state(fabric.name)
        if via not in ("netns", "ssh"):
            raise UsageError(f"--via: expected netns or ssh, found {via!r}")
        return loaded, fabric, LabTransport(st, via=via), st
    fabric = derive(loaded)
    acc = loaded.inv.access
    user = acc.username or os.environ.get(acc.username_env)
    addresses = {n: h.management_address.split("/")[0] for n, h in fabric.hosts.items()}
    return loaded, fabric, SshTransport(addresses, user=user, key_file=acc.key_file, known_hosts=acc.known_hosts,
                                        port=acc.port), None


def _formats(value: list[str] | None) -> list[str]:
    from fabric.accept.report import FORMATS

    fmts = [f.strip() for v in (value or ["table,json,junit,markdown,html"]) for f in v.split(",") if f.strip()]
    bad = [f for f in fmts if f not in FORMATS]
    if bad:
        raise UsageError(f"--format: expected some of {', '.join(FORMATS)}, found {', '.join(bad)}")
    return fmts


def accept(
    inventory: InventoryArg,
    catalog: Annotated[Path | None, typer.Option("--catalog", help="check catalog YAML (default: derived)")] = None,
    quick: Annotated[bool, typer.Option("--quick", help="pair every host once instead of all pairs")] = False,
    tags: Annotated[list[str] | None, typer.Option("--tags", help="run checks with these tags or names")] = None,
    fmt: Annotated[list[str] | None, typer.Option("--format", help="table,json,junit,markdown,html")] = None,
    output: Annotated[Path | None, typer.Option("-o", "--output", help="report dir (default build/<fabric>/accept)")]
    = None,
    lab: Annotated[bool, typer.Option("--lab", help="run against the running lab of this inventory")] = False,
    via: Annotated[str, typer.Option("--via", help="lab transport: netns or ssh")] = "netns",
    dump_catalog: Annotated[bool, typer.Option("--dump-catalog", help="print the default catalog and exit")] = False,
) -> None:
    """Acceptance tests: bandwidth, latency, NCCL, counters, host config, BGP; exit 1 when any check fails."""
    from fabric.accept import catalog as cat
    from fabric.accept import engine, report

    formats = _formats(fmt)
    if dump_catalog:
        from fabric.design.derive import derive
        from fabric.model.load import load

        sys.stdout.write(cat.dump(cat.default_catalog(derive(load(inventory)), lab=lab)))
        return
    _loaded, fabric, transport, st = _setup(inventory, lab, via)
    checks = cat.load_catalog(catalog) if catalog else cat.build(cat.default_catalog(fabric, lab=lab))
    tag_list = [t.strip() for v in tags or [] for t in v.split(",") if t.strip()]
    selected = cat.select(checks, tag_list)
    if not selected:
        raise UsageError(f"--tags: no check has any of {', '.join(tag_list)}")
    out_dir = output or Path("build") / fabric.name / "accept"
    with Progress(SpinnerColumn(), TextColumn("{task.description}"), TimeElapsedColumn(), console=err,
                  transient=True, disable=not err.is_terminal) as progress:
        task = progress.add_task("accept", total=len(selected))

        def note(msg: str) -> None:
            progress.update(task, description=msg)
            if not err.is_terminal:
                err.print(f"[dim]{time.strftime('%H:%M:%S')}[/dim] {msg}")

        rep = engine.run(fabric, selected, transport, lab=st, quick=quick, report_dir=out_dir, progress=note,
                         done=lambda _r: progress.advance(task))
    paths = report.write(rep, out_dir, formats)
    if "table" in formats:
        report.table(rep, out)
    if paths:
        out.print("reports: " + ", ".join(str(p) for p in paths))
    sys.exit(0 if rep.ok else 1)  # not typer.Exit: main() runs click with standalone_mode=False


def counters(
    inventory: InventoryArg,
    watch: Annotated[float | None, typer.Option("--watch", help="repeat every SECONDS until interrupted")] = None,
    interval: Annotated[float, typer.Option(help="seconds between the two reads of one sample")] = 1.0,
    lab: Annotated[bool, typer.Option("--lab", help="read the lab's veths in their namespaces")] = False,
    switches: Annotated[bool, typer.Option(help="also switch ports (where exposed)")] = True,
    fmt: Annotated[str, typer.Option("--format", help="table or json")] = "table",
    count: Annotated[int, typer.Option(help="samples with --watch (0 = until Ctrl-C)")] = 0,
) -> None:
    """PFC pause, ECN-marked, CNP and discard counters per host NIC and switch port, as per-second rates."""
    from fabric.accept import counters as cn

    if fmt not in ("table", "json"):
        raise UsageError(f"--format: expected table or json, found {fmt!r}")
    _loaded, fabric, transport, _st = _setup(inventory, lab, "netns")
    step = watch if watch else interval
    if step <= 0:
        raise UsageError("--watch/--interval: expected a positive number of seconds")
    with_switches = switches and lab
    n = 0
    before = cn.snapshot(transport, fabric, switches=with_switches)
    t_before = time.monotonic()
    while True:
        time.sleep(step)
        after = cn.snapshot(transport, fabric, switches=with_switches)
        t_after = time.monotonic()
        rows = cn.rates(cn.delta(before, after), t_after - t_before)
        n += 1
        if fmt == "json":
            import json

            out.print_json(json.dumps([r.model_dump() for r in rows]))
        else:
            _counters_table(rows, t_after - t_before)
        if not watch or (count and n >= count):
            bad = any(r.anomalies and any("discards" in a or "storm" in a for a in r.anomalies) for r in rows)
            sys.exit(1 if bad else 0)
        before, t_before = after, t_after


def _counters_table(rows, seconds: float) -> None:
    t = Table(title=f"lossless counters, per second over {seconds:.1f}s")
    for col in ("node", "port", "rx Gb/s", "tx Gb/s", "PFC pause/s", "ECN marked/s", "CNP sent/s",
                "CNP handled/s", "discards/s", "sources", "anomalies"):
        t.add_column(col, overflow="fold")
    for r in rows:
        hot = bool(r.anomalies)
        t.add_row(r.node, r.port, f"{r.rx_gbps:.2f}", f"{r.tx_gbps:.2f}", f"{r.pause:.1f}", f"{r.ecn:.1f}",
                  f"{r.cnp_sent:.1f}", f"{r.cnp_handled:.1f}",
                  f"[red]{r.discards:.1f}[/red]" if r.discards else "0", ",".join(r.exposed),
                  f"[bold red]{'; '.join(r.anomalies)}[/bold red]" if hot else "")
    out.print(t)
