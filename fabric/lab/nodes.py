"""Real Kubernetes nodes on hosts of the namespace lab (`fabric lab up INV --k8s --real-nodes N`): a kubelet and
containerd per host, joined to the lab's control plane (fabric.lab.kube), so the rendered pods run.

Each node is one process tree in the host's network namespace and in a mount namespace of its own (`unshare
--mount --propagation slave` then `nsenter --net`: `ip netns exec` would remount /sys and hide the cgroup
hierarchy): there `/var/lib/kubelet` is the node's own directory (multus reads the kubelet's pod-resources socket
at that fixed path: pkg/kubeletclient/kubeletclient.go) and `/run/netns` a tmpfs for the pods' network
namespaces, so every mount a node makes goes when its last process ends. The programs: Debian's containerd (its
own root, state and socket per node, runc with cgroupfs) and the CNI plugins (containernetworking-plugins), the
kubelet, multus' thin plugin and whereabouts built by tools/k8s-nodes/build.sh (`make k8s-nodes`), the kubelet
from the same k8s.io/kubernetes release as the control plane. Kubernetes 1.33 runs on cgroup v1 only with
`failCgroupV1: false` (KubeletConfiguration), which this machine needs.

Networks: multus (thin plugin, the node's CNI config) gives each pod `eth0` from a `ptp` network with host-local
IPAM on the node's own pod subnet, and every rail the pod names from the node's `/etc/cni/multus/net.d`
equivalent: the rendered per-node CNI config (fabric.render.k8s.cni_config) with the one part that needs SR-IOV
hardware replaced, `stand_in`. Images cannot be pulled: fabric.lab.podimage builds the pod image and the sandbox
image locally and `ctr image import` loads them into each node.

The kubelet's server listens on the host's management address inside the namespace (reached only from the lab's
management bridge) and serves the API server (`kubectl exec`, `logs`) without authentication; the kubelet talks
to the API server with the lab's admin token. Each node advertises the rail resources the renders request
(fabric.lab.kube.node_resources), patched into its status as extended resources because no device plugin runs.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from fabric.design.intent import FabricIntent, HostIntent, RailIntent
from fabric.lab import podimage
from fabric.lab.kube import (
    ROOT,
    KubeLab,
    KubeLabError,
    node_objects,
    node_resources,
    remove_socket_dir,
    socket_dir,
    socket_path,
)
from fabric.lab.sh import alive, cmdline
from fabric.lab.state import LabState

BUILD = ROOT / "tools" / "k8s-nodes" / "build.sh"
PROGRAMS = ("kubelet", "multus", "whereabouts")
DEBIAN = {"containerd": "containerd", "ctr": "containerd", "runc": "runc", "unshare": "util-linux",
          "nsenter": "util-linux"}
CNI_PLUGINS = Path("/usr/lib/cni")  # Debian's containernetworking-plugins
CNI_NEEDED = ("macvlan", "host-device", "vlan", "sbr", "ptp", "host-local", "loopback")
POD_SUBNET = "10.244.{i}.0/24"  # eth0 of node i's pods (ptp + host-local); outside every lab address plan
MULTUS_NET_D = "etc/cni/multus/net.d"
CLUSTER_NETWORK = "lab-pods"  # each pod's eth0 (ptp, host-local on POD_SUBNET)
NODES_FILE = "nodes.json"
KUBELET_DIR = Path("/var/lib/kubelet")  # fixed: multus reads the pod-resources socket there; each node binds its own
CAP_SYS_RESOURCE = 24  # linux/capability.h
VLAN_PROC = Path("/proc/net/vlan")  # made by the 8021q module's init (net/8021q/vlanproc.c), built-in or loaded


class NodeError(KubeLabError):
    """A real node could not be set up or run; the message names the node and the part."""


def bins_dir() -> Path:
    """Where `make k8s-nodes` puts the node programs: ROCE_FABRIC_K8S_NODES, else the build's cache key."""
    if env := os.environ.get("ROCE_FABRIC_K8S_NODES"):
        return Path(env)
    p = subprocess.run(["bash", str(BUILD), "--dir"], capture_output=True, text=True, timeout=60, check=False)
    return Path(p.stdout.strip() or "/nonexistent-k8s-nodes")


