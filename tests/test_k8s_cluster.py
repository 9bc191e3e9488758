"""Kubernetes acceptance on a real control plane (fabric.lab.kube): the rendered jobs go through the real API
server (admission, defaulting, CRD schemas), kube-controller-manager, kube-scheduler, the MPI Operator v2
controller and kwok nodes, one per host of inventories/h100-400g with its GPUs, rail resources and fabric labels.

What kwok stands in for: the kubelet (a bound pod becomes Running and Ready; the launcher, owned by a Job,
Succeeded) and the container log (a real nccl-tests output). What is not here: Volcano (its module is not
served by the Go module proxy; a kube-scheduler profile named `volcano` places the pods with the same
filters, without the gang and the HyperNode tier), multus and the CNI plugins, and a real NIC.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from fabric.accept import bundle
from fabric.design.derive import derive
from fabric.design.intent import FabricIntent
from fabric.lab.kube import KubeLab, bins_dir, missing_bins
from fabric.model.load import load
from tests.conftest import ROOT, require

pytestmark = pytest.mark.k8s

H100 = ROOT / "inventories" / "h100-400g"
NCCL_LOG = ROOT / "tests" / "fixtures" / "samples" / "nccl_all_reduce_2node_h200_v2.18_format.txt"
IMAGE = "registry.example/roce-tests:1"
KWOK_DELAY = "pod-complete.stage.kwok.x-k8s.io/delay"  # kwok's general pod-complete stage reads it


@pytest.fixture(scope="session")
def h100() -> FabricIntent:
    return derive(load(H100))


@pytest.fixture(scope="session")
def generated(tmp_path_factory: pytest.TempPathFactory) -> dict[str, FabricIntent]:
    """Two generated fabrics: 2 SUs and 3 SUs of 4 hosts each (`fabric generate gpu-rail`)."""
    from fabric.generate import GpuRailSpec, write

    out = {}
    for name, sus in (("two-su", 2), ("three-su", 3)):
        d = tmp_path_factory.mktemp("gen") / name
        write(GpuRailSpec(name=name, gpus=sus * 4 * 8, hosts_per_su=4), d)
        out[name] = derive(load(d))
    return out


def use(kube: KubeLab, fabric: FabricIntent) -> KubeLab:
    """The cluster's nodes are `fabric`'s hosts (swapped when another fabric's are there)."""
    if getattr(kube, "fabric", None) != fabric.name:
        kube.use_nodes(fabric)
        kube.fabric = fabric.name  # type: ignore[attr-defined]
    return kube


@pytest.fixture(scope="module")  # stopped before test_k8s_lab_up.py starts its own (the MPI Operator binds :8080)
def kube(tmp_path_factory: pytest.TempPathFactory, h100: FabricIntent) -> Iterator[KubeLab]:
    """The control plane with one kwok node per host of h100-400g; stopped (every process) at the end."""
    bins = bins_dir()
    missing = missing_bins(bins)
    require(not missing, f"the Kubernetes binaries in {bins} ({', '.join(missing)}): make k8s-bins")
    lab = KubeLab(tmp_path_factory.mktemp("kube"), bins)
    try:
        lab.start(log_file=NCCL_LOG)
        lab.add_nodes(h100)
        lab.fabric = h100.name  # type: ignore[attr-defined]
        if h100.kubernetes.namespace != "default":
            lab.apply([{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": h100.kubernetes.namespace}}])
        print(f"control plane up in {lab.start_s:.1f}s")
        yield lab
    finally:
        lab.stop()


@pytest.fixture
def on_path(kube: KubeLab, monkeypatch: pytest.MonkeyPatch) -> KubeLab:
    """The tool's K8sRunner finds this cluster as it finds any: kubectl on PATH, KUBECONFIG."""
    monkeypatch.setenv("PATH", f"{kube.bins / 'bin'}:{os.environ['PATH']}")
    monkeypatch.setenv("KUBECONFIG", str(kube.kubeconfig))
    return kube


def scheduled(kube: KubeLab, ns: str, job: str, expect: int = 0) -> dict[str, str]:
    """pod → node of every pod the scheduler bound for `job`, from its `Scheduled` events (recorded
    asynchronously: waits up to 30 s for `expect` of them)."""
    deadline = time.monotonic() + 30
    while True:
        ev = json.loads(kube.kubectl("get", "events", "-n", ns, "--field-selector", "reason=Scheduled",
                                     "-o", "json").stdout)["items"]
        out = {}
        for e in ev:
            pod = e["involvedObject"]["name"]
            if pod.startswith(f"{job}-worker-") or pod.startswith(f"{job}-launcher"):
                out[pod] = e["message"].rsplit(" to ", 1)[1]
        if len(out) >= expect or time.monotonic() > deadline:
            return out
        time.sleep(0.5)


def launcher_runs(mpijob: dict, seconds: str) -> dict:
    """The launcher waits for its workers (WAIT_FOR_WORKERS) before mpirun; kwok's stand-in for that run: the
    launcher pod completes `seconds` after it is Ready (kwok's general pod-complete stage reads the annotation)."""
    meta = mpijob["spec"]["mpiReplicaSpecs"]["Launcher"]["template"]["metadata"]["annotations"]
    meta[KWOK_DELAY] = meta[KWOK_DELAY.replace("/delay", "/jitter-delay")] = seconds
    return mpijob


def gone(kube: KubeLab, ns: str, path: Path, name: str) -> None:
    """Deletes a job and waits for its pods to go (the garbage collector deletes them after the MPIJob)."""
    kube.kubectl("delete", "-f", str(path), "--wait=true", timeout=120)
    kube.kubectl("delete", "pod", "-l", f"roce-fabric/job={name}", "-n", ns, "--grace-period=0", "--force",
                 check=False)
    kube.kubectl("wait", "--for=delete", "pod", "-l", f"roce-fabric/job={name}", "-n", ns, "--timeout=90s",
                 timeout=100, check=False)


def wait_mpijob(kube: KubeLab, ns: str, name: str, timeout: float = 300) -> str:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        conds = json.loads(kube.kubectl("get", "mpijob", name, "-n", ns, "-o", "json").stdout).get(
            "status", {}).get("conditions", [])
        done = [c["type"] for c in conds if c["type"] in ("Succeeded", "Failed") and c["status"] == "True"]
        if done:
            return done[0]
        time.sleep(0.5)
    return "Running"


def test_control_plane_nodes_carry_the_fabrics_resources_and_labels(kube: KubeLab, h100: FabricIntent) -> None:
    use(kube, h100)
    nodes = {n["metadata"]["name"]: n for n in json.loads(kube.kubectl("get", "nodes", "-o", "json").stdout)["items"]}
    assert set(nodes) == set(h100.hosts)
    n = nodes["gpu-su2-03"]
    assert n["status"]["allocatable"]["nvidia.com/gpu"] == "8"
    assert {k: v for k, v in n["status"]["allocatable"].items() if "rail" in k} == {
        f"nvidia.com/rail{r}": "1" for r in range(1, 9)}  # PF pass-through: one device per rail
    assert n["metadata"]["labels"]["fabric.roce.io/scalable-unit"] == "su2"
    ready = {c["type"]: c["status"] for c in n["status"]["conditions"]}
    assert ready["Ready"] == "True"


@pytest.mark.parametrize("which", ["h100-400g", "two-su", "three-su"])
def test_every_rendered_job_is_admitted_placed_on_its_hosts_and_completes(kube: KubeLab, h100: FabricIntent,
                                                                         generated: dict[str, FabricIntent],
                                                                         which: str, tmp_path: Path) -> None:
    """The --render-only bundle as an engineer applies it: networks, HyperNodes, then each job. The API server
    admits every object (schemas of the real CRDs, server-side), the scheduler binds one worker per intended
    host and the launcher on one of them, the MPI Operator runs the launcher Job to completion."""
    fabric = h100 if which == "h100-400g" else generated[which]
    use(kube, fabric)
    bundle.render_bundle(fabric, tmp_path, IMAGE)
    kube.kubectl("apply", "--server-side", "-f", str(tmp_path / "networks.yaml"), "-f",
                 str(tmp_path / "hypernodes.yaml"))
    ns = fabric.kubernetes.namespace
    jobs = sorted((tmp_path / "jobs").glob("*.yaml"))
    assert len(jobs) == 6
    for path in jobs:
        _group, mpijob = yaml.safe_load_all(path.read_text())
        name = mpijob["metadata"]["name"]
        hosts = mpijob["spec"]["mpiReplicaSpecs"]["Worker"]["template"]["spec"]["affinity"]["nodeAffinity"][
            "requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"][0]["matchExpressions"][0]["values"]
        kube.kubectl("delete", "events", "--all", "-n", ns)  # earlier jobs of the same name
        kube.apply([_group, launcher_runs(mpijob, "5s")])
        assert wait_mpijob(kube, ns, name) == "Succeeded", kube.kubectl("describe", "mpijob", name, "-n", ns).stdout
        placed = scheduled(kube, ns, name, expect=len(hosts) + 1)
        workers = {p: n for p, n in placed.items() if "-worker-" in p}
        assert sorted(workers.values()) == sorted(hosts), name  # one worker on each intended host
        (launcher,) = (n for p, n in placed.items() if "-launcher" in p)
        assert launcher in hosts
        gone(kube, ns, path, name)
        assert set(workers) == {f"{name}-worker-{i}" for i in range(len(hosts))}
