"""`fabric cabling INV --from DIR` (saved outputs) or `--lab` (the running lab, live): the cabling LLDP shows
against the model's, cable by cable."""

from __future__ import annotations

import html
import io
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import typer
from rich.console import Console
from rich.text import Text

from fabric.cli.console import console, styled
from fabric.cli.saved import read_lldp
from fabric.design.cabling import Cabling, Names, Status, judge, judge_topology
from fabric.design.topology import Topo
from fabric.errors import InputError, Problem, UsageError
from fabric.parsers.lldp import Lldp
from fabric.safefile import write_output
from fabric.serialize import dumps_json

FORMATS = ("table", "json", "junit", "svg", "dot", "html")
PICTURES = {".svg": "svg", ".dot": "dot", ".html": "html"}  # -o FILE with these endings draws the report
STYLE = {Status.miswired: "red", Status.unexpected: "red", Status.missing: "red", Status.half_seen: "yellow",
         Status.unread: "yellow", Status.ok: "green"}


def cabling(
    inventory: Path = typer.Argument(..., help="inventory directory (inventories/<name>)"),
    source: Path | None = typer.Option(None, "--from", help="directory of saved LLDP outputs: <device>.lldp-sonic "
                                       "(show lldp table), .lldp-nvue, .lldp-eos (show lldp neighbors detail | json), "
                                       ".lldpctl (lldpctl -f json: hosts, FRR, or SONiC's and Cumulus' lldpd)"),
    lab: bool = typer.Option(False, "--lab", help="instead: read the running lab's LLDP live (each switch's driver, "
                             "each host's lldpctl), as the acceptance check `cabling` does"),
    fmt: str | None = typer.Option(None, "--format", "-f", help="table, json, junit, or a picture of every link "
                                   "coloured by its state: svg, dot or html (default: table, or the ending of -o)"),
    output: Path | None = typer.Option(None, "--output", "-o", help="write the report here instead of stdout"),
    su: int | None = typer.Option(None, "--su", help="picture: this SU device by device (a large fabric is drawn "
                                  "as an overview)"),
) -> None:
    """Check the cables in the hall (LLDP) against the model. Exit 0 all ok, 1 problems, 2 bad input."""
    from fabric.design.load import load_deriver

    fmt = fmt or PICTURES.get(output.suffix if output else "", "table")
    if fmt not in FORMATS:
        raise InputError(Problem("--format", None, "", f"one of {', '.join(FORMATS)}", repr(fmt)))
    if su is not None and fmt not in PICTURES.values():
        raise InputError(Problem("--su", None, "", "a picture (--format svg, dot or html)", f"--format {fmt}"))
    if (source is None) == (not lab):
        raise UsageError(f"expected one of --from DIR or --lab, found {'both' if lab else 'neither'}")
    topo = load_deriver(inventory).topo
    result = _live(inventory) if lab else judge_topology(topo, read_saved(source, topo))  # type: ignore[arg-type]
    if fmt == "table" and output is None:
        table(result, console(soft_wrap=True))
    else:
        text = to_json(result) if fmt == "json" else to_junit(result) if fmt == "junit" else \
            drawn(topo, result, fmt, su) if fmt in PICTURES.values() else _table_text(result)
        if output is not None:
            write_output(output, text)
        else:
            typer.echo(text, nl=False)
    if result.failed:
        sys.exit(1)  # not typer.Exit: the app runs with standalone_mode=False, which swallows it


def drawn(topo: Topo, result: Cabling, fmt: str, su: int | None) -> str:
    """The report as a picture (fabric.render.graph): DOT, graphviz's SVG of it, or an HTML page of the faults
    and the SVG."""
    from fabric.cli.graph import picture, svg

    dot = picture(topo, su, cabling=result)
    if fmt == "dot":
        return dot
    image = svg(dot)
    if fmt == "svg":
        return image
    body = image[image.index("<svg"):]  # graphviz's XML declaration and DOCTYPE stay out of the page
    faults = html.escape("".join(f"{i}  {line}\n" if i <= len(result.faults) else f"{line}\n"
                                 for i, line in enumerate(_table_text(result).splitlines(), 1)))
    return (f"<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>fabric cabling</title>"
            "<style>pre{white-space:pre-wrap;overflow-wrap:anywhere}svg{max-width:100%;height:auto}</style>"
            f"</head><body>\n<pre>{faults}</pre>\n{body}</body></html>\n")


