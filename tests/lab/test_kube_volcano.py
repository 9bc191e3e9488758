"""Volcano's HyperNode tiers enforced on the lab's control plane (fabric.lab.kube), and two control planes at once.

The control plane runs Volcano v1.15.1 built from source (tools/k8s-bins/volcano-src.sh) with the
network-topology-aware plugin and the fabric's HyperNodes, on kwok nodes of a generated fabric of two spine groups
(pods) of two scalable units (SUs) of three hosts each, joined by super-spines: tier 1 = an SU (3 hosts), tier 2
= a pod (6 hosts), tier 3 = the core (12). Every worker of the jobs here takes a node's GPUs and rail devices
whole, so a job of N workers needs N hosts. The jobs are the tool's rendered MPIJobs with the host pinning taken
off, so that only the tier decides where they land.
"""

from __future__ import annotations

import copy
import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from fabric.accept import bundle
from fabric.accept.k8s import K8sRunner
from fabric.design.derive import derive
from fabric.design.intent import FabricIntent
from fabric.export.tiers import tiers
from fabric.lab.kube import KubeLab, Volcano, bins_dir, missing_bins, volcano_dir
from fabric.model.load import load
from tests.accept.k8s.test_cluster import IMAGE, gone, job_nodes, launcher_runs, wait_for
from tests.conftest import ROOT, require

pytestmark = pytest.mark.k8s

STRAGGLER_LOG = ROOT / "tests" / "fixtures" / "logs" / "job_straggler_tagged.log"  # ranks on gpu-su1-01 and -02
FAB = str(Path(sys.executable).parent / "fabric")


@pytest.fixture(scope="module")
def inv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """`fabric generate gpu-rail`: 4 SUs of 3 hosts, 2 pods, super-spines."""
    from fabric.generate import GpuRailSpec, write

    d = tmp_path_factory.mktemp("gen") / "tiers"
    write(GpuRailSpec(name="tiers", gpus=4 * 3 * 8, hosts_per_su=3, pods=2, super_spines=2), d)
    return d


@pytest.fixture(scope="module")
def fabric(inv: Path) -> FabricIntent:
    return derive(load(inv))


