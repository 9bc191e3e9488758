"""Kubernetes end to end, as far as it can go without a cluster: the device plugin's config, the rail
networks and each node's CNI config, the gang-scheduled MPIJobs, the pod entrypoint and the launcher.

No cluster runs here (no kubelet, multus, sriov-cni, Volcano or MPI Operator, and no SR-IOV NIC). What is
checked, and how:

* the manifests against the real CRDs and the controllers' rules with ../shared/tools/k8s_crd_check.py
  --strict (MPIJob v2beta1, Volcano PodGroup and HyperNode, NetworkAttachmentDefinition; its cross-object
  checks: gang membership vs minMember, networks vs requested devices) for a single-SU, a cross-SU and a
  whole-cluster job on inventories/h100-400g (PF pass-through) and on a fabric with host-tagged VLANs and
  16 VFs per NIC — and the same checker's CNI-config rules (sriov-cni and whereabouts fields) applied to
  every plugin of every node's CNI config, which lives on the node and not in the NAD;
* the device plugin's config against the fields of its pkg/types/types.go and its pfNames range syntax;
* what schemas cannot see: sshd in workers, every pod in the gang, the topology tier, placement, one
  subnet per SU in the nodes' configs, and NCCL discovery in the pod — the rendered entrypoint run on
  prepared sysfs trees of a pod — and the perftest launcher run end to end with a stand-in `mpirun`
  (ranks as local processes, one directory per worker pod) and a stand-in `ib_write_bw` that checks the
  device, GID index and port it is given;
* apply-and-follow through a stand-in `kubectl` that plays the MPIJob's conditions and logs.
"""

from __future__ import annotations

import contextlib
import functools
import importlib.util
import io
import ipaddress
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest
import yaml

from tests import inproc
from tests.conftest import ROOT, require

sys.path.insert(0, str(ROOT / "tests" / "fixtures" / "sysfs"))
from prepared import Nic, build

from fabric.accept import bundle as k8s_bundle
from fabric.accept import k8s
from fabric.accept.checks.base import Context
from fabric.accept.checks.nccl import NcclAllReduce, NcclInput
from fabric.accept.checks.pods import PodRailBandwidth, PodTrafficInput
from fabric.design.derive import derive
from fabric.design.intent import FabricIntent
from fabric.errors import InputError
from fabric.model.load import load
from fabric.render import k8s as rk
from tests.standins.schedulers import calls as standin_calls
from tests.standins.schedulers import install

SHARED = Path(os.environ.get("ROCE_FABRIC_SHARED", ROOT.parent / "shared"))
CHECKER = SHARED / "tools" / "k8s_crd_check.py"
CRDS = SHARED / "k8s-crds"
VLAN16 = ROOT / "tests" / "fixtures" / "inventories" / "k8s-vlan16"
H100 = ROOT / "inventories" / "h100-400g"
SAMPLES = ROOT / "tests" / "fixtures" / "samples"
IMAGE = "registry.example/roce-tests:1"


def fabric_of(path: Path) -> FabricIntent:
    return derive(load(path))


@pytest.fixture(scope="module")
def vlan16() -> FabricIntent:
    return fabric_of(VLAN16)


@pytest.fixture(scope="module")
def h100() -> FabricIntent:
    return fabric_of(H100)


def checker_module():
    require(CHECKER.is_file(), f"{CHECKER} (the shared folder beside the checkout)")
    spec = importlib.util.spec_from_file_location("k8s_crd_check", CHECKER)
    mod = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    spec.loader.exec_module(mod)  # type: ignore[union-attr]
    return mod


def docs(text: str) -> list[dict]:
    return [d for d in yaml.safe_load_all(text) if d]


# ---------------------------------------------------------------------------------------------- networks

def test_one_network_per_rail_and_each_node_carries_its_su_subnet(vlan16: FabricIntent) -> None:
    nads = docs(rk.network_attachments(vlan16))
    assert [d["metadata"]["name"] for d in nads] == [f"rail{r}" for r in range(1, 9)]
    assert all("spec" not in d and d["metadata"]["namespace"] == "training" for d in nads)
    assert [d["metadata"]["annotations"]["k8s.v1.cni.cncf.io/resourceName"] for d in nads] == [
        f"nvidia.com/rail{r}" for r in range(1, 9)]
    seen: dict[tuple[int, int], set[str]] = {}
    for host in vlan16.hosts.values():
        files = rk.node_cni_configs(host)
        assert set(files) == {f"etc/cni/multus/net.d/rail{r}.conflist" for r in range(1, 9)}
        for rail in host.rails:
            cfg = json.loads(files[f"etc/cni/multus/net.d/rail{rail.rail}.conflist"])
            assert cfg["name"] == f"rail{rail.rail}" and cfg["cniVersion"] == "1.0.0"
            sriov, rdma, sbr = cfg["plugins"]
            assert (sriov["type"], rdma, sbr) == ("sriov", {"type": "rdma"}, {"type": "sbr"})
            assert sriov["vlan"] == rail.vlan == 1000 + rail.rail and (sriov["trust"], sriov["spoofchk"]) == ("on",
                                                                                                               "off")
            assert "mtu" not in sriov  # sriov-cni keeps the VF's MTU, which the host agent sets
            ipam = sriov["ipam"]
            net = ipaddress.ip_network(ipam["range"])
            assert ipam["range"] == rail.subnet and ipam["gateway"] == rail.gateway
            first, last = ipaddress.ip_address(ipam["range_start"]), ipaddress.ip_address(ipam["range_end"])
            hosts = {ipaddress.ip_interface(h.rails[rail.rail - 1].address).ip for h in vlan16.hosts.values()
                     if h.su == host.su}
            assert first > max(hosts) and last == net.broadcast_address - 1  # after the SU's hosts
            assert int(last) - int(first) + 1 >= 8 * 16  # every VF of the SU gets an address
            seen.setdefault((host.su, rail.rail), set()).add(ipam["range"])
    assert all(len(v) == 1 for v in seen.values())  # one pool per (SU, rail) …
    assert seen[(1, 1)] != seen[(2, 1)]  # … and another SU, another subnet


