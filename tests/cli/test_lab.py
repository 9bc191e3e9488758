"""`fabric lab up`'s options that do not go together: refused in words before anything starts."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.support.paths import ROOT

INV = ROOT / "tests" / "fixtures" / "inventories" / "k8s-lab2"


def lab_up(*args: str, state: Path) -> subprocess.CompletedProcess[str]:
    """`fabric lab up INV ARGS…` with state directories of its own (nothing of a running lab is seen or touched)."""
    env = {**os.environ, "FABRIC_LAB_STATE": str(state / "lab"), "FABRIC_K8S_LAB_STATE": str(state / "k8s")}
    return subprocess.run([sys.executable, "-c", "from fabric.cli import main; main()", "lab", "up", str(INV), *args],
                          capture_output=True, text=True, timeout=120, cwd=ROOT, env=env)


def test_real_nodes_in_the_vm_lab_are_refused_in_words(tmp_path: Path) -> None:
    """Real Kubernetes nodes run in the namespace lab only: `--kernel vm` with `--k8s` says so (it was ignored, and
    the nodes went to the namespace lab, or a control plane started with kwok nodes), and a `--kernel` that is
    neither native nor vm is refused with `--k8s` too. Nothing is started."""
    for args in (["--k8s", "--real-nodes", "1", "--kernel", "vm"], ["--k8s", "--kernel", "vm"]):
        p = lab_up(*args, state=tmp_path)
        assert p.returncode == 2 and "Traceback" not in p.stderr, p.stdout + p.stderr
        assert "--kernel vm goes without --k8s" in p.stderr and "namespace lab" in p.stderr, p.stderr
    p = lab_up("--k8s", "--kernel", "kvm", state=tmp_path)
    assert p.returncode == 2 and "--kernel: expected native or vm, found 'kvm'" in p.stderr, p.stderr
    assert not (tmp_path / "k8s").exists() and not (tmp_path / "lab").exists()
