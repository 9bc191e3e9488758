"""`lint INV --configs DIR` takes a saved NVUE file that is byte for byte its switch's render from the renderer's
tree instead of reading it: the same configs, lines and findings as reading it.

- `_PatchLines` answers, for every key path of every rendered patch of every example and fixture inventory forced
  to NVUE and of a generated fabric, the line the loader's SourceMap gives, and for a path below a leaf or with a
  key the file lacks its nearest ancestor's line, as `SourceMap.where` does.
- `parse_rendered` gives what `parse` gives on the same text (every field, every line the QoS view locates).
- The lint of a directory of renders, some of them edited, gives the same findings in every format and exit code
  with and without the renderer's trees.
"""

from __future__ import annotations

import dataclasses
import gc
import shutil
import types
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from fabric.cli.lint import _renderer, run_lint
from fabric.design.derive import derive
from fabric.errors import InputError
from fabric.fast.blockyaml import load_block
from fabric.fast.memo import Memo
from fabric.generate import GpuRailSpec
from fabric.generate import write as write_inventory
from fabric.lint import configs as lint_configs
from fabric.lint import output
from fabric.lint.context import Context
from fabric.lint.core import Severity
from fabric.model.load import load
from fabric.model.source import SourceMap
from fabric.nos.nvue import configs as nvue_configs
from fabric.nos.nvue.render import render, rendered_tree
from tests.conftest import ROOT

INVENTORIES = [p for p in sorted((ROOT / "inventories").iterdir()) + sorted(
    (ROOT / "tests" / "fixtures" / "inventories").iterdir()) if (p / "fabric.yaml").is_file()]


