"""Parse device configs (SONiC config_db.json, NVUE YAML, EOS CLI, frr.conf) for `fabric lint --configs`."""

from __future__ import annotations

import multiprocessing
import os
import stat
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from fabric.design.derive import qos_facts
from fabric.errors import InputError, Problem, one_line
from fabric.fast.batch import fork_map
from fabric.fast.memo import Memo
from fabric.lint.configs.model import ConfigSet, DeviceConfig
from fabric.model.qos import PRESETS, QosPolicy
from fabric.model.running import check_running
from fabric.model.userfile import read_user_file
from fabric.nos import NOS

if TYPE_CHECKING:
    from fabric.lint.context import Context

# file names that name no device (its folder does): each NOS's pushed file and the usual names of saved configs
GENERIC = {Path(n.intended).stem for n in NOS.values()} | {"nvue", "startup", "config", "nv-config"}


def device_name(path: Path, root: Path) -> str:
    """`switches/leaf1/config_db.json` → leaf1; `leaf1.cfg` → leaf1."""
    return path.parent.name if path.stem in GENERIC and path.parent != root.parent else path.stem


def kind_of(path: Path, target: str | None = None) -> str | None:
    """The NOS whose parser reads `path`, from the table (fabric.nos), never from the content: the file a NOS
    renders and pushes (`Nos.intended`: config_db.json, nvue-patch.yaml, running-config.cfg, frr.conf) or a saved
    running configuration `<switch><Nos.running_suffix>` (.json, .yaml, .cfg, .conf); where the inventory names the
    switch (`target`), its own row wins. A NOS's other rendered files (sonic's sysctl.conf, nvue's nv-set.txt, frr's
    interfaces.sh) are read by their NOS's parser beside the main file, never on their own."""
    name = path.name
    if any(name in n.files and name != n.intended for n in NOS.values()):
        return None
    fits = [n.name for n in NOS.values() if name == n.intended or name.endswith(n.running_suffix)]
    if target in fits:
        return target
    candidates = [n.name for n in NOS.values() if name == n.intended] or fits
    return candidates[0] if len(candidates) == 1 else None


# a switch's name → (its target, the file its NOS pushes as rendered, the renderer's own tree of it), where its
# renderer keeps that tree (NVUE: `fabric.render.rendered_tree`); None otherwise
Rendered = Callable[[str], "tuple[str, str, Any] | None"]


def _as_rendered(kind: str, name: str, text: str, path: Path, rendered: Rendered, memo: Memo
                 ) -> DeviceConfig | None:
    """The config of a file that is byte for byte what the inventory renders for its switch, from the renderer's
    tree without reading the text (the NOS's `parse_rendered`, `memo` what the files share); None where it is
    not."""
    parser = NOS[kind].module("configs")
    got = rendered(name)
    if got is None or got[0] != kind or got[1] != text:
        return None
    return parser.parse_rendered(path, name, text, got[2], memo, _again(rendered, name))


def _head(path: Path, kind: str | None) -> bytes | None:
    """How a file of `kind` starts where this tool rendered it (the NOS parser's RENDERED_HEAD), if `path`, a regular
    file, starts so (read without opening anything else, a FIFO say); None otherwise."""
    head = getattr(NOS[kind].module("configs"), "RENDERED_HEAD", None) if kind is not None else None
    if head is None:
        return None
    try:
        if not stat.S_ISREG(path.stat().st_mode):
            return None
        with path.open("rb") as fh:
            return head if fh.read(len(head)) == head else None
    except OSError:
        return None


def _candidate(path: Path, root: Path, targets: dict[str, str]) -> tuple[str, str, str] | None:
    """(switch name, kind, text) of a file that starts as this tool renders it; None otherwise (or where it cannot
    be read: `parse_file` then says why)."""
    name = device_name(path, root)
    kind = kind_of(path, targets.get(name))
    if _head(path, kind) is None:
        return None
    try:
        return name, kind, read_user_file(path, "a device config file")  # type: ignore[return-value]
    except InputError:
        return None


def _again(rendered: Rendered, name: str) -> Callable[[], str | None]:
    """The text of `name`'s render, made again when asked (a file taken as the render: the same text)."""
    def text() -> str | None:
        got = rendered(name)
        return None if got is None else got[1]
    return text


