"""A pooled device-plugin resource (one resource for every rail NIC, `kubernetes.resources: pooled`) on multi-NIC
hosts: where it is refused and why, what is rendered where it works, and the pod's own discovery of its rails run
for real.

Why the pod has to find its rails (fabric.design.checks.kubernetes_problems): kubelet chooses which devices of a
resource a pod gets and multus hands them to the pod's networks in list order, so a network cannot carry one
rail's VLAN and subnet. It works where the worker takes every device of its node and each NIC gives one (the NIC
itself, `vfs: 0`, or one VF, `vfs: 1`): the node's CNI config attaches the devices bare and
fabric.render.k8s.pod_rail_setup maps each granted PCI address (the device plugin's PCIDEVICE_… variable) through
its `physfn` to the node's rail map, then sets the rail's interface name, VLAN, address and routing table. The
tests run that script with the real `ip` in a network namespace of dummy interfaces (root), the sysfs side built
after the kernel's documented layout (a VF's `physfn` link, a function's `net/` and `infiniband/` entries), with the
devices granted and attached in another order than the rails. The pooled jobs on the real control plane are in
tests/accept/k8s/test_cluster.py, on that module's cluster (one control plane start, not two).
"""

from __future__ import annotations

import ipaddress
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.conftest import ROOT, require

sys.path.insert(0, str(ROOT / "tests" / "fixtures" / "sysfs"))
from prepared import Nic, build

from fabric.accept import bundle as k8s_bundle
from fabric.accept import k8s
from fabric.accept.k8s import manifests
from fabric.design.derive import derive
from fabric.design.intent import FabricIntent
from fabric.errors import InputError
from fabric.model.load import load
from fabric.render import k8s as rk
from fabric.render.host import boot_files
from tests.render.test_k8s import CHECKER, run_checker

VLAN16 = ROOT / "tests" / "fixtures" / "inventories" / "k8s-vlan16"
IMAGE = "registry.example/roce-tests:1"
IP = shutil.which("ip") or "/usr/sbin/ip"


def pooled_copy(tmp_path: Path, vfs: int = 1, untagged: tuple[int, ...] = (5, 6, 7, 8)) -> Path:
    """k8s-vlan16 with one pooled resource, `vfs` VFs per NIC, and the rails in `untagged` without a host VLAN."""
    inv = tmp_path / "pooled"
    shutil.copytree(VLAN16, inv)
    hosts = inv / "hosts.yaml"
    text = hosts.read_text().replace("vfs: 16}", f"vfs: {vfs}}}")
    for r in untagged:
        text = text.replace(f", vlan: {1000 + r}", "")
    hosts.write_text(text.replace("resources: per-rail", "resources: pooled"))
    return inv


def problem_of(inv: Path) -> str:
    with pytest.raises(InputError) as exc:
        derive(load(inv))
    return str(exc.value)


# ---------------------------------------------------------------------------------------------- where it cannot work

def test_pooled_vfs_are_refused_with_kubelets_odds_and_the_way_out(tmp_path: Path) -> None:
    """16 VFs per NIC: a pod asking for 8 of the node's 128 pooled VFs gets one per rail only by luck."""
    msg = problem_of(pooled_copy(tmp_path, vfs=16, untagged=()))
    p = 1.0
    for i in range(8):
        p *= (128 - 16 * i) / (128 - i)
    assert "kubernetes.resources: expected per-rail, or pooled with `vfs: 0` or `vfs: 1` on every rail NIC" in msg
    assert f"pooled with 8 NICs × 16 VFs per host: a pod asking for 8 of 128 free VFs gets one per rail {p:.1%}" in msg
    assert re.search(r"hosts\.yaml:\d+", msg), msg  # file:line of `resources: pooled`


def test_pooled_mixing_pfs_and_vfs_or_without_pci_addresses_is_refused(tmp_path: Path, example_copy: Path) -> None:
    inv = pooled_copy(tmp_path)
    hosts = inv / "hosts.yaml"
    hosts.write_text(hosts.read_text().replace("vlan: 1001, vfs: 1}", "vlan: 1001, vfs: 0}"))
    assert "one kind of device per resource" in problem_of(inv) and "vfs 0 and 1" in problem_of(inv)
    # the example's slot-style names (rail1 …) carry no PCI address: a pod could not tell its NICs apart
    (example_copy / "k8s.yaml").write_text("kubernetes:\n  resources: pooled\n  resource_name: rdma\n")
    msg = problem_of(example_copy)
    assert "hosts.nics.pci: expected a PCI address for every rail NIC with a pooled resource" in msg


