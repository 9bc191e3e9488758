"""Issue 27: `fabric lint INV` keeps its findings of an unchanged inventory in the derive cache
(`fabric.design.load.verdict`), and neither reads nor writes the derived intent (deriving costs about what reading
it back does). The findings read back are the findings, in every output format, on every example and fixture
inventory; other options are another entry."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from rich.console import Console

import fabric.design.load as fl
from fabric.cli.lint import run_lint
from fabric.lint import output as out
from fabric.lint.core import Severity

ROOT = Path(__file__).resolve().parent.parent
INVENTORIES = sorted([*ROOT.glob("inventories/*/fabric.yaml"), *ROOT.glob("tests/fixtures/inventories/*/fabric.yaml")])


def _formats(result) -> list[str]:  # type: ignore[no-untyped-def]
    buf = io.StringIO()
    out.table(result, Console(file=buf, width=200))
    return [buf.getvalue(), out.to_json(result), out.to_junit(result, Severity.warning),
            out.to_sarif(result, ROOT), out.to_github(result)]


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("ROCE_FABRIC_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(fl, "CACHE_MIN_DEVICES", 0)
    return tmp_path / "cache"


@pytest.mark.parametrize("inv", [p.parent for p in INVENTORIES], ids=lambda p: p.name)
def test_findings_read_back_are_the_findings(inv: Path, cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    first = run_lint(inv, None)
    entries = sorted(cache.iterdir())
    assert [p.suffix.split("-")[0] for p in entries] == [".lint"]  # the findings only, no intent pickle
    assert entries[0].stat().st_mode & 0o777 == 0o600

    def no_derive(*_a, **_k):  # type: ignore[no-untyped-def]
        raise AssertionError("a hit derives nothing")

    with monkeypatch.context() as m:
        m.setattr(fl, "load_fabric", no_derive)
        second = run_lint(inv, None)
    assert second == first
    assert _formats(second) == _formats(first)
    monkeypatch.setenv("ROCE_FABRIC_CACHE", "off")
    assert _formats(run_lint(inv, None)) == _formats(first)


def test_other_options_are_another_entry(cache: Path) -> None:
    inv = INVENTORIES[0].parent
    everything = run_lint(inv, None)
    only = run_lint(inv, None, ["RF3"], [])
    assert len(list(cache.iterdir())) == 2
    assert set(only.rules) < set(everything.rules) and only.rules == run_lint(inv, None, ["RF3"], []).rules
