"""Renderers: intent → files. Structured formats are serialized from data, text formats use Jinja2.

Each target module exposes `render(device_intent, fabric_intent) -> Files`, a mapping of relative
file names to their content. Output is deterministic: same intent, byte-identical files.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable
from pathlib import Path

from fabric.design.intent import FabricIntent, HostIntent, SwitchIntent
from fabric.fast.batch import fork_each, gc_paused
from fabric.fast.memo import Memo
from fabric.nos import NOS
from fabric.render import host as hostfiles
from fabric.render import k8s as k8sfiles
from fabric.render.files import TEMPLATES, Files, env, template

__all__ = ["TEMPLATES", "Files", "env", "kubernetes", "render_fabric", "render_host", "render_switch", "render_to",
           "template", "write_tree"]


def render_switch(sw: SwitchIntent, fabric: FabricIntent, *, extras: bool = True, memo: Memo | None = None) -> Files:
    """`sw`'s files; `memo` (`fabric.fast.memo`): what the switches of one fabric share, made once, where the
    caller renders many (the same files without it)."""
    return NOS[sw.target].module("render").render(sw, fabric, extras=extras, memo=memo)


def render_host(host: HostIntent, fabric: FabricIntent, *, extras: bool = True) -> Files:
    return hostfiles.render(host, fabric, extras=extras)


def kubernetes(fabric: FabricIntent) -> Files:
    """Fabric-wide Kubernetes files (k8s/): rail networks, device plugin config, pod entrypoint."""
    return k8sfiles.render(fabric)


def render_fabric(fabric: FabricIntent, only: set[str] | None = None, k8s: bool = True,
                  extras: bool = True) -> dict[str, Files]:
    """Every device's files keyed by `switches/<name>` or `hosts/<name>`, in a stable order; `extras`
    adds the review and boot-time copies (NVUE `nv set` lines, the hosts' boot files)."""
    out: dict[str, Files] = {}
    memo = Memo()
    for name, sw in fabric.switches.items():
        if not only or name in only:
            out[f"switches/{name}"] = render_switch(sw, fabric, extras=extras, memo=memo)
    for name, host in fabric.hosts.items():
        if not only or name in only:
            out[f"hosts/{name}"] = render_host(host, fabric, extras=extras)
    if k8s and not only and (files := kubernetes(fabric)):
        out["k8s"] = files
    return out


def _write_devices(root: Path, fabric: FabricIntent, names: list[str], extras: bool,
                   progress: Callable[[int], None] | None = None) -> int:
    """Render and write device by device (memory stays flat); returns the number of files written."""
    count = 0
    memo = Memo()
    with gc_paused():
        for name in names:
            sw = fabric.switches.get(name)
            files = render_switch(sw, fabric, extras=extras, memo=memo) if sw else render_host(
                fabric.hosts[name], fabric, extras=extras)
            count += _write_files(os.path.join(root, "switches" if sw else "hosts", name), files)
            if progress is not None:
                progress(1)
    return count


_CREATE = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)  # nor here
_READ = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)  # a FIFO in the way must not block


def _write_files(directory: str, files: Files) -> int:
    """Write one device's files into `directory` (made if missing) with plain system calls: a 32k-GPU render
    writes 14,000 small files, where pathlib's and the text layer's per-file work adds up. A file that already
    holds exactly these bytes is left as it is (a render over the last one: truncating and rewriting every
    unchanged file was most of the writing's system time). A directory this call made holds no file yet: its
    files are written without that look (a first render: one open per file, not two)."""
    fresh = True
    try:
        os.mkdir(directory)
    except FileExistsError:
        fresh = False
    except FileNotFoundError:
        os.makedirs(directory, exist_ok=True)
    for rel, text in files.items():
        path = os.path.join(directory, rel)
        if "/" in rel:  # hosts' cni/ configs
            os.makedirs(os.path.dirname(path), exist_ok=True)
        data = text.encode()
        if not fresh and _holds(path, data):
            continue
        fd = os.open(path, _CREATE, 0o666)
        try:
            while data:
                data = data[os.write(fd, data):]
        finally:
            os.close(fd)
    return len(files)


def _holds(path: str, data: bytes) -> bool:
    """Whether `path` is a regular file of exactly the bytes `data` (never wrong the other way: any doubt is
    False, and the file is written)."""
    try:
        fd = os.open(path, _READ)
    except OSError:
        return False
    try:
        st = os.fstat(fd)
        if st.st_size != len(data) or not stat.S_ISREG(st.st_mode):
            return False
        return os.read(fd, len(data) + 1) == data  # a short read or a file grown meanwhile: written again
    except OSError:
        return False
    finally:
        os.close(fd)


def _render_write(fabric: FabricIntent, args: tuple[Path, list[str], bool]) -> tuple[int, int]:
    root, names, extras = args
    return _write_devices(root, fabric, names, extras), len(names)


def render_to(root: Path, fabric: FabricIntent, only: set[str] | None = None, workers: int | None = None,
              extras: bool = False, progress: Callable[[int], None] | None = None) -> int:
    """Render and write every device (or `only`); large fabrics in parallel worker processes.

    `progress(n)` is called as n more devices are written (in smaller batches when it is given)."""
    names = [n for n in [*fabric.switches, *fabric.hosts] if not only or n in only]
    workers = min(workers or os.cpu_count() or 1, max(1, len(names) // 200))
    count = 0 if only else write_tree(root, {"k8s": kubernetes(fabric)} if fabric.hosts else {})
    if workers <= 1:
        return count + _write_devices(root, fabric, names, extras, progress)
    parts = workers if progress is None else workers * 16
    chunks = [(root, names[i::parts], extras) for i in range(parts)]
    for files, devices in fork_each(_render_write, fabric, chunks, workers):  # the workers inherit the fabric
        count += files
        if progress is not None:
            progress(devices)
    return count


def write_tree(root: Path, rendered: dict[str, Files]) -> int:
    """Write rendered files below `root`; returns the number of files written."""
    count = 0
    for device, files in rendered.items():
        for rel, text in files.items():
            path = root / device / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
            count += 1
    return count
