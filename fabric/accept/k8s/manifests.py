"""The Kubernetes launcher's manifests: gang-scheduled MPIJobs for nccl-tests and for perftest between pods, rendered
for review (`fabric accept INV --launcher k8s --render-only -o DIR`) and, where `kubectl` reaches a
cluster, applied and followed (K8sRunner).

What each job is, and the controller behaviour it was checked against:

- **Gang**: the tool creates a Volcano PodGroup `<job>-gang` (scheduling.volcano.sh/v1beta1) and every pod
  of the job — the launcher and each worker — carries `scheduling.k8s.io/group-name: <job>-gang` and
  `schedulerName: volcano`; `minMember` = workers + 1. The MPI Operator's own gang integration must be
  *off* (no `--gang-scheduling`): with `--gang-scheduling=volcano` it creates a PodGroup named like the
  MPIJob whose spec it owns and rewrites (kubeflow/mpi-operator pkg/controller/podgroup.go newPodGroup,
  updatePodGroup: minMember, queue, priorityClass, minResources only), so the job could not carry a
  `networkTopology`; it also overwrites each template's group annotation with its own PodGroup
  (decoratePodTemplateSpec). The PodGroup here has another name, so an operator started with gang
  scheduling still runs the job (gang-scheduled by its own PodGroup, without the topology constraint)
  instead of refusing a PodGroup it does not own. `launcherCreationPolicy: AtStartup` (the default, said
  explicitly): with `WaitForWorkersReady` the launcher pod would not exist until the workers run, and a
  gang that counts it would never fill.
- **Topology**: `networkTopology: {mode: hard, highestTierAllowed: T}` where T is the tier of the smallest
  exported HyperNode holding every host of the job (fabric.export.tiers: 1 = one SU's rail-leaf group,
  2 = spine group, 3 = super-spines), so a job inside one SU stays in tier 1.
- **Placement**: every pod (the launcher too: a hard topology constraint covers all members of the gang)
  has a required node affinity on `kubernetes.io/hostname` In the job's hosts, and workers a required
  anti-affinity on the job's label per hostname: N workers land one per intended host.
- **Networks**: workers name every rail network as `<network>@<network>` (multus' `name@interface` form),
  so inside the pod rail N is the interface of that name, and request one device of each rail resource
  (multus gives each network of a resource one of the pod's device IDs, in order: pkg/k8sclient/
  k8sclient.go) plus `nvidia.com/gpu` for NCCL; IPC_LOCK for memory registration; /dev/shm in memory.
- **sshd**: workers run the image's `/usr/sbin/sshd -De` (mpirun reaches them over SSH with the keys the
  operator mounts at `sshAuthMountPath`), after a start-up check that the image has every tool the job
  runs and that the pod has its rail RDMA devices — a missing tool or device fails the worker at once with
  its name instead of a hung mpirun.
- **NCCL**: ranks run through the pod entrypoint (fabric.render.k8s.pod_entrypoint), which exports the
  pod's own NCCL_IB_HCA and GID index; NCCL_IB_TC is the fabric's RoCE ToS, NCCL_SOCKET_IFNAME the pod
  network (eth0).

Image requirements (`--image`, or the check input `image`): runs as root; OpenMPI `mpirun` (the
launcher) and `/usr/sbin/sshd` with `ssh-keygen` (workers); rdma-core with the mlx5 provider; nccl-tests'
`all_reduce_perf` built with MPI (NCCL jobs); perftest's `ib_write_bw`/`ib_write_lat` (pod bandwidth and
latency); a POSIX sh, `awk`, `sort`, `wc`.

The tests validate the manifests against the real CRDs and the controllers' rules (tools/k8s_crd_check.py)
and run them through a real control plane (tests/accept/k8s/test_cluster.py, fabric.lab.kube).
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fabric.design.intent import FabricIntent, HostIntent
from fabric.export.tiers import tiers
from fabric.order import natural
from fabric.render.k8s import RAIL_MAP, k8s_yaml, pod_entrypoint, pod_rail_setup
from fabric.safefile import write_private

API_MPIJOB = "kubeflow.org/v2beta1"
API_PODGROUP = "scheduling.volcano.sh/v1beta1"
GROUP_ANNOTATION = "scheduling.k8s.io/group-name"  # volcano.sh/apis KubeGroupNameAnnotationKey
NETWORKS_ANNOTATION = "k8s.v1.cni.cncf.io/networks"
RUN_DIR = "/var/run/roce-fabric"
POD_SH = f"{RUN_DIR}/pod.sh"
MARK = "@@roce-fabric"
# Pod-side NCCL variables the entrypoint decides; the host's values would be wrong inside a pod.
DISCOVERED = {"NCCL_IB_HCA", "NCCL_IB_GID_INDEX", "NCCL_IB_ROCE_VERSION_NUM", "NCCL_IB_ADDR_FAMILY",
              "NCCL_SOCKET_IFNAME"}

@dataclass
class PodPair:
    """One perftest between two pods on one rail: `server` and `client` are node (host) names."""

    tag: str
    rail: int
    server: str
    client: str


@dataclass
class PodJob:
    """One MPIJob: `hosts` get one worker each; `command` is the launcher's argv."""

    name: str
    hosts: list[str]
    image: str
    command: list[str]
    needs: list[str]  # tools the image must have
    gpus: int = 0  # per worker (NCCL jobs)
    slots: int = 1
    env: dict[str, str] = field(default_factory=dict)  # forwarded to every rank with mpirun -x
    launch_script: str = ""  # perftest jobs: the launcher's script
    pairs: list[list[PodPair]] = field(default_factory=list)  # perftest rounds
    tool: str = ""
    timeout_s: float = 900


