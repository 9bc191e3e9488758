"""Foundation commands: validate, render, plan (offline), explain, schema, generate."""

from __future__ import annotations

import json
import sys
from collections import Counter
from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from fabric.cli.console import console, print_table
from fabric.cli.progress import Tracker, track
from fabric.errors import InputError, Problem, UsageError
from fabric.nos import names as nos_names

out = console()
InventoryArg = Annotated[Path, typer.Argument(help="inventory directory of YAML files", show_default=False)]
FormatOpt = Annotated[str, typer.Option("--format", help="table or json")]


def _load(inventory: Path, progress: Tracker | None = None):
    from fabric.design.load import load_fabric

    f = load_fabric(inventory, progress=progress.stage if progress is not None else None)
    return f.loaded, f.intent


def _check_format(fmt: str) -> None:
    if fmt not in ("table", "json"):
        raise UsageError(f"--format: expected table or json, found {fmt!r}")


def validate(inventory: InventoryArg) -> None:
    """Load, validate and derive an inventory; print every problem as file:line."""
    from fabric.design.load import summary

    s = summary(inventory)
    out.print(f"{s.name}: valid — {s.switches} switches, {s.hosts} hosts, {s.links} links, {s.rail_nics} rail NICs "
              f"({s.files} files)")


def render(inventory: InventoryArg,
           output: Annotated[Path | None, typer.Option("-o", "--output", help="default build/<fabric>")] = None,
           only: Annotated[list[str] | None, typer.Option("--only", help="device name (repeatable)")] = None,
           all_files: Annotated[bool, typer.Option(
               "--all", help="also the review and boot-time copies: NVUE nv-set.txt and PTM topology.dot, the "
                             "hosts' netplan, sysctl.d, roce-qos unit and script")] = False,
           ) -> None:
    """Render every switch and host configuration into a directory tree."""
    from fabric.render import render_to
    from fabric.safefile import output_dir, refusal

    with track("render") as progress:
        _, fabric = _load(inventory, progress)
        unknown = sorted(set(only or []) - set(fabric.switches) - set(fabric.hosts))
        if unknown:
            raise UsageError(f"--only: expected a device of {fabric.name}, found {', '.join(unknown)}")
        root = output_dir(output or Path("build") / fabric.name)  # refused before any file is written
        devices = len(only) if only else len(fabric.switches) + len(fabric.hosts)
        progress.stage(f"render into {root}", total=devices)
        try:
            count = render_to(root, fabric, set(only) if only else None, extras=all_files,
                              progress=progress.advance if progress.enabled else None)
        except OSError as exc:  # something in the tree: a file where a directory goes, a FIFO, no permission
            raise refusal(exc.filename or root, "a file or directory that can be written", exc) from None
    out.print(f"rendered {count} files for {len(only) if only else len(fabric.switches) + len(fabric.hosts)} "
              f"devices into {root}")


def offline_plan(fabric) -> list[dict]:
    """One summary row per device of what would be configured."""
    rows = []
    for sw in fabric.switches.values():
        lossless = [p for p in sw.ports if p.lossless and p.headroom]
        sizes = sorted({p.headroom.size for p in lossless})
        rows.append({
            "device": sw.name, "kind": f"{sw.role} ({sw.target})", "asn": sw.bgp.asn, "loopback": sw.loopback,
            "ports": f"{sum(p.kind == 'host' for p in sw.ports)} host + {sum(p.kind == 'fabric' for p in sw.ports)}"
                     " fabric",
            "bgp": f"{len(sw.bgp.neighbors)} unnumbered",
            "l3": ", ".join(s.address for s in sw.svis) or ", ".join(sw.bgp.blackholes) or "-",
            "qos": f"PFC {','.join(map(str, sw.qos.lossless_priorities))}; headroom "
                   + (f"{sizes[0]}-{sizes[-1]} B" if len(sizes) > 1 else f"{sizes[0]} B" if sizes else "-")
                   + (f"; AR on {sum(p.adaptive_routing for p in sw.ports)} ports" if sw.adaptive_routing else ""),
        })
    for h in fabric.hosts.values():
        rows.append({
            "device": h.name, "kind": "host", "asn": "", "loopback": h.management_address,
            "ports": f"{len(h.rails)} rails", "bgp": "",
            "l3": ", ".join(r.address for r in h.rails),
            "qos": f"ToS {h.nic_qos.roce_tos}; PFC {''.join(map(str, h.nic_qos.pfc))}; "
                   f"DCQCN {','.join(map(str, h.dcqcn.rp_priorities)) or 'off'}",
        })
    return rows