def missing(bins: Path) -> list[str]:
    """What a real node needs and this machine lacks, each with where it comes from."""
    out = [f"{p} (make k8s-nodes)" for p in PROGRAMS if not (bins / "bin" / p).exists()]
    out += [f"{p} (Debian package {pkg})" for p, pkg in DEBIAN.items() if shutil.which(p) is None]
    out += [f"CNI plugin {p} (Debian package containernetworking-plugins)" for p in CNI_NEEDED
            if not (CNI_PLUGINS / p).exists()]
    return out


def vlan_support() -> bool:
    """Whether this kernel has 802.1Q VLAN devices (the 8021q module built in or loadable)."""
    if VLAN_PROC.exists():
        return True
    subprocess.run(["modprobe", "-q", "8021q"], capture_output=True, timeout=30, check=False)
    return VLAN_PROC.exists()


def stand_in(host: HostIntent, rail: RailIntent, whereabouts_conf: Path) -> dict[str, Any] | None:
    """The rendered CNI config of `rail` (fabric.render.k8s.cni_config) as the lab runs it: SR-IOV needs a VF of a
    real NIC, so `sriov` becomes `macvlan` in bridge mode on the host's rail interface (its own MAC address on the
    rail, like a VF, through the same multus delegate, IPAM and sbr), with the rendered VLAN as a `vlan` plugin on
    that interface where the rail is tagged; `host-device` (a passed-through PF) names the rail interface instead
    of the PCI address a device plugin would give; `rdma` goes (no RDMA device in the lab). whereabouts is told
    where its kubeconfig is (`configuration_path`)."""
    from fabric.render.k8s import cni_config

    cfg = cni_config(host, rail)
    if cfg is None:
        return None
    plugins = []
    for p in cfg["plugins"]:
        p = dict(p)
        if p["type"] == "rdma":
            continue
        if p["type"] == "sriov":
            vlan = p.get("vlan") or 0
            p = {"type": "vlan", "master": rail.netdev, "vlanId": vlan} if vlan else {
                "type": "macvlan", "master": rail.netdev, "mode": "bridge"}
            p["mtu"] = rail.mtu
            if "ipam" in cfg["plugins"][0]:
                p["ipam"] = dict(cfg["plugins"][0]["ipam"])
        elif p["type"] == "host-device":
            p["device"] = rail.netdev
        if p.get("ipam", {}).get("type") == "whereabouts":
            p["ipam"] = {**p["ipam"], "configuration_path": str(whereabouts_conf)}
        plugins.append(p)
    return {**cfg, "plugins": plugins}