def pod_env(host: HostIntent) -> dict[str, str]:
    """The NCCL variables a pod keeps from the host's rendering (RoCE ToS, user extras), and eth0 for sockets."""
    env = {k: v for k, v in host.nccl_env.items() if k not in DISCOVERED}
    env["NCCL_SOCKET_IFNAME"] = "=eth0"
    return dict(sorted(env.items()))


def job_tier(fabric: FabricIntent, hosts: list[str]) -> int:
    """The tier of the smallest exported HyperNode that holds all `hosts` (1 SU, 2 spine group, 3 core)."""
    t = tiers(fabric)
    place = {p.name: p for p in t.hosts}
    if len({place[h].su for h in hosts}) == 1:
        return 1
    if len({place[h].pod for h in hosts}) == 1:
        return 2
    return 3


def _networks(fabric: FabricIntent, host: str) -> list[tuple[str, str]]:
    """(network, resource) of every rail the pods of `host` attach, in rail order."""
    return [(r.pod.network, r.pod.resource) for r in sorted(fabric.hosts[host].rails, key=lambda r: r.rail)
            if r.pod is not None]


def pooled_resource(fabric: FabricIntent, host: str) -> str | None:
    """The pooled resource the pods of `host` take every device of, or None (per-rail resources)."""
    return next((r.pod.resource for r in fabric.hosts[host].rails if r.pod is not None and r.pod.pooled), None)


def devices_variable(resource: str) -> str:
    """The variable the device plugin gives a container its devices of `resource` in: PCIDEVICE_ + prefix + _ +
    name, upper case, dots as underscores (sriov-network-device-plugin pkg/resources/pool_stub.go GetEnvs)."""
    prefix, name = resource.split("/", 1)
    return f"PCIDEVICE_{prefix}_{name}".upper().replace(".", "_")


def networks_annotation(fabric: FabricIntent, host: str) -> str:
    """multus' `network@interface` list: rail N's network as interface railN; with a pooled resource the one
    network once per rail NIC as pool-1…, which the pod's set-up turns into its rails (pod_rail_setup)."""
    nets = _networks(fabric, host)
    if pooled_resource(fabric, host):
        return ",".join(f"{n}@pool-{i}" for i, (n, _) in enumerate(nets, 1))
    return ",".join(f"{n}@{n}" for n, _ in nets)


def _requests(fabric: FabricIntent, job: PodJob) -> dict[str, str]:
    res: dict[str, int] = {}
    for _net, resource in _networks(fabric, job.hosts[0]):
        res[resource] = res.get(resource, 0) + 1
    if job.gpus:
        res["nvidia.com/gpu"] = job.gpus
    return {k: str(v) for k, v in sorted(res.items())}


