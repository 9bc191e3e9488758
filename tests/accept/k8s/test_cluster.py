"""Kubernetes acceptance on a real control plane (fabric.lab.kube): the rendered jobs go through the real API
server (admission, defaulting, CRD schemas), kube-controller-manager, Volcano v1.15.1's scheduler (with the
network-topology-aware plugin and the fabric's HyperNodes) and controller manager, the MPI Operator v2 controller and
kwok nodes, one per host of inventories/h100-400g with its GPUs, rail resources and fabric labels.

What kwok stands in for: the kubelet (a bound pod becomes Running and Ready; the launcher, owned by a Job,
Succeeded) and the container log (a real nccl-tests output). What is not here: multus and the CNI plugins, and a
real NIC. The tiers themselves, two control planes at once and Volcano v1.10's refusal: tests/lab/test_kube_volcano.py.
"""

from __future__ import annotations

import copy
import datetime
import json
import os
import re
import subprocess
import sys
import time
import urllib.error
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from fabric.accept import bundle
from fabric.accept.checks.nccl import NcclInput, expected_busbw, judge_nccl
from fabric.accept.k8s import K8sRunner
from fabric.design.derive import derive
from fabric.design.intent import FabricIntent
from fabric.lab.kube import KubeLab, bins_dir, missing_bins, node_resources, volcano_dir
from fabric.model.load import load
from fabric.remediate import TAINT_KEY
from tests.conftest import ROOT, require

pytestmark = pytest.mark.k8s

H100 = ROOT / "inventories" / "h100-400g"
NCCL_LOG = ROOT / "tests" / "fixtures" / "samples" / "nccl_all_reduce_2node_h200_v2.18_format.txt"
IMAGE = "registry.example/roce-tests:1"
KWOK_DELAY = "pod-complete.stage.kwok.x-k8s.io/delay"  # kwok's general pod-complete stage reads it
# How the tool's runner reports a gang Volcano cannot place (K8sRunner.pending, from the PodGroup's condition):
# every member Pending; for a gang with a hard tier Volcano v1.15.1 names no node, or those of the last HyperNode it
# tried, and the runner says what that means.
GANG_WAITS = re.compile(r"PodGroup \S+-gang NotEnoughResources: (\d+)/\1 tasks in gang unschedulable: pod group is "
                        r"not ready, \1 Pending, \1 minAvailable; Pending: \1 Unschedulable(\. Origin reason is \S+: "
                        r"In hyperNode \S+: .*)? \(networkTopology hard, highestTierAllowed 1: no HyperNode of that "
                        r"tier or below holds the whole gang(; Volcano's origin reason is the last HyperNode it "
                        r"tried)?\)$")


def unknown_fields(stderr: str) -> set[str]:
    """The fields the API server dropped, from kubectl's `Warning: unknown field "…"` lines."""
    return set(re.findall(r'^Warning: unknown field "([^"]+)"', stderr, re.MULTILINE))


def apply_job(kube: KubeLab, objects: list[dict]) -> None:
    """Applies a job's PodGroup and MPIJob as `kubectl apply --validate=warn` does: the API server drops no field
    (Volcano v1.15.1's PodGroup declares the HyperNode tier)."""
    out = kube.apply(objects, validate="warn")
    assert unknown_fields(out.stderr) == set(), out.stderr


@pytest.fixture(scope="session")
def h100() -> FabricIntent:
    return derive(load(H100))