def _rendered_file(path: Path, root: Path, targets: dict[str, str], rendered: Rendered, memo: Memo
                   ) -> DeviceConfig | None:
    """`parse_file(path, …)` where the file is byte for byte what the inventory renders for its switch; None where
    it is not (or cannot be read: `parse_file` then says why)."""
    got = _candidate(path, root, targets)
    return None if got is None else _as_rendered(got[1], got[0], got[2], path, rendered, memo)


# a switch's name → (its target, the renderer's own tree of the file its NOS pushes, a function that writes that
# tree as the file's text), without writing it, where its renderer keeps that tree; None otherwise
Trees = Callable[[str], "tuple[str, Any, Callable[[Any], str]] | None"]
Stamp = tuple[int, int, int]  # a file's inode, size and modification time (ns)
Ahead = dict[Path, tuple[str, str, Stamp]]  # (switch, kind, stamp) of a file that starts as rendered


def _stamp(path: Path) -> Stamp | None:
    try:
        st = path.stat()
    except OSError:
        return None
    return (st.st_ino, st.st_size, st.st_mtime_ns) if stat.S_ISREG(st.st_mode) else None


def ahead_of(paths: list[Path], root: Path, targets: dict[str, str], keeps_tree: Callable[[str], bool]) -> Ahead:
    """Each file of `paths` that starts as this tool renders it, of a switch whose renderer keeps the tree of that
    file (`keeps_tree`), with its stamp: what `Split` judges in two processes, each reading the file and building
    the tree itself (`_stamped`)."""
    ahead: Ahead = {}
    for p in paths:
        name = device_name(p, root)
        kind = kind_of(p, targets.get(name))
        stamp = _stamp(p)
        if kind is not None and kind == targets.get(name) and keeps_tree(name) and stamp is not None and _head(
                p, kind) is not None:
            ahead[p] = (name, kind, stamp)
    return ahead


def _stamped(path: Path, name: str, stamp: Stamp, trees: Trees) -> tuple[str, Any, Callable[[Any], str]] | None:
    """The text of a file of `ahead`, its switch's tree and that tree's writer; None where the file cannot be read,
    or was changed since `ahead_of` stamped it (the two processes read it each: they judge the same bytes)."""
    try:
        text = read_user_file(path, "a device config file")
    except InputError:
        return None
    got = trees(name) if _stamp(path) == stamp else None
    return None if got is None else (text, got[1], got[2])