def _labels(job: PodJob, role: str | None = None) -> dict[str, str]:
    """The job's labels; a pod template's also say its role, which the workers' anti-affinity selects on."""
    return {"app.kubernetes.io/part-of": "roce-fabric-accept", "roce-fabric/job": job.name,
            **({"roce-fabric/role": role} if role else {})}


# The launcher's argv runs behind this: the headless service publishes only Ready workers, so a worker still
# starting is a name that does not resolve yet, and ssh does not retry it (backoffLimit 0 then fails the job).
WAIT_FOR_WORKERS = "\n".join([
    'hf="${OMPI_MCA_orte_default_hostfile:-/etc/mpi/hostfile}"; waited=0',
    "for h in $(awk '{print $1}' \"$hf\"); do",
    '  until getent hosts "$h" >/dev/null 2>&1; do',
    '    [ "$waited" -lt "$ROCE_FABRIC_WAIT_S" ] || { echo "roce-fabric: worker $h has no DNS name after'
    ' ${waited}s (not Ready)" >&2; exit 1; }',
    "    sleep 2; waited=$((waited + 2))",
    "  done",
    "done",
    'exec "$@"',
])


def _worker_command(job: PodJob, pooled: bool = False) -> list[str]:
    needs = " ".join([*job.needs, *(["ip", "printenv"] if pooled else [])])
    script = "\n".join([
        "set -e",
        f"mkdir -p {RUN_DIR}",
        *([f"printf '%s' \"$ROCE_FABRIC_SETUP_SH\" > {RUN_DIR}/setup.sh"] if pooled else []),
        f"printf '%s' \"$ROCE_FABRIC_POD_SH\" > {POD_SH}",
        f"printf '%s\\n' \"$ROCE_FABRIC_NODE\" > {RUN_DIR}/node",
        'missing=""',
        f"for t in {needs}; do command -v \"$t\" >/dev/null 2>&1 || missing=\"$missing $t\"; done",
        '[ -z "$missing" ] || { echo "roce-fabric: the image lacks:$missing" >&2; exit 1; }',
        *([f"sh {RUN_DIR}/setup.sh"] if pooled else []),
        f"ROCE_FABRIC_QUIET= sh {POD_SH} true",
        "mkdir -p /run/sshd",
        "ssh-keygen -A >/dev/null 2>&1 || true",
        "exec /usr/sbin/sshd -De",
    ])
    return ["/bin/sh", "-c", script]


