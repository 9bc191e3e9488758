"""`fabric graph INV`: the fabric drawn with graphviz (DOT and SVG); `picture` and `svg` also draw the cabling
report (fabric.cli.cabling)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import typer

from fabric.cli.console import console
from fabric.design.cabling import Cabling
from fabric.design.topology import Topo
from fabric.errors import UsageError
from fabric.render.graph import DETAIL_MAX, detail, overview
from fabric.safefile import write_output

DOT_TIMEOUT_S = 300  # the 32k-GPU overview takes under a second; a detail view of a large fabric far longer


def picture(topo: Topo, su: int | None = None, whole: bool | None = None, cabling: Cabling | None = None) -> str:
    """The DOT text: one SU in detail, the whole fabric in detail, or the overview (`whole` None: detail up to
    DETAIL_MAX devices)."""
    if su is not None:
        sus = {h.su for h in topo.hosts.values()} | {s.su for s in topo.switches.values() if s.su}
        if su not in sus:
            raise UsageError(f"--su: expected an SU of the fabric ({min(sus, default=0)}–{max(sus, default=0)}), "
                             f"found {su}")
        return detail(topo, su, cabling)
    if whole is None:
        whole = len(topo.switches) + len(topo.hosts) <= DETAIL_MAX
    return detail(topo, None, cabling) if whole else overview(topo, cabling)


def svg(dot_text: str) -> str:
    """graphviz's `dot -Tsvg` of `dot_text` (an argument list, no shell, bounded in time)."""
    exe = shutil.which("dot")
    if exe is None:
        raise UsageError("graphviz's `dot`: expected on PATH (Debian: apt install graphviz), found none")
    try:
        run = subprocess.run([exe, "-Tsvg"], input=dot_text, capture_output=True, text=True, timeout=DOT_TIMEOUT_S,
                             check=False)
    except subprocess.TimeoutExpired:
        raise UsageError(f"graphviz's `dot`: expected a drawing within {DOT_TIMEOUT_S} s, found none (try --su N "
                         "or --view overview)") from None
    if run.returncode != 0:
        raise UsageError(f"graphviz's `dot`: expected a drawing, found exit {run.returncode}: "
                         f"{run.stderr.strip()[:500]}")
    return run.stdout


def graph(
    inventory: Path = typer.Argument(..., help="inventory directory (inventories/<name>)"),
    su: int | None = typer.Option(None, "--su", help="draw this SU device by device, with the spines it reaches"),
    view: str = typer.Option("auto", "--view", help=f"auto (detail up to {DETAIL_MAX} devices, else overview), "
                             "detail or overview"),
    output: Path | None = typer.Option(None, "--output", "-o", help="FILE.svg (the DOT beside it) or FILE.dot; "
                                       "default build/<fabric>/topology.svg"),
) -> None:
    """Draw the fabric: spines, rail leaves and hosts by SU, host cables in their rail's colour (DOT and SVG)."""
    from fabric.design.load import load_deriver

    if view not in ("auto", "detail", "overview"):
        raise UsageError(f"--view: expected auto, detail or overview, found {view!r}")
    deriver = load_deriver(inventory)
    text = picture(deriver.topo, su, None if view == "auto" else view == "detail")
    out = output or Path("build") / deriver.inv.fabric.name / "topology.svg"
    if out.suffix not in (".svg", ".dot"):
        raise UsageError(f"-o: expected a file ending .svg or .dot, found {out}")
    written = [write_output(out.with_suffix(".dot"), text)]
    if out.suffix == ".svg":
        written.append(write_output(out, svg(text)))
    console().print(f"wrote {' and '.join(str(p) for p in written)}")