def test_pf_pass_through_gives_the_pod_the_nic_and_the_hosts_address(h100: FabricIntent) -> None:
    host = h100.hosts["gpu-su2-03"]
    cfg = json.loads(rk.node_cni_configs(host)["etc/cni/multus/net.d/rail1.conflist"])
    assert [p["type"] for p in cfg["plugins"]] == ["host-device", "sbr"]  # shared netns mode: no rdma plugin
    assert cfg["plugins"][0]["ipam"] == {"type": "static", "addresses": [
        {"address": host.rails[0].address, "gateway": host.rails[0].gateway}]}
    dp = rk.device_plugin_config(host, "nvidia.com")["resourceList"]
    assert dp[0] == {"resourceName": "rail1", "resourcePrefix": "nvidia.com",
                     "selectors": [{"isRdma": True, "pciAddresses": ["0000:18:00.0"]}]}


def test_node_cni_configs_pass_the_checkers_sriov_and_whereabouts_rules(vlan16: FabricIntent,
                                                                         h100: FabricIntent) -> None:
    """The checker validates CNI configs it finds in NAD specs; the configs here live on the nodes, so each
    plugin of each node's list goes through the same function."""
    mod = checker_module()
    for fabric in (vlan16, h100):
        for host in fabric.hosts.values():
            for path, text in rk.node_cni_configs(host).items():
                cfg = json.loads(text)
                for plugin in cfg["plugins"]:
                    rep = mod.Report()
                    mod.check_cni_config({"cniVersion": cfg["cniVersion"], "name": cfg["name"], **plugin}, rep, path)
                    assert not rep.errors and not rep.warnings, rep.errors + rep.warnings


SELECTORS = {"vendors", "devices", "drivers", "pciAddresses", "pfNames", "rootDevices", "linkTypes", "acpiIndexes",
             "needVhostNet", "ddpProfiles", "vdpaType", "pKeys", "isRdma"}
RESOURCE = {"resourceName", "resourcePrefix", "deviceType", "excludeTopology", "selectors", "additionalInfo"}


def test_device_plugin_config_uses_the_plugins_fields(vlan16: FabricIntent, h100: FabricIntent,
                                                      tmp_path: Path) -> None:
    """Field names of sriov-network-device-plugin pkg/types/types.go (ResourceConfig, NetDeviceSelectors;
    untagged IsRdma matches `isRdma` as Go's JSON does), resourceName as cmd/sriovdp/manager.go accepts it,
    and pfNames `<pf>#<first>-<last>` as pkg/resources/deviceSelectors.go isSelected reads it."""
    for fabric in (vlan16, h100):
        cm = docs(rk.device_plugin_configmap(fabric))[0]
        assert cm["kind"] == "ConfigMap" and cm["metadata"]["namespace"] == "kube-system"
        assert list(cm["data"]) == ["config.json"]  # every node the same: the plugin's default file
        conf = json.loads(cm["data"]["config.json"])
        assert set(conf) == {"resourceList"} and len(conf["resourceList"]) == 8
        for res in conf["resourceList"]:
            assert set(res) <= RESOURCE and re.match(r"^[a-zA-Z0-9_-]+$", res["resourceName"])
            (sel,) = res["selectors"]
            assert set(sel) <= SELECTORS and sel["isRdma"] is True
            for pf in sel.get("pfNames", []):
                assert re.match(r"^[\w.-]+#0-15$", pf)
    # nodes that differ get a key each (the plugin started with --config-file=/etc/pcidp/$(NODE_NAME))
    inv = tmp_path / "mixed"
    import shutil

    shutil.copytree(VLAN16, inv)
    hosts = (inv / "hosts.yaml").read_text().replace("kubernetes:", """  list:
    - name: gpu-su1-02
      nics:
        - {rail: 1, rdma: mlx5_0, netdev: enp26s0np0, vlan: 1001, vfs: 8}
        - {rail: 2, rdma: mlx5_1, netdev: enp60s0np0, vlan: 1002, vfs: 8}
        - {rail: 3, rdma: mlx5_2, netdev: enp77s0np0, vlan: 1003, vfs: 8}
        - {rail: 4, rdma: mlx5_3, netdev: enp94s0np0, vlan: 1004, vfs: 8}
        - {rail: 5, rdma: mlx5_4, netdev: enp156s0np0, vlan: 1005, vfs: 8}
        - {rail: 6, rdma: mlx5_5, netdev: enp188s0np0, vlan: 1006, vfs: 8}
        - {rail: 7, rdma: mlx5_6, netdev: enp204s0np0, vlan: 1007, vfs: 8}
        - {rail: 8, rdma: mlx5_7, netdev: enp220s0np0, vlan: 1008, vfs: 8}

kubernetes:""")
    (inv / "hosts.yaml").write_text(hosts)
    data = docs(rk.device_plugin_configmap(fabric_of(inv)))[0]["data"]
    assert "config.json" not in data and set(data) == set(vlan16.hosts)
    assert json.loads(data["gpu-su1-02"])["resourceList"][0]["selectors"][0]["pfNames"] == ["enp26s0np0#0-7"]


