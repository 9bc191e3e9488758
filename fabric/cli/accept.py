"""`fabric accept` (acceptance run and reports) and `fabric counters` (lossless counter rates)."""

from __future__ import annotations

import sys
import time
from collections.abc import Iterable, Iterator
from itertools import islice
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.table import Table

from fabric.cli.console import console, styled
from fabric.cli.progress import devices, track
from fabric.cli.remediate import (
    MAX_HOSTS,
    WINDOW,
    MaxHostsOpt,
    RemediateOpt,
    SchedulerOpt,
    WindowOpt,
    accept_faults,
    budget,
    hand_over,
    schedulers,
)
from fabric.cli.site import none_answered, open_site
from fabric.errors import UsageError, printable
from fabric.safefile import private_dir, replacing

if TYPE_CHECKING:
    from fabric.accept.results import Planned

out = console()
err = console(stderr=True)
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
                                              "perftest; see docs/kubernetes.md)")] = None,
    render_only: Annotated[bool, typer.Option("--render-only", help="k8s: write every manifest to -o and run "
                                              "nothing (no cluster, no SSH)")] = False,
    scheduler: SchedulerOpt = "slurm,kubernetes",
    remediate: RemediateOpt = False,
    max_hosts: MaxHostsOpt = MAX_HOSTS,
    window: WindowOpt = WINDOW,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="print every command per check and round with its host, "
                                          "write the launch files to -o; run nothing")] = False,
) -> None:
    """Acceptance tests: bandwidth, latency, NCCL, counters, host config, BGP; exit 1 when any check fails."""
    from fabric.accept import catalog as cat
    from fabric.accept import engine, report
    from fabric.accept import transport as tr

    formats = _formats(fmt)
    names = schedulers(scheduler)
    limit = budget(max_hosts, window)
    if launcher not in ("mpirun", "slurm", "k8s"):
        raise UsageError(f"--launcher: expected mpirun, slurm or k8s, found {launcher!r}")
    if render_only:
        _render_k8s(inventory, launcher, image, output, quick)
        return
    if dump_catalog:
        from fabric.design.load import load_fabric

        sys.stdout.write(cat.dump(cat.default_catalog(load_fabric(inventory).intent, rdma=not lab, launcher=launcher,
                                                      image=image)))
        return
    _loaded, site = open_site(inventory, lab=lab, via=via)
    fabric = site.fabric
    checks = cat.load_catalog(catalog) if catalog else cat.build(
        cat.default_catalog(fabric, rdma=site.rdma, launcher=launcher, image=image, line_gbps=site.line_gbps,
                            soft_roce=site.soft_roce))
    tag_list = [t.strip() for v in tags or [] for t in v.split(",") if t.strip()]
    selected = cat.select(checks, tag_list)
    if not selected:
        raise UsageError(f"--tags: no check has any of {', '.join(tag_list)}")
    out_dir = private_dir(output or Path("build") / fabric.name / "accept")  # refused before anything is written
    if dry_run:
        _dry_run(engine.plan(site, selected, quick=quick, report_dir=out_dir), out_dir)
        return
    hosts = list(fabric.hosts) if any(c.on_hosts for c in selected) else []
    with track("accept") as progress:
        dead = tr.reachable(site, hosts, progress=devices(progress, f"reach the hosts of {fabric.name}", len(hosts)))
    if hosts and len(dead) == len(hosts):
        err.print(f"error: {none_answered(site, 'hosts', hosts)}", markup=False, soft_wrap=True)
        sys.exit(1)
    with track("accept", total=len(selected)) as progress:
        rep = engine.run(site, selected, quick=quick, report_dir=out_dir, progress=progress.note,
                         done=lambda _r: progress.advance())
    if dead:  # the checks judged the hosts that answered; the run cannot pass with hosts missing
        from fabric.accept.results import CheckResult

        rep.results.insert(0, CheckResult(
            name="reachability", check="reachability", status="fail",
            message=f"Expected every host to answer over SSH. Actual: {len(dead)} of {len(hosts)} did not: "
                    + ", ".join(sorted(dead)),
            evidence=[f"{h}: {why}" for h, why in sorted(dead.items())]))
    paths = report.write(rep, out_dir, formats)
    if "table" in formats:
        report.table(rep, out)
    if paths:
        out.print("reports: " + ", ".join(str(p) for p in paths))
    if not rep.ok:
        hand_over(fabric, accept_faults(fabric, rep.results), names, remediate, limit=limit)
    sys.exit(0 if rep.ok else 1)  # not typer.Exit: main() runs click with standalone_mode=False


