"""Renderers: intent → files. Structured formats are serialized from data, text formats use Jinja2.

Each target module exposes `render(device_intent, fabric_intent) -> Files`, a mapping of relative
file names to their content. Output is deterministic: same intent, byte-identical files.
"""

from __future__ import annotations

import importlib
import json
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


def dumps_json(data: Any) -> str:
    """Stable JSON: sorted keys, two-space indent, trailing newline."""
    return json.dumps(data, indent=2, sort_keys=True) + "\n"


def render_switch(sw: SwitchIntent, fabric: FabricIntent) -> Files:
    return importlib.import_module(f"fabric.render.{sw.target}").render(sw, fabric)


def render_host(host: HostIntent, fabric: FabricIntent) -> Files:
    return importlib.import_module("fabric.render.host").render(host, fabric)


def render_fabric(fabric: FabricIntent, only: set[str] | None = None) -> dict[str, Files]:
    """Every device's files keyed by `switches/<name>` or `hosts/<name>`, in a stable order."""
    out: dict[str, Files] = {}
    for name, sw in fabric.switches.items():
        if not only or name in only:
            out[f"switches/{name}"] = render_switch(sw, fabric)
    for name, host in fabric.hosts.items():
        if not only or name in only:
            out[f"hosts/{name}"] = render_host(host, fabric)
    if not only:
        from fabric.render.host import network_attachments

        if k8s := network_attachments(fabric):
            out["k8s"] = k8s
    return out


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
