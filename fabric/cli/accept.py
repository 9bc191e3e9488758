"""`fabric accept` (acceptance run and reports) and `fabric counters` (lossless counter rates)."""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from fabric.cli.console import console, styled
from fabric.cli.progress import track
from fabric.cli.site import open_site
from fabric.errors import UsageError

out = console()
InventoryArg = Annotated[Path, typer.Argument(help="inventory directory of YAML files", show_default=False)]


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
    launcher: Annotated[str, typer.Option("--launcher", help="nccl-tests launcher: mpirun, slurm or k8s (k8s adds "
                                          "pod-to-pod perftest)")] = "mpirun",
    image: Annotated[str | None, typer.Option("--image", help="k8s: container image (sshd, OpenMPI, nccl-tests, "
                                              "perftest; see README)")] = None,
    render_only: Annotated[bool, typer.Option("--render-only", help="k8s: write every manifest to -o and run "
                                              "nothing (no cluster, no SSH)")] = False,
) -> None:
    """Acceptance tests: bandwidth, latency, NCCL, counters, host config, BGP; exit 1 when any check fails."""
    from fabric.accept import catalog as cat
    from fabric.accept import engine, report

    formats = _formats(fmt)
    if launcher not in ("mpirun", "slurm", "k8s"):
        raise UsageError(f"--launcher: expected mpirun, slurm or k8s, found {launcher!r}")
    if render_only:
        _render_k8s(inventory, launcher, image, output, quick)
        return
    if dump_catalog:
        from fabric.design.derive import derive
        from fabric.model.load import load

        sys.stdout.write(cat.dump(cat.default_catalog(derive(load(inventory)), rdma=not lab, launcher=launcher,
                                                      image=image)))
        return
    _loaded, site = open_site(inventory, lab=lab, via=via)
    fabric = site.fabric
    checks = cat.load_catalog(catalog) if catalog else cat.build(
        cat.default_catalog(fabric, rdma=site.rdma, launcher=launcher, image=image))
    tag_list = [t.strip() for v in tags or [] for t in v.split(",") if t.strip()]
    selected = cat.select(checks, tag_list)
    if not selected:
        raise UsageError(f"--tags: no check has any of {', '.join(tag_list)}")
    out_dir = output or Path("build") / fabric.name / "accept"
    with track("accept", total=len(selected)) as progress:
        rep = engine.run(site, selected, quick=quick, report_dir=out_dir, progress=progress.note,
                         done=lambda _r: progress.advance())
    paths = report.write(rep, out_dir, formats)
    if "table" in formats:
        report.table(rep, out)
    if paths:
        out.print("reports: " + ", ".join(str(p) for p in paths))
    sys.exit(0 if rep.ok else 1)  # not typer.Exit: main() runs click with standalone_mode=False


def _render_k8s(inventory: Path, launcher: str, image: str | None, output: Path | None, quick: bool) -> None:
    """`--launcher k8s --render-only`: the whole Kubernetes bundle (fabric.accept.k8s.render_bundle)."""
    from fabric.accept import k8s
    from fabric.design.derive import derive
    from fabric.model.load import load

    if launcher != "k8s":
        raise UsageError("--render-only goes with --launcher k8s")
    if not image:
        raise UsageError("--render-only: give --image (an image with sshd, OpenMPI, nccl-tests and perftest)")
    fabric = derive(load(inventory))
    out_dir = output or Path("build") / fabric.name / "accept" / "k8s"
    paths = k8s.render_bundle(fabric, out_dir, image, quick=quick)
    jobs = sorted(p.stem for p in paths if p.parent.name == "jobs")
    out.print(f"wrote {len(paths)} files to {out_dir}: jobs {', '.join(jobs)}; networks.yaml, sriovdp-config.yaml, "
              f"hypernodes.yaml, nodes/<host>/*.conflist")


def counters(
    inventory: InventoryArg,
    watch: Annotated[float | None, typer.Option("--watch", help="repeat every SECONDS until interrupted")] = None,
    interval: Annotated[float, typer.Option(help="seconds between the two reads of one sample")] = 1.0,
    lab: Annotated[bool, typer.Option("--lab", help="the running lab of this inventory")] = False,
    switches: Annotated[bool, typer.Option(help="also switch ports, through each switch's NOS driver")] = True,
    fmt: Annotated[str, typer.Option("--format", help="table or json")] = "table",
    count: Annotated[int, typer.Option(help="samples with --watch (0 = until Ctrl-C)")] = 0,
) -> None:
    """PFC pause, ECN-marked, CNP and discard counters per host NIC and switch port, as per-second rates."""
    from fabric.accept import counters as cn

    if fmt not in ("table", "json"):
        raise UsageError(f"--format: expected table or json, found {fmt!r}")
    step = watch if watch else interval
    if step <= 0:
        raise UsageError("--watch/--interval: expected a positive number of seconds")
    _loaded, site = open_site(inventory, lab=lab)
    n = 0
    before = cn.snapshot(site, switches=switches)
    t_before = time.monotonic()
    while True:
        time.sleep(step)
        after = cn.snapshot(site, switches=switches)
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
                  styled(f"{r.discards:.1f}", "red") if r.discards else "0", ",".join(r.exposed),
                  styled("; ".join(r.anomalies), "bold red") if hot else "")
    out.print(t)
