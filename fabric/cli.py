"""The `fabric` command line: one typer app, sub-apps per capability."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table

try:  # typer ≥ 0.20 vendors click
    from typer._click.exceptions import ClickException
except ImportError:  # pragma: no cover
    from click import ClickException

from fabric.errors import InputError, UsageError

app = typer.Typer(no_args_is_help=True, add_completion=False, pretty_exceptions_enable=False,
                  help="Provision and validate RoCEv2 lossless Ethernet fabrics for GPU clusters.")
err = Console(stderr=True, highlight=False, soft_wrap=True)


def main() -> None:
    """Entry point: user errors become one line each and exit code 2, never a traceback."""
    try:
        rc = app(standalone_mode=False)  # typer returns the code of a typer.Exit in this mode
        sys.exit(rc if isinstance(rc, int) else 0)
    except (InputError, UsageError) as exc:
        for line in str(exc).splitlines():
            err.print(f"error: {line}", markup=False)
        sys.exit(2)
    except typer.Exit as exc:
        sys.exit(exc.exit_code)
    except typer.Abort:
        err.print("aborted")
        sys.exit(1)
    except ClickException as exc:  # usage errors: bad option, missing argument
        exc.show()
        sys.exit(2)


# --- foundation commands: validate, render, plan, explain, schema, generate ------------------------
out = Console(highlight=False, width=None if sys.stdout.isatty() else 160)
InventoryArg = Annotated[Path, typer.Argument(help="inventory directory of YAML files", show_default=False)]
FormatOpt = Annotated[str, typer.Option("--format", help="table or json")]


def _load(inventory: Path):
    from fabric.design.derive import derive
    from fabric.model.load import load

    loaded = load(inventory)
    return loaded, derive(loaded)


def _check_format(fmt: str) -> None:
    if fmt not in ("table", "json"):
        raise UsageError(f"--format: expected table or json, found {fmt!r}")


@app.command()
def validate(inventory: InventoryArg) -> None:
    """Load, validate and derive an inventory; print every problem as file:line."""
    loaded, fabric = _load(inventory)
    out.print(f"{fabric.name}: valid — {len(fabric.switches)} switches, {len(fabric.hosts)} hosts, "
              f"{len(fabric.links)} links, {sum(len(h.rails) for h in fabric.hosts.values())} rail NICs "
              f"({len(loaded.smap.files)} files)")


@app.command()
def render(inventory: InventoryArg,
           output: Annotated[Path | None, typer.Option("-o", "--output", help="default build/<fabric>")] = None,
           only: Annotated[list[str] | None, typer.Option("--only", help="device name (repeatable)")] = None) -> None:
    """Render every switch and host configuration into a directory tree."""
    from fabric.render import render_to

    _, fabric = _load(inventory)
    unknown = sorted(set(only or []) - set(fabric.switches) - set(fabric.hosts))
    if unknown:
        raise UsageError(f"--only: expected a device of {fabric.name}, found {', '.join(unknown)}")
    root = output or Path("build") / fabric.name
    count = render_to(root, fabric, set(only) if only else None)
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


@app.command()
def plan(inventory: InventoryArg,
         offline: Annotated[bool, typer.Option("--offline", help="summarize the intent, contact nothing")] = False,
         fmt: FormatOpt = "table",
         limit: Annotated[str | None, typer.Option("--limit", help="switch name glob(s), comma-separated")] = None,
         workers: Annotated[int, typer.Option("--workers", min=1, help="switches contacted at once")] = 8,
         insecure_lab: Annotated[bool, typer.Option("--insecure-lab", help="lab only: skip host-key checks")] = False,
         ) -> None:
    """Diff every switch's running configuration against its intent (--offline: summarize the intent)."""
    _check_format(fmt)
    if not offline:
        from fabric.push.cli import online_plan

        raise typer.Exit(online_plan(inventory, limit, fmt, workers, insecure_lab))
    _, fabric = _load(inventory)
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


