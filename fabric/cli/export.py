"""`fabric export INVENTORY --format …`: write the fabric's topology for a scheduler or launcher."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from fabric.export import DEFAULT_PREFIX, ExportFormat, export


def export_command(
    inventory: Annotated[Path, typer.Argument(help="inventory directory of YAML files", show_default=False)],
    fmt: Annotated[ExportFormat, typer.Option("--format", "-f", help="what to write")],
    output: Annotated[Path | None, typer.Option("-o", "--output", help="file to write; default stdout")] = None,
    label_prefix: Annotated[str, typer.Option(
        "--label-prefix", help="prefix of the Kubernetes label keys (k8s-labels, k8s-label-script, volcano)")
    ] = DEFAULT_PREFIX,
) -> None:
    """Topology for Slurm (tree, block), Kubernetes node labels, Volcano HyperNodes or an MPI hostfile."""
    from fabric.design.derive import derive
    from fabric.model.load import load

    text = export(derive(load(inventory)), fmt, label_prefix)
    if output is None:
        sys.stdout.write(text)
        return
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_text(text)
    if fmt is ExportFormat.k8s_label_script:
        output.chmod(0o755)
    typer.echo(f"wrote {output} ({fmt.value}, {text.count(chr(10))} lines)", err=True)