DRY_RUN_CHUNK = 8192  # lines of the plan written at once to stdout and dry-run.txt


def _dry_run(plan: Iterable[tuple[str, Iterable[Planned]]], out_dir: Path) -> None:
    """Print the plan (check, round, host, role, command) as it is made, a chunk of lines at a time, and keep it
    as dry-run.txt beside the launch files (growing in a temporary file beside it, named dry-run.txt once
    complete: an interrupted dry run leaves no partial plan under that name)."""
    counts = {"commands": 0, "steps": 0}

    def lines() -> Iterator[str]:
        for name, planned in plan:
            counts["steps"] += 1
            header = f"== {name}\n"
            for p in planned:
                if header:
                    yield header
                    header = ""
                counts["commands"] += 1
                yield f"  {f'round {p.round} ' if p.round else ''}{p.host} [{p.role}]: {p.command}\n"
            if header:
                yield f"== {name}  (reads only what the counter snapshots read)\n"

    from fabric.host.fleet import cleanup_on_signals  # SIGTERM, SIGHUP: the growing plan is removed, as on Ctrl-C

    private_dir(out_dir)
    text = lines()
    with cleanup_on_signals(), replacing(out_dir / "dry-run.txt") as keep:
        while chunk := "".join(islice(text, DRY_RUN_CHUNK)):
            keep(chunk)
            sys.stdout.write(chunk)
    launch = out_dir / "launch"
    files = sorted(p for p in launch.rglob("*") if p.is_file()) if launch.exists() else []
    out.print(f"dry run: {counts['commands']} commands in {counts['steps']} steps, nothing run; "
              f"{out_dir / 'dry-run.txt'}" + (f", {len(files)} launch files in {launch}" if files else ""))


def _render_k8s(inventory: Path, launcher: str, image: str | None, output: Path | None, quick: bool) -> None:
    """`--launcher k8s --render-only`: the whole Kubernetes bundle (fabric.accept.bundle.render_bundle)."""
    from fabric.accept import bundle
    from fabric.design.load import load_fabric

    if launcher != "k8s":
        raise UsageError("--render-only goes with --launcher k8s")
    if not image:
        raise UsageError("--render-only: give --image (an image with sshd, OpenMPI, nccl-tests and perftest)")
    fabric = load_fabric(inventory).intent
    out_dir = private_dir(output or Path("build") / fabric.name / "accept" / "k8s")
    paths = bundle.render_bundle(fabric, out_dir, image, quick=quick)
    jobs = sorted(p.stem for p in paths if p.parent.name == "jobs")
    out.print(f"wrote {len(paths)} files to {out_dir}: jobs {', '.join(jobs)}; networks.yaml, sriovdp-config.yaml, "
              f"hypernodes.yaml, nodes/<host>/*.conflist")