def plan(inventory: InventoryArg,
         offline: Annotated[bool, typer.Option("--offline", help="summarize the intent, contact nothing")] = False,
         fmt: FormatOpt = "table",
         limit: Annotated[str | None, typer.Option("--limit", help="switch name glob(s), comma-separated")] = None,
         workers: Annotated[int, typer.Option("--workers", min=1, help="switches contacted at once")] = 8,
         lab: Annotated[bool, typer.Option("--lab", help="the running lab of this inventory")] = False,
         insecure_lab: Annotated[bool, typer.Option("--insecure-lab", help="with --lab: skip host-key checks")] = False,
         running: Annotated[Path | None, typer.Option("--running", help="diff saved running configs DIR/<switch>"
                                                      ".json|.yaml|.cfg|.conf instead of the switches")] = None,
         detailed_exitcode: Annotated[bool, typer.Option(
             "--detailed-exitcode", help="exit 0 in sync, 3 changes pending, 1 a switch unreachable or failed, "
                                         "2 bad input (without it: 0 unless something failed)")] = False,
         timeout: Annotated[float | None, typer.Option(
             "--timeout", min=1, max=60, help="seconds a switch may take to answer one command before it is "
                                               "reported (default: each command's own wait, up to 60)")] = None,
         ) -> None:
    """Diff every switch's running configuration against its intent (--offline: summarize the intent).

    Exit codes: 0 every switch answered (and, with --detailed-exitcode, is in sync); 3 with
    --detailed-exitcode when changes are pending; 1 a switch unreachable or failed; 2 bad input."""
    _check_format(fmt)
    if running is not None:
        from fabric.cli.push import running_plan

        raise typer.Exit(running_plan(inventory, running, limit, fmt, detailed_exitcode))
    if not offline:
        from fabric.cli.push import online_plan

        raise typer.Exit(online_plan(inventory, limit, fmt, workers, lab, insecure_lab, detailed_exitcode, timeout))
    if detailed_exitcode:
        raise UsageError("--detailed-exitcode: expected a plan against the switches, found --offline "
                         "(it contacts nothing, so nothing can be in sync or pending)")
    with track("plan --offline") as progress:
        _, fabric = _load(inventory, progress)
        progress.stage("summarize")
        rows = offline_plan(fabric)
    if fmt == "json":
        out.print_json(json.dumps(rows))
        return
    table = Table(title=f"{fabric.name}: offline plan", show_lines=False)
    for col in rows[0] if rows else []:
        table.add_column(col)
    for row in rows:
        table.add_row(*(str(v) for v in row.values()))
    out.print(table)


def explain(inventory: InventoryArg, device: Annotated[str, typer.Argument(help="switch or host name")],
            path: Annotated[str, typer.Argument(help="path prefix, e.g. qos.queues.3 or ports[0].headroom; "
                                                     "monitoring: the alert thresholds")] = "",
            fmt: FormatOpt = "table") -> None:
    """Every value of a device with its origin: preset, override or inventory (file:line), derived, or formula."""
    from fabric.explain import answer, select, to_json

    _check_format(fmt)
    if path.startswith("monitoring"):  # the alert thresholds of `fabric export -f prometheus`
        from fabric.design.load import load_deriver
        from fabric.export.prometheus import explain_rows

        deriver = load_deriver(inventory)  # the whole fabric's checks
        loaded, dev = deriver.loaded, deriver.device(device)
        if dev is None:
            raise UsageError(f"device: expected a switch or host of {loaded.inv.fabric.name}, found {device!r}")
        rows = explain_rows(loaded, deriver.fabric(), dev, path)  # per-port labels need every link
    else:  # the whole fabric's checks, then this device's intent alone
        found = answer(inventory, device)
        if found.rows is None:
            raise UsageError(f"device: expected a switch or host of {found.fabric}, found {device!r}")
        rows = select(found.rows, path)
    if not rows:
        raise UsageError(f"path: expected a path of {device} such as qos.queues.3.ecn or bgp.asn, found {path!r}")
    if fmt == "json":
        # plain JSON text, as rich's print_json writes it off a terminal (its highlighting cost seconds at 32k)
        sys.stdout.write(to_json(rows))
        return
    print_table(out, f"{device}{' ' + path if path else ''}", ("path", "value", "origin"), rows)


