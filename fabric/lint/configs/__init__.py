"""Parse device configs (SONiC config_db.json, NVUE YAML, EOS CLI, frr.conf) for `fabric lint --configs`."""

from __future__ import annotations

import multiprocessing
import os
from pathlib import Path
from typing import TYPE_CHECKING

from fabric.design.derive import qos_facts
from fabric.errors import InputError, Problem, one_line
from fabric.lint.configs.model import ConfigSet, DeviceConfig
from fabric.model.qos import PRESETS, QosPolicy
from fabric.model.running import check_running
from fabric.model.source import read_user_file
from fabric.nos import NOS

if TYPE_CHECKING:
    from fabric.lint.context import Context

GENERIC = {"config_db", "frr", "nvue", "nvue-patch", "startup", "running-config", "config", "nv-config"}


def device_name(path: Path, root: Path) -> str:
    """`switches/leaf1/config_db.json` → leaf1; `leaf1.cfg` → leaf1."""
    return path.parent.name if path.stem in GENERIC and path.parent != root.parent else path.stem


def kind_of(path: Path, text: str) -> str | None:
    name = path.name
    if name.endswith(".json"):
        return "sonic"
    if name.endswith((".yaml", ".yml")):
        return "nvue"
    first = next((ln for ln in text.splitlines() if ln.strip() and not ln.startswith("!")), "")
    if name == "frr.conf" or name.endswith(".frr") or first.startswith("frr "):  # `show running-config` too
        return "frr"
    if name.endswith((".cfg", ".eos")) or name == "running-config":
        return "eos"
    return None


def parse_file(path: Path, root: Path) -> DeviceConfig | None:
    text = read_user_file(path, "a device config file")
    kind = kind_of(path, text)
    if kind is None:
        return None
    name = device_name(path, root)
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


def _parse_or_problems(args: tuple[Path, Path]) -> DeviceConfig | list[Problem] | None:
    try:
        return parse_file(*args)
    except InputError as exc:
        return exc.problems


def parse_files(paths: list[Path], root: Path, per_worker: int = 100) -> list[DeviceConfig]:
    """Every recognised file parsed once, in order; a large set in worker processes on every core (files are
    independent). Every malformed file is a problem of its own, all reported at once, in file order."""
    workers = min(os.cpu_count() or 1, len(paths) // per_worker)
    jobs = [(p, root) for p in paths]
    if workers <= 1:
        results = [_parse_or_problems(job) for job in jobs]
    else:
        with multiprocessing.get_context("fork").Pool(workers) as pool:
            results = pool.map(_parse_or_problems, jobs, chunksize=16)
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


def load_configs(root: Path, ctx: Context | None = None) -> ConfigSet:
    """Every recognised file below `root`, judged against the inventory's policy or the nvidia-roce preset."""
    if not root.is_dir():
        raise InputError(Problem(str(root), None, "", "a directory of device configs", "no such directory"))
    # A `fabric render` directory: only its switches/ tree holds device configs (hosts/ and k8s/ hold host
    # intent, netplan and NetworkAttachmentDefinitions, which are no switch's config).
    scan = root / "switches" if (root / "switches").is_dir() else root
    # every malformed file is a problem of its own, all reported at once
    devices = parse_files([p for p in sorted(scan.rglob("*")) if not p.is_dir()], root)
    if not devices:
        raise InputError(
            Problem(
                str(root), None, "", "config_db.json, *.yaml (NVUE), *.cfg (EOS) or frr.conf files", "none"
            )
        )
    policy = qos_facts(ctx.qos if ctx else QosPolicy.model_validate(PRESETS["nvidia-roce"]))
    host_mtu = min((r.mtu for h in ctx.hosts for r in h.rails), default=None) if ctx else None
    return ConfigSet(devices=devices, policy=policy, host_mtu=host_mtu, intent=ctx.intent if ctx else None)
