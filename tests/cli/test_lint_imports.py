"""A cold `fabric lint INV` (cache off, output not a terminal) imports neither the progress display
(rich.progress), nor what `--configs` reads configs with (fabric.lint.configs, its model and the running-config
parsers), nor multiprocessing; `lint --configs` and a display on a terminal still import what they use."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.support.paths import ROOT

NEVER = ("rich.progress", "fabric.lint.configs", "fabric.lint.configs.model", "fabric.model.running", "multiprocessing")

PROBE = """
import json, sys, contextlib, io
sys.argv = ["fabric", *sys.argv[1:]]
from fabric.cli.main import main
out = io.StringIO()
with contextlib.redirect_stdout(out), contextlib.suppress(SystemExit):
    main()
sys.stderr.write(json.dumps(sorted(sys.modules)))
"""


def _modules(*argv: str) -> set[str]:
    p = subprocess.run([sys.executable, "-c", PROBE, *argv], capture_output=True, text=True, check=False,
                       cwd=ROOT, stdin=subprocess.DEVNULL)
    return set(json.loads(p.stderr.strip().splitlines()[-1]))


def test_cold_lint_imports_only_what_it_needs() -> None:
    mods = _modules("lint", str(ROOT / "inventories" / "example"), "--format", "json")
    assert "fabric.lint.engine" in mods and "fabric.design.derive" in mods  # it did lint
    assert not set(NEVER) & mods, set(NEVER) & mods


def test_lint_configs_still_imports_them(tmp_path: Path) -> None:
    (tmp_path / "leaf1.cfg").write_text("hostname leaf1\n")
    mods = _modules("lint", "--configs", str(tmp_path), "--format", "json")
    assert "fabric.lint.configs" in mods and "fabric.lint.configs.model" in mods
