"""`fabric fetch INV [-o DIR]`: save every switch's running configuration where `lint --configs` reads it."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated

import typer

from fabric.cli.console import console
from fabric.cli.progress import devices, track
from fabric.cli.push import Context, FormatOpt, InsecureOpt, InventoryArg, LabOpt, LimitOpt, WorkersOpt
from fabric.cli.site import none_answered
from fabric.errors import UsageError
from fabric.safefile import private_dir

out = console()
err = console(stderr=True)


def fetch_command(
    inventory: InventoryArg,
    output: Annotated[Path | None, typer.Option("-o", "--output", help="default fetched/<fabric>")] = None,
    limit: LimitOpt = None,
    workers: WorkersOpt = 8,
    lab: LabOpt = False,
    insecure_lab: InsecureOpt = False,
    timeout: Annotated[float, typer.Option(help="seconds to connect and log in to one switch")] = 10,
    fmt: FormatOpt = "table",
) -> None:
    """Save every switch's running configuration as DIR/<switch>.json|.yaml|.cfg|.conf (by its NOS).

    Exit 0 when every switch was saved, 1 when one was unreachable or failed, 2 bad input."""
    from fabric.push.fetch import fetch_all

    if fmt not in ("table", "json"):
        raise UsageError(f"--format: expected table or json, found {fmt!r}")
    ctx = Context(inventory, limit, lab=lab, insecure_lab=insecure_lab)
    root = private_dir(output or Path("fetched") / ctx.name)  # before any switch is asked: a bad -o is exit 2
    with track("fetch") as progress:
        update = devices(progress, f"fetch {ctx.name}", len(ctx.endpoints))
        results = fetch_all(ctx.endpoints, ctx.cred, root, workers=workers, timeout=timeout, progress=update)
    saved = [r for r in results if r.status == "saved"]
    if fmt == "json":
        sys.stdout.write(json.dumps({"fabric": ctx.name, "directory": str(root),
                                     "devices": [r.model_dump() | {"seconds": round(r.seconds, 2)}
                                                 for r in results]}, indent=2) + "\n")
    else:
        width = max(len(r.device) for r in results)
        for r in results:
            what = f"{r.path} ({r.bytes} bytes)" if r.status == "saved" else r.detail
            out.print(f"{r.device:<{width}}  {r.target:<5}  {r.status:<11}  {what}", markup=False)
        out.print(f"saved {len(saved)} of {len(results)} running configurations into {root}", markup=False)
    if not saved:
        err.print(f"error: {none_answered(ctx.site, 'switches', [r.device for r in results])}", markup=False,
                  soft_wrap=True)
    raise typer.Exit(0 if len(saved) == len(results) else 1)