@pytest.fixture(scope="session")
def generated_dirs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Two generated inventories: 2 SUs and 3 SUs of 4 hosts each (`fabric generate gpu-rail`)."""
    from fabric.generate import GpuRailSpec, write

    out = {}
    for name, sus in (("two-su", 2), ("three-su", 3)):
        out[name] = tmp_path_factory.mktemp("gen") / name
        write(GpuRailSpec(name=name, gpus=sus * 4 * 8, hosts_per_su=4), out[name])
    return out


@pytest.fixture(scope="session")
def generated(generated_dirs: dict[str, Path]) -> dict[str, FabricIntent]:
    return {name: derive(load(d)) for name, d in generated_dirs.items()}


def use(kube: KubeLab, fabric: FabricIntent) -> KubeLab:
    """The cluster's nodes are `fabric`'s hosts (swapped when another fabric's are there)."""
    if getattr(kube, "fabric", None) != fabric.name:
        kube.use_nodes(fabric)
        kube.fabric = fabric.name  # type: ignore[attr-defined]
    return kube


@pytest.fixture(scope="module")  # stopped before lab/test_kube.py starts its own (the MPI Operator binds :8080)
def kube(tmp_path_factory: pytest.TempPathFactory, h100: FabricIntent) -> Iterator[KubeLab]:
    """The control plane with one kwok node per host of h100-400g; stopped (every process) at the end."""
    bins = bins_dir()
    missing = missing_bins(bins)
    require(not missing, f"the Kubernetes binaries in {bins} ({', '.join(missing)}): make k8s-bins")
    vc = volcano_dir(bins)
    require(vc.tiers, f"Volcano with HyperNodes (make k8s-bins builds it from ../shared/volcano-src), found {vc.dir}")
    lab = KubeLab(tmp_path_factory.mktemp("kube"), bins, vc)
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
        ev = kube.get(f"/api/v1/namespaces/{ns}/events", fieldSelector="reason=Scheduled")["items"]
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


# what the MPI Operator v2 makes for an MPIJob (each owned by it): a job of the same name made before all of them
# are gone finds them owned by the old one, and the operator backs off instead of starting it (three jobs never ran
# in one whole run when only the pods were awaited)
OWNED = ("/apis/batch/v1/namespaces/{ns}/jobs", "/api/v1/namespaces/{ns}/configmaps",
         "/api/v1/namespaces/{ns}/secrets", "/api/v1/namespaces/{ns}/services")


def gone(kube: KubeLab, ns: str, path: Path, name: str) -> None:
    """Deletes a job and waits until its pods and everything its MPIJob owned are gone (the garbage collector
    deletes those after the MPIJob; the pods are deleted at once)."""
    try:
        uid = kube.get(f"/apis/kubeflow.org/v2beta1/namespaces/{ns}/mpijobs/{name}")["metadata"]["uid"]
    except urllib.error.HTTPError:  # not there (a test's clean-up after its own failure)
        uid = None
    kube.kubectl("delete", "-f", str(path), "--wait=true", "--ignore-not-found", timeout=120)
    selector = f"roce-fabric/job={name}"
    kube.delete_all(f"/api/v1/namespaces/{ns}/pods", labelSelector=selector, gracePeriodSeconds="0")

    def left() -> list[str]:
        pods = kube.get(f"/api/v1/namespaces/{ns}/pods", labelSelector=selector)["items"]
        owned = [o for path in (OWNED if uid else ()) for o in kube.get(path.format(ns=ns))["items"]
                 if any(r.get("uid") == uid for r in o["metadata"].get("ownerReferences", []))]
        return [o["metadata"]["name"] for o in pods + owned]

    wait_for(f"the pods and objects of {name} deleted", lambda: not left(), timeout=120)


def wait_mpijob(kube: KubeLab, ns: str, name: str, timeout: float = 300) -> str:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        conds = kube.get(f"/apis/kubeflow.org/v2beta1/namespaces/{ns}/mpijobs/{name}").get(
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


def test_the_control_plane_reports_the_pinned_versions(kube: KubeLab) -> None:
    """The binaries carry the release they were built from (tools/k8s-bins/build.sh's -X version flags)."""
    gomod = (ROOT / "tools" / "k8s-bins" / "core" / "go.mod").read_text()
    pin = next(line.split()[1] for line in gomod.splitlines() if line.startswith("\tk8s.io/kubernetes "))
    assert json.loads(kube.kubectl("get", "--raw", "/version").stdout)["gitVersion"] == pin
    for prog in ("kube-apiserver", "kube-scheduler", "kube-controller-manager"):
        out = subprocess.run([str(kube.bins / "bin" / prog), "--version"], capture_output=True, text=True, timeout=30)
        assert out.stdout.strip() == f"Kubernetes {pin}", prog
    assert kube.volcano is not None
    for prog in ("vc-scheduler", "vc-controller-manager"):  # built from ../shared/volcano-src/v1.15.1
        out = subprocess.run([str(kube.volcano.dir / "bin" / prog), "--version"], capture_output=True, text=True,
                             timeout=30)
        assert "Version: v1.15.1" in out.stdout.splitlines(), (prog, out.stdout)


@pytest.mark.parametrize("which", ["h100-400g", "two-su", "three-su"])
def test_every_rendered_job_is_admitted_placed_on_its_hosts_and_completes(kube: KubeLab, on_path: KubeLab,
                                                                         h100: FabricIntent,
                                                                         generated: dict[str, FabricIntent],
                                                                         which: str, tmp_path: Path) -> None:
    """The --render-only bundle as an engineer applies it: networks, HyperNodes, then each job. The API server
    admits every object (schemas of the real CRDs, server-side, the PodGroup with its HyperNode tier), Volcano
    binds the gang inside its tier, one worker per intended host and the launcher on one of them, the MPI Operator
    runs the launcher Job to completion. The 64-host NCCL job's launcher log, read by the tool through the API server
    (kwok serves a real nccl-tests output as the container's log), is judged as the same output on hosts is."""
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
        kube.delete_all(f"/api/v1/namespaces/{ns}/events")  # earlier jobs of the same name
        apply_job(kube, [_group, launcher_runs(mpijob, "1s")])
        assert wait_mpijob(kube, ns, name) == "Succeeded", kube.kubectl("describe", "mpijob", name, "-n", ns).stdout
        placed = scheduled(kube, ns, name, expect=len(hosts) + 1)
        workers = {p: n for p, n in placed.items() if "-worker-" in p}
        assert sorted(workers.values()) == sorted(hosts), name  # one worker on each intended host
        (launcher,) = (n for p, n in placed.items() if "-launcher" in p)
        assert launcher in hosts
        if len(hosts) == 64:  # h100-400g's nccl-cluster
            log, on_hosts = K8sRunner(ns).logs(name), NCCL_LOG.read_text()
            judged = {"expected_gbytes": expected_busbw(fabric, hosts), "fraction": NcclInput().fraction_of_line,
                      "largest": NcclInput().largest_sizes, "file": name}
            assert log.splitlines() == on_hosts.splitlines()
            m = judge_nccl(log, **judged)
            assert m == judge_nccl(on_hosts, **judged) and m.ok and m.threshold == 360.0, m
        gone(kube, ns, path, name)
        assert set(workers) == {f"{name}-worker-{i}" for i in range(len(hosts))}


def test_a_cordoned_node_and_one_without_rail_devices_are_never_chosen(kube: KubeLab, on_path: KubeLab,
                                                                        generated: dict[str, FabricIntent],
                                                                        generated_dirs: dict[str, Path],
                                                                        tmp_path: Path) -> None:
    """`fabric remediate --scheduler kubernetes --execute` cordons and taints gpu-su1-01 through kubectl against
    this API server; gpu-su1-02 advertises no rail devices (allocatable 0: what the kubelet reports when the
    device plugin's devices are gone). su1's NCCL job cut to two workers lands on the other two hosts; the job as
    rendered (a worker on each of the four) waits as a whole gang, not one of its pods bound although two
    would fit, and the tool's runner reports Volcano's own reason."""
    fabric = generated["three-su"]
    use(kube, fabric)
    ns, name = fabric.kubernetes.namespace, "nccl-su1"
    cordoned, railless = "gpu-su1-01", "gpu-su1-02"
    rails = {r: v for r, v in node_resources(fabric, railless).items() if "/rail" in r}

    def rails_to(value: str | None) -> None:
        res = {r: value or v for r, v in rails.items()}
        kube.kubectl("patch", "node", railless, "--subresource=status", "--type=merge", "-p",
                     json.dumps({"status": {"capacity": res, "allocatable": res}}))

    fab = str(Path(sys.executable).parent / "fabric")
    env = {**os.environ, "FABRIC_STATE": str(tmp_path / "state")}
    remediate = [fab, "remediate", str(generated_dirs["three-su"]), "--host", cordoned, "--reason", "rail 3 flaps",
                 "--scheduler", "kubernetes", "--execute"]
    bundle.render_bundle(fabric, tmp_path, IMAGE)
    group, mpijob = yaml.safe_load_all((tmp_path / "jobs" / f"{name}.yaml").read_text())
    held = tmp_path / "held.yaml"
    try:
        done = subprocess.run(remediate, capture_output=True, text=True, env=env, timeout=120)
        assert done.returncode == 0, done.stdout + done.stderr
        node = json.loads(kube.kubectl("get", "node", cordoned, "-o", "json").stdout)["spec"]
        assert node["unschedulable"] is True
        assert {"key": TAINT_KEY, "value": "rail-3-flaps", "effect": "NoSchedule"} in node["taints"]
        rails_to("0")

        two, group2 = copy.deepcopy(mpijob), copy.deepcopy(group)
        two["spec"]["mpiReplicaSpecs"]["Worker"]["replicas"], group2["spec"]["minMember"] = 2, 3
        # the gang's minimum resources halved with it: Volcano v1.15.1's network-topology-aware plugin offers a hard
        # gang only the HyperNodes whose free resources cover its minResources (hyperNodeGradientFn)
        group2["spec"]["minResources"] = {r: str(int(v) // 2) for r, v in group["spec"]["minResources"].items()}
        kube.delete_all(f"/api/v1/namespaces/{ns}/events")
        apply_job(kube, [group2, launcher_runs(two, "5s")])
        assert wait_mpijob(kube, ns, name) == "Succeeded", kube.kubectl("describe", "mpijob", name, "-n", ns).stdout
        placed = scheduled(kube, ns, name, expect=3)
        assert sorted(n for p, n in placed.items() if "-worker-" in p) == ["gpu-su1-03", "gpu-su1-04"]
        assert cordoned not in placed.values()
        gone(kube, ns, tmp_path / "jobs" / f"{name}.yaml", name)

        held.write_text(yaml.safe_dump_all([group, launcher_runs(mpijob, "3600s")]))
        kube.delete_all(f"/api/v1/namespaces/{ns}/events")
        apply_job(kube, [group, launcher_runs(mpijob, "3600s")])
        why = wait_for(f"{name}'s gang waiting, with the scheduler's reason", lambda: gang_reason(ns, name))
        # one member fits nowhere in su1: su1-01 cordoned, su1-02 without rails, su1-03/04 held for the others
        assert GANG_WAITS.match(why), why
        assert job_nodes(kube, ns, name) == [], "the gang is all or nothing: no pod of it may be bound"
        assert not scheduled(kube, ns, name, expect=0)
    finally:
        gone(kube, ns, held if held.exists() else tmp_path / "jobs" / f"{name}.yaml", name)
        undo = subprocess.run([*remediate, "--revert"], capture_output=True, text=True, env=env, timeout=120)
        rails_to(None)
    assert undo.returncode == 0, undo.stdout + undo.stderr
    node = json.loads(kube.kubectl("get", "node", cordoned, "-o", "json").stdout)["spec"]
    assert not node.get("unschedulable") and not node.get("taints")

def job_pods(kube: KubeLab, ns: str, job: str, role: str) -> list[dict]:
    sel = f"roce-fabric/job={job},roce-fabric/role={role}"
    return kube.get(f"/api/v1/namespaces/{ns}/pods", labelSelector=sel)["items"]


def job_nodes(kube: KubeLab, ns: str, job: str) -> list[str]:
    """The nodes of every pod of the job the scheduler has bound (any phase)."""
    sel = f"roce-fabric/job={job}"
    pods = kube.get(f"/api/v1/namespaces/{ns}/pods", labelSelector=sel)["items"]
    return sorted(p["spec"]["nodeName"] for p in pods if p["spec"].get("nodeName"))


def running_on(kube: KubeLab, ns: str, job: str) -> list[str]:
    """The nodes of the job's Running workers."""
    pods = job_pods(kube, ns, job, "worker")
    return sorted(p["spec"]["nodeName"] for p in pods if p["status"].get("phase") == "Running")


def gang_reason(ns: str, name: str) -> str:
    """The runner's reason once Volcano counts the gang's pods ('' before: until the MPI Operator has created them,
    the PodGroup's condition reads `5/0 tasks in gang unschedulable: pod group is not ready, 5 minAvailable`)."""
    why = K8sRunner(ns).pending(name)
    return why if re.search(r"(\d+)/\1 tasks in gang unschedulable", why) else ""


def wait_for(what: str, probe: Callable[[], Any], timeout: float = 120) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if value := probe():
            return value
        time.sleep(0.5)
    raise AssertionError(f"not after {timeout:.0f}s: {what}")


def launcher_ends(kube: KubeLab, ns: str, job: str) -> None:
    """Stands in for the launcher's script ending with exit 0 (mpirun done): its pod's status Succeeded, as the
    kubelet reports it. The launchers of these tests are held (kwok's completion an hour away), because the real
    launcher first waits for every worker (manifests.WAIT_FOR_WORKERS) and kwok does not run it."""
    (pod,) = job_pods(kube, ns, job, "launcher")
    now = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    status = {"phase": "Succeeded", "containerStatuses": [{
        "name": "launcher", "image": pod["spec"]["containers"][0]["image"], "imageID": "", "ready": False,
        "restartCount": 0, "started": False,
        "state": {"terminated": {"exitCode": 0, "reason": "Completed", "startedAt": now, "finishedAt": now}}}]}
    kube.kubectl("patch", "pod", pod["metadata"]["name"], "-n", ns, "--subresource=status", "--type=merge", "-p",
                 json.dumps({"status": status}))


def test_two_jobs_applied_at_once_on_the_same_hosts_run_one_after_the_other(kube: KubeLab, on_path: KubeLab,
                                                                          generated: dict[str, FabricIntent],
                                                                          tmp_path: Path) -> None:
    """su1's NCCL job and its pod bandwidth job both want every rail device of the same four hosts (PF mode: one
    per rail and node), applied in one request. Volcano gives the hosts to one gang whole; the other waits with
    none of its pods bound (the runner reports why) and runs once the first ends: no node ever holds both, and
    neither holds part of the hosts while waiting for the rest (what kube-scheduler alone did)."""
    fabric = generated["three-su"]
    use(kube, fabric)
    ns = fabric.kubernetes.namespace
    bundle.render_bundle(fabric, tmp_path, IMAGE)
    names = ("nccl-su1", "pods-su1-bw")
    paths = {n: tmp_path / "jobs" / f"{n}.yaml" for n in names}
    hosts = [f"gpu-su1-0{i}" for i in range(1, 5)]
    objects = []
    for n in names:
        group, mpijob = yaml.safe_load_all(paths[n].read_text())
        objects += [group, launcher_runs(mpijob, "3600s")]
    try:
        apply_job(kube, objects)
        first = wait_for("one job's four workers Running",
                         lambda: next((n for n in names if running_on(kube, ns, n) == hosts), None))
        (second,) = (n for n in names if n != first)
        why = wait_for(f"{second}'s gang waiting, with the scheduler's reason", lambda: gang_reason(ns, second))
        assert GANG_WAITS.match(why), why  # the first holds the four hosts' devices
        assert job_nodes(kube, ns, second) == []
        launcher_ends(kube, ns, first)
        assert wait_mpijob(kube, ns, first) == "Succeeded"
        wait_for(f"{second}'s four workers Running", lambda: running_on(kube, ns, second) == hosts)
        assert running_on(kube, ns, first) == []  # no node holds workers of both
        launcher_ends(kube, ns, second)
        assert wait_mpijob(kube, ns, second) == "Succeeded"
    finally:
        for n in names:
            gone(kube, ns, paths[n], n)


@pytest.fixture(scope="module")
def pooled(tmp_path_factory: pytest.TempPathFactory) -> FabricIntent:
    """k8s-vlan16 with one pooled rail resource (tests/render/test_k8s_pooled.py renders and checks it without a
    cluster)."""
    from tests.render.test_k8s_pooled import pooled_copy

    return derive(load(pooled_copy(tmp_path_factory.mktemp("pooled"))))


def test_pooled_jobs_are_admitted_and_each_worker_takes_its_nodes_whole_pool(kube: KubeLab, pooled: FabricIntent,
                                                                             tmp_path: Path) -> None:
    """On the real control plane (fabric.lab.kube): kwok nodes advertise the pooled resource as one device per
    NIC (8), the API server admits the networks and every job (the hostPath volume, NET_ADMIN, the repeated
    network), the scheduler puts one worker on each intended host, and a second job wanting the same hosts
    waits: each worker holds its node's whole pool, so two pods never split one node's rails."""
    bundle.render_bundle(pooled, tmp_path / "b", IMAGE)
    ns = pooled.kubernetes.namespace
    use(kube, pooled)
    kube.apply([{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}}])
    try:
        node = json.loads(kube.kubectl("get", "node", "gpu-su1-01", "-o", "json").stdout)
        assert node["status"]["allocatable"]["nvidia.com/rail"] == "8"
        kube.kubectl("apply", "--server-side", "-f", str(tmp_path / "b" / "networks.yaml"))
        for path in sorted((tmp_path / "b" / "jobs").glob("*.yaml")):  # every field declared, the tier too
            run = kube.kubectl("apply", "--server-side", "--dry-run=server", "-f", str(path), check=False)
            assert run.returncode == 0, run.stderr
        jobs = {j: list(yaml.safe_load_all((tmp_path / "b" / "jobs" / f"{j}.yaml").read_text()))
                for j in ("nccl-su1", "pods-su1-bw")}

        def hosts_of(j: str) -> list[str]:
            return sorted(jobs[j][1]["spec"]["mpiReplicaSpecs"]["Worker"]["template"]["spec"]["affinity"][
                "nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"][0][
                "matchExpressions"][0]["values"])

        def bound(j: str, want: int, wait_s: float) -> dict[str, str]:
            deadline = time.monotonic() + wait_s
            while True:
                pods = kube.get(f"/api/v1/namespaces/{ns}/pods")["items"]
                out = {p["metadata"]["name"]: p["spec"]["nodeName"] for p in pods
                       if p["metadata"]["name"].startswith(f"{j}-worker-") and p["spec"].get("nodeName")}
                if len(out) >= want or time.monotonic() > deadline:
                    return out
                time.sleep(1)

        kube.apply(jobs["nccl-su1"], validate="warn")
        placed = bound("nccl-su1", len(hosts_of("nccl-su1")), 120)
        assert sorted(placed.values()) == hosts_of("nccl-su1")  # one worker on each intended host
        kube.apply(jobs["pods-su1-bw"], validate="warn")
        assert set(hosts_of("pods-su1-bw")) <= set(hosts_of("nccl-su1"))
        time.sleep(10)
        assert bound("pods-su1-bw", 1, 0) == {}  # every device of those nodes is the first job's

        def gang_reason() -> str:  # Volcano's reason on the waiting gang's PodGroup
            groups = kube.get(f"/apis/scheduling.volcano.sh/v1beta1/namespaces/{ns}/podgroups")["items"]
            return " ".join(c.get("message", "") for g in groups if g["metadata"]["name"].startswith("pods-su1-bw")
                            for c in g.get("status", {}).get("conditions", []) if c.get("type") == "Unschedulable")

        deadline = time.monotonic() + 60
        while "gang unschedulable" not in gang_reason() and time.monotonic() < deadline:
            time.sleep(1)
        assert "gang unschedulable" in gang_reason(), gang_reason()  # Volcano holds the whole gang back
    finally:  # the jobs go with this test, not with the control plane (the module's last test may change)
        for j in ("nccl-su1", "pods-su1-bw"):
            gone(kube, ns, tmp_path / "b" / "jobs" / f"{j}.yaml", j)