def mpijob_manifests(job: PodJob, fabric: FabricIntent) -> list[dict[str, Any]]:
    """The PodGroup and the MPIJob of `job` (see the module docstring for every choice)."""
    k = fabric.kubernetes
    labels = _labels(job)
    group = f"{job.name}-gang"
    nets = _networks(fabric, job.hosts[0])
    prefix = k.network_name
    requests = _requests(fabric, job)
    rank_env = {"ROCE_FABRIC_RAILS": str(len(nets)), "ROCE_FABRIC_IFPREFIX": prefix, **job.env}
    placement = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
        {"matchExpressions": [{"key": "kubernetes.io/hostname", "operator": "In", "values": list(job.hosts)}]}]}}}
    # One worker per host: the anti-affinity selects the job's workers only. The launcher shares a host with a
    # worker (it is pinned to the same hosts); selecting it too would need N+1 nodes among N.
    worker_affinity = {**placement, "podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"labelSelector": {"matchLabels": _labels(job, "worker")}, "topologyKey": "kubernetes.io/hostname"}]}}
    tier = job_tier(fabric, job.hosts)
    pod_group = {
        "apiVersion": API_PODGROUP, "kind": "PodGroup",
        "metadata": {"name": group, "namespace": k.namespace, "labels": labels},
        "spec": {"minMember": len(job.hosts) + 1,
                 "minResources": {r: str(int(v) * len(job.hosts)) for r, v in requests.items()},
                 "networkTopology": {"mode": "hard", "highestTierAllowed": tier}},
    }
    env_list = [{"name": n, "value": v} for n, v in sorted(rank_env.items())]
    launcher_env = list(env_list)
    if job.launch_script:
        launcher_env.append({"name": "ROCE_FABRIC_LAUNCH_SH", "value": job.launch_script})
    worker_env = [*env_list, {"name": "ROCE_FABRIC_POD_SH", "value": pod_entrypoint()},
                  {"name": "ROCE_FABRIC_NODE", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}}]
    volumes = [{"name": "roce-fabric", "emptyDir": {}}, {"name": "dshm", "emptyDir": {"medium": "Memory"}}]
    mounts = [{"name": "roce-fabric", "mountPath": RUN_DIR}, {"name": "dshm", "mountPath": "/dev/shm"}]
    caps = ["IPC_LOCK"]
    pooled = pooled_resource(fabric, job.hosts[0])
    if pooled:  # the pod makes its granted devices its rails (address, VLAN, routes): NET_ADMIN, the node's map
        caps.append("NET_ADMIN")
        worker_env += [{"name": "ROCE_FABRIC_SETUP_SH", "value": pod_rail_setup()},
                       {"name": "ROCE_FABRIC_DEVICES_VAR", "value": devices_variable(pooled)},
                       {"name": "ROCE_FABRIC_RAIL_MAP", "value": f"/{RAIL_MAP}"}]
        volumes.append({"name": "rail-map", "hostPath": {"path": f"/{RAIL_MAP.rsplit('/', 1)[0]}",
                                                          "type": "Directory"}})
        mounts.append({"name": "rail-map", "mountPath": f"/{RAIL_MAP.rsplit('/', 1)[0]}", "readOnly": True})
    launcher_env.append({"name": "ROCE_FABRIC_WAIT_S", "value": str(int(min(300, job.timeout_s / 3)))})
    meta = {"labels": _labels(job, "launcher"), "annotations": {GROUP_ANNOTATION: group}}
    command = ["/bin/sh", "-c", WAIT_FOR_WORKERS, "roce-fabric-launcher", *job.command]
    launcher = {"replicas": 1, "template": {"metadata": meta, "spec": {
        "schedulerName": "volcano", "affinity": placement,
        "containers": [{"name": "launcher", "image": job.image, "command": command, "env": launcher_env,
                        "resources": {"requests": {"cpu": "1", "memory": "1Gi"}}}]}}}
    worker_meta = {"labels": _labels(job, "worker"), "annotations": {
        GROUP_ANNOTATION: group, NETWORKS_ANNOTATION: networks_annotation(fabric, job.hosts[0])}}
    worker = {"replicas": len(job.hosts), "template": {"metadata": worker_meta, "spec": {
        "schedulerName": "volcano", "affinity": worker_affinity, "volumes": volumes,
        "containers": [{"name": "worker", "image": job.image, "command": _worker_command(job, bool(pooled)),
                        "env": worker_env, "securityContext": {"capabilities": {"add": caps}}, "volumeMounts": mounts,
                        "resources": {"requests": requests, "limits": requests}}]}}}
    mpijob = {
        "apiVersion": API_MPIJOB, "kind": "MPIJob",
        "metadata": {"name": job.name, "namespace": k.namespace, "labels": labels},
        "spec": {"slotsPerWorker": job.slots, "launcherCreationPolicy": "AtStartup", "mpiImplementation": "OpenMPI",
                 "sshAuthMountPath": "/root/.ssh",
                 "runPolicy": {"cleanPodPolicy": "Running", "backoffLimit": 0,
                               "activeDeadlineSeconds": int(job.timeout_s)},
                 "mpiReplicaSpecs": {"Launcher": launcher, "Worker": worker}},
    }
    return [pod_group, mpijob]


def write_networks(fabric: FabricIntent, out_dir: Path) -> Path:
    """The rail networks beside a job's manifest: applied with it (idempotent), never deleted after it."""
    from fabric.render.k8s import network_attachments

    return write_private(out_dir / "networks.yaml", network_attachments(fabric))