def test_per_rail_stays_the_default(tmp_path: Path) -> None:
    fabric = derive(load(VLAN16))
    assert not any(r.pod.pooled for h in fabric.hosts.values() for r in h.rails if r.pod)
    assert all(not rk.node_rail_map(h) for h in fabric.hosts.values())


# ---------------------------------------------------------------------------------------------- what is rendered

@pytest.fixture(scope="module")
def pooled(tmp_path_factory: pytest.TempPathFactory) -> FabricIntent:
    return derive(load(pooled_copy(tmp_path_factory.mktemp("inv"))))


def test_one_network_a_bare_cni_config_one_resource_and_each_nodes_rail_map(pooled: FabricIntent) -> None:
    nads = [d for d in yaml.safe_load_all(rk.network_attachments(pooled)) if d]
    assert [(d["metadata"]["name"], d["metadata"]["annotations"]["k8s.v1.cni.cncf.io/resourceName"]) for d in nads] \
        == [("rail", "nvidia.com/rail")] and all("spec" not in d for d in nads)
    host = pooled.hosts["gpu-su2-03"]
    cfg = {p.rsplit("/", 1)[1]: json.loads(t) for p, t in rk.node_cni_configs(host).items()}
    # no rail's VLAN or subnet: sriov-cni clears any VST tag (vlan 0, the pod tags) and assigns no address
    assert cfg == {"rail.conflist": {"cniVersion": "1.0.0", "name": "rail", "plugins": [
        {"type": "sriov", "vlan": 0, "spoofchk": "off", "trust": "on"}, {"type": "rdma"}]}}
    dp = json.loads(next(iter(yaml.safe_load(rk.device_plugin_configmap(pooled).split("\n", 4)[-1])["data"]
                              .values())))
    assert dp["resourceList"] == [{"resourceName": "rail", "resourcePrefix": "nvidia.com", "selectors": [
        {"isRdma": True, "pfNames": [f"{r.netdev}#0-0" for r in host.rails]}]}]
    (path, text), = rk.node_rail_map(host).items()
    assert path == "etc/roce-fabric/pod-rails" and boot_files(host)[path] == (text, 0o644)  # host apply --persist
    lines = [line.split() for line in text.splitlines() if not line.startswith("#")]
    assert [(f[0], f[1], f[2]) for f in lines] == [(r.pci, str(r.rail), str(r.vlan or 0)) for r in host.rails]
    assert lines[0][0] == "0000:1a:00.0" and lines[4][2] == "0"  # enp26s0np0; rail 5 untagged
    seen: set[str] = set()
    for f, r in zip(lines, host.rails, strict=True):
        addr = ipaddress.ip_interface(f[3])
        assert addr.network == ipaddress.ip_network(r.subnet) == ipaddress.ip_network(f[4]) and f[5] == r.gateway
        assert (f[6], f[7]) == (str(r.table), str(r.rule_priority))
        assert ipaddress.ip_address(r.pod.range_start) <= addr.ip <= ipaddress.ip_address(r.pod.range_end)
        seen.add(str(addr.ip))
    # every host of the SU a VF address of its own, none a host's
    others = [ipaddress.ip_interface(line.split()[3]).ip for h in pooled.hosts.values() if h.su == 2
              for line in rk.node_rail_map(h)[rk.RAIL_MAP].splitlines()[1:] if line.split()[1] == "1"]
    assert len(set(others)) == 8 and not set(others) & {ipaddress.ip_interface(h.rails[0].address).ip
                                                        for h in pooled.hosts.values() if h.su == 2}


