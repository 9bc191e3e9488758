"""The README documents what the code does: every lint rule and every top-level command."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

README = (Path(__file__).resolve().parent.parent / "README.md").read_text()


def test_every_lint_rule_is_in_the_readme() -> None:
    table = subprocess.run([sys.executable, "-c", "from fabric.cli import main; main()", "lint", "--list",
                            "--markdown"], capture_output=True, text=True, timeout=60).stdout
    rows = [line for line in table.splitlines() if line.startswith("| RF")]
    assert len(rows) >= 29
    for row in rows:
        assert row in README, row


def test_every_command_is_in_the_readme() -> None:
    from fabric.cli import app

    names = [c.name or c.callback.__name__ for c in app.registered_commands]
    names += [g.name for g in app.registered_groups if g.name]
    for name in names:
        assert f"fabric {name}" in README, name