@pytest.fixture(scope="module")
def generated(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("gen") / "g"
    write_inventory(GpuRailSpec(gpus=1024, hosts_per_su=16), out)
    return out


def _patches(generated: Path) -> list[tuple[str, str, dict]]:
    """(switch, patch, renderer's tree) of every switch of every inventory, rendered as NVUE."""
    out = []
    for inv in [*INVENTORIES, generated]:
        try:
            fabric = derive(load(inv), "nvue")
        except InputError:  # a fixture that is invalid on purpose
            continue
        for sw in fabric.switches.values():
            patch = render(sw, fabric, extras=False)["nvue-patch.yaml"]
            out.append((sw.name, patch, rendered_tree(patch)))
    return out


@pytest.fixture(scope="module")
def patches(generated: Path) -> list[tuple[str, str, dict]]:
    got = _patches(generated)
    assert len(got) > 100
    return got


def test_patch_lines_are_the_loaders_lines(patches: list[tuple[str, str, dict]]) -> None:
    for name, patch, tree in patches:
        smap = SourceMap()
        smap.files.append("f")
        load_block(patch, smap.lines, "f")
        found = nvue_configs._PatchLines(patch, tree)
        for loc, (_f, line) in smap.lines.items():
            if loc[:2] != (0, "set") or len(loc) == 2:
                continue
            key = loc[2:]
            assert found(*key) == line, (name, loc)
            for extra in (("no-such-key",), (7,), ("no-such-key", "x")):
                assert found(*key, *extra) == smap.where((*loc, *extra))[1], (name, loc, extra)
        assert found("no-such-key") == smap.where((0, "set", "no-such-key"))[1] == 1


def _fields(dev: object) -> dict:
    out = {}
    for f in dataclasses.fields(dev):  # type: ignore[arg-type]
        value = getattr(dev, f.name)
        if f.name == "qos" and value is not None:
            keys = ["dscp_map", "pfc", "ets", "ecn", *(f"ets.{t}" for t in range(8)), *(f"ecn.{t}" for t in range(8))]
            value = ({g.name: getattr(value, g.name) for g in dataclasses.fields(value) if g.name != "at"},
                     [value.at(k) for k in keys])
        out[f.name] = value
    return out


def test_parse_rendered_gives_what_parse_gives(patches: list[tuple[str, str, dict]]) -> None:
    """With the memo the patches of one directory share (as `lint --configs` reads them) and without it."""
    memo = Memo()
    for name, patch, tree in patches:
        path = Path(f"/x/{name}.yaml")
        full = _fields(nvue_configs.parse(path, name, patch))
        for shared, again in ((memo, None), (None, None), (memo, lambda patch=patch: patch)):
            fast = nvue_configs.parse_rendered(path, name, patch, tree, shared, again)
            assert fast is not None, name
            assert _fields(fast) == full, name
    assert nvue_configs.parse_rendered(Path("/x/s.yaml"), "s", "set:\n  a: 1\n", {"a": 1}) is None


@pytest.mark.parametrize(("text", "tree"), [("- set:\n    'a': 1\n", {"a": 1}), ("- set:\n    b: 1\n", {"a": 1}),
                                          ("- set:\n    - 1\n", {"a": 1}), ("- set:\n    a: 1\n", {1: 1}),
                                          ("- set:\n    b: 1\n    a: 1\n", {"a": 1, "b": 1})])
def test_patch_lines_step_aside_where_the_text_is_not_the_trees(text: str, tree: dict) -> None:
    with pytest.raises(LookupError):
        nvue_configs._PatchLines(text, tree)("a")


def _edit(running: Path) -> None:
    files = sorted(running.glob("*.yaml"))
    files[0].write_text(files[0].read_text().replace("mtu: 9216", "mtu: 1500", 1))
    files[1].write_text(files[1].read_text().replace("    interface:\n", "    interface:\n      swp77:\n        "
                                                     "link:\n          mtu: 1400\n        type: swp\n", 1))
    files[2].write_text(files[2].read_text() + "\n")  # the same tree, another text: read
    files[3].write_text(files[3].read_text().replace("state: enable", "state: disable"))


@pytest.mark.parametrize("early", [True, False])
def test_lint_of_saved_renders_is_the_lint_of_reading_them(generated: Path, tmp_path: Path, early: bool,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    running = tmp_path / "running"
    running.mkdir()
    fabric = derive(load(generated))
    for name, sw in fabric.switches.items():
        (running / f"{name}.yaml").write_text(render(sw, fabric, extras=False)["nvue-patch.yaml"])
    shutil.copy(running / f"{next(iter(fabric.switches))}.yaml", running / "unknown-switch.yaml")
    _edit(running)
    if not early:
        monkeypatch.setattr(lint_configs, "EarlyParse", lambda _root: None)
    taken: list[str] = []
    real = nvue_configs.parse_rendered

    def counted(path: Path, name: str, text: str, tree: dict, memo: Memo | None = None,
                again: Callable[[], str | None] | None = None) -> object:
        taken.append(name)
        return real(path, name, text, tree, memo, again)

    monkeypatch.setattr(nvue_configs, "parse_rendered", counted)
    fast = run_lint(generated, running)
    assert len(taken) == len(fabric.switches) - 4
    with monkeypatch.context() as m:
        m.setattr("fabric.cli.lint._renderer", lambda _intent: None)
        full = run_lint(generated, running)
    assert fast.model_dump() == full.model_dump() and fast.findings
    for show in (output.to_json, output.to_sarif, output.to_github, lambda r: output.to_junit(r, Severity.warning)):
        assert show(fast) == show(full)
    assert fast.failed(Severity.warning) == full.failed(Severity.warning)
    assert _renderer(fabric)("no-such-switch") is None


def _strings(root: object) -> Iterator[str]:
    """Every string reachable from `root` (a function through its closure only, not its module)."""
    seen: set[int] = set()
    stack = [root]
    while stack:
        obj = stack.pop()
        if id(obj) in seen or isinstance(obj, (type, types.ModuleType)):
            continue
        seen.add(id(obj))
        if isinstance(obj, str):
            yield obj
        elif isinstance(obj, types.FunctionType):
            stack += [c.cell_contents for c in obj.__closure__ or ()]
        else:
            stack += gc.get_referents(obj)


def test_configs_of_saved_renders_hold_no_file_text(generated: Path, tmp_path: Path) -> None:
    """A saved render's config does not keep the file's text for the lines of its ports and neighbours (a 262k-GPU
    fabric's patches are 0.9 GB): the text is made again from the intent when a finding asks for a line."""
    running = tmp_path / "running"
    running.mkdir()
    loaded = load(generated)
    fabric = derive(loaded)
    for name, sw in fabric.switches.items():
        (running / f"{name}.yaml").write_text(render(sw, fabric, extras=False)["nvue-patch.yaml"])
    cs = lint_configs.load_configs(running, Context(loaded, fabric), None, _renderer(fabric))
    texts = {p.read_text() for p in running.iterdir()}
    assert not texts & set(_strings(cs.devices))
    dev = cs.devices[0]
    read = nvue_configs.parse(Path(dev.file), dev.name, Path(dev.file).read_text())
    assert [(p.name, p.line) for p in dev.ports.values()] == [(p.name, p.line) for p in read.ports.values()]
    assert [(n.peer, n.line) for n in dev.neighbors] == [(n.peer, n.line) for n in read.neighbors]