def test_jobs_take_every_device_with_net_admin_and_the_nodes_map(pooled: FabricIntent, tmp_path: Path) -> None:
    require(CHECKER.is_file(), f"{CHECKER} (the shared folder beside the checkout)")
    k8s_bundle.render_bundle(pooled, tmp_path, IMAGE, quick=True)
    assert (tmp_path / "nodes" / "gpu-su1-01" / "pod-rails").is_file()
    assert (tmp_path / "roce-pod-setup.sh").read_text() == "#!/bin/sh\n" + rk.pod_rail_setup()
    for job in sorted((tmp_path / "jobs").iterdir()):
        run = run_checker(job, tmp_path / "networks.yaml", tmp_path / "hypernodes.yaml")
        assert run.returncode == 0 and run.stdout.strip().endswith("0 errors, 0 warnings"), run.stdout
        mpijob = next(d for d in yaml.safe_load_all(job.read_text()) if d and d["kind"] == "MPIJob")
        spec = mpijob["spec"]["mpiReplicaSpecs"]["Worker"]["template"]
        nets = spec["metadata"]["annotations"]["k8s.v1.cni.cncf.io/networks"]
        assert nets == ",".join(f"rail@pool-{i}" for i in range(1, 9))
        c = spec["spec"]["containers"][0]
        assert c["resources"]["requests"]["nvidia.com/rail"] == "8"  # every device of the node
        assert c["securityContext"]["capabilities"]["add"] == ["IPC_LOCK", "NET_ADMIN"]
        env = {e["name"]: e.get("value") for e in c["env"]}
        assert env["ROCE_FABRIC_DEVICES_VAR"] == "PCIDEVICE_NVIDIA_COM_RAIL"
        assert env["ROCE_FABRIC_SETUP_SH"] == rk.pod_rail_setup()
        assert {"name": "rail-map", "mountPath": "/etc/roce-fabric", "readOnly": True} in c["volumeMounts"]
        script = c["command"][2]
        assert script.index("setup.sh") < script.index("exec /usr/sbin/sshd") and " ip printenv" in script
    assert manifests.devices_variable("example-corp.io/sriov_rdma") == "PCIDEVICE_EXAMPLE-CORP_IO_SRIOV_RDMA"


def test_pf_pass_through_pools_and_maps_the_hosts_own_addresses(tmp_path: Path) -> None:
    fabric = derive(load(pooled_copy(tmp_path, vfs=0, untagged=tuple(range(1, 9)))))
    host = fabric.hosts["gpu-su1-02"]
    assert json.loads(rk.node_cni_configs(host)[f"{rk.CNI_DIR}/rail.conflist"])["plugins"] == [{"type": "host-device"}]
    lines = [line.split() for line in rk.node_rail_map(host)[rk.RAIL_MAP].splitlines()[1:]]
    assert [f[3] for f in lines] == [r.address for r in host.rails]
    selectors = json.loads(next(iter(yaml.safe_load(rk.device_plugin_configmap(fabric).split("\n", 4)[-1])["data"]
                                     .values())))["resourceList"][0]["selectors"]
    assert selectors == [{"isRdma": True, "pciAddresses": [r.pci for r in host.rails]}]


# ---------------------------------------------------------------------------------------------- the pod, for real

def pod_sysfs(root: Path, host_rails: list, order: list[int]) -> tuple[Path, str, dict[str, int]]:
    """A pod's /sys: for the k-th granted device (rail order[k]) a VF function beside its PF with `physfn` → the PF
    (kernel Documentation/PCI/pci-iov-howto.rst), the interface multus named pool-(k+1) and the RDMA device
    mlx5_(20+k) (exclusive mode: the pod sees the VF's own); the GID tables as the kernel fills them once the
    set-up put the rail address on railN (a VLAN sub-interface) or on pool-(k+1). Returns the root, the granted
    list as the device plugin writes it (not in rail order) and interface → rail."""
    by_rail = {r.rail: r for r in host_rails}
    devices = root / "devices" / "pci0000:00"
    bus_dir = root / "bus" / "pci" / "devices"
    bus_dir.mkdir(parents=True)
    nics, granted, attached = [], [], {}
    for k, rail in enumerate(order):
        pf = by_rail[rail].pci
        if not (devices / pf).is_dir():
            (devices / pf).mkdir(parents=True)
            (bus_dir / pf).symlink_to(Path("../../../devices/pci0000:00") / pf)
        vf = f"{pf[:-1]}{2 + k % 6}"  # a function of the PF's device, as ConnectX VFs follow their PF
        (devices / vf / "net" / f"pool-{k + 1}").mkdir(parents=True)
        (devices / vf / "infiniband" / f"mlx5_{20 + k}").mkdir(parents=True)
        (devices / vf / "physfn").symlink_to(f"../{pf}")
        (bus_dir / vf).symlink_to(Path("../../../devices/pci0000:00") / vf)
        ndev = f"rail{rail}" if by_rail[rail].vlan else f"pool-{k + 1}"  # where the set-up puts the address
        nics.append(Nic(f"gid-{k}", f"mlx5_{20 + k}", by_rail[rail].pod.address.split("/")[0], ifname=ndev))
        granted.append(vf)
        attached[f"pool-{k + 1}"] = rail
    build(root / "gids", nics)
    (root / "gids" / "class").rename(root / "class")
    return root, ",".join(sorted(granted, reverse=True)), attached


