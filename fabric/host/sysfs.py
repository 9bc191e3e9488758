"""Small helpers for one-value sysfs/configfs/debugfs files."""

from __future__ import annotations

import os
import re
from pathlib import Path

from fabric.host.model import Section
from fabric.host.step import Step, change, fail, same

_TRAILING_INT = re.compile(r"(-?\d+)\s*$")


def read_int(path: Path) -> int | None:
    """The integer a file ends with ('106', 'Global tclass=106'), or None when there is none."""
    m = _TRAILING_INT.search(path.read_text())
    return int(m[1]) if m else None


def int_file_step(path: Path, desired: int, *, section: Section, target: str, name: str) -> Step:
    """Compare an integer file with `desired`; the step writes it when it differs."""
    try:
        current = read_int(path)
    except OSError as exc:
        return fail(
            f"cannot read {path}: {exc.strerror}",
            section=section,
            target=target,
            name=name,
            desired=str(desired),
        )
    if current == desired:
        return same(section=section, target=target, name=name, current=str(current))

    def write() -> None:
        path.write_text(f"{desired}\n")

    return change(
        write,
        section=section,
        target=target,
        name=name,
        current=None if current is None else str(current),
        desired=str(desired),
    )


def pci_address(sysfs_root: Path, *candidates: str) -> str | None:
    """PCI BDF (0000:3b:00.0) behind the first `class/...` path whose `device` link resolves."""
    for rel in candidates:
        dev = sysfs_root / rel / "device"
        if dev.exists():
            name = Path(os.path.realpath(dev)).name
            if re.match(r"^[0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\.\d$", name):
                return name
    return None
