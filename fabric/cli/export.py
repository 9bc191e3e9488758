"""`fabric export INVENTORY --format …`: write the fabric's topology for a scheduler or launcher."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from fabric.errors import printable
from fabric.export import DEFAULT_PREFIX, ExportFormat, export
from fabric.safefile import output_dir, write_output, write_private

if TYPE_CHECKING:
    from fabric.design.intent import FabricIntent
    from fabric.model.load import Loaded


def export_command(
    inventory: Annotated[Path, typer.Argument(help="inventory directory of YAML files", show_default=False)],
    fmt: Annotated[ExportFormat, typer.Option("--format", "-f", help="what to write")],
    output: Annotated[Path | None, typer.Option(
        "-o", "--output", help="file to write (prometheus: a directory); default stdout")] = None,
    label_prefix: Annotated[str, typer.Option(
        "--label-prefix", help="prefix of the Kubernetes label keys (k8s-labels, k8s-label-script, volcano)")
    ] = DEFAULT_PREFIX,
) -> None:
    """Topology for Slurm (tree, block), Kubernetes node labels, Volcano HyperNodes or an MPI hostfile; Prometheus
    rules and Grafana dashboards (`-f prometheus -o DIR`)."""
    from fabric.design.load import load_fabric

    f = load_fabric(inventory)
    if fmt is ExportFormat.prometheus:
        _prometheus(f.loaded, f.intent, output)
        return
    text = export(f.intent, fmt, label_prefix)
    if output is None:
        sys.stdout.write(text)
        return
    write_output(output, text, mode=0o755 if fmt is ExportFormat.k8s_label_script else 0o644)
    typer.echo(f"wrote {printable(str(output))} ({fmt.value}, {text.count(chr(10))} lines)", err=True)


def _prometheus(loaded: Loaded, fabric: FabricIntent, output: Path | None) -> None:
    from fabric.errors import UsageError
    from fabric.export.monitoring import files

    if output is None:
        raise UsageError("--output: expected a directory for -f prometheus (rules, tests, targets, dashboards)")
    written, warnings = files(fabric, loaded.inv.monitoring)
    root = Path(os.path.realpath(output_dir(output)))  # the operator's link to a directory: followed once, here
    for rel, text in written.items():
        write_private(root / rel, text, mode=0o644)
    for line in warnings:
        typer.echo(f"warning: {line}", err=True)
    typer.echo(f"wrote {len(written)} files to {printable(str(output))} (prometheus)", err=True)