def counters(
    inventory: InventoryArg,
    watch: Annotated[float | None, typer.Option("--watch", help="repeat every SECONDS until interrupted")] = None,
    interval: Annotated[float, typer.Option(help="seconds between the two reads of one sample")] = 1.0,
    lab: Annotated[bool, typer.Option("--lab", help="the running lab of this inventory")] = False,
    switches: Annotated[bool, typer.Option(help="also switch ports, through each switch's NOS driver")] = True,
    hosts: Annotated[bool, typer.Option(help="host NICs (over SSH)")] = True,
    fmt: Annotated[str, typer.Option("--format", help="table or json")] = "table",
    count: Annotated[int, typer.Option(help="samples with --watch (0 = until Ctrl-C)")] = 0,
    workers: Annotated[int, typer.Option(help="hosts and switches read at the same time")] = 16,
) -> None:
    """PFC pause, ECN-marked, CNP and discard counters per host NIC and switch port (queues included), as
    per-second rates; with --watch a new sample every SECONDS, and a note when reading takes longer."""
    from fabric.accept import counters as cn

    if fmt not in ("table", "json"):
        raise UsageError(f"--format: expected table or json, found {fmt!r}")
    step = watch if watch else interval
    if step <= 0 or workers < 1:
        raise UsageError("--watch/--interval: expected a positive number of seconds; --workers: at least 1")
    _loaded, site = open_site(inventory, lab=lab)
    nodes = (list(site.fabric.hosts) if hosts else []) + (list(site.fabric.switches) if switches else [])
    if not nodes:
        raise UsageError("--no-hosts --no-switches: nothing to read")
    problems: list[str] = []  # located problems of malformed host replies (fabric.accept.counters)
    with track("counters") as progress:
        before = cn.snapshot(site, nodes=nodes, workers=workers, problems=problems,
                             progress=devices(progress, f"counters {site.name}", len(nodes)))
    t_before = time.monotonic()
    missing = [n for n in nodes if n not in before]
    if not before:
        err.print(f"error: {none_answered(site, 'hosts and switches' if switches else 'hosts', nodes)}",
                  markup=False, soft_wrap=True)
        sys.exit(1)
    n = 0
    while True:
        time.sleep(max(0.0, t_before + step - time.monotonic()))  # the interval from the last read's start
        t_read = time.monotonic()
        after = cn.snapshot(site, nodes=list(before), workers=workers, problems=problems)
        for p in dict.fromkeys(problems):
            err.print(f"problem: {p}", markup=False, soft_wrap=True)
        problems.clear()
        t_after = time.monotonic()
        took, span = t_after - t_read, t_read - t_before
        rows = cn.rates(cn.delta(before, after), span)
        n += 1
        slow = (f"reading {len(after)} nodes took {took:.1f}s, longer than the {step:g}s interval: rates are "
                f"over {span:.1f}s (raise --workers or --watch)") if took > step else ""
        if fmt == "json":  # one JSON document a line (a sample each with --watch): JSON Lines
            import json

            sys.stdout.write(json.dumps({"seconds": round(span, 3), "read_seconds": round(took, 3), "note": slow,
                                         "rows": [r.model_dump() for r in rows]}) + "\n")
            sys.stdout.flush()
        else:
            _counters_table(rows, span)
            if slow:
                out.print(f"note: {slow}", markup=False)
        gone = [x for x in nodes if x not in after]
        if gone:
            err.print(f"unreachable: {', '.join(gone)} ({len(gone)} of {len(nodes)} nodes, no counters)",
                      markup=False, soft_wrap=True)
        if not rows:
            err.print(f"error: no counters from the {len(after)} nodes that answered (no readable port)",
                      markup=False, soft_wrap=True)
        if not watch or (count and n >= count):
            bad = any(r.anomalies and any("discards" in a or "storm" in a for a in r.anomalies) for r in rows)
            sys.exit(1 if bad or missing or gone or not rows else 0)
        before, t_before = after, t_read


def _counters_table(rows, seconds: float) -> None:
    t = Table(title=f"lossless counters, per second over {seconds:.1f}s")
    for col in ("node", "port", "rx Gb/s", "tx Gb/s", "queues Gb/s", "PFC pause/s", "ECN marked/s", "CNP sent/s",
                "CNP handled/s", "discards/s", "sources", "anomalies"):
        t.add_column(col, overflow="fold")
    for r in rows:
        hot = bool(r.anomalies)
        queues = " ".join(f"TC{tc}:{v:.2f}" for tc, v in sorted(r.queues_gbps.items()) if v >= 0.005)
        t.add_row(r.node, printable(r.port), f"{r.rx_gbps:.2f}", f"{r.tx_gbps:.2f}", queues, f"{r.pause:.1f}",
                  f"{r.ecn:.1f}",
                  f"{r.cnp_sent:.1f}", f"{r.cnp_handled:.1f}",
                  styled(f"{r.discards:.1f}", "red") if r.discards else "0", ",".join(r.exposed),
                  styled("; ".join(r.anomalies), "bold red") if hot else "")
    out.print(t)