def show(inventory: InventoryArg, device: Annotated[str, typer.Argument(help="switch or host name")],
         file: Annotated[str | None, typer.Argument(help="one of the device's files (default: the one pushed to a "
                                                        "switch; a host's roce-setup.sh)")] = None,
         list_files: Annotated[bool, typer.Option("--list", help="list the device's files")] = False) -> None:
    """Print one device's rendered configuration, without rendering the whole fabric into a directory."""
    from fabric.nos import NOS
    from fabric.render import render_host, render_switch

    _, fabric = _load(inventory)
    sw, host = fabric.switches.get(device), fabric.hosts.get(device)
    if sw is None and host is None:
        raise UsageError(f"device: expected a switch or host of {fabric.name}, found {device!r}")
    files = render_switch(sw, fabric) if sw else render_host(host, fabric)  # type: ignore[arg-type]
    if list_files:
        sys.stdout.write("".join(f"{name}\n" for name in files))
        return
    name = file or (NOS[sw.target].intended if sw else "roce-setup.sh")
    if name not in files:
        raise UsageError(f"file: expected one of {', '.join(files)} for {device}, found {name!r}")
    sys.stdout.write(files[name])


def schema() -> None:
    """Print the JSON Schema of one inventory file (for editor completion and checks).

    An inventory is split across files, so no section is required in any one of them (`fabric validate`
    checks that the inventory as a whole has them); platforms, targets and presets are enums."""
    from fabric.model.schema import inventory_schema

    sys.stdout.write(json.dumps(inventory_schema(), indent=2, sort_keys=True) + "\n")


def generate_gpu_rail(
    output: Annotated[Path, typer.Option("-o", "--output", help="inventory directory to write")],
    gpus: Annotated[int, typer.Option(help="GPUs in the cluster")],
    rails: Annotated[int, typer.Option(help="rail NICs per host")] = 8,
    gpus_per_host: Annotated[int, typer.Option()] = 8,
    hosts_per_su: Annotated[int, typer.Option(help="hosts per scalable unit")] = 32,
    spines: Annotated[int | None, typer.Option(help="spines (per pod); default non-blocking")] = None,
    uplinks_per_spine: Annotated[int, typer.Option()] = 1,
    pods: Annotated[int | None, typer.Option(help="force three tiers with this many pods")] = None,
    super_spines: Annotated[int | None, typer.Option(help="super-spines per plane")] = None,
    platform: Annotated[str, typer.Option()] = "sn5600",
    breakout: Annotated[str, typer.Option(help="e.g. 2x400G, or none")] = "2x400G",
    target: Annotated[str, typer.Option(help=nos_names())] = "nvue",
    speed: Annotated[str, typer.Option(help="host and fabric link speed")] = "400G",
    name: Annotated[str | None, typer.Option(help="fabric name; default the directory name")] = None,
    mode: Annotated[str, typer.Option(help="svi or p2p31")] = "svi",
    force: Annotated[bool, typer.Option("--force", help="replace an existing inventory directory")] = False,
) -> None:
    """A rail-optimized fabric: hosts × rails, leaves per SU and rail, spines, super-spines if needed."""
    from pydantic import ValidationError

    from fabric.generate import GpuRailSpec, write

    try:
        spec = GpuRailSpec(name=name or output.name, gpus=gpus, rails=rails, gpus_per_host=gpus_per_host,
                           hosts_per_su=hosts_per_su, spines=spines, uplinks_per_spine=uplinks_per_spine,
                           pods=pods, super_spines=super_spines, platform=platform,
                           breakout=None if breakout == "none" else breakout, target=target, host_speed=speed,
                           mode=mode)
    except ValidationError as exc:
        raise InputError([Problem("fabric generate", None, f"--{str(e['loc'][0]).replace('_', '-')}",
                                  e["msg"].removeprefix("Value error, ").removeprefix("Input should be "),
                                  repr(e.get("input"))) for e in exc.errors()]) from None
    from fabric.design.load import load_deriver

    checked = []

    def check(directory: Path) -> None:  # what `validate` checks: deriving each device adds no check
        checked.append(load_deriver(directory).topo)

    paths = write(spec, output, check=check, force=force)
    roles = Counter(s.role for s in checked[-1].switches.values())
    out.print(f"wrote {len(paths)} files to {output}: {len(checked[-1].hosts)} hosts, {len(checked[-1].switches)} "
              f"switches ({roles['leaf']} leaves, {roles['spine']} spines, {roles['super-spine']} super-spines)")


generate_app = typer.Typer(help="Write a complete inventory from a few numbers.", no_args_is_help=True)
generate_app.command("gpu-rail")(generate_gpu_rail)
