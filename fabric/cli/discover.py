"""`fabric discover --lldp DIR --running DIR -o NEWINV`: a drafted inventory from a running fabric's saved LLDP
outputs (as `fabric cabling --from` reads them) and running configs (as `fabric fetch` saves them)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import typer

from fabric.cli.console import console
from fabric.cli.saved import files, raise_problems, read_lldp
from fabric.discover import Running, draft
from fabric.errors import InputError, Problem
from fabric.lint.configs import parse_file
from fabric.model.inventory import NAME
from fabric.model.running import nvue_document, read_running
from fabric.nos import NOS


def _named(device: str, _kind: str) -> str | None:
    """Every LLDP output is read, its file named by a device name the inventory would take."""
    return None if re.match(NAME, device) else f"a file named <device>.<format>, the device's name matching {NAME}"


def _document(target: str, path: Path, text: str) -> Any:
    """The tree of a SONiC config_db or an NVUE config (already checked by `read_running`); None for CLI text."""
    if NOS[target].running_shape == "config_db":
        return json.loads(text)
    if NOS[target].running_shape == "nvue":
        return nvue_document(path, text, located=False)[0]
    return None


def read_configs(directory: Path) -> dict[str, Running]:
    """Switch → its saved running config, DIR/<switch>.json|.yaml|.cfg|.conf (`fabric fetch`'s names)."""
    suffixes = {n.running_suffix: n.name for n in NOS.values()}
    found: dict[str, Running] = {}
    problems: list[Problem] = []
    for entry in files(directory, "--running", "saved running configs"):
        suffix = next((s for s in suffixes if entry.name.endswith(s)), None)
        if suffix is None:
            continue
        name, target, path = entry.name[: -len(suffix)], suffixes[suffix], Path(entry.path)
        if not re.match(NAME, name):
            problems.append(Problem(entry.path, None, "", f"a switch name matching {NAME}", repr(name[:80])))
            continue
        try:
            text = read_running(target, path)
            config = parse_file(path, directory, {name: target})
            if config is not None:
                found[name] = Running(target=target, config=config, text=text, document=_document(target, path, text))
        except InputError as exc:
            problems += exc.problems
    raise_problems(problems, bool(found), Problem(str(directory), None, "--running", "saved running configs "
                                          "(<switch>.json|.yaml|.cfg|.conf, as fabric fetch saves them)", "none"))
    return found


def discover(
    lldp: Path = typer.Option(..., "--lldp", help="directory of saved LLDP outputs, as `fabric cabling --from` "
                              "reads them"),
    running: Path = typer.Option(..., "--running", help="directory of saved running configs, as `fabric fetch` "
                                 "saves them"),
    output: Path = typer.Option(..., "--output", "-o", help="inventory directory to write"),
    name: str | None = typer.Option(None, help="fabric name; default the directory name"),
    force: bool = typer.Option(False, "--force", help="replace an existing inventory directory"),
) -> None:
    """Draft an inventory from a running fabric (LLDP and saved configs); it is written only if it validates."""
    from fabric.design.load import load_deriver
    from fabric.generate import write_staged

    result = draft(read_lldp(lldp, "--lldp", _named, "saved LLDP outputs"), read_configs(running),
                   name or output.name)
    checked = []
    paths = write_staged(result.files, output, check=lambda d: checked.append(load_deriver(d).topo), force=force)
    out = console()
    for note in result.notes:
        out.print(f"  {note}", markup=False, highlight=False)
    topo = checked[-1]
    out.print(f"wrote {len(paths)} files to {output}: {len(topo.hosts)} hosts, {len(topo.switches)} switches, "
              f"{len(topo.links)} links; review the guesses (# comments) before using it", markup=False,
              highlight=False)
