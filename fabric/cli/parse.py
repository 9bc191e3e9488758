"""`fabric parse KIND FILE`: parse one tool output and print it as JSON."""

from __future__ import annotations

import json
from enum import StrEnum

import typer

from fabric.parsers import parse_file

app = typer.Typer(
    add_completion=False,
    pretty_exceptions_enable=False,
    help="Parse perftest, nccl-tests, iperf3, mlnx_qos, show_gids, ethtool -S and LLDP outputs to JSON.",
)


class Kind(StrEnum):
    """Output formats `fabric parse` understands."""

    perftest = "perftest"
    nccl = "nccl"
    iperf3 = "iperf3"
    mlnx_qos = "mlnx_qos"
    show_gids = "show_gids"
    ethtool = "ethtool"
    lldp_sonic = "lldp-sonic"
    lldpctl = "lldpctl"
    lldp_nvue = "lldp-nvue"
    lldp_eos = "lldp-eos"


@app.command("parse")
def parse(
    kind: Kind = typer.Argument(
        ...,
        help="perftest (text or --out_json), nccl, iperf3 (-J), mlnx_qos, "
        "show_gids (or ibv_devinfo -v), ethtool (-S), lldp-sonic (show lldp table), lldpctl (-f json, json0), "
        "lldp-nvue (interface → nv show interface <if> lldp -o json), lldp-eos (show lldp neighbors detail | json).",
    ),
    file: str = typer.Argument(..., help="Output file to read, or '-' for stdin."),
) -> None:
    """Parse FILE as KIND and print the result as JSON (sorted keys); bad input exits 2 with file:line."""
    result = parse_file(kind.value, file)
    typer.echo(json.dumps(result.model_dump(mode="json"), sort_keys=True, indent=2))