@dataclass
class RealNode:
    """One host's kubelet and containerd: its directory, namespace, management address and process group."""

    name: str
    netns: str
    address: str
    dir: Path
    index: int
    pid: int = 0

    @property
    def socket(self) -> Path:
        """containerd's, in the node's short socket directory (its `.ttrpc` sibling under a test's temporary
        directory was refused as too long)."""
        return socket_path(self.dir) / "containerd.sock"

    def ctr(self, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
        return subprocess.run(["ctr", "--address", str(self.socket), "--namespace", "k8s.io", *args],
                              capture_output=True, text=True, timeout=timeout, check=False)


def _write_json(path: Path, obj: object) -> None:
    path.write_text(json.dumps(obj, indent=2) + "\n")


def _cni_files(node: RealNode, host: HostIntent, lab: KubeLab, bins: Path) -> list[str]:
    """The node's CNI directories: the plugin directory (Debian's plugins, multus, whereabouts), multus' config
    as the runtime's only network, the cluster network and each rail's stand-in config. Returns the rails'
    networks."""
    d = node.dir
    bin_dir = d / "cni-bin"
    bin_dir.mkdir(parents=True, exist_ok=True)
    for p in sorted(CNI_PLUGINS.iterdir()):
        (bin_dir / p.name).symlink_to(p)
    for p in ("multus", "whereabouts"):
        (bin_dir / p).symlink_to(bins / "bin" / p)
    net_d = d / MULTUS_NET_D
    net_d.mkdir(parents=True, exist_ok=True)
    wconf = d / "whereabouts.conf"
    _write_json(wconf, {"datastore": "kubernetes", "kubernetes": {"kubeconfig": str(lab.kubeconfig)},
                        "log_file": str(d / "whereabouts.log"), "log_level": "verbose"})
    # the cluster network by name from multus' confDir: given as a file path, multus v4.2.2 reads a .conflist
    # into its typed form (k8sclient.go getNetDelegate, option 4), which keeps each plugin's IPAM type only, and
    # CNI DEL from its cache then failed (host-local: `no IP ranges specified`), leaving every pod Terminating
    _write_json(net_d / f"{CLUSTER_NETWORK}.conflist", {"cniVersion": "1.0.0", "name": CLUSTER_NETWORK, "plugins": [
        {"type": "ptp", "ipam": {"type": "host-local", "ranges": [[{"subnet": POD_SUBNET.format(i=node.index)}]],
                                 "routes": [{"dst": "0.0.0.0/0"}], "dataDir": str(d / "host-local")}}]})
    nets = []
    for rail in sorted(host.rails, key=lambda r: r.rail):
        cfg = stand_in(host, rail, wconf)
        if cfg is not None:
            _write_json(net_d / f"{cfg['name']}.conflist", cfg)
            nets.append(cfg["name"])
    conf_dir = d / "cni-conf"
    conf_dir.mkdir(exist_ok=True)
    _write_json(conf_dir / "00-multus.conf", {
        "cniVersion": "0.3.1", "name": "multus-cni-network", "type": "multus", "kubeconfig": str(lab.kubeconfig),
        "confDir": str(net_d), "cniDir": str(d / "multus-cache"), "binDir": str(bin_dir),
        "clusterNetwork": CLUSTER_NETWORK, "logFile": str(d / "multus.log"), "logLevel": "verbose"})
    return nets


def can_lower_oom_score() -> bool:
    """Whether this machine's root may set a negative oom_score_adj: only with CAP_SYS_RESOURCE (the kernel's
    fs/proc/base.c `__set_oom_adj` answers EACCES below the task's `oom_score_adj_min` without it), which must be
    in the bounding set. The kubelet asks for negative values (the pod sandbox -998, a Guaranteed pod's containers
    -997: pkg/kubelet/qos/policy.go), runc then fails in `runc init` (`failed to update /proc/self/oom_score_adj:
    Permission denied`, seen only with `--debug`; containerd reports `can't get final child's PID from pipe: EOF`),
    and crun the same. Where the capability is missing (this Firecracker guest: CapBnd 000001fffeffffff, bit 24
    clear), containerd's CRI option `restrict_oom_score_adj` (containerd docs/cri/config.md, made for rootless
    set-ups that cannot lower it) raises each value to containerd's own, 0."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("CapBnd:"):
            return bool(int(line.split()[1], 16) >> CAP_SYS_RESOURCE & 1)
    return False


def _containerd_config(node: RealNode) -> str:
    d = node.dir
    return "\n".join([
        "version = 2", f'root = "{d / "containerd"}"', f'state = "{d / "containerd-state"}"',
        "[grpc]", f'  address = "{node.socket}"',
        '[plugins."io.containerd.grpc.v1.cri"]', f'  sandbox_image = "{podimage.PAUSE_IMAGE}"',
        '  stream_server_address = "127.0.0.1"', "  enable_cdi = false",
        f"  restrict_oom_score_adj = {'false' if can_lower_oom_score() else 'true'}",
        '[plugins."io.containerd.grpc.v1.cri".cni]', f'  bin_dir = "{d / "cni-bin"}"',
        f'  conf_dir = "{d / "cni-conf"}"', "  max_conf_num = 1",
        '[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]', '  runtime_type = "io.containerd.runc.v2"',
        '[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]', "  SystemdCgroup = false", ""])


def _kubelet_config(node: RealNode) -> dict[str, Any]:
    d = node.dir
    return {
        "apiVersion": "kubelet.config.k8s.io/v1beta1", "kind": "KubeletConfiguration",
        "address": node.address, "port": 10250, "readOnlyPort": 0, "healthzBindAddress": "127.0.0.1",
        "authentication": {"anonymous": {"enabled": True}, "webhook": {"enabled": False}},
        "authorization": {"mode": "AlwaysAllow"},
        "cgroupDriver": "cgroupfs", "cgroupRoot": f"/roce-fabric-{node.name}", "failCgroupV1": False,
        "failSwapOn": False, "containerRuntimeEndpoint": f"unix://{node.socket}", "podLogsDir": str(d / "pod-logs"),
        "resolvConf": "", "makeIPTablesUtilChains": False, "protectKernelDefaults": False,
        "evictionHard": {"memory.available": "1Mi", "nodefs.available": "1%", "imagefs.available": "1%",
                         "nodefs.inodesFree": "1%"},
        "imageGCHighThresholdPercent": 100, "imageGCLowThresholdPercent": 99, "serializeImagePulls": False,
        "localStorageCapacityIsolation": False, "nodeStatusUpdateFrequency": "10s",
        "shutdownGracePeriod": "0s", "enableServer": True, "logging": {"verbosity": 2}}


# Runs in the node's mount namespace: the node's directories over the fixed paths, containerd, the images, then
# the kubelet. Arguments only (no text from outside in the script): $1 node directory, $2 kubelet binary,
# $3 node name, $4 node address, $5 containerd's socket.
NODE_SH = r"""set -eu
d=$1 sock=$5
mkdir -p "$d/kubelet"
# the mount point is shared by every node on the machine: another lab's stop may remove it between the two steps
i=0; until mkdir -p /var/lib/kubelet && mount --bind "$d/kubelet" /var/lib/kubelet; do
  i=$((i + 1)); [ $i -lt 5 ] || exit 1
done
mount -t tmpfs -o mode=0755 roce-fabric-node /run/netns
for h in /sys/fs/cgroup/*/; do [ -f "$h/cgroup.procs" ] && mkdir -p "$h/roce-fabric-$3"; done
# a new v1 cpuset has no CPUs or memory nodes (nothing could join it): the root's
for f in cpus mems; do cat "/sys/fs/cgroup/cpuset/cpuset.$f" > "/sys/fs/cgroup/cpuset/roce-fabric-$3/cpuset.$f"; done
containerd --config "$d/containerd.toml" >"$d/containerd.log" 2>&1 &
i=0; until ctr --address "$sock" version >/dev/null 2>&1; do
  i=$((i + 1)); [ $i -lt 150 ] || { echo "containerd did not start: see $d/containerd.log" >&2; exit 1; }
  sleep 0.2
done
for img in "$d"/images/*.tar; do
  ctr --address "$sock" --namespace k8s.io images import "$img" >/dev/null
done
exec "$2" --config "$d/kubelet.yaml" --kubeconfig "$d/kubeconfig" --hostname-override "$3" --node-ip "$4" \
  --root-dir /var/lib/kubelet
"""


def prepare(lab: KubeLab, fabric: FabricIntent, host: str, netns: str, address: str, index: int,
            bins: Path, images: dict[str, Path]) -> RealNode:
    """Writes one node's directory (configs, images) under the control plane's state directory."""
    d = lab.workdir / "nodes" / host
    if d.exists():
        shutil.rmtree(d)
    d.mkdir(parents=True)
    node = RealNode(name=host, netns=netns, address=address, dir=d, index=index)
    remove_socket_dir(d)  # what an earlier node of this directory left
    socket_dir(d)
    _cni_files(node, fabric.hosts[host], lab, bins)
    (d / "containerd.toml").write_text(_containerd_config(node))
    (d / "kubelet.yaml").write_text(yaml.safe_dump(_kubelet_config(node)))
    shutil.copy(lab.kubeconfig, d / "kubeconfig")
    (d / "kubeconfig").chmod(0o600)
    (d / "images").mkdir()
    for name, archive in images.items():
        (d / "images" / f"{name.rsplit('/', 1)[1].split(':')[0]}.tar").symlink_to(archive)
    (d / "node.sh").write_text(NODE_SH)
    return node


def start(node: RealNode, bins: Path) -> None:
    log = open(node.dir / "node.log", "wb")  # noqa: SIM115 - the child owns it
    p = subprocess.Popen(["unshare", "--mount", "--propagation", "slave", "nsenter", f"--net=/run/netns/{node.netns}",
                          "sh", str(node.dir / "node.sh"), str(node.dir), str(bins / "bin" / "kubelet"), node.name,
                          node.address, str(node.socket)], stdout=log, stderr=subprocess.STDOUT,
                         stdin=subprocess.DEVNULL, start_new_session=True)
    log.close()
    node.pid = p.pid


def _fail(node: RealNode, what: str) -> NodeError:
    tail = []
    for f in ("node.log", "containerd.log"):
        with contextlib.suppress(OSError):
            tail += [f"{f}: {line}" for line in (node.dir / f).read_text(errors="replace").splitlines()[-8:]]
    return NodeError(f"real node {node.name}: {what}\n" + "\n".join(tail))


def wait_ready(lab: KubeLab, nodes: list[RealNode], timeout: float = 180) -> None:
    """Until every node is Ready in the API; a node whose process ended fails at once with its log."""
    deadline = time.monotonic() + timeout
    pending = {n.name: n for n in nodes}
    while pending:
        for n in list(pending.values()):
            if not alive(n.pid):
                raise _fail(n, "its kubelet or containerd exited")
            with contextlib.suppress(Exception):
                obj = lab.get(f"/api/v1/nodes/{n.name}", timeout=5)
                if any(c["type"] == "Ready" and c["status"] == "True" for c in obj["status"].get("conditions", [])):
                    del pending[n.name]
        if pending and time.monotonic() > deadline:
            raise _fail(next(iter(pending.values())), f"not Ready after {timeout:.0f}s")
        time.sleep(1)


def label_and_advertise(lab: KubeLab, fabric: FabricIntent, names: list[str]) -> None:
    """The labels kwok nodes carry (fabric.lab.kube.node_objects) and the rail resources as extended resources in
    the node's status (what a device plugin would advertise; strategic merge into capacity)."""
    objs = {o["metadata"]["name"]: o for o in node_objects(fabric)}
    for name in names:
        labels = {k: v for k, v in objs[name]["metadata"]["labels"].items() if k != "type"}
        lab.kubectl("label", "node", name, "--overwrite", *(f"{k}={v}" for k, v in labels.items()))
        extra = {k: v for k, v in node_resources(fabric, name).items() if "/" in k}
        lab.kubectl("patch", "node", name, "--subresource", "status", "--type", "merge", "-p",
                    json.dumps({"status": {"capacity": extra}}))


def save(workdir: Path, nodes: list[RealNode]) -> None:
    _write_json(workdir / NODES_FILE, [{"name": n.name, "netns": n.netns, "address": n.address, "dir": str(n.dir),
                                        "index": n.index, "pid": n.pid} for n in nodes])


def load(workdir: Path) -> list[RealNode]:
    try:
        data = json.loads((workdir / NODES_FILE).read_text())
    except (OSError, ValueError):
        return []
    return [RealNode(name=x["name"], netns=x["netns"], address=x["address"], dir=Path(x["dir"]), index=x["index"],
                     pid=x["pid"]) for x in data]


def _pids_of(marker: str) -> list[int]:
    """Processes whose command line names `marker` (a node's own socket or directory, so only its shims)."""
    return [int(p.name) for p in Path("/proc").iterdir() if p.name.isdigit() and marker in cmdline(int(p.name))]


def _remove_cgroups(name: str) -> None:
    """The node's cgroup tree in every v1 hierarchy, deepest first (empty once its processes are gone)."""
    for hier in Path("/sys/fs/cgroup").iterdir():
        top = hier / f"roce-fabric-{name}"
        if top.is_dir():
            for sub in sorted((p for p in top.rglob("*") if p.is_dir()), key=lambda p: -len(p.parts)):
                with contextlib.suppress(OSError):
                    sub.rmdir()
            with contextlib.suppress(OSError):
                top.rmdir()


def stop(node: RealNode) -> None:
    """Ends one node: its containers (killed and removed through containerd), the kubelet and containerd, any
    shim left, then its cgroups. The mounts went with the node's mount namespace."""
    if node.socket.exists():
        for kind in ("tasks", "containers"):
            listed = node.ctr(kind, "ls", "-q", timeout=30).stdout.split()
            for cid in listed:
                if kind == "tasks":
                    node.ctr("tasks", "kill", "--signal", "SIGKILL", cid, timeout=30)
                    node.ctr("tasks", "delete", "--force", cid, timeout=30)
                else:
                    node.ctr("containers", "delete", cid, timeout=30)
    if node.pid and alive(node.pid):
        with contextlib.suppress(ProcessLookupError):
            os.killpg(node.pid, signal.SIGTERM)
        for _ in range(50):
            if not alive(node.pid):
                break
            time.sleep(0.2)
        with contextlib.suppress(ProcessLookupError):
            os.killpg(node.pid, signal.SIGKILL)
    for pid in _pids_of(str(node.socket)) + _pids_of(str(node.dir)):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    time.sleep(0.5)
    _remove_cgroups(node.name)
    remove_socket_dir(node.dir)


def stop_all(workdir: Path) -> list[str]:
    """Stops every real node recorded under a control plane's state directory; what it stopped."""
    nodes = load(workdir)
    for n in nodes:
        stop(n)
    with contextlib.suppress(OSError):
        (workdir / NODES_FILE).unlink()
    if nodes and not kubelet_dir_mounted():
        with contextlib.suppress(OSError):
            KUBELET_DIR.rmdir()  # the mount point, left empty
    return [f"node {n.name}" for n in nodes]


def kubelet_dir_mounted() -> bool:
    """Whether a node still runs anywhere on this machine: some mount namespace has a node's directory over
    /var/lib/kubelet. Removing the mount point then would detach it under that node's kubelet (the kernel does so
    for a mount point removed in another namespace), which would go on writing into a new /var/lib/kubelet."""
    seen: set[str] = set()
    for p in Path("/proc").iterdir():
        if not p.name.isdigit():
            continue
        try:
            ns = os.readlink(p / "ns" / "mnt")
            if ns in seen:
                continue
            seen.add(ns)
            mounts = (p / "mountinfo").read_text()
        except OSError:
            continue
        if any(f.split()[4] == str(KUBELET_DIR) for f in mounts.splitlines()):
            return True
    return False


def preflight(fabric: FabricIntent, hosts: list[str], bins: Path) -> LabState:
    """What real nodes on `hosts` need, checked before anything starts: the running namespace lab, the programs,
    and 802.1Q where a pod's rail is tagged. Returns the namespace lab's state."""
    from fabric.lab.state import load_state

    if lacking := missing(bins):
        raise NodeError(f"real nodes: missing {', '.join(lacking)}")
    tagged = [f"{h} rail {r.rail} (VLAN {r.vlan})" for h in hosts for r in fabric.hosts[h].rails
              if r.pod is not None and r.vlan and not r.pod.pooled]
    if tagged and not vlan_support():
        raise NodeError(f"{', '.join(tagged[:3])}: pods of a host-tagged rail get an 802.1Q VLAN device, and this "
                        f"kernel ({os.uname().release}) has no 802.1Q support (module 8021q neither built in nor "
                        "loadable); real nodes run on this machine's kernel (the VM lab's guest carries none)")
    st = load_state(fabric.name, required=False)
    if st is None or not st.bridge_address:
        raise NodeError(f"real nodes run in the namespace lab's hosts: `fabric lab up` of {fabric.name} first")
    return st


def up(fabric: FabricIntent, kube_bins: Path, hosts: list[str], bins: Path) -> KubeLab:
    """The lab's control plane (fabric.lab.kube.up) on the namespace lab's management bridge, with a real node on
    each of `hosts` and a kwok node on every other host."""
    from fabric.lab import kube

    st = preflight(fabric, hosts, bins)
    assert st.bridge_address
    return kube.up(fabric, kube_bins, address=st.bridge_address.split("/")[0],
                   join=lambda lab: [n.name for n in join(lab, fabric, st, hosts, bins)])


def join(lab: KubeLab, fabric: FabricIntent, st: LabState, hosts: list[str], bins: Path) -> list[RealNode]:
    """Starts a real node on each of `hosts` joined to `lab`, waits until each is Ready, then labels it and
    advertises its rail resources; `lab.stop()` stops them again."""
    lab.kubectl("apply", "--server-side", *(a for c in sorted((bins / "crds").glob("*.yaml")) for a in ("-f", str(c))))
    images = podimage.build(lab.workdir / "images")
    nodes: list[RealNode] = []
    lab.cleanups.append(lambda: stop_all(lab.workdir))
    try:
        for i, h in enumerate(hosts, 1):
            n = st.node(h)
            nodes.append(prepare(lab, fabric, h, n.netns, n.address, i, bins, images))
            start(nodes[-1], bins)
            save(lab.workdir, nodes)
        wait_ready(lab, nodes)
        label_and_advertise(lab, fabric, hosts)
    except KeyboardInterrupt:
        stop_all(lab.workdir)
        raise
    return nodes
