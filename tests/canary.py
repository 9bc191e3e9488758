"""The canary sweep: a canary secret and canary commands put into every string field of every shipped
inventory, one field at a time, then `fabric` run on it. Nothing may run (a command would create a marker file),
the operator's password (the value of the inventory's `password_env` variable) may appear in no output and no
file, and a field that holds a secret by its name (fabric.secrets.secret_field) may not show its value either. A
value the model refuses is a pass when the refusal is located (exit 2, the inventory's file).

The fields come from the inventories themselves: every string leaf of their YAML, and every string property of
the model's JSON schema in a section an inventory leaves at its defaults (`access`, `lab`, …), so a new field is
swept without a list to edit."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any
from unittest import mock

import yaml

from fabric.secrets import secret_field
from tests.fuzz.harness import Outcome, judge, run

ROOT = Path(__file__).resolve().parents[1]
SECRET = "CanarySecret7f3a9"  # put into the field: never shown where the field holds a secret
ENV_SECRET = "CanaryEnvPassword51c2"  # $FABRIC_PASSWORD while the sweep runs: never shown anywhere


def commands(marker: Path) -> list[str]:
    """Canary commands: each would create a file in `marker` if a shell, Jinja or Ansible ever ran it."""
    return [f"$(touch {marker}/dollar)", f"`touch {marker}/backtick`", f"x;touch {marker}/semicolon",
            f"x|touch {marker}/pipe", "{{ lookup('pipe','touch " + f"{marker}/jinja" + "') }}",
            "{% if lookup('pipe','touch " + f"{marker}/jinja-stmt" + "') %}{% endif %}"]


@dataclass(frozen=True)
class Field:
    inventory: str
    file: str  # the YAML file holding it ("" for a section the inventory leaves at its defaults)
    path: tuple[Any, ...]
    original: str | None

    @property
    def secret(self) -> bool:
        return any(isinstance(k, str) and secret_field(k) for k in self.path)

    def __str__(self) -> str:
        return f"{self.inventory}/{self.file or '(defaults)'}:{'.'.join(map(str, self.path))}"


def _strings(tree: Any, path: tuple[Any, ...] = ()) -> Iterator[tuple[tuple[Any, ...], str]]:
    if isinstance(tree, dict):
        for k, v in tree.items():
            yield from _strings(v, (*path, k))
    elif isinstance(tree, list):
        for i, v in enumerate(tree):
            yield from _strings(v, (*path, i))
    elif isinstance(tree, str):
        yield path, tree


def _schema_strings(schema: dict[str, Any], node: dict[str, Any], path: tuple[str, ...]) -> Iterator[tuple[str, ...]]:
    """Paths of the string properties of a (nested) object of the JSON schema; lists and maps are left out (they
    have no element to put a canary in)."""
    if "$ref" in node:
        node = schema["$defs"][node["$ref"].rsplit("/", 1)[-1]]
    for name, prop in (node.get("properties") or {}).items():
        kinds = [prop, *prop.get("anyOf", [])]
        if any(k.get("type") == "string" for k in kinds):
            yield (*path, name)
        for k in kinds:
            if "$ref" in k or k.get("type") == "object":
                yield from _schema_strings(schema, k, (*path, name))


def fields_of(inv: Path, name: str) -> list[Field]:
    """Every string field of the inventory `inv` (`name`: its folder under inventories/, or its absolute path)."""
    from fabric.model.inventory import Inventory

    schema = Inventory.model_json_schema()
    out: list[Field] = []
    sections: set[str] = set()
    for f in sorted(inv.glob("*.yaml")):
        doc = yaml.safe_load(f.read_text()) or {}
        sections |= set(doc)
        out += [Field(name, f.name, p, v) for p, v in _strings(doc)]
    for section, node in schema["properties"].items():
        if section not in sections:
            out += [Field(name, "", p, None) for p in _schema_strings(schema, node, (section,))]
    return out


@cache
def fields() -> tuple[Field, ...]:
    """Every string field of every shipped inventory."""
    return tuple(f for inv in sorted(p for p in (ROOT / "inventories").iterdir() if p.is_dir())
                 for f in fields_of(inv, inv.name))


def planted(field: Field, value: str, dest: Path) -> Path:
    """A copy of the field's inventory in dest/inv with `value` at the field."""
    inv = dest / "inv"
    shutil.copytree(ROOT / "inventories" / field.inventory, inv)  # an absolute `inventory` stays itself
    if field.file:
        doc = yaml.safe_load((inv / field.file).read_text())
        node = doc
        for k in field.path[:-1]:
            node = node[k]
        node[field.path[-1]] = value
        (inv / field.file).write_text(yaml.safe_dump(doc, sort_keys=False, allow_unicode=True, width=10**9))
    else:
        doc: dict[str, Any] = {}
        node = doc
        for k in field.path[:-1]:
            node = node.setdefault(k, {})
        node[field.path[-1]] = value
        (inv / "canary.yaml").write_text(yaml.safe_dump(doc, allow_unicode=True, width=10**9))
    return inv


def values(marker: Path) -> list[str]:
    """The planted values, one run each: the secret with one canary command (short, to pass length limits)."""
    return [SECRET + c for c in commands(marker)]


