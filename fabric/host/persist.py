"""`fabric host apply --persist`: install the boot-time files (fabric.render.host.boot_files) below a root.

Each file is written only when its content or mode differs; the QoS unit (and the SR-IOV unit where
the NICs have VFs) is enabled by its multi-user.target.wants symlink. The node's CNI configs for pods
(etc/cni/multus/net.d, fabric.render.k8s) and the ib_core netns mode (etc/modprobe.d) are among the files.
"""

from __future__ import annotations

import os
from pathlib import Path

from fabric.design.intent import HostIntent
from fabric.host.step import Step, change, same
from fabric.render.host import boot_files, enabled_units
from fabric.safefile import replace_file


def install_steps(intent: HostIntent, root: Path) -> list[Step]:
    """Steps that write each file (and enable the unit) below `root` when content or mode differ."""
    steps: list[Step] = []
    for rel, (text, mode) in boot_files(intent).items():
        path = root / rel
        try:
            current = path.read_text() if path.is_file() else None
            cur_mode = path.stat().st_mode & 0o777 if current is not None else None
        except OSError:
            current, cur_mode = None, None
        if current == text and cur_mode == mode:
            steps.append(same(section="persist", target=str(path), name="file", current=f"{mode:o}"))
            continue

        def write(path: Path = path, text: str = text, mode: int = mode) -> None:
            path.parent.mkdir(parents=True, exist_ok=True)
            replace_file(path, text, mode)  # through an unpredictable temporary name, created exclusively

        steps.append(
            change(
                write,
                section="persist",
                target=str(path),
                name="file",
                op="add" if current is None else "set",
                current=None if current is None else "differs",
                desired=f"mode {mode:o}",
            )
        )
    for rel, dest in enabled_units(intent).items():
        link = root / rel
        if link.is_symlink() and os.readlink(link) == dest:
            steps.append(same(section="persist", target=str(link), name="enabled", current=dest))
            continue

        def enable(link: Path = link, dest: str = dest) -> None:
            link.parent.mkdir(parents=True, exist_ok=True)
            if link.is_symlink() or link.exists():
                link.unlink()
            link.symlink_to(dest)

        steps.append(change(enable, section="persist", target=str(link), name="enabled", op="add", desired=dest))
    return steps