@pytest.fixture(scope="module")
def kube(tmp_path_factory: pytest.TempPathFactory, fabric: FabricIntent) -> Iterator[KubeLab]:
    bins = bins_dir()
    require(not missing_bins(bins), f"the Kubernetes binaries in {bins}: make k8s-bins")
    vc = volcano_dir(bins)
    require(vc.tiers, f"Volcano with HyperNodes (make k8s-bins builds v1.15.1 from ../shared/volcano-src), found "
                      f"{vc.dir}")
    lab = KubeLab(tmp_path_factory.mktemp("kube"), bins, vc)
    try:
        lab.start()
        lab.add_nodes(fabric)
        lab.apply([{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": fabric.kubernetes.namespace}}])
        yield lab
    finally:
        lab.stop()


@pytest.fixture(scope="module")
def rendered(tmp_path_factory: pytest.TempPathFactory, fabric: FabricIntent) -> Path:
    out = tmp_path_factory.mktemp("bundle")
    bundle.render_bundle(fabric, out, IMAGE)
    return out


def su_of(fabric: FabricIntent) -> dict[str, str]:
    return {p.name: p.su for p in tiers(fabric).hosts}


def pod_of(fabric: FabricIntent) -> dict[str, str]:
    return {p.name: p.pod for p in tiers(fabric).hosts}


def unpinned(rendered: Path, name: str, workers: int, tier: int, hold: bool = True) -> list[dict[str, Any]]:
    """su1's rendered NCCL job as `name`, `workers` workers, no host pinning, `highestTierAllowed: tier`; its
    launcher held (kwok's completion an hour away) unless `hold` is False."""
    group, mpijob = (copy.deepcopy(d) for d in yaml.safe_load_all((rendered / "jobs" / "nccl-su1.yaml").read_text()))
    group["metadata"]["name"] = f"{name}-gang"
    group["metadata"]["labels"]["roce-fabric/job"] = mpijob["metadata"]["labels"]["roce-fabric/job"] = name
    mpijob["metadata"]["name"] = name
    group["spec"]["minMember"] = workers + 1
    group["spec"]["minResources"] = {r: str(int(v) // 3 * workers) for r, v in group["spec"]["minResources"].items()}
    group["spec"]["networkTopology"]["highestTierAllowed"] = tier
    specs = mpijob["spec"]["mpiReplicaSpecs"]
    specs["Worker"]["replicas"] = workers
    for role in ("Launcher", "Worker"):
        tpl = specs[role]["template"]
        tpl["metadata"]["labels"]["roce-fabric/job"] = name
        tpl["metadata"]["annotations"]["scheduling.k8s.io/group-name"] = f"{name}-gang"
        tpl["spec"]["affinity"].pop("nodeAffinity")
        if not tpl["spec"]["affinity"]:
            tpl["spec"].pop("affinity")
    anti = specs["Worker"]["template"]["spec"]["affinity"]["podAntiAffinity"]
    anti["requiredDuringSchedulingIgnoredDuringExecution"][0]["labelSelector"]["matchLabels"]["roce-fabric/job"] = name
    return [group, launcher_runs(mpijob, "3600s" if hold else "1s")]


def write_job(tmp_path: Path, objs: list[dict[str, Any]]) -> Path:
    path = tmp_path / f"{objs[1]['metadata']['name']}.yaml"
    path.write_text(yaml.safe_dump_all(objs, sort_keys=False))
    return path


def workers_on(kube: KubeLab, ns: str, job: str, count: int) -> list[str]:
    """The nodes of the job's `count` Running workers, once they all run."""
    def running() -> list[str] | None:
        sel = f"roce-fabric/job={job},roce-fabric/role=worker"
        pods = kube.get(f"/api/v1/namespaces/{ns}/pods", labelSelector=sel)["items"]
        nodes = sorted(p["spec"]["nodeName"] for p in pods if p["status"].get("phase") == "Running"
                       and not p["metadata"].get("deletionTimestamp"))
        return nodes if len(nodes) == count else None

    return wait_for(f"{count} workers of {job} Running", running, timeout=120)


def gang_waits(kube: KubeLab, ns: str, job: str) -> str:
    """The runner's reason for a gang that waits whole, once Volcano counts all its pods ('' before)."""
    why = K8sRunner(ns).pending(job)
    return why if re.search(r"(\d+)/\1 tasks in gang unschedulable", why) else ""


@pytest.fixture
def on_path(kube: KubeLab, monkeypatch: pytest.MonkeyPatch) -> KubeLab:
    monkeypatch.setenv("PATH", f"{kube.bins / 'bin'}:{os.environ['PATH']}")
    monkeypatch.setenv("KUBECONFIG", str(kube.kubeconfig))
    return kube


def test_the_lab_runs_volcano_v1_15_with_the_topology_plugin_and_the_fabrics_hypernodes(kube: KubeLab,
                                                                                        fabric: FabricIntent) -> None:
    assert kube.volcano is not None and kube.volcano.version == "v1.15.1" and kube.volcano.tiers
    conf = yaml.safe_load((kube.workdir / "volcano-scheduler.conf").read_text())
    assert {"name": "network-topology-aware"} in conf["tiers"][1]["plugins"]
    hns = {h["metadata"]["name"]: h["spec"] for h in kube.get("/apis/topology.volcano.sh/v1alpha1/hypernodes")["items"]}
    assert {n: s["tier"] for n, s in hns.items()} == {
        "tiers-su1": 1, "tiers-su2": 1, "tiers-su3": 1, "tiers-su4": 1, "tiers-pod1": 2, "tiers-pod2": 2,
        "tiers-core": 3}
    # the PodGroup CRD of v1.15.1 declares the tier: the tool's job is admitted whole (strict, server-side)
    crd = kube.get("/apis/apiextensions.k8s.io/v1/customresourcedefinitions/podgroups.scheduling.volcano.sh")
    spec = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]
    assert "highestTierAllowed" in spec["networkTopology"]["properties"]


def test_a_tier_1_job_lands_inside_one_su_or_waits_whole(kube: KubeLab, on_path: KubeLab, fabric: FabricIntent,
                                                          rendered: Path, tmp_path: Path) -> None:
    """Three workers at tier 1 land on the three hosts of one SU; four (no SU has four hosts) wait as a whole
    gang, not one pod bound, with Volcano's reason; at tier 2 the same four run inside one pod (two SUs)."""
    ns = fabric.kubernetes.namespace
    su, pod = su_of(fabric), pod_of(fabric)
    paths = []
    try:
        three = unpinned(rendered, "tier1-three", 3, 1)
        paths.append(write_job(tmp_path, three))
        kube.apply(three)
        placed = workers_on(kube, ns, "tier1-three", 3)
        assert len({su[n] for n in placed}) == 1, placed
        gone(kube, ns, paths[-1], "tier1-three")

        four = unpinned(rendered, "tier1-four", 4, 1)
        paths.append(write_job(tmp_path, four))
        kube.apply(four)
        why = wait_for("the tier-1 gang of four waiting, with Volcano's reason",
                       lambda: gang_waits(kube, ns, "tier1-four"))
        assert why.startswith("PodGroup tier1-four-gang NotEnoughResources: 5/5 tasks in gang unschedulable: pod "
                              "group is not ready, 5 Pending, 5 minAvailable"), why
        assert "(networkTopology hard, highestTierAllowed 1: no HyperNode of that tier or below holds the whole " \
               "gang" in why, why
        assert job_nodes(kube, ns, "tier1-four") == [], "the gang is all or nothing: no pod of it may be bound"
        gone(kube, ns, paths[-1], "tier1-four")

        wide = unpinned(rendered, "tier2-four", 4, 2)
        paths.append(write_job(tmp_path, wide))
        kube.apply(wide)
        placed = workers_on(kube, ns, "tier2-four", 4)
        assert len({su[n] for n in placed}) == 2 and len({pod[n] for n in placed}) == 1, placed
    finally:
        for p in paths:
            gone(kube, ns, p, p.stem)


def test_a_cross_su_job_spreads_only_as_far_as_its_tier_allows(kube: KubeLab, on_path: KubeLab,
                                                               fabric: FabricIntent, rendered: Path,
                                                               tmp_path: Path) -> None:
    """Seven workers: tier 2 (a pod holds six hosts) waits whole; tier 3 runs across both pods."""
    ns = fabric.kubernetes.namespace
    pod = pod_of(fabric)
    paths = []
    try:
        seven = unpinned(rendered, "tier2-seven", 7, 2)
        paths.append(write_job(tmp_path, seven))
        kube.apply(seven)
        why = wait_for("the tier-2 gang of seven waiting", lambda: gang_waits(kube, ns, "tier2-seven"))
        assert why.startswith("PodGroup tier2-seven-gang NotEnoughResources: 8/8 tasks in gang unschedulable"), why
        assert "highestTierAllowed 2: no HyperNode of that tier or below holds the whole gang" in why, why
        assert job_nodes(kube, ns, "tier2-seven") == []
        gone(kube, ns, paths[-1], "tier2-seven")

        core = unpinned(rendered, "tier3-seven", 7, 3)
        paths.append(write_job(tmp_path, core))
        kube.apply(core)
        placed = workers_on(kube, ns, "tier3-seven", 7)
        assert {pod[n] for n in placed} == {"pod1", "pod2"}, placed
    finally:
        for p in paths:
            gone(kube, ns, p, p.stem)


def remediate(inv: Path, host: str, tmp_path: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "FABRIC_STATE": str(tmp_path / "state")}
    return subprocess.run([FAB, "remediate", str(inv), "--host", host, "--reason", "DG906 straggler",
                           "--scheduler", "kubernetes", "--execute", *extra], capture_output=True, text=True,
                          env=env, timeout=120)


def test_a_node_cordoned_by_remediate_moves_the_next_tier_1_placement(kube: KubeLab, on_path: KubeLab,
                                                                      fabric: FabricIntent, inv: Path,
                                                                      rendered: Path, tmp_path: Path) -> None:
    """A tier-1 job of three runs in some SU; `fabric remediate --execute` cordons one of that SU's hosts; the same
    job again lands whole in another SU (its own SU has two hosts left), never on the cordoned node."""
    ns = fabric.kubernetes.namespace
    su = su_of(fabric)
    job = unpinned(rendered, "tier1-move", 3, 1, hold=False)
    path = write_job(tmp_path, job)
    cordoned = ""
    try:
        kube.apply(job)
        first = workers_on(kube, ns, "tier1-move", 3)
        gone(kube, ns, path, "tier1-move")
        cordoned = first[0]
        done = remediate(inv, cordoned, tmp_path)
        assert done.returncode == 0, done.stdout + done.stderr
        assert json.loads(kube.kubectl("get", "node", cordoned, "-o", "json").stdout)["spec"]["unschedulable"]
        kube.apply(job)
        second = workers_on(kube, ns, "tier1-move", 3)
        assert cordoned not in second and len({su[n] for n in second}) == 1 and su[second[0]] != su[cordoned]
    finally:
        gone(kube, ns, path, "tier1-move")
        if cordoned:
            remediate(inv, cordoned, tmp_path, "--revert")


def test_the_daocloud_loop_a_straggler_diagnosed_shielded_and_the_job_moved_within_its_tier(
        kube: KubeLab, on_path: KubeLab, fabric: FabricIntent, inv: Path, rendered: Path, tmp_path: Path) -> None:
    """A two-worker tier-1 job runs on two hosts of an SU. The job's log (a real-format NCCL/PyTorch watchdog log
    with the job's two hosts in it) goes to `fabric diagnose`, which names the straggler's host (DG906);
    `fabric remediate --execute` cordons and taints that node through the API server. The straggler's worker
    ends (its pod deleted, as the job's restart does); the MPI Operator creates it again and Volcano places it
    inside the job's SU on the host the job did not use (the PodGroup keeps its allocated HyperNode: the
    network-topology-aware plugin's gradient starts from it): the other worker stays, the shielded node is left."""
    ns = fabric.kubernetes.namespace
    su = su_of(fabric)
    job = unpinned(rendered, "loop", 2, 1)
    path = write_job(tmp_path, job)
    shielded = ""
    try:
        kube.apply(job)
        before = workers_on(kube, ns, "loop", 2)
        assert su[before[0]] == su[before[1]]
        log = tmp_path / "loop.log"
        log.write_text(STRAGGLER_LOG.read_text().replace("gpu-su1-01", "@A@").replace("gpu-su1-02", before[1])
                       .replace("@A@", before[0]))
        env = {**os.environ, "FABRIC_STATE": str(tmp_path / "state")}
        diag = subprocess.run([FAB, "diagnose", "--inventory", str(inv), "-f", "json", str(log)], capture_output=True,
                              text=True, env=env, timeout=120)
        (straggler,) = [f for f in json.loads(diag.stdout)["findings"] if f["id"] == "DG906"]
        (shielded,) = {loc["host"] for loc in straggler["located"]}
        assert shielded == before[1]
        done = remediate(inv, shielded, tmp_path)
        assert done.returncode == 0, done.stdout + done.stderr
        node = json.loads(kube.kubectl("get", "node", shielded, "-o", "json").stdout)["spec"]
        assert node["unschedulable"] and any(t["key"] == "fabric.roce.io/fault" for t in node["taints"])
        sel = "roce-fabric/job=loop,roce-fabric/role=worker"
        (pod,) = [p["metadata"]["name"] for p in kube.get(f"/api/v1/namespaces/{ns}/pods", labelSelector=sel)["items"]
                  if p["spec"]["nodeName"] == shielded]
        kube.kubectl("delete", "pod", pod, "-n", ns, "--wait=true")
        after = workers_on(kube, ns, "loop", 2)
        assert shielded not in after and before[0] in after
        assert {su[n] for n in after} == {su[shielded]}, (before, after)
    finally:
        gone(kube, ns, path, "loop")
        if shielded:
            remediate(inv, shielded, tmp_path, "--revert")


def test_hypernodes_unfit_for_the_jobs_tier_are_refused_before_anything_is_applied(
        kube: KubeLab, on_path: KubeLab, fabric: FabricIntent, rendered: Path, tmp_path: Path) -> None:
    """A node in two HyperNodes of one tier, a HyperNode in two parents (not a tree), a job asking a tier no
    HyperNode has: the tool's runner names it and applies nothing."""
    ns = fabric.kubernetes.namespace
    hn = "/apis/topology.volcano.sh/v1alpha1/hypernodes"

    def extra(name: str, tier: int, kind: str, member: str) -> dict[str, Any]:
        return {"apiVersion": "topology.volcano.sh/v1alpha1", "kind": "HyperNode", "metadata": {"name": name},
                "spec": {"tier": tier, "members": [{"type": kind, "selector": {"exactMatch": {"name": member}}}]}}

    cases = [([extra("bad-dup", 1, "Node", "gpu-su1-01")], 1,
              "node gpu-su1-01: in 2 HyperNodes of tier 1 (bad-dup, tiers-su1), expected one"),
             ([extra("bad-parent", 2, "HyperNode", "tiers-su1")], 1,
              "HyperNode tiers-su1: in 2 parents (bad-parent, tiers-pod1), expected one (not a tree)"),
             ([], 4, "networkTopology highestTierAllowed 4: no HyperNode has that tier (the cluster's tiers: 1, 2, 3")]
    for objs, tier, message in cases:
        job = unpinned(rendered, "refused", 3, tier)
        path = write_job(tmp_path, job)
        try:
            if objs:
                kube.apply(objs)
            _log, err = K8sRunner(ns, poll_s=1).run(path, "refused", timeout=10)
            assert err.startswith("refused.yaml: not applied: ") and message in err, err
            left = kube.kubectl("get", "podgroups,mpijobs,pods", "-n", ns, "-l", "roce-fabric/job=refused",
                                "-o", "name").stdout.strip()
            assert left == ""
        finally:
            for o in objs:
                kube.read(f"{hn}/{o['metadata']['name']}", method="DELETE")


def test_two_control_planes_at_once_and_older_volcano_refuses_the_tier(kube: KubeLab, fabric: FabricIntent,
                                                                       rendered: Path, tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """A second control plane, with Volcano v1.10.0 (the core build's), starts while this module's runs: each
    MPI Operator binds its :8080 in a network namespace of its own and takes its leader Lease through its lab's
    API server; on v1.10 the tool's job is refused naming the tier field, and nothing of it is left."""
    bins = kube.bins
    older = KubeLab(tmp_path / "second", bins, Volcano(bins))
    try:
        older.start()
        assert older.volcano is not None and older.volcano.version == "v1.10.0" and not older.volcano.tiers
        assert not set(older.ports.values()) & set(kube.ports.values())
        for lab in (kube, older):
            assert all(p.poll() is None for p in lab.procs.values()), lab.workdir
            lease = lab.get("/apis/coordination.k8s.io/v1/namespaces/mpi-operator/leases/mpi-operator")
            assert lease["spec"]["holderIdentity"]
        assert "Error starting server for health check" not in (older.workdir / "mpi-operator.log").read_text()
        older.add_nodes(fabric)
        ns = fabric.kubernetes.namespace
        older.apply([{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}}])
        monkeypatch.setenv("PATH", f"{bins / 'bin'}:{os.environ['PATH']}")
        monkeypatch.setenv("KUBECONFIG", str(older.kubeconfig))
        _log, err = K8sRunner(ns, poll_s=1).run(rendered / "jobs" / "nccl-su1.yaml", "nccl-su1", timeout=10)
        assert err.startswith("kubectl apply: this cluster's Volcano PodGroup has no spec.networkTopology"), err
        left = older.kubectl("get", "podgroups,mpijobs,pods", "-n", ns, "-o", "name").stdout.strip()
        assert left == ""
    finally:
        older.stop()
    assert kube.read("/readyz") == b"ok"  # the module's own lab still serves