def offline_commands(inv: Path, out: Path, field: Field) -> list[list[str]]:
    """Every command that runs offline on an inventory, its outputs under `out`."""
    saved = saved_running(field.inventory)
    return [["validate", str(inv)], ["lint", str(inv), "--format", "json"], ["render", str(inv), "-o", str(out / "r")],
            ["explain", str(inv), "leaf-su1-r1"], ["show", str(inv), "leaf-su1-r1"],
            ["plan", str(inv), "--offline"], ["plan", str(inv), "--running", str(saved), "--limit", "leaf-su1-r1",
                                             "--format", "json"],
            *(["export", str(inv), "-f", f] for f in ("slurm", "slurm-block", "slurm-yaml", "k8s-labels",
                                                       "k8s-label-script", "volcano", "hostfile")),
            ["export", str(inv), "-f", "prometheus", "-o", str(out / "prom")],
            ["accept", str(inv), "--dry-run", "--quick", "-o", str(out / "accept")],
            ["accept", str(inv), "--render-only", "--launcher", "k8s", "--image", "registry.example/nccl:1", "-o",
             str(out / "k8s")],
            ["hosts", "inventory", str(inv)]]


@cache
def saved_running(inventory: str) -> Path:
    """leaf-su1-r1's rendered intent saved as its running config (what `fetch` would write), in build/."""
    from fabric.design.derive import derive
    from fabric.model.load import load
    from fabric.nos import NOS
    from fabric.render import render_switch

    fabric = derive(load(ROOT / "inventories" / inventory))
    sw = fabric.switches["leaf-su1-r1"]
    nos = NOS[sw.target]
    d = ROOT / "build" / "canary" / "running" / inventory
    d.mkdir(parents=True, exist_ok=True)
    (d / f"leaf-su1-r1{nos.running_suffix}").write_text(render_switch(sw, fabric)[nos.intended])
    return d


def check(field: Field, case: Path, inv: Path, args: list[str], outcome: Outcome) -> str | None:
    """Why this run of `args` on the planted inventory fails the sweep, or None."""
    located = ("",) if args[0] == "unshare" else (str(inv), "--", "leaf-su1-r1", "access.")  # access.*: when used
    if why := judge(outcome, located):  # a fleet run's "none of the hosts answered" names no file
        return f"{field} {args[0]}: {why}"
    ran = sorted(p.name for p in (case / "marker").iterdir())
    if ran:
        return f"{field} {' '.join(args[:2])}: canary command ran ({', '.join(ran)})"
    shown = [ENV_SECRET] + ([SECRET] if field.secret else [])
    for s in shown:
        if s in outcome.stdout or s in outcome.stderr:
            return f"{field} {args[0]}: {s} printed"
        for p in (case / "out").rglob("*"):
            if p.is_file() and s.encode() in p.read_bytes():
                return f"{field} {args[0]}: {s} written to {p.relative_to(case)}"
    return None


def sweep(field: Field, case: Path, commands_of: Any, only: int | None = None) -> tuple[list[str], int]:
    """Plant each canary value (or the `only`-th) in `field` under `case` and run every command of
    `commands_of(inv, out, field)` that the model lets through (a located refusal by `validate` stops the list);
    (problems, runs)."""
    marker = case / "marker"
    marker.mkdir(parents=True)
    env = {"FABRIC_PASSWORD": ENV_SECRET, "FABRIC_STATE": str(case / "state")}
    problems, runs = [], 0
    with mock.patch.dict(os.environ, env):
        for i, value in enumerate(values(marker)):
            if only is not None and i != only:
                continue
            for d in (case / "inv", case / "out"):
                shutil.rmtree(d, ignore_errors=True)
            (case / "out").mkdir()
            inv = planted(field, value, case)
            for args in commands_of(inv, case / "out", field):
                outcome = run(*args) if args[0] != "unshare" else _subprocess(args)
                runs += 1
                if why := check(field, case, inv, args, outcome):
                    problems.append(why)
                if args[0] == "validate" and outcome.rc == 2:
                    break  # refused, located: nothing else reads it
    return problems, runs


def quick_commands(inv: Path, out: Path, field: Field) -> list[list[str]]:
    """The bounded sweep of `make test`: load and derive, render every file, and the Ansible inventory."""
    return [["validate", str(inv)], ["render", str(inv), "-o", str(out / "r")], ["hosts", "inventory", str(inv)]]


def fleet_commands(inv: Path, out: Path, field: Field) -> list[list[str]]:
    """`hosts plan` and `hosts apply` through ansible-runner in a network namespace with no route (Ansible
    templates connection and task variables before it connects; nothing leaves the machine)."""
    fabric = str(Path(sys.executable).parent / "fabric")
    return [["validate", str(inv)],
            *(["unshare", "-rn", fabric, "hosts", mode, str(inv), "--limit", "gpu-su1-01", "--forks", "1",
               "--format", "json"] for mode in ("plan", "apply"))]


def _subprocess(args: list[str]) -> Outcome:
    try:
        p = subprocess.run(args, capture_output=True, text=True, timeout=180, env={**os.environ})
    except subprocess.TimeoutExpired:
        return Outcome(-1, "", "", 0, "hang (subprocess)")
    return Outcome(p.returncode, p.stdout, p.stderr, 0)


def report(problems: list[str], runs: int, n_fields: int) -> str:
    return json.dumps({"fields": n_fields, "runs": runs, "problems": problems[:20]}, indent=2)
