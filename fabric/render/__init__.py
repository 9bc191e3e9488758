"""Renderers: intent → files. Structured formats are serialized from data, text formats use Jinja2.

Each target module exposes `render(device_intent, fabric_intent) -> Files`, a mapping of relative
file names to their content. Output is deterministic: same intent, byte-identical files.
"""

from __future__ import annotations

import importlib
import json
import multiprocessing
import os
import re
from functools import cache
from pathlib import Path
from typing import Any

import jinja2

from fabric.design.intent import FabricIntent, HostIntent, SwitchIntent

Files = dict[str, str]
TEMPLATES = Path(__file__).resolve().parent.parent.parent / "templates"


@cache
def env() -> jinja2.Environment:
    e = jinja2.Environment(loader=jinja2.FileSystemLoader(str(TEMPLATES)), undefined=jinja2.StrictUndefined,
                           keep_trailing_newline=True, trim_blocks=True, lstrip_blocks=True, autoescape=False)
    e.filters["tojson_sorted"] = lambda v: json.dumps(v, sort_keys=True)
    return e


def template(name: str, **context: Any) -> str:
    return env().get_template(name).render(**context)


_PLAIN = re.compile(r"^[A-Za-z_][A-Za-z0-9_./-]*$")
_RESERVED = {"y", "n", "yes", "no", "on", "off", "true", "false", "null", "~"}


@cache
def _string(s: str) -> str:
    return s if _PLAIN.match(s) and s.lower() not in _RESERVED else json.dumps(s)


def _scalar(v: Any) -> str:
    if isinstance(v, str):
        return _string(v)
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        return repr(v)
    return _string(str(v))


def _emit(data: Any, indent: str, out: list[str]) -> None:
    if isinstance(data, dict):
        for key in sorted(data, key=str):
            value = data[key]
            if isinstance(value, (dict, list)) and value:
                out.append(f"{indent}{_scalar(key)}:\n")
                _emit(value, indent + "  ", out)
            else:
                out.append(f"{indent}{_scalar(key)}: {_scalar(value) if value != {} and value != [] else value}\n")
    else:
        for item in data:
            if isinstance(item, (dict, list)) and item:
                inner: list[str] = []
                _emit(item, indent + "  ", inner)
                first = inner[0][len(indent) + 2:]
                out.append(f"{indent}- {first}")
                out.extend(inner[1:])
            else:
                out.append(f"{indent}- {_scalar(item)}\n")


def dumps_yaml(data: Any) -> str:
    """Block-style YAML with sorted keys for trees of dicts, lists and scalars.

    PyYAML's representer is pure Python and takes ~45 ms for one 128-port NVUE switch, minutes for
    a 32k-GPU fabric; this emitter quotes every string that YAML 1.1 could read as anything but a
    string (JSON double quotes are valid YAML), and tests load its output back with PyYAML.
    """
    out: list[str] = []
    _emit(data, "", out)
    return "".join(out)


def dumps_json(data: Any) -> str:
    """Stable JSON: sorted keys, two-space indent, trailing newline."""
    return json.dumps(data, indent=2, sort_keys=True) + "\n"


def render_switch(sw: SwitchIntent, fabric: FabricIntent) -> Files:
    return importlib.import_module(f"fabric.render.{sw.target}").render(sw, fabric)


def render_host(host: HostIntent, fabric: FabricIntent) -> Files:
    return importlib.import_module("fabric.render.host").render(host, fabric)


def network_attachments(fabric: FabricIntent) -> Files:
    return importlib.import_module("fabric.render.host").network_attachments(fabric)


def render_fabric(fabric: FabricIntent, only: set[str] | None = None, k8s: bool = True) -> dict[str, Files]:
    """Every device's files keyed by `switches/<name>` or `hosts/<name>`, in a stable order."""
    out: dict[str, Files] = {}
    for name, sw in fabric.switches.items():
        if not only or name in only:
            out[f"switches/{name}"] = render_switch(sw, fabric)
    for name, host in fabric.hosts.items():
        if not only or name in only:
            out[f"hosts/{name}"] = render_host(host, fabric)
    if k8s and not only and (nads := network_attachments(fabric)):
        out["k8s"] = nads
    return out


_SHARED: FabricIntent | None = None  # inherited by forked workers, never pickled


def _render_write(args: tuple[Path, list[str]]) -> int:
    root, names = args
    assert _SHARED is not None
    return write_tree(root, render_fabric(_SHARED, set(names), k8s=False))


def render_to(root: Path, fabric: FabricIntent, only: set[str] | None = None, workers: int | None = None) -> int:
    """Render and write every device (or `only`); large fabrics in parallel worker processes."""
    global _SHARED
    names = [n for n in [*fabric.switches, *fabric.hosts] if not only or n in only]
    workers = min(workers or os.cpu_count() or 1, max(1, len(names) // 200))
    count = 0 if only else write_tree(root, {"k8s": network_attachments(fabric)} if fabric.hosts else {})
    if workers <= 1:
        return count + write_tree(root, render_fabric(fabric, set(names), k8s=False))
    _SHARED = fabric
    try:
        chunks = [(root, names[i::workers]) for i in range(workers)]
        with multiprocessing.get_context("fork").Pool(workers) as pool:
            return count + sum(pool.map(_render_write, chunks))
    finally:
        _SHARED = None


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