def test_pooled_resource_on_multi_nic_hosts_needs_what_the_pod_can_map(tmp_path: Path, example_copy: Path) -> None:
    """Slot-style names carry no PCI address, and a pod knows its NICs only by that (tests/render/test_k8s_pooled.py has
    the rest of the pooled path); one NIC per host needs no mapping."""
    (example_copy / "k8s.yaml").write_text("kubernetes:\n  resources: pooled\n  resource_name: rdma_vf\n")
    with pytest.raises(InputError) as exc:
        derive(load(example_copy))
    assert "hosts.nics.pci: expected a PCI address for every rail NIC with a pooled resource" in str(exc.value)
    fabric = (example_copy / "fabric.yaml").read_text().replace("rails: 4", "rails: 1")
    (example_copy / "fabric.yaml").write_text(fabric)
    hosts = example_copy / "hosts.yaml"
    hosts.write_text(re.sub(r"(?m)^\s+- \{rail: [2-9].*\n", "", hosts.read_text()))
    one = derive(load(example_copy))
    assert {r.pod.resource for h in one.hosts.values() for r in h.rails} == {"nvidia.com/rdma_vf"}


def test_pfs_without_a_pci_address_are_selected_by_name_never_an_empty_list(example_copy: Path,
                                                                             h100: FabricIntent) -> None:
    """Slot-style names (the example's rail1…, HGX ens1np0) carry no PCI address: the PF is selected by its own
    interface name (the plugin's PF name of a non-VF device), RF205 no longer warns; a node pods cannot attach
    at all is refused before (tests/design/test_checks.py), never an empty resourceList."""
    from fabric.lint.context import Context as LintContext
    from fabric.lint.engine import run

    (example_copy / "k8s.yaml").write_text("kubernetes:\n  namespace: ml\n")
    hosts = example_copy / "hosts.yaml"
    hosts.write_text(re.sub(r"netdev: rail(\d)", r"netdev: ens\1np0", hosts.read_text()))
    assert not run(LintContext(load(example_copy)), select=["RF205"]).findings
    fabric = derive(load(example_copy))
    data = docs(rk.device_plugin_configmap(fabric))[0]["data"]
    for text in data.values():
        lists = json.loads(text)["resourceList"]
        assert [r["selectors"] for r in lists] == [[{"isRdma": True, "pfNames": [f"ens{n}np0"]}] for n in range(1, 5)]
    hosts.write_text(hosts.read_text().replace("netdev: ens1np0", "netdev: ens1np0, pci: '0000:31:00.0'"))
    with_pci = docs(rk.device_plugin_configmap(derive(load(example_copy))))[0]["data"]
    assert all('"pciAddresses"' in t for t in with_pci.values())  # rail 1's resource: all its PFs have one
    assert all(r.pci for h in h100.hosts.values() for r in h.rails)  # DGX names carry it


# ---------------------------------------------------------------------------------------------- the checker

JOBS = ["nccl-su1", "nccl-cross-su", "nccl-cluster", "pods-su1-bw", "pods-cross-su-bw", "pods-su1-lat"]


@functools.cache
def _checker():
    """The checker loaded once per test process, with its CRDs parsed once: the MPIJob CRD is 670 kB of YAML that
    took 0.8 of its 0.9 CPU-s per call. It only reads them (it validates against deep copies)."""
    mod = checker_module()
    load = mod.load_crds
    parsed = functools.cache(lambda paths: load(list(paths)))
    mod.load_crds = lambda paths: parsed(tuple(paths))
    return mod


def run_checker(*files: Path) -> subprocess.CompletedProcess[str]:
    """`k8s_crd_check.py --strict --crd …(the four CRDs) FILES`: its main() in this process, its output captured."""
    crds = [a for c in ("mpijobs", "podgroups", "hypernodes", "nad-crd") for a in ("--crd", str(CRDS / f"{c}.yaml"))]
    argv = ["--strict", *crds, *map(str, files)]
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = _checker().main(argv)
    return subprocess.CompletedProcess([str(CHECKER), *argv], code, out.getvalue(), "")


@pytest.fixture(scope="module", params=["h100-400g", "k8s-vlan16"])
def bundle(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, FabricIntent]:
    fabric = fabric_of(H100 if request.param == "h100-400g" else VLAN16)
    out = tmp_path_factory.mktemp(request.param)
    k8s_bundle.render_bundle(fabric, out, IMAGE, quick=True)
    return out, fabric


@pytest.mark.parametrize("job", JOBS)
def test_k8s_crd_check_strict_reports_nothing(bundle: tuple[Path, FabricIntent], job: str) -> None:
    out, _fabric = bundle
    run = run_checker(out / "jobs" / f"{job}.yaml", out / "networks.yaml", out / "hypernodes.yaml")
    last = run.stdout.strip().splitlines()[-1]
    assert run.returncode == 0 and last.endswith("0 errors, 0 warnings"), run.stdout
    assert "MPIJob 1" in last and "PodGroup 1" in last and "NetworkAttachmentDefinition 8" in last


def test_checker_sees_the_device_plugin_configmap_only_as_a_core_object(bundle: tuple[Path, FabricIntent]) -> None:
    """A ConfigMap is a core API object, not a CRD: the checker can only check its metadata and says so.
    Its content is checked against the plugin's own types above."""
    out, _fabric = bundle
    run = run_checker(out / "sriovdp-config.yaml")
    assert run.returncode == 0 and "0 errors, 1 warnings" in run.stdout
    assert "no CRD loaded for v1 ConfigMap: only metadata checked" in run.stdout


def test_checker_still_catches_what_the_jobs_avoid(bundle: tuple[Path, FabricIntent], tmp_path: Path) -> None:
    """The rules are live: a launcher outside the gang, or the networks of every SU, fail the same check."""
    out, _fabric = bundle
    group, mpijob = docs((out / "jobs" / "nccl-cluster.yaml").read_text())
    launcher = mpijob["spec"]["mpiReplicaSpecs"]["Launcher"]["template"]["metadata"]
    launcher["annotations"].pop("scheduling.k8s.io/group-name")
    bad = tmp_path / "bad.yaml"
    bad.write_text(yaml.safe_dump_all([group, mpijob]))
    run = run_checker(bad, out / "networks.yaml")
    assert run.returncode == 1 and "the gang never fills" in run.stdout
    group, mpijob = docs((out / "jobs" / "nccl-cluster.yaml").read_text())
    ann = mpijob["spec"]["mpiReplicaSpecs"]["Worker"]["template"]["metadata"]["annotations"]
    ann["k8s.v1.cni.cncf.io/networks"] += ",rail1"  # a second network on the rail-1 resource
    bad.write_text(yaml.safe_dump_all([group, mpijob]))
    run = run_checker(bad, out / "networks.yaml")
    assert run.returncode == 1 and "multus gives the extra networks no device ID" in run.stdout