def _live(inventory: Path) -> Cabling:
    """The running lab's LLDP, read through its Site as the acceptance check reads a fabric's."""
    from fabric.accept.checks.cabling import read_lldp
    from fabric.cli.site import open_site

    _loaded, site = open_site(inventory, lab=True)
    fabric = site.fabric
    reports, _unread = read_lldp(site, fabric, sorted(fabric.switches) + sorted(fabric.hosts))
    return judge(fabric.links, Names.of_intent(fabric), reports)


def _table_text(result: Cabling) -> str:
    buf = io.StringIO()
    table(result, console(file=buf, width=200))
    return buf.getvalue()


def summary(result: Cabling) -> str:
    counts = ", ".join(f"{n} {s}" for s, n in result.counts.items() if n)
    devices = result.read + len(result.unread)
    return f"{sum(result.counts.values())} links: {counts or 'none'}; LLDP read from {result.read} of {devices} devices"


def table(result: Cabling, con: Console) -> None:
    """The faults, one line per cable to fix (never wrapped: a line is what to paste into a ticket), then the
    counts."""
    width = max((len(f.status.value) for f in result.faults), default=0)
    for f in result.faults:
        con.print(Text.assemble(styled(f.status.value.ljust(width), STYLE[f.status]), "  ", f.message), soft_wrap=True)
    con.print(summary(result), soft_wrap=True)


def to_json(result: Cabling) -> str:
    return dumps_json(result.model_dump(mode="json"))


def to_junit(result: Cabling) -> str:
    """One failing test case per fault, one passing case for the links found as the model has them."""
    root = ET.Element("testsuites", name="fabric cabling")
    suite = ET.SubElement(root, "testsuite", name="cabling", tests=str(len(result.faults) + 1),
                          failures=str(len(result.faults)))
    for i, f in enumerate(result.faults, 1):
        case = ET.SubElement(suite, "testcase", classname=f"fabric.cabling.{f.status.value}",
                             name=f"{i}: {(f.links or [f.message])[0]}", time="0")
        ET.SubElement(case, "failure", message=f.message, type=f.status.value).text = "\n".join(f.links)
    ok = ET.SubElement(suite, "testcase", classname="fabric.cabling.ok", name="links as the model has them", time="0")
    ET.SubElement(ok, "system-out").text = summary(result)
    root.set("tests", suite.get("tests", "0"))
    root.set("failures", suite.get("failures", "0"))
    return ET.tostring(root, encoding="unicode", xml_declaration=True) + "\n"


SAVED: dict[str, tuple[str, ...]] = {  # a device's NOS (`host` for hosts) → the extensions (parse kinds) it may have
    "sonic": ("lldp-sonic", "lldpctl"), "nvue": ("lldp-nvue", "lldpctl"), "eos": ("lldp-eos",), "frr": ("lldpctl",),
    "host": ("lldpctl",)}


def read_saved(directory: Path, topo: Topo) -> dict[str, Lldp]:
    """The LLDP reports saved in `directory` for the devices of `topo` (fabric.cli.saved.read_lldp): a file of
    another name is left alone, one in a format its device's NOS does not print is a problem."""
    def admit(device: str, kind: str) -> str | bool | None:
        nos = "host" if device in topo.hosts else topo.switches[device].target if device in topo.switches else ""
        if not nos:
            return False
        return None if kind in SAVED[nos] else f"{device}.{' or .'.join(SAVED[nos])} ({device} runs {nos})"

    return read_lldp(directory, "--from", admit, "a saved LLDP output of a device of the model")