def rendered_same(ahead: Ahead, trees: Trees) -> bytes:
    """Which files of `ahead` are byte for byte their switch's render (the renderer's writer of its tree), as
    `_rendered_file` compares them: a bit each, in `ahead`'s order (`same_files` reads them). The answer a forked
    process sends: as a set of paths it took ~36 bytes a file, and past the pipe's 64 KiB the sender waited until
    this process read it (1.4 s of 8.8 at 7,168 files, 2.8 s at 14,336)."""
    bits = bytearray((len(ahead) + 7) // 8)
    for i, (p, (name, _kind, stamp)) in enumerate(ahead.items()):
        got = _stamped(p, name, stamp, trees)
        if got is not None and got[2](got[1]) == got[0]:
            bits[i >> 3] |= 1 << (i & 7)
    return bytes(bits)


def same_files(files: list[Path], bits: bytes) -> set[Path]:
    """The files `rendered_same` found equal to their render, of `files` (its `ahead`'s order)."""
    return {p for i, p in enumerate(files) if bits[i >> 3] >> (i & 7) & 1}


@dataclass
class Split:
    """A directory's rendered files judged in two processes (`_from_trees`): this one builds their configs from the
    renderer's trees (`trees`) while another writes each tree as text and compares it with the file (`same()`: its
    verdict, `rendered_same(ahead, trees)`; None where it failed). Each builds a file's tree when it comes to it
    and lets it go: held all at once before the other process started, the trees and texts were 2.3 GB at 262,144
    GPUs, every page of them written again by both processes."""

    ahead: Ahead
    trees: Trees
    same: Callable[[], bytes | None]


_FAILED = object()  # a file whose `parse_rendered` raised


def _from_trees(paths: list[Path], root: Path, targets: dict[str, str], rendered: Rendered, split: Split
                ) -> dict[Path, DeviceConfig]:
    """What `_rendered_file` gives for each of `paths` (those it gives None left out), where another process
    compares the files of `split.ahead` with the render (`split.same()`) while this one builds their configs from
    the renderer's trees as though each file were the render: one that is not is then dropped, one whose config
    could not be so built is taken as `_rendered_file` takes it, as are the files not in `ahead`."""
    ahead, built, memo = split.ahead, {}, Memo()
    for p in paths:
        if p in ahead:
            name, kind, stamp = ahead[p]
            got = _stamped(p, name, stamp, split.trees)
            try:
                built[p] = _FAILED if got is None else NOS[kind].module("configs").parse_rendered(
                    p, name, got[0], got[1], memo, _again(rendered, name))
            except Exception:  # the file may not be the render: `_rendered_file` says, where it is
                built[p] = _FAILED
    bits = split.same()
    if bits is None:  # the other process failed: compare here
        verdict, built = set(ahead), {}
    else:
        verdict = same_files(list(ahead), bits)
    done: dict[Path, DeviceConfig] = {}
    for p in paths:
        if p in ahead and p not in verdict:
            continue
        dev = built.get(p, _FAILED)
        if dev is _FAILED:
            dev = _rendered_file(p, root, targets, rendered, memo)
        if dev is not None:
            done[p] = dev
    return done


def parse_file(path: Path, root: Path, targets: dict[str, str] | None = None) -> DeviceConfig | None:
    name = device_name(path, root)
    kind = kind_of(path, (targets or {}).get(name))
    if kind is None:
        return None
    text = read_user_file(path, "a device config file")
    check_running(kind, path, text)  # size, nesting and shape, as `plan --running` reads it
    try:
        return NOS[kind].module("configs").parse(path, name, text)
    except ValueError as exc:
        line = str(exc).split(":")[0].removeprefix("line ")
        raise InputError(
            Problem(
                str(path),
                int(line) if line.isdigit() else None,
                "",
                f"a valid {kind} config",
                str(exc).partition(": ")[2] or str(exc),
            )
        ) from None
    except (AttributeError, TypeError, KeyError, IndexError, OverflowError, RecursionError) as exc:
        # a config of an unexpected shape (a list where the NOS writes a mapping, …): located at the file
        raise InputError(Problem(str(path), None, "", f"a {kind} config of the NOS's structure",
                                 one_line(exc, 160))) from None


def _parse_or_problems(args: tuple[Path, Path, dict[str, str]]) -> DeviceConfig | list[Problem] | None:
    try:
        return parse_file(*args)
    except InputError as exc:
        return exc.problems


def _gather(results: list[DeviceConfig | list[Problem] | None]) -> list[DeviceConfig]:
    devices: list[DeviceConfig] = []
    problems: list[Problem] = []
    for r in results:
        if isinstance(r, list):
            problems += r
        elif r is not None:
            devices.append(r)
    if problems:
        raise InputError(problems)
    return devices


def _workers(n: int, per_worker: int) -> int:
    return min(os.cpu_count() or 1, n // per_worker)


def parse_files(paths: list[Path], root: Path, targets: dict[str, str] | None = None,
                per_worker: int = 100, rendered: Rendered | None = None, split: Split | None = None
                ) -> list[DeviceConfig]:
    """Every recognised file parsed once, in order; a large set in worker processes on every core (files are
    independent). Every malformed file is a problem of its own, all reported at once, in file order. `rendered`:
    a file that is byte for byte its switch's render is taken from the renderer's tree, in this process."""
    return _gather(_parse_all(paths, root, targets or {}, rendered, per_worker, split))


def _parse_all(paths: list[Path], root: Path, targets: dict[str, str], rendered: Rendered | None,
               per_worker: int = 100, split: Split | None = None) -> list[DeviceConfig | list[Problem] | None]:
    done: dict[Path, DeviceConfig | list[Problem] | None] = {}
    if split is not None and rendered is not None:
        done.update(_from_trees(paths, root, targets, rendered, split))
    elif rendered is not None:
        memo = Memo()
        for p in paths:
            dev = _rendered_file(p, root, targets, rendered, memo)
            if dev is not None:
                done[p] = dev
    rest = [p for p in paths if p not in done]
    done.update(zip(rest, fork_map(_parse_or_problems, [(p, root, targets) for p in rest],
                                   _workers(len(rest), per_worker)), strict=True))
    return [done[p] for p in paths]


def _scan(root: Path) -> list[Path]:
    # A `fabric render` directory: only its switches/ tree holds device configs (hosts/ and k8s/ hold host
    # intent, netplan and NetworkAttachmentDefinitions, which are no switch's config).
    scan = root / "switches" if (root / "switches").is_dir() else root
    return [p for p in sorted(scan.rglob("*")) if not p.is_dir()]


def _one_kind(path: Path) -> bool:
    """Whether at most one NOS fits the file's name: its parser then does not depend on the switch's target."""
    name = path.name
    return sum(name == n.intended or name.endswith(n.running_suffix) for n in NOS.values()) <= 1


class EarlyParse:
    """The configs of a directory parsed in worker processes while the inventory is loaded and derived (`lint INV
    --configs DIR`): a file's parse does not depend on the inventory unless several NOS fit its name, and those
    wait for the switches' targets (`result`). The same devices and problems, in the same order, as
    `load_configs` without it. A file that starts as this tool renders it waits too: where it is byte for byte the
    render of its switch, it is taken from the renderer's tree instead of being read (`result`'s `rendered`)."""

    def __init__(self, root: Path, per_worker: int = 100):
        self.root = root
        self.paths = _scan(root) if root.is_dir() else []
        self.early = [p for p in self.paths if _one_kind(p) and _head(p, kind_of(p)) is None]
        workers = _workers(len(self.early), per_worker)
        self.pool = multiprocessing.get_context("fork").Pool(workers) if workers > 1 else None
        self.pending = None if self.pool is None else self.pool.map_async(
            _parse_or_problems, [(p, root, {}) for p in self.early], chunksize=16)

    def result(self, targets: dict[str, str], rendered: Rendered | None = None, split: Split | None = None
               ) -> list[DeviceConfig]:
        if self.pending is None:
            return parse_files(self.paths, self.root, targets, rendered=rendered, split=split)
        done = dict(zip(self.early, self.pending.get(), strict=True))
        self.close()
        rest = [p for p in self.paths if p not in done]
        done.update(zip(rest, _parse_all(rest, self.root, targets, rendered, split=split), strict=True))
        return _gather([done[p] for p in self.paths])

    def close(self) -> None:
        if self.pool is not None:
            self.pool.terminate()
            self.pool.join()
            self.pool = None


def load_configs(root: Path, ctx: Context | None = None, early: EarlyParse | None = None,
                 rendered: Rendered | None = None, split: Split | None = None) -> ConfigSet:
    """Every recognised file below `root`, judged against the inventory's policy or the nvidia-roce preset;
    `early`: their parse started already (`EarlyParse` of `root`); `rendered`: the inventory's render of a switch
    (a file byte for byte that is not read again); `split`: compared with it in another process."""
    if not root.is_dir():
        raise InputError(Problem(str(root), None, "", "a directory of device configs", "no such directory"))
    targets = {n: sw.target for n, sw in ctx.intent.switches.items()} if ctx and ctx.intent else {}
    # every malformed file is a problem of its own, all reported at once
    devices = (early.result(targets, rendered, split) if early is not None
               else parse_files(_scan(root), root, targets, rendered=rendered, split=split))
    if not devices:
        raise InputError(
            Problem(
                str(root), None, "", "config_db.json, *.yaml (NVUE), *.cfg (EOS) or frr.conf files", "none"
            )
        )
    policy = qos_facts(ctx.qos if ctx else QosPolicy.model_validate(PRESETS["nvidia-roce"]))
    host_mtu = min((r.mtu for h in ctx.hosts for r in h.rails), default=None) if ctx else None
    return ConfigSet(devices=devices, policy=policy, host_mtu=host_mtu, intent=ctx.intent if ctx else None)