def manifests_yaml(job: PodJob, fabric: FabricIntent) -> str:
    head = (f"# {job.name}: {len(job.hosts)} hosts ({', '.join(job.hosts[:4])}{', …' if len(job.hosts) > 4 else ''}); "
            "roce-fabric acceptance job.\n# The MPI Operator runs without --gang-scheduling: the PodGroup below is "
            "the gang (fabric/accept/k8s/manifests.py).\n")
    return head + k8s_yaml(mpijob_manifests(job, fabric))


def _mpirun(np: int, per_node: int, env: dict[str, str]) -> list[str]:
    argv = ["mpirun", "--allow-run-as-root", "-np", str(np), "--map-by", f"ppr:{per_node}:node", "--bind-to", "none"]
    for name in sorted({*env, "ROCE_FABRIC_RAILS", "ROCE_FABRIC_IFPREFIX"}):
        argv += ["-x", name]
    return argv


def nccl_pod_job(fabric: FabricIntent, name: str, hosts: list[str], argv: list[str], gpus: int, image: str,
                 timeout_s: float = 900, nccl_version: str | None = None) -> PodJob:
    """all_reduce_perf over `hosts`, one rank per GPU, each rank through the pod entrypoint (told the image's
    NCCL version where known: fabric.render.k8s.pod_entrypoint)."""
    env = pod_env(fabric.hosts[hosts[0]])
    if nccl_version:
        env["ROCE_FABRIC_NCCL_VERSION"] = nccl_version
    command = [*_mpirun(len(hosts) * gpus, gpus, env), "sh", POD_SH, *argv]
    return PodJob(name=name, hosts=list(hosts), image=image, command=command, gpus=gpus, slots=gpus, env=env,
                  needs=["sshd", "ssh-keygen", "mpirun", argv[0]], timeout_s=timeout_s)


def perftest_argv(tool: str, size: int = 1 << 20, qps: int = 4, seconds: float = 5, port: str = "18515",
                  tos: int | None = None) -> list[str]:
    """The host check's perftest argv (fabric.accept.tools, so both judge the same run) with the device and
    GID left to the pod (`@DEV@`, `@GID@`), the traffic class `tos` and the port given; the pod entrypoint
    appends the server address on the client."""
    from fabric.accept.tools import TOOLS, End

    cls = TOOLS[tool]
    t = cls(size=size, qps=qps) if tool == "ib_write_bw" else cls()  # type: ignore[call-arg]
    argv = t.server(End(host="", rail=0, ip="", rdma="@DEV@", netdev="", gid_index=0, tos=tos), 0, seconds) or []
    value = {"-x": "@GID@", "-p": port}
    return [value.get(argv[i - 1], a) if i else a for i, a in enumerate(argv)]


def _roce_tos(fabric: FabricIntent, hosts: list[str]) -> int | None:
    """The pods' RoCE ToS: the hosts' (one per job; a fleet mixing ToS values is a lint finding)."""
    return fabric.hosts[hosts[0]].nic_qos.roce_tos if hosts else None


