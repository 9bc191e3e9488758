"""`fabric lab up INV --k8s` / `fabric lab down INV`: the control plane for users (fabric.lab.kube).

Each lab runs the MPI Operator in a network namespace of its own (fabric.lab.relay), so this one may run beside the
cluster of another module (tests/lab/test_kube_volcano.py runs two at once)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from fabric.lab.kube import bins_dir, missing_bins, volcano_dir
from tests.conftest import ROOT, require

pytestmark = pytest.mark.k8s


def test_lab_up_k8s_prints_a_kubeconfig_and_down_ends_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """For users: `fabric lab up INV --k8s` leaves the control plane running with one node per host and prints
    the kubeconfig; `fabric lab down INV` ends every process and removes the state."""
    import sys

    from fabric.lab import kube

    bins = bins_dir()
    require(not missing_bins(bins), f"the Kubernetes binaries in {bins}: make k8s-bins")
    require(volcano_dir(bins).tiers, "Volcano with HyperNodes: make k8s-bins (../shared/volcano-src)")
    inv = ROOT / "tests" / "fixtures" / "inventories" / "k8s-vlan16"
    fab = str(Path(sys.executable).parent / "fabric")
    env = {**os.environ, "FABRIC_K8S_LAB_STATE": str(tmp_path / "state")}
    try:
        up = subprocess.run([fab, "lab", "up", str(inv), "--k8s"], capture_output=True, text=True, env=env,
                            timeout=300)
        assert up.returncode == 0, up.stderr
        assert "Volcano v1.15.1: HyperNode tiers enforced (network-topology-aware)" in up.stdout.splitlines(), up.stdout
        kubeconfig = up.stdout.split("export KUBECONFIG=", 1)[1].split()[0]
        assert oct(Path(kubeconfig).stat().st_mode & 0o777) == "0o600"
        nodes = subprocess.run([str(bins / "bin" / "kubectl"), "--kubeconfig", kubeconfig, "get", "nodes", "-o",
                                "name"], capture_output=True, text=True, timeout=60)
        assert len(nodes.stdout.split()) == 16, nodes.stderr
        hypernodes = subprocess.run([str(bins / "bin" / "kubectl"), "--kubeconfig", kubeconfig, "get", "hypernodes",
                                     "-o", "name"], capture_output=True, text=True, timeout=60)
        assert "hypernode.topology.volcano.sh/k8s-vlan16-su1" in hypernodes.stdout.split(), hypernodes.stderr
        again = subprocess.run([fab, "lab", "up", str(inv), "--k8s"], capture_output=True, text=True, env=env,
                               timeout=120)
        assert again.returncode == 2 and "runs already" in again.stderr and "Traceback" not in again.stderr
    finally:
        down = subprocess.run([fab, "lab", "down", str(inv)], capture_output=True, text=True, env=env, timeout=120)
    assert "Kubernetes lab stopped" in down.stdout, down.stderr
    monkeypatch.setenv("FABRIC_K8S_LAB_STATE", str(tmp_path / "state"))
    assert not kube.running("k8s-vlan16") and not (tmp_path / "state" / "k8s-vlan16").exists()
