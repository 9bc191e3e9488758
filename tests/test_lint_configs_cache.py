"""Issue 27: `fabric lint INV --configs DIR` keeps its findings of an unchanged inventory and unchanged configs in
the derive cache (`fabric.design.load.verdict`, keyed by the inventory, the code and `fabric.lint.configs.digest`
of DIR): read back, they are the findings; one changed byte, an added, removed or renamed file is another entry,
whose findings are those of a run without the cache; a directory holding what the parse would refuse (a FIFO) is
never kept, and bad input is an error on every run."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

import fabric.design.load as fl
from fabric.cli.lint import run_lint
from fabric.design.derive import derive
from fabric.errors import InputError
from fabric.generate import GpuRailSpec
from fabric.generate import write as write_inventory
from fabric.lint import output
from fabric.lint.configs import digest
from fabric.model.load import load
from fabric.nos.nvue.render import render


@pytest.fixture(scope="module")
def rendered(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A generated inventory and a directory of its switches' rendered NVUE patches, one edited."""
    base = tmp_path_factory.mktemp("lintcache")
    inv, running = base / "g", base / "running"
    write_inventory(GpuRailSpec(gpus=256, hosts_per_su=16), inv)
    running.mkdir()
    fabric = derive(load(inv))
    for name, sw in fabric.switches.items():
        (running / f"{name}.yaml").write_text(render(sw, fabric, extras=False)["nvue-patch.yaml"])
    first = sorted(running.glob("*.yaml"))[0]
    first.write_text(first.read_text().replace("mtu: 9216", "mtu: 1500", 1))
    return inv, running


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("ROCE_FABRIC_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(fl, "CACHE_MIN_DEVICES", 0)
    return tmp_path / "cache"


def _uncached(inv: Path, running: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    with monkeypatch.context() as m:
        m.setenv("ROCE_FABRIC_CACHE", "off")
        return output.to_json(run_lint(inv, running))


def _no_derive(*_a: object, **_k: object) -> None:
    raise AssertionError("a hit derives and parses nothing")


def test_findings_read_back_are_the_findings(rendered: tuple[Path, Path], tmp_path: Path, cache: Path,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    inv, src = rendered
    running = tmp_path / "running"
    shutil.copytree(src, running)
    first = run_lint(inv, running)
    assert first.findings and any(f.file.startswith(str(running)) for f in first.findings if f.file)
    kept = [p for p in cache.iterdir() if ".lint-configs-" in p.name]
    assert len(kept) == 1 and kept[0].stat().st_mode & 0o777 == 0o600
    with monkeypatch.context() as m:
        m.setattr(fl, "load_fabric", _no_derive)
        m.setattr("fabric.lint.configs.load_configs", _no_derive)
        again = run_lint(inv, running)
    assert again == first and output.to_json(again) == _uncached(inv, running, monkeypatch)
    assert run_lint(inv, running, ["RF3"], []) != first  # other options: another entry

    target = sorted(running.glob("*.yaml"))[1]
    text = target.read_text()
    at = text.index("mtu: 9216") + len("mtu: ")
    target.write_text(text[:at] + "1" + text[at + 1:])  # one byte: mtu 1216
    changed = run_lint(inv, running)
    assert changed != first and output.to_json(changed) == _uncached(inv, running, monkeypatch)
    target.write_text(text)
    assert run_lint(inv, running) == first

    shutil.copy(target, running / "foreign-switch.yaml")  # a file added
    assert output.to_json(run_lint(inv, running)) == _uncached(inv, running, monkeypatch)
    (running / "foreign-switch.yaml").unlink()
    edited = sorted(running.glob("*.yaml"))[0]
    edited.rename(running / "gone.yaml.bak")  # the edited file removed: its finding goes
    removed = run_lint(inv, running)
    assert removed != first and output.to_json(removed) == _uncached(inv, running, monkeypatch)

    target.write_text("- set:\n    interface: [\n")  # malformed: an error on every run, never kept
    for _ in range(2):
        with pytest.raises(InputError) as err:
            run_lint(inv, running)
        assert err.value.problems[0].file == str(target) and err.value.problems[0].line is not None


def test_digest_is_of_every_name_and_byte(tmp_path: Path) -> None:
    root = tmp_path / "configs"
    (root / "leaf1").mkdir(parents=True)
    (root / "leaf1" / "config_db.json").write_text('{"DEVICE_METADATA": {}}\n')
    (root / "leaf1" / "sysctl.conf").write_text("net.ipv4.neigh.default.base_reachable_time_ms = 1080000\n")
    (root / "leaf2.cfg").write_text("hostname leaf2\n")
    seen = {digest(root)}
    (root / "leaf1" / "sysctl.conf").write_text("net.ipv4.neigh.default.base_reachable_time_ms = 1080001\n")
    seen.add(digest(root))  # a file beside the one a parser reads
    (root / "leaf2.cfg").rename(root / "leaf3.cfg")
    seen.add(digest(root))
    (root / "leaf4.cfg").write_text("")
    seen.add(digest(root))
    assert None not in seen and len(seen) == 4
    assert digest(root) == digest(root) and digest(root / "nowhere") is None
    os.mkfifo(root / "leaf5.cfg")  # read, it would block: never hashed, the parse says why
    assert digest(root) is None
