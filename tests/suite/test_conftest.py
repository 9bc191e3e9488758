"""The suite's own machinery: under `make test` (pytest-xdist, `--dist loadgroup`) the tests marked lab run on
one worker one after another, so do the other tests marked root (on one worker per group: tests/conftest.py
SERIAL_GROUPS and OWN_GROUPS), the groups start first, and each test process has its own push and lab state
directories."""

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
    assert os.geteuid() != 0 or os.getpriority(os.PRIO_PROCESS, 0) == 0  # a serial group: the normal priority

@pytest.mark.parametrize("i", range(3))
@pytest.mark.root
@pytest.mark.lab
def test_lab(i):
    pass

@pytest.mark.parametrize("i", range(8))
def test_plain(i):
    assert os.geteuid() != 0 or os.getpriority(os.PRIO_PROCESS, 0) == 10  # the rest: nice 10

def test_state_dirs():
    home = os.path.expanduser("~")
    assert not os.environ["FABRIC_STATE"].startswith(home) and "/run/" not in os.environ["FABRIC_LAB_STATE"]
    print("STATE", os.environ["FABRIC_STATE"])
'''


def test_lab_tests_share_one_worker_and_root_tests_another(tmp_path: Path) -> None:
    (tmp_path / "test_probe.py").write_text(PROBE)
    p = subprocess.run([sys.executable, "-m", "pytest", "-p", "tests.conftest", "-p", "no:cacheprovider", "-n", "3",
                        "--dist", "loadgroup", "-v", str(tmp_path / "test_probe.py")], capture_output=True, text=True,
                       timeout=120, cwd=tmp_path, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert p.returncode == 0, p.stdout + p.stderr
    ran = re.findall(r"\[(gw\d+)\].* PASSED \S+::(test_\w+)", p.stdout)
    assert len(ran) == 16, p.stdout
    lab = {gw for gw, name in ran if name == "test_lab"}
    root = {gw for gw, name in ran if name == "test_root"}
    assert len(lab) == 1 and len(root) == 1, p.stdout  # one worker each
    assert re.search(r"test_lab\[\d\]@lab", p.stdout) and re.search(r"test_root\[\d\]@root", p.stdout), p.stdout


def test_each_test_process_has_its_own_state_dirs() -> None:
    assert not os.environ["FABRIC_STATE"].startswith(str(Path.home()))
    assert Path(os.environ["FABRIC_STATE"]).parent == Path(os.environ["FABRIC_LAB_STATE"]).parent


def test_every_serial_group_has_its_start_place_and_every_own_group_module_exists() -> None:
    from tests.conftest import FIRST, LONG_MODULES, OWN_GROUPS, SERIAL_GROUPS

    assert {g for _m, g in SERIAL_GROUPS} | set(OWN_GROUPS.values()) == set(FIRST)
    assert all(len(list((ROOT / "tests").glob(name))) == 1 for name in OWN_GROUPS)
    assert all((ROOT / "tests" / m).is_file() for m in LONG_MODULES)


HANG = '''
import time

def test_hangs():
    time.sleep(600)

def test_quick():
    assert sum(range(10**6)) > 0
'''


def test_a_hung_test_fails_with_its_stack_and_the_run_ends(tmp_path: Path) -> None:
    """pyproject's per-test timeout (pytest-timeout) under xdist: the hung test fails with its traceback and the
    run ends, instead of the controller waiting for it forever. The timeout is shortened to 5 s."""
    (tmp_path / "test_hang.py").write_text(HANG)
    p = subprocess.run([sys.executable, "-m", "pytest", "-c", str(ROOT / "pyproject.toml"), "--rootdir",
                        str(tmp_path), "-p", "no:cacheprovider", "-o", "timeout=5", "-n", "2", "-v",
                        str(tmp_path / "test_hang.py")], capture_output=True, text=True, timeout=300, cwd=tmp_path,
                       env={**os.environ, "PYTHONPATH": str(ROOT)})
    out = p.stdout + p.stderr
    assert p.returncode == 1, out
    assert "Failed: Timeout (>5.0s) from pytest-timeout" in out and "time.sleep(600)" in out, out
    assert re.search(r"PASSED \S+::test_quick", out) and re.search(r"FAILED \S+::test_hangs", out), out


def test_cpu_profile_counts_every_test_and_its_children(tmp_path: Path) -> None:
    """FABRIC_TEST_CPU (tests/conftest.py) writes one row per test with its wall and CPU seconds, its children's
    included; tests/cpu_profile.py sums them per module."""
    (tmp_path / "test_cpu.py").write_text(
        "import subprocess, sys\n\ndef test_child():\n"
        "    subprocess.run([sys.executable, '-c', 'sum(range(3 * 10**7))'], check=True)\n\n"
        "def test_own():\n    sum(range(3 * 10**7))\n")
    out = tmp_path / "cpu"
    p = subprocess.run([sys.executable, "-m", "pytest", "-p", "tests.conftest", "-p", "no:cacheprovider", "-n", "2",
                        str(tmp_path / "test_cpu.py")], capture_output=True, text=True, timeout=300, cwd=tmp_path,
                       env={**os.environ, "PYTHONPATH": str(ROOT), "FABRIC_TEST_CPU": str(out)})
    assert p.returncode == 0, p.stdout + p.stderr
    from tests.cpu_profile import per_module

    (module, sums), = per_module(out).items()
    assert module == "test_cpu.py" and sums["tests"] == 2 and sums["children"] > 0.1 and sums["cpu"] > 0.1, sums
