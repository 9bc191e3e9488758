"""Messages keep their place: no markup or emoji substitution on any console output (`:100:` stays),
a newline in a name never splits a problem, a missing section is located at the inventory, and a flood of
problems is cut with a count."""

from __future__ import annotations

import subprocess
from pathlib import Path

from fabric.errors import Problem
from tests import inproc
from tests.hostile.helpers import EXAMPLE, ROOT, edited


def fabric(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    return inproc.fabric(*args, cwd=cwd)  # in this process (tests.inproc)


def test_an_error_on_line_100_keeps_its_line(tmp_path: Path) -> None:
    inv = edited(tmp_path, "fabric.yaml", lambda d: d["topology"].update(rails=99))
    text = (inv / "fabric.yaml").read_text()
    (inv / "fabric.yaml").write_text("#\n" * (100 - 1 - text.splitlines().index("  rails: 99")) + text)
    r = fabric("validate", str(inv))
    assert r.returncode == 2 and f"{inv}/fabric.yaml:100: topology.rails:" in r.stderr, r.stderr


def test_diagnose_and_its_table_keep_line_100(tmp_path: Path) -> None:
    log = tmp_path / "ib.log"
    log.write_text("x\n" * 99 + " Completion with error at client\n")
    r = fabric("diagnose", "ib.log", cwd=tmp_path)
    assert r.returncode == 1 and "ib.log:100" in r.stdout and "💯" not in r.stdout, r.stdout


def test_markup_in_a_message_is_printed_as_is(tmp_path: Path) -> None:
    inv = edited(tmp_path, "fabric.yaml", lambda d: d["fabric"].update(name="[bold]x[/bold]:smile:"))
    r = fabric("validate", str(inv))
    assert r.returncode == 2 and "'[bold]x[/bold]:smile:'" in r.stderr, r.stderr


def test_a_newline_in_a_value_stays_on_one_line() -> None:
    p = Problem("f.yaml", 3, "hosts[0].name", "a name", "'a\nb\x00'")
    assert str(p) == "f.yaml:3: hosts[0].name: expected a name, found 'a\\nb\\x00'"


def test_a_missing_section_is_located_at_the_inventory(tmp_path: Path) -> None:
    import shutil

    inv = tmp_path / "inv"
    shutil.copytree(EXAMPLE, inv)
    (inv / "qos.yaml").unlink()
    (inv / "addressing.yaml").write_text("addressing:\n  mode: svi\n")
    r = fabric("validate", str(inv))
    assert r.returncode == 2, r.stderr
    assert f"error: {inv}/addressing.yaml:1: addressing.loopbacks: expected this required key" in r.stderr
    (inv / "addressing.yaml").unlink()
    r = fabric("validate", str(inv))
    assert f"error: {inv}: addressing: expected this required key, found nothing" in r.stderr, r.stderr


def test_a_flood_of_problems_is_cut_with_a_count(tmp_path: Path) -> None:
    inv = edited(tmp_path, "fabric.yaml", lambda d: d.update(links=[{"a": f"x{i}:;", "b": "y:;"} for i in range(300)]))
    r = fabric("validate", str(inv))
    lines = r.stderr.splitlines()
    assert r.returncode == 2 and len(lines) == 201 and lines[-1] == "error: … and 400 more problems", lines[-3:]
