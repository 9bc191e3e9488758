"""Saved device outputs in a directory, one file per device: the LLDP reader that `fabric cabling --from` and
`fabric discover --lldp` share, and how both report the files they cannot read (all at once, located)."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

from fabric.errors import InputError, Problem
from fabric.parsers import read_input
from fabric.parsers.lldp import PARSERS, Lldp

LLDP_KINDS = sorted(PARSERS, key=len, reverse=True)  # the file endings, longest first
LLDP_FILES = "<device>.lldp-sonic|lldp-nvue|lldp-eos|lldpctl"
MAX_PROBLEMS = 50  # unreadable files listed; the rest are counted

# (device, kind) of a file → None to read it, False to leave it alone, or what was expected instead (a problem)
Admit = Callable[[str, str], str | bool | None]


def files(directory: Path, option: str, what: str) -> list[os.DirEntry[str]]:
    """The files in `directory` by name; a missing directory is a problem of `option`."""
    if not directory.is_dir():
        raise InputError(Problem(str(directory), None, option, f"a directory of {what}", "no such directory"))
    return sorted((e for e in os.scandir(directory) if e.is_file()), key=lambda e: e.name)


def raise_problems(problems: list[Problem], found: bool, empty: Problem) -> None:
    """Every unreadable file at once (at most MAX_PROBLEMS listed, the rest counted), or `empty` where nothing was
    found."""
    if problems:
        more = len(problems) - MAX_PROBLEMS
        rest = [Problem(empty.file, None, "", "readable files", f"{more} more unreadable")] if more > 0 else []
        raise InputError(problems[:MAX_PROBLEMS] + rest)
    if not found:
        raise InputError(empty)


def read_lldp(directory: Path, option: str, admit: Admit, wanted: str) -> dict[str, Lldp]:
    """Device → its LLDP report, from `directory`/<device>.<kind> (a kind of fabric.parsers.lldp.PARSERS) for the
    files `admit` lets through, one per device; other files are left alone. Every unreadable or refused file is a
    located problem, raised together; none found is a problem naming `wanted`."""
    reports: dict[str, Lldp] = {}
    names: dict[str, str] = {}
    problems: list[Problem] = []
    for entry in files(directory, option, "saved LLDP outputs"):
        kind = next((k for k in LLDP_KINDS if entry.name.endswith(f".{k}")), None)
        device = entry.name[: -len(kind) - 1] if kind is not None else ""
        verdict = admit(device, kind) if kind is not None else False
        if kind is None or verdict is False:
            continue
        if isinstance(verdict, str):
            problems.append(Problem(entry.path, None, "", verdict, entry.name))
        elif device in names:
            problems.append(Problem(entry.path, None, "", f"one LLDP output of {device}",
                                    f"{names[device]} and {entry.name}"))
        else:
            names[device] = entry.name
            try:
                reports[device] = PARSERS[kind](read_input(entry.path), entry.path)
            except InputError as exc:
                problems += exc.problems
    raise_problems(problems, bool(reports), Problem(str(directory), None, option, f"{wanted} ({LLDP_FILES})",
                                                    "none"))
    return reports
