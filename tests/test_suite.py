"""The suite's own machinery: under `make test` (pytest-xdist, `--dist loadgroup`) every test marked root or lab
runs on one worker, one after another, and each test process has its own push and lab state directories."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from tests.conftest import ROOT

PROBE = '''
import os
import pytest

@pytest.mark.parametrize("i", range(4))
@pytest.mark.root
def test_root(i):
    pass

@pytest.mark.lab
def test_lab():
    pass

@pytest.mark.parametrize("i", range(8))
def test_plain(i):
    pass

def test_state_dirs():
    home = os.path.expanduser("~")
    assert not os.environ["FABRIC_STATE"].startswith(home) and "/run/" not in os.environ["FABRIC_LAB_STATE"]
    print("STATE", os.environ["FABRIC_STATE"])
'''


def test_root_and_lab_tests_share_one_worker(tmp_path: Path) -> None:
    (tmp_path / "test_probe.py").write_text(PROBE)
    p = subprocess.run([sys.executable, "-m", "pytest", "-p", "tests.conftest", "-p", "no:cacheprovider", "-n", "2",
                        "--dist", "loadgroup", "-v", str(tmp_path / "test_probe.py")], capture_output=True, text=True,
                       timeout=120, cwd=tmp_path, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert p.returncode == 0, p.stdout + p.stderr
    ran = re.findall(r"\[(gw\d+)\].* PASSED \S+::(test_\w+)", p.stdout)
    assert len(ran) == 14, p.stdout
    serial = {gw for gw, name in ran if name in ("test_root", "test_lab")}
    assert len(serial) == 1, p.stdout  # one worker for all five
    assert {gw for gw, name in ran if name == "test_plain"} - serial, p.stdout  # the rest spread out


def test_each_test_process_has_its_own_state_dirs() -> None:
    assert not os.environ["FABRIC_STATE"].startswith(str(Path.home()))
    assert Path(os.environ["FABRIC_STATE"]).parent == Path(os.environ["FABRIC_LAB_STATE"]).parent