# ---------------------------------------------------------------------------------------------- the jobs

def test_jobs_are_one_gang_with_sshd_workers_pinned_to_their_hosts(bundle: tuple[Path, FabricIntent]) -> None:
    out, fabric = bundle
    tiers = {"nccl-su1": 1, "pods-su1-bw": 1, "nccl-cross-su": 2, "pods-cross-su-bw": 2, "nccl-cluster": 2,
             "pods-su1-lat": 1}
    sus = {h.su for h in fabric.hosts.values()}
    for job, tier in tiers.items():
        group, mpijob = docs((out / "jobs" / f"{job}.yaml").read_text())
        specs = mpijob["spec"]["mpiReplicaSpecs"]
        assert group["metadata"]["name"] == f"{job}-gang" != mpijob["metadata"]["name"]  # not the operator's own
        assert group["spec"]["minMember"] == specs["Worker"]["replicas"] + specs["Launcher"]["replicas"]
        assert group["spec"]["networkTopology"] == {"mode": "hard", "highestTierAllowed": tier}
        assert mpijob["spec"]["launcherCreationPolicy"] == "AtStartup"  # the gang counts the launcher
        assert "schedulingPolicy" not in mpijob["spec"]["runPolicy"]
        for role in specs.values():
            tpl = role["template"]
            assert tpl["metadata"]["annotations"]["scheduling.k8s.io/group-name"] == group["metadata"]["name"]
            assert tpl["spec"]["schedulerName"] == "volcano"
            (term,) = tpl["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"][
                "nodeSelectorTerms"]
            hosts = term["matchExpressions"][0]["values"]
        worker = specs["Worker"]["template"]
        assert len(hosts) == specs["Worker"]["replicas"] and set(hosts) <= set(fabric.hosts)
        job_sus = {fabric.hosts[h].su for h in hosts}
        assert (len(job_sus) == 1) == (tier == 1)
        if job == "nccl-cluster":
            assert set(hosts) == set(fabric.hosts) and job_sus == sus
        anti = worker["spec"]["affinity"]["podAntiAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
        assert anti == [{"labelSelector": {"matchLabels": {"app.kubernetes.io/part-of": "roce-fabric-accept",
                                                           "roce-fabric/job": job, "roce-fabric/role": "worker"}},
                         "topologyKey": "kubernetes.io/hostname"}]
        assert specs["Launcher"]["template"]["metadata"]["labels"]["roce-fabric/role"] == "launcher"
        (c,) = worker["spec"]["containers"]
        script = c["command"][2]
        assert c["command"][:2] == ["/bin/sh", "-c"] and script.rstrip().endswith("exec /usr/sbin/sshd -De")
        assert "command -v \"$t\"" in script and "sshd" in script.split("for t in ")[1].split(";")[0]
        assert c["securityContext"] == {"capabilities": {"add": ["IPC_LOCK"]}}
        env = {e["name"]: e.get("value") for e in c["env"]}
        assert "NCCL_IB_HCA" not in env and "NCCL_IB_GID_INDEX" not in env
        assert env["ROCE_FABRIC_POD_SH"] == rk.pod_entrypoint() and env["ROCE_FABRIC_RAILS"] == "8"
        nets = worker["metadata"]["annotations"]["k8s.v1.cni.cncf.io/networks"].split(",")
        assert nets == [f"rail{r}@rail{r}" for r in range(1, 9)]  # one per rail, whatever the SUs
        assert c["resources"]["requests"] == c["resources"]["limits"]
        assert {k for k in c["resources"]["requests"] if "rail" in k} == {f"nvidia.com/rail{r}" for r in range(1, 9)}
        if job.startswith("nccl"):
            assert c["resources"]["requests"]["nvidia.com/gpu"] == "8"
            launch = specs["Launcher"]["template"]["spec"]["containers"][0]["command"]
            assert launch[:4] == ["/bin/sh", "-c", k8s.WAIT_FOR_WORKERS, "roce-fabric-launcher"]
            launch = launch[4:]
            assert launch[:2] == ["mpirun", "--allow-run-as-root"] and "/var/run/roce-fabric/pod.sh" in launch
            assert launch[launch.index("-np") + 1] == str(8 * len(hosts))


def test_job_tier_follows_the_exported_hypernodes(h100: FabricIntent) -> None:
    su1 = [h for h in h100.hosts if h100.hosts[h].su == 1]
    assert k8s.job_tier(h100, su1) == 1 and k8s.job_tier(h100, [su1[0], "gpu-su2-01"]) == 2


# ---------------------------------------------------------------------------------------------- NCCL in the pod

def pod_tree(root: Path, rails: int = 8, gid_index: dict[int, int] | None = None, rdma: bool = True) -> Path:
    """A pod's sysfs: rail interfaces rail1..N, each a VF with its RDMA device mlx5_1N (not the host's names)."""
    nics = [Nic(f"rail{r}", f"mlx5_{10 + r}", f"10.100.{r - 1}.{20 + r}", v2_ipv4_index=(gid_index or {}).get(r, 3))
            for r in range(1, rails + 1)]
    build(root, nics)
    (root / "class/net/eth0").mkdir(parents=True)  # the pod network: no RDMA device behind it
    if not rdma:
        for r in range(1, rails + 1):
            for d in (root / "class/net" / f"rail{r}" / "device" / "infiniband").iterdir():
                d.rmdir()
    return root


def entry(tmp_path: Path, sysfs: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    script = tmp_path / "roce-pod-env.sh"
    script.write_text(rk.pod_entrypoint())
    return subprocess.run(["sh", str(script), *args], capture_output=True, text=True,
                          env={"PATH": "/usr/bin:/bin", "ROCE_FABRIC_SYSFS": str(sysfs), **env})


def test_pod_entrypoint_exports_the_pods_own_devices_and_gid(tmp_path: Path) -> None:
    run = entry(tmp_path, pod_tree(tmp_path / "sys"), "env", ROCE_FABRIC_RAILS="8")
    assert run.returncode == 0, run.stderr
    env = dict(line.split("=", 1) for line in run.stdout.splitlines() if line.startswith("NCCL_"))
    assert env["NCCL_IB_HCA"] == "=" + ",".join(f"mlx5_{10 + r}:1" for r in range(1, 9))
    assert env["NCCL_IB_GID_INDEX"] == "3" and "NCCL_IB_ROCE_VERSION_NUM" not in env
    assert "rail1=mlx5_11:3" in run.stderr
    rail = entry(tmp_path, tmp_path / "sys", "rail", "3", ROCE_FABRIC_QUIET="1")
    assert rail.stdout.split() == ["mlx5_13", "3", "rail3"]


def test_pod_entrypoint_lets_nccl_choose_when_gid_indexes_differ(tmp_path: Path) -> None:
    run = entry(tmp_path, pod_tree(tmp_path / "sys", gid_index={2: 5}), "env")
    env = dict(line.split("=", 1) for line in run.stdout.splitlines() if line.startswith("NCCL_"))
    assert "NCCL_IB_GID_INDEX" not in env
    assert (env["NCCL_IB_ROCE_VERSION_NUM"], env["NCCL_IB_ADDR_FAMILY"]) == ("2", "AF_INET")
    for version, ok in (("2.21.5", True), ("2.30", True), ("2.18.3", False), ("2.20", False), ("2.9.9", False)):
        run = entry(tmp_path, tmp_path / "sys", "env", ROCE_FABRIC_NCCL_VERSION=version)
        assert (run.returncode == 0) == ok, (version, run.stderr)
        if not ok:
            assert f"not at one index and NCCL {version} (before 2.21) cannot choose per device" in run.stderr
    same = entry(tmp_path, pod_tree(tmp_path / "same"), "env", ROCE_FABRIC_NCCL_VERSION="2.18.3")
    assert same.returncode == 0 and "NCCL_IB_GID_INDEX=3" in same.stdout  # one index: any NCCL is told it
    job = k8s.nccl_pod_job(fabric_of(H100), "j", ["gpu-su1-01", "gpu-su1-02"], ["all_reduce_perf"], 8, IMAGE,
                           nccl_version="2.18.3")
    assert job.env["ROCE_FABRIC_NCCL_VERSION"] == "2.18.3" and "ROCE_FABRIC_NCCL_VERSION" in job.command


def test_pod_entrypoint_fails_instead_of_falling_back_to_tcp(tmp_path: Path) -> None:
    run = entry(tmp_path, pod_tree(tmp_path / "none", rdma=False), "env")
    assert run.returncode == 1 and "NCCL would fall back to TCP sockets" in run.stderr
    run = entry(tmp_path, pod_tree(tmp_path / "four", rails=4), "env", ROCE_FABRIC_RAILS="8")
    assert run.returncode == 1 and "found 4 rail RDMA devices" in run.stderr and "expected 8" in run.stderr


# ---------------------------------------------------------------------------------------------- the launcher

FAKE_MPIRUN = r'''#!/usr/bin/env python3
"""Stand-in for OpenMPI's mpirun under the MPI Operator: ranks are local processes, each in the directory
of its worker pod ($WORKERS/<pod>): ROCE_FABRIC_RUN (pod.sh, node), ROCE_FABRIC_SYSFS, a `hostname`."""
import os, subprocess, sys
args, forward, hosts, np = sys.argv[1:], [], None, 1
while args and args[0].startswith("-"):
    a = args.pop(0)
    if a == "-x": forward.append(args.pop(0))
    elif a == "-np": np = int(args.pop(0))
    elif a == "--host": hosts = args.pop(0).split(",")
    elif a in ("--map-by", "--bind-to"): args.pop(0)
hostfile = [l.split()[0] for l in open(os.environ["OMPI_MCA_orte_default_hostfile"]) if l.strip()]
hosts = hosts or hostfile[:np]
procs = []
for rank, host in enumerate(hosts[:np]):
    pod = host.split(".")[0]
    d = os.path.join(os.environ["WORKERS"], pod)
    env = {"PATH": d + "/bin:" + os.environ["PATH"], "OMPI_COMM_WORLD_RANK": str(rank),
           "ROCE_FABRIC_RUN": d + "/run", "ROCE_FABRIC_SYSFS": d + "/sys", "STANDIN_POD": d,
           "SAMPLE": os.environ["SAMPLE"]}  # the stand-in ib_write_bw's report
    env.update({k: os.environ[k] for k in forward})
    procs.append(subprocess.Popen(args, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True))
rc = 0
for p in procs:
    out, _ = p.communicate()
    sys.stdout.write(out)
    rc = max(rc, p.returncode)
sys.exit(rc)
'''

FAKE_IB_WRITE_BW = r'''#!/bin/sh
# Stand-in ib_write_bw: checks -d is this pod's RDMA device behind a rail interface and -x its RoCE v2 GID
# index (3 in the prepared trees), then as client prints a real perftest report with $STANDIN_POD/gbps.
dev=""; gid=""; port=""; last=""
while [ $# -gt 0 ]; do
  case "$1" in -d) dev=$2; shift ;; -x) gid=$2; shift ;; -p) port=$2; shift ;; esac
  last=$1; shift
done
ls "$ROCE_FABRIC_SYSFS"/class/net/rail*/device/infiniband/"$dev" >/dev/null 2>&1 || { echo "bad device $dev"; exit 2; }
[ "$gid" = 3 ] || { echo "bad GID index $gid"; exit 2; }
case "$port" in 1851[6-9]|1852[0-3]) ;; *) echo "bad port $port"; exit 2 ;; esac
case "$last" in *.svc) ;; *) exit 0 ;; esac  # the server
[ -f "$STANDIN_POD/broken-$dev" ] && { echo "Couldn't connect to $last"; exit 1; }
sed "s/98\.02/$(cat "$STANDIN_POD/gbps")/" "$SAMPLE"
'''


def test_perftest_job_runs_end_to_end_and_is_judged_per_pair(vlan16: FabricIntent, tmp_path: Path) -> None:
    """The rendered launcher script with a stand-in mpirun: it learns which worker pod runs on which node (here
    pods are shuffled against the host order), runs every pair of every round through the pod entrypoint, and
    the log is judged per pair like the host check; one broken VF shows up as that pair's failure."""
    sample = SAMPLES / "ib_write_bw_client_bidir_duration_newheader.txt"
    assert " 98.02 " in sample.read_text()  # the BW average the stand-in replaces
    su1 = sorted(h for h in vlan16.hosts if vlan16.hosts[h].su == 1)[:4]
    rounds = [{1: [(su1[0], su1[1]), (su1[2], su1[3])], 2: [(su1[0], su1[2])]}]
    job = k8s.perftest_pod_job(vlan16, "pods-test", k8s.pod_pairs(vlan16, rounds, "p"), tool="ib_write_bw",
                               image=IMAGE)
    bin_dir, workers = tmp_path / "bin", tmp_path / "workers"
    bin_dir.mkdir()
    for name, text in (("mpirun", FAKE_MPIRUN), ("ib_write_bw", FAKE_IB_WRITE_BW)):
        (bin_dir / name).write_text(text)
        (bin_dir / name).chmod(0o755)
    hostfile = tmp_path / "hostfile"
    pods = [f"pods-test-worker-{i}" for i in range(len(job.hosts))]
    hostfile.write_text("".join(f"{p}.pods-test.training.svc slots=1\n" for p in pods))
    for pod, node in zip(pods, reversed(job.hosts), strict=True):  # worker i is not on host i
        d = workers / pod
        (d / "run").mkdir(parents=True)
        (d / "run" / "node").write_text(node + "\n")
        (d / "run" / "pod.sh").write_text(rk.pod_entrypoint())
        (d / "bin").mkdir()
        (d / "bin" / "hostname").write_text(f"#!/bin/sh\necho {pod}\n")
        (d / "bin" / "hostname").chmod(0o755)
        (d / "gbps").write_text("388.50" if node != su1[2] else "120.00")
        pod_tree(d / "sys")
    (workers / pods[job.hosts[::-1].index(su1[0])] / "broken-mlx5_12").write_text("")  # rail 2 VF of su1[0]
    env = {**{k: v for k, v in os.environ.items() if k in ("HOME", "LANG")}, "PATH": f"{bin_dir}:/usr/bin:/bin",
           "OMPI_MCA_orte_default_hostfile": str(hostfile), "WORKERS": str(workers), "SAMPLE": str(sample),
           "ROCE_FABRIC_LAUNCH_SH": job.launch_script, "ROCE_FABRIC_RAILS": "8", "ROCE_FABRIC_IFPREFIX": "rail",
           "ROCE_FABRIC_QUIET": "1"}
    run = subprocess.run(["/bin/sh", "-c", 'eval "$ROCE_FABRIC_LAUNCH_SH"'], capture_output=True, text=True, env=env,
                         cwd=tmp_path, timeout=120)
    assert run.returncode == 0 and "@@roce-fabric done" in run.stdout, run.stdout + run.stderr
    ms = k8s.judge_pairs(job, run.stdout, {1: 360.0, 2: 360.0})
    got = {(m.rail, m.src, m.dst): (m.ok, m.value) for m in ms}
    assert len(ms) == 6  # 3 pairs × 2 directions
    assert got[(1, su1[0], su1[1])] == (True, 388.5) and got[(1, su1[1], su1[0])] == (True, 388.5)
    assert got[(1, su1[2], su1[3])] == (False, 120.0)  # a slow client NIC fails its pair
    assert got[(2, su1[0], su1[2])][0] is False  # the broken VF: client su1[0] on rail 2
    broken = next(m for m in ms if (m.rail, m.src) == (2, su1[0]))
    assert "Couldn't connect" in broken.detail


# ---------------------------------------------------------------------------------------------- apply and follow

@pytest.fixture
def kubectl(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The kubectl stand-in (tests/standins/schedulers.py: kubectl's own argument syntax, the rest refused): an
    MPIJob Running on the first `get`, then $KUBECTL_STATE (Succeeded or Failed); `logs` prints $KUBECTL_LOGS.
    Returns its state directory (`standin_calls(state, "kubectl")`: its argv, one call a line)."""
    install(tmp_path / "bin", tmp_path / "sched")
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}:{os.environ['PATH']}")
    monkeypatch.setattr(k8s.K8sRunner, "__init__", _fast_init(k8s.K8sRunner.__init__))
    return tmp_path / "sched"


def _fast_init(init):
    def wrapped(self, namespace, kubectl=None, poll_s=5.0):
        init(self, namespace, kubectl, 0.0)
    return wrapped


def test_nccl_through_the_k8s_launcher_applies_follows_judges_and_deletes(h100: FabricIntent, tmp_path: Path,
                                                                          kubectl: Path,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KUBECTL_LOGS", str(SAMPLES / "nccl_all_reduce_2node_h200_v2.18_format.txt"))
    check = NcclAllReduce(NcclInput(launcher="k8s", image=IMAGE, pairs="none", cluster=True,
                                    min_busbw_gbytes=1.0))
    ctx = Context(site=SimpleNamespace(fabric=h100), report_dir=tmp_path / "rep")  # type: ignore[arg-type]
    res = check.run(ctx)
    assert res.status == "pass", res.message
    calls = standin_calls(kubectl, "kubectl")
    job = Path(res.rendered[0])
    assert calls[0] == "get --raw /readyz --request-timeout=5s"
    files = f"-f {job.parent / 'networks.yaml'} -f {job}"
    assert calls[1:4] == [f"apply --server-side --force-conflicts --dry-run=server {files}",  # the API server's word
                          "get hypernodes.topology.volcano.sh -o json",  # then the HyperNodes its tier needs
                          f"apply --server-side --force-conflicts {files}"]
    assert [c for c in calls if c.startswith("get mpijob")] == ["get mpijob nccl-allreduce-0 -n default -o json"] * 2
    assert "logs -n default job/nccl-allreduce-0-launcher --tail=-1" in calls
    assert calls[-1] == f"delete -f {job} --ignore-not-found --wait=false"


def test_a_failed_mpijob_fails_the_check_with_the_operators_message(h100: FabricIntent, tmp_path: Path,
                                                                    kubectl: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KUBECTL_LOGS", str(tmp_path / "empty"))
    (tmp_path / "empty").write_text("roce-fabric: the image lacks: all_reduce_perf\n")
    monkeypatch.setenv("KUBECTL_STATE", "Failed")
    check = NcclAllReduce(NcclInput(launcher="k8s", image=IMAGE, pairs="none", cluster=True))
    res = check.run(Context(site=SimpleNamespace(fabric=h100), report_dir=tmp_path))  # type: ignore[arg-type]
    assert res.status == "fail" and \
        "MPIJob nccl-allreduce-0 failed: MPIJob default/nccl-allreduce-0 is failed." in res.message
    assert standin_calls(kubectl, "kubectl")[-1].startswith("delete -f")


def test_accept_through_k8s_needs_no_ssh_key_and_says_what_it_expected(tmp_path: Path, kubectl: Path,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """`fabric accept --launcher k8s` of the nccl check: the inventory's SSH key file is missing, and nothing of the
    run goes over SSH (the ranks start as an MPIJob), so it is not asked for; the MPIJob fails and every report
    says the busbw it expected (never `None`), each machine report parsed strictly."""
    import shutil
    from xml.etree import ElementTree

    inv = tmp_path / "inv"
    shutil.copytree(VLAN16, inv)
    (inv / "access.yaml").write_text("access:\n  username: ops\n  key_file: ~/.ssh/id_fabric_not_here\n")
    monkeypatch.setenv("KUBECTL_LOGS", str(tmp_path / "launcher.log"))
    (tmp_path / "launcher.log").write_text("roce-fabric: the image lacks: all_reduce_perf\n")
    monkeypatch.setenv("KUBECTL_STATE", "Failed")
    monkeypatch.setenv("FABRIC_STATE", str(tmp_path / "state"))
    out = tmp_path / "report"
    run = inproc.fabric("accept", str(inv), "--launcher", "k8s", "--image", IMAGE, "--tags", "nccl-allreduce",
                        "-o", str(out), "--scheduler", "slurm")
    assert run.returncode == 1 and "key_file" not in run.stdout + run.stderr, run.stdout + run.stderr
    assert "nccl-allreduce" in run.stdout and "None" not in run.stdout
    (result,) = json.loads((out / "accept.json").read_text())["results"]
    assert result["status"] == "fail" and result["message"].startswith("Expected busbw ≥ ")
    assert " GB/s at the 2 largest sizes. Actual: MPIJob " in result["message"]
    assert all(m["threshold"] is not None for m in result["measurements"])
    suite = ElementTree.fromstring((out / "accept-junit.xml").read_bytes())
    failures = [f.get("message") or "" for f in suite.iter("failure")]
    assert failures and not any("None" in f for f in failures), failures
    for name in ("accept.md", "accept.html"):
        assert "None" not in (out / name).read_text()
        # the header says what ran the job (it once said "ssh run" for a run that never used SSH)
        assert "production run, nccl-tests through k8s, started " in (out / name).read_text(), name


def test_pod_bandwidth_check_judges_the_launcher_log(vlan16: FabricIntent, tmp_path: Path, kubectl: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    sample = (SAMPLES / "ib_write_bw_client_bidir_duration_newheader.txt").read_text()
    check = PodRailBandwidth(PodTrafficInput(image=IMAGE, quick=True, rails=[1]))
    ctx = Context(site=SimpleNamespace(fabric=vlan16), report_dir=tmp_path)  # type: ignore[arg-type]
    from fabric.accept.checks.bandwidth import RailBandwidth

    job = k8s.perftest_pod_job(vlan16, check.id, k8s.pod_pairs(vlan16, RailBandwidth(check.inputs).pairs(ctx, True),
                                                                 "p"), tool="ib_write_bw", image=IMAGE)
    log = "".join(f"{k8s.MARK} begin {p.tag}\n{sample}{k8s.MARK} end {p.tag} rc=0\n" for rd in job.pairs for p in rd)
    (tmp_path / "log").write_text(log)
    monkeypatch.setenv("KUBECTL_LOGS", str(tmp_path / "log"))
    res = check.run(ctx)
    assert len(res.measurements) == len([p for rd in job.pairs for p in rd]) == 16  # 8 pairs × 2 directions
    assert all(m.rail == 1 and m.value and m.threshold == 360.0 for m in res.measurements)
    assert res.status == "fail" and "Expected ≥ 360" in res.message  # the sample is a 100G run


def test_pod_latency_check_judges_p99_against_the_host_limit(vlan16: FabricIntent, tmp_path: Path, kubectl: Path,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    """pod-rail-latency: ib_write_lat between pods, the pairs of rail-latency, the same p99 limit."""
    from fabric.accept.checks.pods import PodLatencyInput, PodRailLatency

    sample = (SAMPLES / "ib_write_lat_all_sizes_client.txt").read_text()  # p99 of the 2-byte row: 1.21 us
    for limit, status in ((5.0, "pass"), (1.0, "fail")):
        check = PodRailLatency(PodLatencyInput(image=IMAGE, quick=True, rails=[1], max_p99_us=limit))
        ctx = Context(site=SimpleNamespace(fabric=vlan16), report_dir=tmp_path / status)  # type: ignore[arg-type]
        job = check._render(ctx)[0]
        assert job.tool == "ib_write_lat" and "ib_write_lat" in job.launch_script and "-F" in job.launch_script
        log = "".join(f"{k8s.MARK} begin {p.tag}\n{sample}{k8s.MARK} end {p.tag} rc=0\n"
                      for rd in job.pairs for p in rd)
        (tmp_path / f"{status}.log").write_text(log)
        monkeypatch.setenv("KUBECTL_LOGS", str(tmp_path / f"{status}.log"))
        res = check.run(ctx)
        assert res.status == status, res.message
        assert all(m.value == 1.21 and m.threshold == limit and m.unit == "us" for m in res.measurements)
    assert "Expected p99 ≤ 1 us between pods" in res.message


def test_without_a_cluster_the_k8s_checks_render_and_skip(h100: FabricIntent, tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", "/nonexistent")
    ctx = Context(site=SimpleNamespace(fabric=h100), report_dir=tmp_path)  # type: ignore[arg-type]
    res = PodRailBandwidth(PodTrafficInput(image=IMAGE, quick=True)).run(ctx)
    assert res.status == "skipped" and "kubectl not found here (render-only)" in res.message
    assert Path(res.rendered[0]).is_file()
    res = NcclAllReduce(NcclInput(launcher="k8s")).run(ctx)
    assert res.status == "skipped" and "no container image" in res.message


def test_cli_render_only_writes_every_manifest(tmp_path: Path) -> None:
    out = tmp_path / "k8s"
    run = inproc.fabric("accept", str(VLAN16), "--launcher", "k8s", "--render-only", "-o", str(out), "--image", IMAGE,
                        "--quick", env={**os.environ, "PATH": "/usr/bin:/bin"})  # in this process (tests.inproc)
    assert run.returncode == 0, run.stderr
    assert sorted(p.name for p in (out / "jobs").iterdir()) == sorted(f"{j}.yaml" for j in JOBS)
    assert {p.name for p in out.iterdir()} >= {"networks.yaml", "sriovdp-config.yaml", "hypernodes.yaml", "nodes",
                                               "roce-pod-env.sh"}
    assert len(list((out / "nodes").iterdir())) == 16
    bad = inproc.fabric("accept", str(VLAN16), "--launcher", "k8s", "--render-only", "-o", str(out))
    assert bad.returncode == 2 and "--render-only: give --image" in bad.stderr and "Traceback" not in bad.stderr
    bad = inproc.fabric("accept", str(VLAN16), "--render-only", "--image", IMAGE)
    assert bad.returncode == 2 and "--render-only goes with --launcher k8s" in bad.stderr


def test_launcher_waits_until_every_worker_name_resolves(tmp_path: Path) -> None:
    """The headless service publishes Ready workers only: the launcher waits for each hostfile name, then runs
    its argv; a name that never resolves fails it with the worker's name instead of an ssh error."""
    hf = tmp_path / "hostfile"

    def launch(names: str, wait_s: str) -> subprocess.CompletedProcess[str]:
        hf.write_text(names)
        return subprocess.run(["/bin/sh", "-c", k8s.WAIT_FOR_WORKERS, "launcher", "echo", "mpirun ran"],
                              capture_output=True, text=True, timeout=30,
                              env={"PATH": "/usr/bin:/bin", "OMPI_MCA_orte_default_hostfile": str(hf),
                                   "ROCE_FABRIC_WAIT_S": wait_s})

    ok = launch("localhost slots=8\n", "4")
    assert ok.returncode == 0 and ok.stdout == "mpirun ran\n"
    bad = launch("localhost slots=8\nw-1.nccl.training.svc.invalid slots=8\n", "2")
    assert bad.returncode == 1 and "mpirun ran" not in bad.stdout
    assert "worker w-1.nccl.training.svc.invalid has no DNS name after 2s (not Ready)" in bad.stderr


def test_a_pf_on_a_host_tagged_rail_gets_no_pod_network_and_lint_says_why(tmp_path: Path) -> None:
    """vfs: 0 with a host VLAN: host-device would move the untagged PF into the pod while the leaf port is a
    tagged member. No pod network is rendered for it and RF205 names the reason; the node keeps its other rails
    (one left with none is refused before: tests/design/test_checks.py)."""
    import shutil

    from fabric.lint.context import Context as LintContext
    from fabric.lint.engine import run

    inv = tmp_path / "inv"
    shutil.copytree(VLAN16, inv)
    hosts = inv / "hosts.yaml"
    hosts.write_text(hosts.read_text().replace("vlan: 1001, vfs: 16}", "vlan: 1001, vfs: 0}"))
    found = run(LintContext(load(inv)), select=["RF205"]).findings
    assert found and all("found vfs: 0 with host VLAN 1001" in f.message and f.line for f in found)
    fabric = derive(load(inv))
    assert all([r.pod is None for r in h.rails] == [True] + [False] * 7 for h in fabric.hosts.values())
    assert "rail1" not in rk.device_plugin_configmap(fabric) and "rail2" in rk.device_plugin_configmap(fabric)