def perftest_pod_job(fabric: FabricIntent, name: str, rounds: list[list[PodPair]], *, tool: str, image: str,
                     size: int = 1 << 20, qps: int = 4, seconds: float = 5, timeout_s: float = 900) -> PodJob:
    """perftest between pods: per round the pairs run at once (one mpirun of two ranks each, server rank on the
    server's node), rounds one after another. The launcher first learns which worker pod runs on which node."""
    hosts = sorted({h for rd in rounds for p in rd for h in (p.server, p.client)}, key=natural)
    env = {"ROCE_FABRIC_QUIET": "1"}
    mpirun = " ".join(shlex.quote(a) for a in _mpirun(len(hosts), 1, env)[:2]) + " " + " ".join(
        f"-x {n}" for n in sorted({*env, "ROCE_FABRIC_RAILS", "ROCE_FABRIC_IFPREFIX"}))
    lines = [
        "set -u",
        'hf="${OMPI_MCA_orte_default_hostfile:-/etc/mpi/hostfile}"',
        f'MPI="{mpirun}"',
        f"$MPI -np {len(hosts)} --map-by ppr:1:node "
        f"sh -c 'echo \"roce-node $(hostname) $(cat \"${{ROCE_FABRIC_RUN:-{RUN_DIR}}}/node\")\"' "
        "> /tmp/roce-nodes 2>&1 || { cat /tmp/roce-nodes; exit 1; }",
        "host_of() { awk -v n=\"$1\" '$1 == \"roce-node\" && $3 == n { print $2; exit }' /tmp/roce-nodes; }",
        "fqdn_of() { awk -v h=\"$1\" 'index($1, h \".\") == 1 || $1 == h { print $1; exit }' \"$hf\"; }",
        "pair() {  # pair TAG RAIL SERVER_NODE CLIENT_NODE PORT",
        '  s=$(fqdn_of "$(host_of "$3")"); c=$(fqdn_of "$(host_of "$4")")',
        f'  echo "{MARK} begin $1"',
        '  if [ -z "$s" ] || [ -z "$c" ]; then echo "no worker pod on $3 or $4"; echo "' + MARK + ' end $1 rc=2"; '
        "return 0; fi",
        f"  $MPI -np 2 --host \"$s,$c\" sh -c 'if [ \"$OMPI_COMM_WORLD_RANK\" = 0 ]; then r=server; else r=client; "
        f"fi; exec sh \"${{ROCE_FABRIC_RUN:-{RUN_DIR}}}/pod.sh\" perftest \"$r\" \"$@\"' roce-pair \"$2\" \"$s\" "
        + " ".join(shlex.quote(a) if a != "$5" else '"$5"' for a in perftest_argv(tool, size, qps, seconds, port="$5",
                                                                            tos=_roce_tos(fabric, hosts)))
        + " 2>&1",
        f'  echo "{MARK} end $1 rc=$?"',
        "}",
    ]
    base = 18515 if tool == "ib_write_bw" else 18600
    index = {h: i for i, h in enumerate(hosts)}
    lines += [
        f"nodes='{' '.join(hosts)}'",
        "node() { i=$1; set -- $nodes; shift \"$i\"; echo \"$1\"; }  # node I: the I-th host (from 0)",
        "round() {  # round TAG RAIL:SERVER:CLIENT... (host indexes); the pairs run at once",
        '  tag=$1; shift; k=0',
        '  for p in "$@"; do',
        '    rail=${p%%:*}; rest=${p#*:}',
        f'    pair "$tag-r$rail-$k" "$rail" "$(node "${{rest%%:*}}")" "$(node "${{rest#*:}}")" '
        f'"$(({base} + rail))" > "/tmp/roce-$tag-$k.out" &',
        '    k=$((k + 1))',
        '  done',
        '  wait',
        '  cat "/tmp/roce-$tag-"*.out',
        '}',
    ]
    for rd in rounds:
        tag = rd[0].tag.split("-")[0]
        lines.append(f"round {tag} " + " ".join(f"{q.rail}:{index[q.server]}:{index[q.client]}" for q in rd))
    lines.append(f'echo "{MARK} done"')
    script = "\n".join(lines) + "\n"
    return PodJob(name=name, hosts=hosts, image=image, command=["/bin/sh", "-c", 'eval "$ROCE_FABRIC_LAUNCH_SH"'],
                  needs=["sshd", "ssh-keygen", tool], env=env, launch_script=script, pairs=rounds, tool=tool,
                  timeout_s=timeout_s)


def pod_pairs(fabric: FabricIntent, rounds: list[dict[int, list[tuple[str, str]]]], prefix: str) -> list[list[PodPair]]:
    """Scheduled host pairs per rail → perftest pairs, both directions (a→b, then b→a as the next round)."""
    out: list[list[PodPair]] = []
    for k, rd in enumerate(rounds, 1):
        for direction in (0, 1):
            pairs = []
            for rail, ps in sorted(rd.items()):
                for a, b in ps:
                    client, server = (a, b) if direction == 0 else (b, a)
                    pairs.append(PodPair(tag=f"{prefix}{k}{'ab'[direction]}-r{rail}-{len(pairs)}", rail=rail,
                                         server=server, client=client))
            if pairs:
                out.append(pairs)
    return out