@app.command()
def explain(inventory: InventoryArg, device: Annotated[str, typer.Argument(help="switch or host name")],
            path: Annotated[str, typer.Argument(help="path prefix, e.g. qos.ecn or ports[0].headroom")] = "",
            fmt: FormatOpt = "table") -> None:
    """Every value of a device with its origin: preset, override, inventory, derived, or formula."""
    from fabric.explain import explain as rows_of

    _check_format(fmt)
    loaded, fabric = _load(inventory)
    dev = fabric.switches.get(device) or fabric.hosts.get(device)
    if dev is None:
        raise UsageError(f"device: expected a switch or host of {fabric.name}, found {device!r}")
    rows = rows_of(loaded, dev, path)
    if not rows:
        raise UsageError(f"path: expected a path of {device} such as qos.ecn or bgp.asn, found {path!r}")
    if fmt == "json":
        out.print_json(json.dumps([{"path": p, "value": v, "origin": o} for p, v, o in rows]))
        return
    table = Table(title=f"{device}{' ' + path if path else ''}")
    for col in ("path", "value", "origin"):
        table.add_column(col, overflow="fold")
    for row in rows:
        table.add_row(*row)
    out.print(table)


@app.command()
def schema() -> None:
    """Print the inventory JSON Schema (for editor completion and checks)."""
    from fabric.model.inventory import Inventory
    from fabric.model.qos import QosPolicy

    doc = Inventory.model_json_schema()
    qos = QosPolicy.model_json_schema()
    for part in qos.get("$defs", {}).values():  # overrides name single values: nothing is required
        part.pop("required", None)
    doc.setdefault("$defs", {}).update(qos.pop("$defs", {}))
    qos.pop("required", None)
    qos["properties"]["preset"] = {"enum": ["nvidia-roce", "sonic-azure", "custom"], "default": "nvidia-roce"}
    doc["$defs"]["QosInput"] = qos
    doc["properties"]["qos"] = {"$ref": "#/$defs/QosInput"}
    sys.stdout.write(json.dumps(doc, indent=2, sort_keys=True) + "\n")


generate_app = typer.Typer(help="Write a complete inventory from a few numbers.", no_args_is_help=True)
app.add_typer(generate_app, name="generate")


@generate_app.command("gpu-rail")
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
    target: Annotated[str, typer.Option(help="sonic, nvue, eos or frr")] = "nvue",
    speed: Annotated[str, typer.Option(help="host and fabric link speed")] = "400G",
    name: Annotated[str | None, typer.Option(help="fabric name; default the directory name")] = None,
    mode: Annotated[str, typer.Option(help="svi or p2p31")] = "svi",
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
        raise UsageError("; ".join(f"--{e['loc'][0]}: {e['msg']}" for e in exc.errors())) from None
    from fabric.model.platforms import PLATFORMS

    if platform not in PLATFORMS:
        raise UsageError(f"--platform: expected one of {', '.join(sorted(PLATFORMS))}, found {platform!r}")
    paths = write(spec, output)
    _, fabric = _load(output)
    out.print(f"wrote {len(paths)} files to {output}: {len(fabric.hosts)} hosts, {len(fabric.switches)} switches "
              f"({sum(s.role == 'leaf' for s in fabric.switches.values())} leaves, "
              f"{sum(s.role == 'spine' for s in fabric.switches.values())} spines, "
              f"{sum(s.role == 'super-spine' for s in fabric.switches.values())} super-spines)")
# --- the other capabilities, each in its own package ---------------------------------------------
def _register() -> None:
    from fabric.accept.cli import accept, counters
    from fabric.accept.parse_cli import app as parse_app
    from fabric.diagnose.cli import diagnose
    from fabric.export.cli import export_command
    from fabric.host.cli import host_app, hosts_app
    from fabric.lab.cli import lab_app
    from fabric.lint.cli import lint
    from fabric.push.cli import apply_command, rollback_command

    app.add_typer(parse_app)
    app.add_typer(host_app, name="host")
    app.add_typer(hosts_app, name="hosts")
    app.add_typer(lab_app, name="lab")
    for name, command in (("lint", lint), ("diagnose", diagnose), ("export", export_command), ("accept", accept),
                          ("counters", counters), ("apply", apply_command), ("rollback", rollback_command)):
        app.command(name)(command)


_register()
