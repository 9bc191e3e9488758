"""tests.inproc runs the command as a process would: the same exit status, stdout and stderr, byte for byte, for
success, a usage error, an input error, stdin, another working directory and environment."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.inproc import ROOT, fabric

EXAMPLE = ROOT / "inventories" / "example"
CASES = {
    "validate": (["validate", str(EXAMPLE)], None),
    "plan-json": (["plan", "--offline", str(EXAMPLE), "--format", "json"], None),
    "explain": (["explain", str(EXAMPLE), "leaf-su1-r1", "mtu"], None),
    "usage-error": (["render", str(EXAMPLE), "-o", "/nonexistent/x", "--only", "spine9"], None),
    "unknown-option": (["validate", "--no-such-option"], None),
    "input-error": (["validate", str(ROOT / "tests")], None),
    "stdin": (["parse", "mlnx_qos", "-"], "garbage\n"),
    "version": (["--version"], None),
}


@pytest.mark.parametrize("case", list(CASES))
def test_same_as_a_process(case: str, tmp_path: Path) -> None:
    args, stdin = CASES[case]
    env = {**os.environ, "COLUMNS": "100"}
    real = subprocess.run([sys.executable, "-c", "from fabric.cli import main; main()", *args], capture_output=True,
                          text=True, timeout=120, cwd=tmp_path, env=env, input=stdin)
    here = fabric(*args, cwd=tmp_path, env=env, stdin=stdin)
    assert (here.returncode, here.stdout, here.stderr) == (real.returncode, real.stdout, real.stderr)


def test_restores_the_process(tmp_path: Path) -> None:
    cwd, environ, streams, argv = Path.cwd(), dict(os.environ), (sys.stdout, sys.stderr, sys.stdin), sys.argv
    fabric("validate", str(EXAMPLE), cwd=tmp_path, env={"PATH": os.environ.get("PATH", ""), "X_INPROC": "1"})
    assert (Path.cwd(), dict(os.environ), (sys.stdout, sys.stderr, sys.stdin), sys.argv) == (
        cwd, environ, streams, argv)