@pytest.fixture(scope="module")
def untagged(tmp_path_factory: pytest.TempPathFactory) -> FabricIntent:
    return derive(load(pooled_copy(tmp_path_factory.mktemp("inv"), untagged=tuple(range(1, 9)))))


def set_up(host, order: list[int], tmp_path: Path, rail_map: str | None = None) -> tuple[dict[str, str], dict]:
    """The pod's sysfs, the node's map and the set-up script; the environment the worker runs it in."""
    sysfs, granted, attached = pod_sysfs(tmp_path / "sys", host.rails, order)
    (tmp_path / "map").write_text(rail_map if rail_map is not None else rk.node_rail_map(host)[rk.RAIL_MAP])
    (tmp_path / "setup.sh").write_text(rk.pod_rail_setup())
    (tmp_path / "pod.sh").write_text(rk.pod_entrypoint())
    env = {"PATH": os.environ["PATH"], "ROCE_FABRIC_SYSFS": str(sysfs), "ROCE_FABRIC_RUN": str(tmp_path / "run"),
           "ROCE_FABRIC_RAIL_MAP": str(tmp_path / "map"), "ROCE_FABRIC_DEVICES_VAR": "PCIDEVICE_NVIDIA_COM_RAIL",
           "PCIDEVICE_NVIDIA_COM_RAIL": granted, "ROCE_FABRIC_IFPREFIX": "rail"}
    return env, attached


