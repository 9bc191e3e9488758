"""`fabric lab up INV --k8s` / `fabric lab down INV`: the control plane for users (fabric.lab.kube).

Its own module: the MPI Operator v0.6.0 binds its health check to :8080 whatever its flags
(cmd/mpi-operator/app/server.go, `healthCheckPort`), so two control planes cannot run at once; the cluster of
tests/accept/k8s/test_cluster.py is module-scoped and stopped before this one starts (both in the xdist group "k8s")."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from fabric.lab.kube import bins_dir, missing_bins
from tests.conftest import ROOT, require

pytestmark = pytest.mark.k8s


def test_lab_up_k8s_prints_a_kubeconfig_and_down_ends_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """For users: `fabric lab up INV --k8s` leaves the control plane running with one node per host and prints
    the kubeconfig; `fabric lab down INV` ends every process and removes the state."""
    import sys

    from fabric.lab import kube

    bins = bins_dir()
    require(not missing_bins(bins), f"the Kubernetes binaries in {bins}: make k8s-bins")
    inv = ROOT / "tests" / "fixtures" / "inventories" / "k8s-vlan16"
    fab = str(Path(sys.executable).parent / "fabric")
    env = {**os.environ, "FABRIC_K8S_LAB_STATE": str(tmp_path / "state")}
    try:
        up = subprocess.run([fab, "lab", "up", str(inv), "--k8s"], capture_output=True, text=True, env=env,
                            timeout=300)
        assert up.returncode == 0, up.stderr
        kubeconfig = up.stdout.split("export KUBECONFIG=", 1)[1].split()[0]
        assert oct(Path(kubeconfig).stat().st_mode & 0o777) == "0o600"
        nodes = subprocess.run([str(bins / "bin" / "kubectl"), "--kubeconfig", kubeconfig, "get", "nodes", "-o",
                                "name"], capture_output=True, text=True, timeout=60)
        assert len(nodes.stdout.split()) == 16, nodes.stderr
        again = subprocess.run([fab, "lab", "up", str(inv), "--k8s"], capture_output=True, text=True, env=env,
                               timeout=120)
        assert again.returncode == 2 and "runs already" in again.stderr and "Traceback" not in again.stderr
    finally:
        down = subprocess.run([fab, "lab", "down", str(inv)], capture_output=True, text=True, env=env, timeout=120)
    assert "Kubernetes lab stopped" in down.stdout, down.stderr
    monkeypatch.setenv("FABRIC_K8S_LAB_STATE", str(tmp_path / "state"))
    assert not kube.running("k8s-vlan16") and not (tmp_path / "state" / "k8s-vlan16").exists()
