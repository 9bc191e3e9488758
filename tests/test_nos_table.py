"""The contract every NOS of the table keeps, generated from the table (one test per row): its folder has the
three modules the row's name finds, it renders the row's files for a fabric retargeted to it, `lint --configs`
picks its parser for its own file and that parser reads the render back. A NOS added as one folder and one
row is picked up: `test_readme_worked_example_is_picked_up` builds the docs' worked example ("Adding a NOS")
from the page's own text in a scratch folder, adds its row, and runs these tests on it."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from fabric.design.derive import derive
from fabric.design.intent import FabricIntent
from fabric.lint.configs import kind_of
from fabric.model.load import load
from fabric.nos import NOS, row_of
from tests.support import docs

ROOT = Path(__file__).resolve().parents[1]
PLATFORM = {"sonic": "sn5600", "nvue": "sn5600", "eos": "7060x6"}  # where each NOS runs; others a Linux white-box


def retargeted(target: str, tmp: Path) -> FabricIntent:
    """inventories/example with every role on `target` (and a platform it runs on)."""
    inv = tmp / f"example-{target}"
    shutil.copytree(ROOT / "inventories" / "example", inv)
    text = (inv / "fabric.yaml").read_text()
    new = re.sub(r"\{platform: [\w-]+, target: \w+", f"{{platform: {PLATFORM.get(target, 'linux-frr')}, "
                 f"target: {target}", text)
    assert new != text or f"target: {target}" in text
    (inv / "fabric.yaml").write_text(new)
    return derive(load(inv))


@pytest.mark.parametrize("name", sorted(NOS))
def test_folder_has_what_the_row_finds(name: str) -> None:
    row = NOS[name]
    render, configs, driver = (row.module(part) for part in ("render", "configs", "driver"))
    assert callable(render.render) and callable(configs.parse)
    assert driver.DRIVER.target == name and all(row_of(m.__name__) is row for m in (render, configs, driver))
    assert row.intended in row.files and row.releases
    ports = [row.port_name(1, 8, i) for i in range(64)]
    assert len(set(ports)) == 64, ports


@pytest.mark.parametrize("name", sorted(NOS))
def test_renders_its_files_and_reads_them_back(name: str, tmp_path: Path) -> None:
    row = NOS[name]
    fabric = retargeted(name, tmp_path)
    for sw in fabric.switches.values():
        files = row.module("render").render(sw, fabric)
        assert set(row.files) <= set(files), (sw.name, sorted(files))
        saved = tmp_path / "configs" / f"{sw.name}{row.running_suffix}"
        assert kind_of(tmp_path / sw.name / row.intended, name) == name and kind_of(saved, name) == name
        saved.parent.mkdir(exist_ok=True)
        saved.write_text(files[row.intended])
        dev = row.module("configs").parse(saved, sw.name, files[row.intended])
        assert (dev.kind, dev.name, dev.asn) == (name, sw.name, sw.bgp.asn), (dev.kind, dev.name, dev.asn)


# -- the docs' worked example -- ------------------------------------------------------------------------

def worked_example() -> dict[str, str]:
    """The docs' worked example: {path: code} of each block under "Worked example" in "Adding a NOS", its
    first line a comment naming the file (the row's block names fabric/nos/__init__.py)."""
    example = docs.page("adding-a-nos.md").split("## Worked example", 1)[1]
    blocks = re.findall(r"```python\n(.*?)```", example, re.S)
    out = {}
    for block in blocks:
        head, _, body = block.partition("\n")
        out[head.removeprefix("# ").split(" ", 1)[0].rstrip(":,")] = body
    return out


# Loaded by `pytest -p` before any test module imports the project: the folder of the example becomes a folder of
# fabric/nos (from a scratch directory) and its row joins the table, as the two edits the docs show would.
PLUGIN = '''
import pathlib, fabric.nos as nos
nos.__path__.append({folder!r})
row = eval(pathlib.Path({row!r}).read_text().strip().rstrip(","), vars(nos))
nos.NOS[row.name] = row
'''


def test_readme_worked_example_is_picked_up(tmp_path: Path) -> None:
    files = worked_example()
    row = files.pop("fabric/nos/__init__.py")
    name = re.search(r'name="(\w+)"', row)[1]  # type: ignore[index]
    assert name not in NOS and set(files) == {f"fabric/nos/{name}/{m}.py" for m in ("__init__", "render", "configs",
                                                                                  "driver")}, sorted(files)
    for path, code in files.items():
        dst = tmp_path / "nosdir" / path.removeprefix("fabric/nos/")
        dst.parent.mkdir(parents=True, exist_ok=True)
        dst.write_text(code)
    (tmp_path / "row.py").write_text(row)
    (tmp_path / "worked_example.py").write_text(PLUGIN.format(folder=str(tmp_path / "nosdir"),
                                                              row=str(tmp_path / "row.py")))
    env = {**os.environ, "PYTHONPATH": f"{tmp_path}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    p = subprocess.run([sys.executable, "-m", "pytest", "-p", "worked_example", "-q", "-p", "no:cacheprovider",
                        __file__, "-k", f"[{name}]", "-o", "addopts="],
                       capture_output=True, text=True, cwd=ROOT, env=env, timeout=300)
    assert p.returncode == 0 and "2 passed" in p.stdout, p.stdout[-3000:] + p.stderr[-2000:]