def recording_ip(tmp_path: Path, env: dict[str, str]) -> Path:
    """A stand-in `ip` first on PATH that records its arguments (this machine's kernel has no 802.1Q module,
    CONFIG_VLAN_8021Q unset, so VLAN sub-interfaces cannot be made for real here)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    log = tmp_path / "ip.log"
    (bin_dir / "ip").write_text(f"#!/bin/sh\necho \"$*\" >> {log}\n")
    (bin_dir / "ip").chmod(0o755)
    env["PATH"] = f"{bin_dir}:{env['PATH']}"
    return log


def rank_side(tmp_path: Path, env: dict[str, str], order: list[int], rif_of: dict[int, str]) -> None:
    """What ranks see afterwards: NCCL_IB_HCA in rail order (each rail's own device), the GID of its address, and
    `rail N` the rail's interface."""
    rails = (tmp_path / "run" / "rails").read_text().split("\n")
    assert rails[:8] == [f"{rif_of[r]} mlx5_{20 + order.index(r)} {r}" for r in range(1, 9)]
    out = subprocess.run(["sh", str(tmp_path / "pod.sh"), "env"], env={**env, "ROCE_FABRIC_RAILS": "8"},
                         capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    nccl = dict(line.split("=", 1) for line in out.stdout.splitlines() if line.startswith("NCCL_"))
    assert nccl["NCCL_IB_HCA"] == "=" + ",".join(f"mlx5_{20 + order.index(r)}:1" for r in range(1, 9))
    assert nccl["NCCL_IB_GID_INDEX"] == "3"
    for r in (3, 6):
        one = subprocess.run(["sh", str(tmp_path / "pod.sh"), "rail", str(r)], env={**env, "ROCE_FABRIC_QUIET": "1"},
                             capture_output=True, text=True)
        assert one.stdout.split() == [f"mlx5_{20 + order.index(r)}", "3", rif_of[r]], one.stderr


@pytest.fixture
def netns():
    require(os.geteuid() == 0 and Path(IP).exists(), "root and iproute2 (network namespaces)")
    name = f"rfpool{os.getpid()}"
    subprocess.run([IP, "netns", "add", name], check=True)
    try:
        yield name
    finally:
        subprocess.run([IP, "netns", "del", name], check=False)


def ns(name: str, *argv: str) -> str:
    return subprocess.run([IP, "netns", "exec", name, *argv], capture_output=True, text=True, check=True).stdout


@pytest.mark.root
def test_the_pod_finds_its_rails_in_any_order_and_configures_each(untagged: FabricIntent, tmp_path: Path,
                                                                   netns: str) -> None:
    """Eight devices granted and attached in an order unrelated to the rails, run with the real `ip` in a network
    namespace (veth ends stand in for the VFs: the netdev side is plain Linux): each attached interface keeps
    multus' name (CNI DEL finds it by that name) and gets the node map's address of its NIC's rail, a table
    holding the subnet and the default via the rail gateway, and a `from` rule."""
    host = untagged.hosts["gpu-su2-03"]
    order = [6, 3, 8, 1, 5, 2, 7, 4]
    env, attached = set_up(host, order, tmp_path)
    for ifname in attached:
        ns(netns, IP, "link", "add", ifname, "type", "veth", "peer", "name", f"{ifname}p")
    run = subprocess.run([IP, "netns", "exec", netns, "sh", str(tmp_path / "setup.sh")], env=env,
                         capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stderr
    links = {link["ifname"]: link for link in json.loads(ns(netns, IP, "-j", "-d", "addr", "show"))}
    by_rail = {r.rail: r for r in host.rails}
    for pool, rail in attached.items():
        r = by_rail[rail]
        link = links[pool]
        assert "UP" in link["flags"] and f"rail{rail}" not in links
        assert [f"{a['local']}/{a['prefixlen']}" for a in link["addr_info"] if a["family"] == "inet"] == [r.pod.address]
        table = json.loads(ns(netns, IP, "-j", "route", "show", "table", str(r.table)))
        assert {(t["dst"], t.get("gateway"), t["dev"]) for t in table} == {
            (r.subnet, None, pool), ("default", r.gateway, pool)}
    rules = json.loads(ns(netns, IP, "-j", "rule", "show"))
    assert {(x["priority"], x["src"], x["table"]) for x in rules if x.get("src", "all") != "all"} == {
        (r.rule_priority, r.pod.address.split("/")[0], str(r.table)) for r in host.rails}
    rank_side(tmp_path, env, order, {rail: pool for pool, rail in attached.items()})


def test_tagged_rails_get_a_vlan_sub_interface_named_after_the_rail(pooled: FabricIntent, tmp_path: Path) -> None:
    """Rails 1-4 tagged on the host, 5-8 not: on a tagged rail the address goes on a VLAN sub-interface railN of
    the attached VF (the VF itself is untagged: sriov-cni `vlan: 0`), on an untagged rail on the VF; the commands
    as the set-up gives them to `ip`, in the order of the grant."""
    host = pooled.hosts["gpu-su2-03"]
    order = [6, 3, 8, 1, 5, 2, 7, 4]
    env, attached = set_up(host, order, tmp_path)
    log = recording_ip(tmp_path, env)
    run = subprocess.run(["sh", str(tmp_path / "setup.sh")], env=env, capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stderr
    by_rail = {r.rail: r for r in host.rails}
    granted = env["PCIDEVICE_NVIDIA_COM_RAIL"].split(",")
    want = []
    for vf in granted:  # the order the device plugin lists them in
        (pool,) = (x.name for x in (Path(env["ROCE_FABRIC_SYSFS"]) / "bus/pci/devices" / vf / "net").iterdir())
        r = by_rail[attached[pool]]
        rif = f"rail{r.rail}" if r.vlan else pool
        if r.vlan:
            want += [f"link set dev {pool} up", f"link add link {pool} name {rif} type vlan id {r.vlan}"]
        ip = r.pod.address.split("/")[0]
        want += [f"link set dev {rif} up", f"addr add {r.pod.address} dev {rif}",
                 f"route add {r.subnet} dev {rif} src {ip} table {r.table}",
                 f"route add default via {r.gateway} dev {rif} table {r.table}",
                 f"rule add from {ip} lookup {r.table} priority {r.rule_priority}"]
    assert log.read_text().splitlines() == want
    assert "0000:1a:00.0) is rail 1: rail1 10.100.8.12/24 via 10.100.8.1, VLAN 1001" in run.stderr
    pool_of = {rail: pool for pool, rail in attached.items()}
    rank_side(tmp_path, env, order, {r: f"rail{r}" if by_rail[r].vlan else pool_of[r] for r in range(1, 9)})


@pytest.mark.parametrize("case", ["two-on-one-rail", "foreign-nic", "missing-rail", "not-pci"])
def test_the_pod_refuses_a_grant_that_is_not_one_device_per_rail(pooled: FabricIntent, tmp_path: Path,
                                                                  case: str) -> None:
    """What a pooled grant can be when the node runs other pods of the resource, or the map is stale: the set-up
    fails with the reason and leaves no rail list for the entrypoint."""
    host = pooled.hosts["gpu-su1-01"]
    order = [2, 1, 4, 3, 6, 5, 8, 8] if case == "two-on-one-rail" else [2, 1, 4, 3, 6, 5, 8, 7]
    rail_map = rk.node_rail_map(host)[rk.RAIL_MAP]
    if case == "foreign-nic":
        rail_map = "".join(x for x in rail_map.splitlines(keepends=True) if not x.startswith(host.rails[4].pci))
    env, _attached = set_up(host, order, tmp_path, rail_map)
    recording_ip(tmp_path, env)
    devices = env["PCIDEVICE_NVIDIA_COM_RAIL"].split(",")
    if case == "missing-rail":
        env["PCIDEVICE_NVIDIA_COM_RAIL"] = ",".join(devices[:-1])
    elif case == "not-pci":
        env["PCIDEVICE_NVIDIA_COM_RAIL"] = ",".join(["../../etc", *devices[1:]])
    want = {"two-on-one-rail": "two granted devices on rail 8", "foreign-nic": f"(NIC {host.rails[4].pci}) is on no "
            "rail of", "missing-rail": "granted 7 devices, one per rail wanted on the node's 8 rails",
            "not-pci": "granted device '../../etc' is not a PCI address"}[case]
    run = subprocess.run(["sh", str(tmp_path / "setup.sh")], env=env, capture_output=True, text=True, timeout=60)
    assert run.returncode == 1 and want in run.stderr, run.stderr
    assert not (tmp_path / "run" / "rails").exists()  # the entrypoint never sees a half-made rail list


def test_the_pod_says_so_without_a_grant_or_a_map(tmp_path: Path) -> None:
    (tmp_path / "setup.sh").write_text(rk.pod_rail_setup())
    base = {"PATH": "/usr/bin:/bin", "ROCE_FABRIC_DEVICES_VAR": "PCIDEVICE_NVIDIA_COM_RAIL",
            "ROCE_FABRIC_RUN": str(tmp_path / "run")}
    run = subprocess.run(["sh", str(tmp_path / "setup.sh")], capture_output=True, text=True,
                         env={**base, "ROCE_FABRIC_RAIL_MAP": str(tmp_path / "none")})
    assert run.returncode == 1 and "no rail map" in run.stderr and "fabric host apply --persist" in run.stderr
    (tmp_path / "map").write_text("0000:1a:00.0 1 0 10.0.0.5/24 10.0.0.0/24 10.0.0.1 101 101\n")
    run = subprocess.run(["sh", str(tmp_path / "setup.sh")], capture_output=True, text=True,
                         env={**base, "ROCE_FABRIC_RAIL_MAP": str(tmp_path / "map")})
    assert run.returncode == 1 and "no PCIDEVICE_NVIDIA_COM_RAIL" in run.stderr


def test_perftest_pairs_keep_working_on_pooled_pods(pooled: FabricIntent) -> None:
    """The perftest job's rank side asks the entrypoint for railN, which the set-up named: one network list for all."""
    job = k8s.perftest_pod_job(pooled, "p", [[k8s.PodPair("r1a-r1-0", 1, "gpu-su1-01", "gpu-su1-02")]],
                               tool="ib_write_bw", image=IMAGE)
    docs = k8s.mpijob_manifests(job, pooled)
    worker = docs[1]["spec"]["mpiReplicaSpecs"]["Worker"]["template"]
    assert worker["metadata"]["annotations"]["k8s.v1.cni.cncf.io/networks"].count("rail@pool-") == 8
