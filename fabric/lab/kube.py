"""A real Kubernetes control plane on this machine, one fake node per inventory host (`fabric lab up INV --k8s`,
and the K8s tests' cluster).

The parts are the upstream programs built by `make k8s-bins` (tools/k8s-bins: versions in its go.mod files):
etcd, kube-apiserver, kube-controller-manager (the MPI Operator's launcher is a batch/v1 Job), kube-scheduler
(the default profile only), Volcano's scheduler and controller manager (v1.15.1 built from source by
tools/k8s-bins/volcano-src.sh; v1.10.0 where that is not built), kwok (the nodes and their kubelets: kwok's own
"general" pod stages, less a step: a bound pod without init containers becomes Running and Ready at once, a pod
owned by a Job Succeeded, each step 0.1-0.5 s later here (`lab_stages`), or after the pod's
`pod-complete.stage.kwok.x-k8s.io/delay` annotation; kwok's ClusterLogs serves a log file as the container's log)
and the MPI Operator v2 controller. Everything listens on 127.0.0.1 on ephemeral ports; the MPI Operator, which
binds :8080 whatever it is told, runs in a network namespace of its own (fabric.lab.relay), so two labs run at
once. The certificates and the one admin token are made here, in a 0700 directory.

Scheduling: pods with `schedulerName: volcano` are placed by Volcano's own scheduler (vc-scheduler) with the
configuration it uses when given none (pkg/scheduler/util.go DefaultSchedulerConf: actions enqueue, allocate,
backfill; plugins priority, gang, conformance | overcommit, drf, predicates, proportion, nodeorder), so the gang
(PodGroup minMember: all or nothing) is enforced; with v1.15.1 also the plugin network-topology-aware and the
fabric's HyperNodes, so a PodGroup's `networkTopology` (mode hard, highestTierAllowed) is enforced. v1.10.0
predates HyperNodes (Volcano v1.11): its PodGroup CRD has no `networkTopology` and the HyperNode CRD there is a
copy from a later release (../shared/k8s-crds), admitted and read by nobody (`Volcano.describe` says so).
Volcano's controller manager runs the PodGroup controller (a PodGroup for a volcano pod that names none) and
the queue controller (Queue status); the scheduler creates the `default` Queue itself (pkg/scheduler/cache
newDefaultQueue) and puts a PodGroup without a queue in it (setPodGroup). Not run: the webhook manager (for
these objects it would only default the PodGroup's queue and check that a pod's PodGroup exists and its queue
is open), the controllers of Volcano's own Job kinds (vcjob, jobflow) and its HyperNode discovery.

Node resources: `nvidia.com/gpu` = the host's GPUs; each rail's device-plugin resource counts the devices the
plugin would advertise on that node (the NIC's VFs, or the NIC itself in PF mode; a pooled resource sums them);
labels are `fabric export --format k8s-labels`'s plus `kubernetes.io/hostname`.
"""

from __future__ import annotations

import contextlib
import datetime
import functools
import hashlib
import ipaddress
import json
import os
import secrets
import signal
import socket
import ssl
import subprocess
import sys
import time
import urllib.parse
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from fabric.design.intent import FabricIntent
from fabric.lab.relay import unshare_argv

ROOT = Path(__file__).resolve().parents[2]
BUILD = ROOT / "tools" / "k8s-bins" / "build.sh"
VOLCANO_BUILD = ROOT / "tools" / "k8s-bins" / "volcano-src.sh"
PROGRAMS = ("etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kubectl", "kwok", "mpi-operator",
            "vc-scheduler", "vc-controller-manager")
KWOK_ANNOTATION = "kwok.x-k8s.io/node"
SHARED_CRDS = ROOT.parent / "shared" / "k8s-crds"
# From the built Volcano (tools/k8s-bins copies them): its PodGroup, Queue, Command (the queue controller watches
# Commands) and Numatopology (the scheduler watches them: feature gate ResourceTopology, on by default); from
# v1.11 on also the HyperNode (the scheduler's cache waits for it). The MPIJob comes from the core build.
VOLCANO_CRDS = ("scheduling.volcano.sh_podgroups", "scheduling.volcano.sh_queues", "bus.volcano.sh_commands",
                "nodeinfo.volcano.sh_numatopologies")
HYPERNODE_CRD = "topology.volcano.sh_hypernodes"
HYPERNODES = "/apis/topology.volcano.sh/v1alpha1/hypernodes"
# Volcano's built-in configuration (pkg/scheduler/util.go DefaultSchedulerConf, the same in v1.10.0 and v1.15.1),
# written out so that the lab's state directory shows what runs. Where Volcano has HyperNodes, the plugin that
# enforces a PodGroup's `networkTopology` is added to the second tier as Volcano's network-topology-aware
# scheduling documents it: it gives the allocate action the HyperNodes to try, tier by tier up to the job's
# `highestTierAllowed` (pkg/scheduler/plugins/network-topology-aware, AddHyperNodeGradientForJobFn).
VOLCANO_CONF = {"actions": "enqueue, allocate, backfill", "tiers": [
    {"plugins": [{"name": "priority"}, {"name": "gang"}, {"name": "conformance"}]},
    {"plugins": [{"name": n} for n in ("overcommit", "drf", "predicates", "proportion", "nodeorder")]}]}
TOPOLOGY_PLUGIN = "network-topology-aware"
VOLCANO_CONTROLLERS = "pg-controller,queue-controller"
# kwok v0.7.0 renews no node Lease here (its log never says "Syncing lease") and its default heartbeat-with-lease
# stage re-posts node status every 10 min, so with the controller manager's 50 s grace every node turned NotReady
# (and tainted not-ready:NoSchedule) about 50 s after it was added: later pods stayed Pending. Fake nodes have no
# liveness to watch; the lab waits an hour.
NODE_GRACE = "1h"
NOT_READY_TAINT = "node.kubernetes.io/not-ready"
# Go's collector at its default (GOGC=100) marked the API server's live heap (about 140 MB) every few seconds while
# pods came and went: 8 of its 14 CPU-s in the 64-host jobs' test (GODEBUG=gctrace=1). A heap allowed to grow to
# five times the live one, up to 1 GiB per program, collects about a quarter as often; the caller's own GOGC or
# GOMEMLIMIT wins.
GO_GC = {"GOGC": "400", "GOMEMLIMIT": "1GiB"}
# A job's workers are its Service's endpoints (the MPI Operator's headless Service): every worker's readiness change
# rewrote that job's Endpoints and EndpointSlice (64 addresses) at once; gathered for 1 s, a job's workers turning
# Ready, or deleted, cost a few writes.
ENDPOINT_BATCHING = ("--endpoint-updates-batch-period", "1s", "--endpointslice-updates-batch-period", "1s")


# kwok's "general" stages wait 1 s plus up to 5 s of jitter at each step of a pod (created, init container running
# and completed, ready, complete): a simulated kubelet's latency, about 20 s before the last pod of a 65-pod gang
# is Ready. The lab's kubelets take 0.1 s plus up to 0.4 s per step; a pod's own stage annotations still decide
# where it names them (a launcher's run time).
STAGE_DELAY_MS, STAGE_JITTER_MS = 100, 500
# A bound pod without init containers becomes Running and Ready in one status write ("pod-run"), not kwok's two
# ("pod-create": Pending with its IP and a `Created` event, then "pod-ready"). Every pod update is an API write sent
# to each watcher, and the MPI Operator v0.6.0 queues the pod's MPIJob through client-go's default controller rate
# limiter, whose token bucket (10/s, burst 100) every update draws on: with kwok's two steps a 64-host job's MPIJob
# was marked Succeeded up to 15 s after its launcher. Pods with init containers keep kwok's steps.
POD_RUN_STATUS = """{{ $now := Now }}
conditions:
- {lastProbeTime: null, lastTransitionTime: {{ $now | Quote }}, status: "True", type: Initialized}
- {lastProbeTime: null, lastTransitionTime: {{ $now | Quote }}, status: "True", type: Ready}
- {lastProbeTime: null, lastTransitionTime: {{ $now | Quote }}, status: "True", type: ContainersReady}
{{ range .spec.readinessGates }}
- {lastTransitionTime: {{ $now | Quote }}, status: "True", type: {{ .conditionType | Quote }}}
{{ end }}
containerStatuses:
{{ range .spec.containers }}
- {image: {{ .image | Quote }}, name: {{ .name | Quote }}, ready: true, restartCount: 0, started: true,
   state: {running: {startedAt: {{ $now | Quote }}}}}
{{ end }}
hostIP: {{ NodeIPWith .spec.nodeName | Quote }}
podIP: {{ PodIPWith .spec.nodeName ( or .spec.hostNetwork false ) ( or .metadata.uid "" ) ( or .metadata.name "" ) \
( or .metadata.namespace "" ) | Quote }}
phase: Running
startTime: {{ $now | Quote }}
"""


def _expr(key: str, op: str, *values: str) -> dict[str, Any]:
    return {"key": key, "operator": op, **({"values": list(values)} if values else {})}


def lab_stages(stages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """kwok's general pod stages as the lab runs them: each step's default delay shortened (annotation-driven delays
    unchanged), a pod without init containers Running and Ready in one step ("pod-run"), and "pod-ready" left
    alone once a pod has ended (its selector matched a Succeeded pod again, and kwok retried a patch the API server
    refuses: `may not be transitioned to non-terminated state`)."""
    guards = {"pod-create": _expr(".spec.initContainers", "Exists"),
              "pod-ready": _expr(".status.phase", "NotIn", "Succeeded", "Failed")}
    for stage in stages:
        spec = stage.setdefault("spec", {})
        if delay := spec.get("delay"):
            if "durationMilliseconds" in delay:
                delay["durationMilliseconds"] = min(delay["durationMilliseconds"], STAGE_DELAY_MS)
            if "jitterDurationMilliseconds" in delay:
                delay["jitterDurationMilliseconds"] = min(delay["jitterDurationMilliseconds"], STAGE_JITTER_MS)
        if guard := guards.get(stage.get("metadata", {}).get("name")):
            spec.setdefault("selector", {}).setdefault("matchExpressions", []).append(guard)
    pod_run = {"apiVersion": "kwok.x-k8s.io/v1alpha1", "kind": "Stage", "metadata": {"name": "pod-run"}, "spec": {
        "resourceRef": {"apiGroup": "v1", "kind": "Pod"},
        "selector": {"matchExpressions": [_expr(".metadata.deletionTimestamp", "DoesNotExist"),
                                          _expr(".status.podIP", "DoesNotExist"),
                                          _expr(".spec.initContainers", "DoesNotExist")]},
        "delay": {"durationMilliseconds": STAGE_DELAY_MS, "jitterDurationMilliseconds": STAGE_JITTER_MS},
        "next": {"statusTemplate": POD_RUN_STATUS}}}
    return [*stages, pod_run]


class KubeLabError(RuntimeError):
    """A part of the control plane did not start; the message names it and ends with its log."""


def bins_dir() -> Path:
    """Where `make k8s-bins` puts (or has put) the programs: ROCE_FABRIC_K8S_BINS, else the build's cache key."""
    if env := os.environ.get("ROCE_FABRIC_K8S_BINS"):
        return Path(env)
    if not BUILD.exists():
        return Path("/nonexistent-k8s-bins")
    p = subprocess.run(["bash", str(BUILD), "--dir"], capture_output=True, text=True, timeout=60, check=False)
    return Path(p.stdout.strip() or "/nonexistent-k8s-bins")


def missing_bins(bins: Path) -> list[str]:
    return [p for p in PROGRAMS if not (bins / "bin" / p).exists()]


@dataclass(frozen=True)
class Volcano:
    """The Volcano a lab runs: a directory with bin/vc-scheduler, bin/vc-controller-manager and crds/."""

    dir: Path

    @property
    def tiers(self) -> bool:
        """Whether it enforces HyperNode tiers: its release has the HyperNode CRD (v1.11 on), so its PodGroup has
        `networkTopology` and its scheduler the network-topology-aware plugin."""
        return (self.dir / "crds" / f"{HYPERNODE_CRD}.yaml").exists()

    @functools.cached_property
    def version(self) -> str:
        """The release its scheduler reports (`vc-scheduler --version`: `Version: v1.15.1`)."""
        p = subprocess.run([str(self.dir / "bin" / "vc-scheduler"), "--version"], capture_output=True, text=True,
                           timeout=30, check=False)
        return next((line.split(":", 1)[1].strip() for line in p.stdout.splitlines() if line.startswith("Version:")),
                    "unknown")

    def conf(self) -> dict[str, Any]:
        """The scheduler's configuration: Volcano's default, with the topology plugin where it has tiers."""
        conf = json.loads(json.dumps(VOLCANO_CONF))
        if self.tiers:
            conf["tiers"][1]["plugins"].append({"name": TOPOLOGY_PLUGIN})
        return conf

    def describe(self) -> str:
        """`Volcano v1.15.1: HyperNode tiers enforced (network-topology-aware)`, or why not."""
        if self.tiers:
            return f"Volcano {self.version}: HyperNode tiers enforced ({TOPOLOGY_PLUGIN})"
        return (f"Volcano {self.version}: HyperNode tiers NOT enforced (before v1.11: a job naming a tier is "
                "refused)")


def volcano_dir(bins: Path) -> Volcano:
    """The Volcano a lab runs: ROCE_FABRIC_VOLCANO_BINS, else `make k8s-bins`' build from source (v1.15.1, with
    HyperNodes) where it is complete, else the core build's v1.10.0 (no tiers)."""
    if env := os.environ.get("ROCE_FABRIC_VOLCANO_BINS"):
        return Volcano(Path(env))
    if VOLCANO_BUILD.exists():
        p = subprocess.run(["bash", str(VOLCANO_BUILD), "--dir"], capture_output=True, text=True, timeout=60,
                           check=False)
        built = Path(p.stdout.strip()) if p.returncode == 0 and p.stdout.strip() else None
        if built is not None and (built / ".complete").exists():
            return Volcano(built)
    return Volcano(bins)


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _certs(d: Path, address: str = "127.0.0.1") -> None:
    """A CA, one serving certificate for 127.0.0.1/localhost and `address` (API server and kwok's kubelet server),
    and the service-account signing key."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    def key_pem(k: ec.EllipticCurvePrivateKey) -> bytes:
        return k.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                               serialization.NoEncryption())

    now = datetime.datetime.now(datetime.UTC)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "roce-fabric-lab-ca")])
    ca = (x509.CertificateBuilder().subject_name(ca_name).issuer_name(ca_name).public_key(ca_key.public_key())
          .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(minutes=5))
          .not_valid_after(now + datetime.timedelta(days=30))
          .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
          .sign(ca_key, hashes.SHA256()))
    key = ec.generate_private_key(ec.SECP256R1())
    san = x509.SubjectAlternativeName([x509.DNSName("localhost"), x509.DNSName("kubernetes.default.svc"),
                                       *(x509.IPAddress(ipaddress.ip_address(a)) for a in {"127.0.0.1", address})])
    cert = (x509.CertificateBuilder()
            .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "roce-fabric-lab")]))
            .issuer_name(ca_name).public_key(key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5)).not_valid_after(now + datetime.timedelta(days=30))
            .add_extension(san, critical=False).sign(ca_key, hashes.SHA256()))
    sa = ec.generate_private_key(ec.SECP256R1())
    files = {"ca.crt": ca.public_bytes(serialization.Encoding.PEM), "serving.crt": cert.public_bytes(
        serialization.Encoding.PEM), "serving.key": key_pem(key), "sa.key": key_pem(sa),
        "sa.pub": sa.public_key().public_bytes(serialization.Encoding.PEM,
                                               serialization.PublicFormat.SubjectPublicKeyInfo)}
    for name, data in files.items():
        (d / name).write_bytes(data)
        (d / name).chmod(0o600)


@dataclass
class KubeLab:
    """The control plane's processes, files and ports; `start()` then `stop()` (or use as a context manager)."""

    workdir: Path
    bins: Path
    volcano: Volcano | None = None  # default: volcano_dir(bins)
    # where the API server listens: loopback, or the namespace lab's management bridge when real nodes (in the
    # lab's host namespaces, fabric.lab.nodes) must reach it
    address: str = "127.0.0.1"
    procs: dict[str, subprocess.Popen[bytes]] = field(default_factory=dict)
    programs: dict[str, str] = field(default_factory=dict)  # name → the program it runs (its argv[0]'s name)
    cleanups: list[Callable[[], object]] = field(default_factory=list)  # run first by stop() (real nodes)
    ports: dict[str, int] = field(default_factory=dict)
    start_s: float = 0.0

    @property
    def kubeconfig(self) -> Path:
        return self.workdir / "kubeconfig"

    def _bin(self, name: str) -> str:
        return str(self.bins / "bin" / name)

    def _spawn(self, name: str, argv: list[str], env_extra: dict[str, str] | None = None,
               netns: bool = False) -> None:
        """Starts one program. Its environment points every client it makes at this lab: vc-scheduler v1.10.0 also
        makes one at start-up from $KUBECONFIG, else ~/.kube/config, or the in-cluster service account
        (pkg/scheduler/api/devices/nvidia/vgpu/utils.go NewClient), which must never be a user's real cluster."""
        env = {k: v for k, v in os.environ.items() if not k.startswith("KUBERNETES_SERVICE_")}
        env["KUBECONFIG"] = str(self.kubeconfig)
        env.update({k: v for k, v in GO_GC.items() if k not in env})
        env.update(env_extra or {})
        log = open(self.workdir / f"{name}.log", "wb")  # noqa: SIM115 - the child owns it
        self.programs[name] = Path(argv[0]).name
        self.procs[name] = subprocess.Popen([*unshare_argv(), *argv] if netns else argv, stdout=log,
                                            stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, cwd=self.workdir,
                                            start_new_session=True, env=env)
        log.close()
        # name → [pid, its program]: `running` knows a process by both (the relays are Python; `unshare` execs)
        (self.workdir / "pids").write_text(json.dumps({n: [p.pid, self.programs[n]] for n, p in self.procs.items()}))

    def _fail(self, name: str, what: str) -> KubeLabError:
        tail = (self.workdir / f"{name}.log").read_text(errors="replace").splitlines()[-15:]
        return KubeLabError(f"{name}: {what}\n" + "\n".join(tail))

    def _wait(self, name: str, ready: Any, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.procs[name].poll() is not None:
                raise self._fail(name, f"exited with {self.procs[name].returncode}")
            with contextlib.suppress(Exception):
                if ready():
                    return
            time.sleep(0.3)
        raise self._fail(name, f"not ready after {timeout:.0f}s")

    def kubectl(self, *args: str, timeout: float = 60, stdin: str | None = None,
                check: bool = True) -> subprocess.CompletedProcess[str]:
        p = subprocess.run([self._bin("kubectl"), "--kubeconfig", str(self.kubeconfig), *args], input=stdin,
                           capture_output=True, text=True, timeout=timeout, check=False)
        if check and p.returncode != 0:
            raise KubeLabError(f"kubectl {' '.join(args)}: {p.stderr.strip()}")
        return p

    @functools.cached_property
    def _api(self) -> tuple[str, ssl.SSLContext, str]:
        """(the API server's URL, a TLS context trusting the lab's CA, the admin token), read from the kubeconfig
        once."""
        cfg = yaml.safe_load(self.kubeconfig.read_text())
        cluster = cfg["clusters"][0]["cluster"]
        return (cluster["server"], ssl.create_default_context(cafile=cluster["certificate-authority"]),
                cfg["users"][0]["user"]["token"])

    def read(self, path: str, timeout: float = 30, method: str = "GET", **query: str) -> bytes:
        """One request to an API path straight from the API server with the lab's admin token (what `kubectl get
        --raw` reads, without starting kubectl: the lab's start-up waits and the tests poll with it). `query`:
        fieldSelector, labelSelector …"""
        server, ctx, token = self._api
        url = server + path + ("?" + urllib.parse.urlencode(query) if query else "")
        req = urllib.request.Request(url, method=method, headers={"Authorization": f"Bearer {token}"})
        with urllib.request.urlopen(req, timeout=timeout, context=ctx) as reply:
            return reply.read()

    def delete_all(self, path: str, timeout: float = 30, **query: str) -> None:
        """Deletes every object of a collection path that `query` selects (labelSelector, gracePeriodSeconds …)
        in one request (the API's deletecollection): `kubectl delete --all` sends one DELETE per object, at
        kubectl's client-side rate, which took 12–34 s for the events of one 64-pod job."""
        self.read(path, timeout, method="DELETE", **query)

    def get(self, path: str, timeout: float = 30, **query: str) -> Any:
        """An API path's object or list as JSON (`kubectl get -o json`), through `read`."""
        return json.loads(self.read(path, timeout, **query))

    def apply(self, objects: list[dict[str, Any]] | str, validate: str = "strict") -> subprocess.CompletedProcess[str]:
        """Applies objects: server-side (strict: an unknown field is an error), or with `validate="warn"`
        client-side with kubectl's field validation warn: the API server drops an unknown field and kubectl names
        it on stderr (`Warning: unknown field "spec.networkTopology"`). Server-side apply cannot do that: it
        refuses a field the schema lacks whatever the validation (`failed to create typed patch object …: field
        not declared in schema`, Kubernetes v1.33.13)."""
        text = objects if isinstance(objects, str) else yaml.safe_dump_all(objects, sort_keys=False)
        if validate == "strict":
            return self.kubectl("apply", "--server-side", "--force-conflicts", "-f", "-", stdin=text)
        return self.kubectl("apply", f"--validate={validate}", "-f", "-", stdin=text)

    def start(self, *, log_file: Path | None = None, timeout: float = 120) -> KubeLab:
        """etcd, the API server, CRDs, controller manager, scheduler, kwok and the MPI Operator, each waited for."""
        t0 = time.monotonic()
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.workdir.chmod(0o700)
        d = self.workdir
        _certs(d, self.address)
        token = secrets.token_hex(24)
        (d / "tokens.csv").write_text(f'{token},roce-fabric-admin,roce-fabric-admin,"system:masters"\n')
        (d / "tokens.csv").chmod(0o600)
        for n in ("etcd", "etcd-peer", "apiserver", "kwok"):
            self.ports[n] = _port()
        server = f"https://{self.address}:{self.ports['apiserver']}"
        kubeconfig = {"apiVersion": "v1", "kind": "Config", "current-context": "roce-fabric-lab",
                      "clusters": [{"name": "roce-fabric-lab", "cluster": {
                          "server": server, "certificate-authority": str(d / "ca.crt")}}],
                      "users": [{"name": "admin", "user": {"token": token}}],
                      "contexts": [{"name": "roce-fabric-lab", "context": {"cluster": "roce-fabric-lab",
                                                                           "user": "admin"}}]}
        self.kubeconfig.write_text(yaml.safe_dump(kubeconfig))
        self.kubeconfig.chmod(0o600)
        # the MPI Operator's, in its own network namespace: the relay's end there is on 127.0.0.1 (in the certificate)
        kubeconfig["clusters"][0]["cluster"]["server"] = f"https://127.0.0.1:{self.ports['apiserver']}"
        (d / "kubeconfig.netns").write_text(yaml.safe_dump(kubeconfig))
        (d / "kubeconfig.netns").chmod(0o600)
        etcd_url = f"http://127.0.0.1:{self.ports['etcd']}"
        peer = f"http://127.0.0.1:{self.ports['etcd-peer']}"
        self._spawn("etcd", [self._bin("etcd"), "--data-dir", str(d / "etcd"), "--listen-client-urls", etcd_url,
                             "--advertise-client-urls", etcd_url, "--listen-peer-urls", peer,
                             "--initial-advertise-peer-urls", peer, "--initial-cluster", f"default={peer}",
                             "--unsafe-no-fsync", "--log-level", "warn"])
        self._spawn("kube-apiserver", [
            self._bin("kube-apiserver"), "--etcd-servers", etcd_url, "--bind-address", self.address,
            "--advertise-address", self.address, "--secure-port", str(self.ports["apiserver"]),
            "--tls-cert-file", str(d / "serving.crt"), "--tls-private-key-file", str(d / "serving.key"),
            "--token-auth-file", str(d / "tokens.csv"), "--authorization-mode", "RBAC",
            "--service-account-issuer", "https://kubernetes.default.svc", "--service-account-key-file",
            str(d / "sa.pub"), "--service-account-signing-key-file", str(d / "sa.key"),
            "--service-cluster-ip-range", "10.96.0.0/16", "--kubelet-preferred-address-types", "InternalIP",
            "--enable-priority-and-fairness=false", "--v", "1"])
        self._wait("etcd", lambda: socket.create_connection(("127.0.0.1", self.ports["etcd"]), 1).close() or True, 30)
        # the waits read the API in this process: a kubectl start each 0.3 s cost more CPU than the API server's
        self._wait("kube-apiserver", lambda: self.read("/readyz", timeout=5) == b"ok", timeout)
        vc = self.volcano = self.volcano or volcano_dir(self.bins)
        # a Volcano before v1.11 has no HyperNode CRD: a later release's copy, admitted and read by nobody
        hypernodes = vc.dir / "crds" / f"{HYPERNODE_CRD}.yaml" if vc.tiers else SHARED_CRDS / "hypernodes.yaml"
        crds = [self.bins / "crds" / "kubeflow.org_mpijobs.yaml", hypernodes, SHARED_CRDS / "nad-crd.yaml",
                *(vc.dir / "crds" / f"{c}.yaml" for c in VOLCANO_CRDS)]
        self.kubectl("apply", "--server-side", *(a for crd in crds for a in ("-f", str(crd))))
        def established() -> bool:  # every CRD's Established condition (a CRD just created has no conditions yet)
            items = self.get("/apis/apiextensions.k8s.io/v1/customresourcedefinitions", timeout=5)["items"]
            return len(items) >= len(crds) and all(
                any(c["type"] == "Established" and c["status"] == "True" for c in i.get("status", {}).get(
                    "conditions", [])) for i in items)

        self._wait("kube-apiserver", established, 60)
        self.apply([{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "mpi-operator"}}])
        common = ["--kubeconfig", str(self.kubeconfig)]
        self._spawn("kube-controller-manager", [
            self._bin("kube-controller-manager"), *common, "--leader-elect=false", "--bind-address", "127.0.0.1",
            "--secure-port", "0", "--service-account-private-key-file", str(d / "sa.key"),
            "--root-ca-file", str(d / "ca.crt"), "--use-service-account-credentials=false",
            "--node-monitor-grace-period", NODE_GRACE, *ENDPOINT_BATCHING])
        sched = {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration",
                 "clientConnection": {"kubeconfig": str(self.kubeconfig)}, "leaderElection": {"leaderElect": False},
                 "profiles": [{"schedulerName": "default-scheduler"}]}
        (d / "scheduler.yaml").write_text(yaml.safe_dump(sched))
        self._spawn("kube-scheduler", [self._bin("kube-scheduler"), "--config", str(d / "scheduler.yaml"),
                                       "--bind-address", "127.0.0.1", "--secure-port", "0"])
        # Volcano: metrics and health servers are off unless enabled (they would listen on :8080 and :11251);
        # the cache dumper (on by default) would write to /tmp on a signal; v1.15.1's scheduler serves its log
        # level on a Unix socket in $DEBUG_SOCKET_DIR (default /tmp/klog-socks, removed by the next one to start:
        # pkg/util/socket.go), here the lab's own socket directory.
        (d / "volcano-scheduler.conf").write_text(yaml.safe_dump(vc.conf(), sort_keys=False))
        self._spawn("vc-scheduler", [str(vc.dir / "bin" / "vc-scheduler"), *common, "--scheduler-conf",
                                     str(d / "volcano-scheduler.conf"), "--leader-elect=false",
                                     "--cache-dumper=false"], {"DEBUG_SOCKET_DIR": str(socket_dir(d))})
        self._spawn("vc-controller-manager", [str(vc.dir / "bin" / "vc-controller-manager"), *common,
                                              "--leader-elect=false", "--controllers", VOLCANO_CONTROLLERS])
        kwok_cfg: list[dict[str, Any]] = [{"apiVersion": "config.kwok.x-k8s.io/v1alpha1",
                                           "kind": "KwokConfiguration", "options": {}}]
        if log_file is not None:  # the launchers' log: what the nccl-tests or perftest run printed
            log_file = cri_log(log_file, d / "launcher.log")
            kwok_cfg.append({"apiVersion": "kwok.x-k8s.io/v1alpha1", "kind": "ClusterLogs",
                             "metadata": {"name": "launchers"},
                             "spec": {"selector": {}, "logs": [{"containers": ["launcher"],
                                                                "logsFile": str(log_file), "follow": False}]}})
        stages = lab_stages([s for p in sorted((self.bins / "kwok-stages").glob("*.yaml"))
                             for s in yaml.safe_load_all(p.read_text()) if s])
        (d / "kwok.yaml").write_text(yaml.safe_dump_all(kwok_cfg + stages))
        self._spawn("kwok", [self._bin("kwok"), "--config", str(d / "kwok.yaml"), *common,
                             "--manage-nodes-with-annotation-selector", f"{KWOK_ANNOTATION}=fake",
                             "--node-ip", "127.0.0.1", "--node-port", str(self.ports["kwok"]),
                             "--server-address", f"127.0.0.1:{self.ports['kwok']}",
                             "--tls-cert-file", str(d / "serving.crt"),
                             "--tls-private-key-file", str(d / "serving.key")])
        # the MPI Operator in a network namespace of its own (its health check binds :8080 whatever its flags),
        # reaching the API server through a Unix socket (fabric.lab.relay) on 127.0.0.1 inside (kubeconfig.netns)
        sock = str(socket_dir(d) / "apiserver.sock")
        relay = [sys.executable, "-m", "fabric.lab.relay"]
        self._spawn("apiserver-relay", [*relay, "unix", sock, str(self.ports["apiserver"]), self.address])
        self._wait("apiserver-relay", lambda: Path(sock).exists(), 30)
        self._spawn("mpi-operator", [*relay, "netns", sock, str(self.ports["apiserver"]), "--",
                                     self._bin("mpi-operator"), "--kubeConfig", str(d / "kubeconfig.netns"),
                                     "--threadiness", "4", "--kube-api-qps", "50", "--kube-api-burst", "100"],
                    {"KUBECONFIG": str(d / "kubeconfig.netns")}, netns=True)  # its leader election reads $KUBECONFIG
        self._wait("kube-controller-manager", lambda: self.get(
            "/api/v1/namespaces/default/serviceaccounts/default", timeout=5)["metadata"]["name"] == "default", timeout)
        # vc-scheduler creates the default Queue as it starts; the queue controller then opens it.
        queue = "/apis/scheduling.volcano.sh/v1beta1/queues/default"
        self._wait("vc-scheduler", lambda: self.get(queue, timeout=5)["metadata"]["name"] == "default", timeout)
        self._wait("vc-controller-manager", lambda: self.get(queue, timeout=5).get("status", {}).get("state")
                   == "Open", timeout)
        # the MPI Operator takes its leader Lease once it reaches the API server from its namespace
        lease = "/apis/coordination.k8s.io/v1/namespaces/mpi-operator/leases/mpi-operator"
        self._wait("mpi-operator", lambda: self.get(lease, timeout=5)["metadata"]["name"] == "mpi-operator", timeout)
        for name in ("kube-scheduler", "kwok"):
            self._wait(name, lambda: True, 0.5)
        self.start_s = time.monotonic() - t0
        return self

    def add_nodes(self, fabric: FabricIntent, exclude: frozenset[str] = frozenset()) -> list[str]:
        """One kwok node per host but those in `exclude`, and the fabric's HyperNodes; waits until every node is Ready
        and the node controller has taken its not-ready taint off (else the first pods wait for a scheduling cycle
        after that). One list of the nodes each 0.3 s: `kubectl wait` read and watched 64 nodes one after the other,
        11 s. Returns the node names."""
        from fabric.export.kubernetes import hypernodes
        from fabric.export.tiers import tiers

        objs = [o for o in node_objects(fabric) if o["metadata"]["name"] not in exclude]
        self.apply(hypernodes(tiers(fabric)))  # the fabric's tiers, as `fabric export --format volcano` writes them
        if not objs:
            return []
        self.apply(objs)
        names = [o["metadata"]["name"] for o in objs]

        def schedulable(node: dict[str, Any]) -> bool:
            return any(c["type"] == "Ready" and c["status"] == "True" for c in node["status"].get("conditions", [])) \
                and not any(t["key"] == NOT_READY_TAINT for t in node["spec"].get("taints", []))

        def ready() -> bool:
            nodes = {n["metadata"]["name"]: n for n in self.get("/api/v1/nodes", timeout=5)["items"]}
            return all(n in nodes and schedulable(nodes[n]) for n in names)

        self._wait("kwok", ready, 90)
        return names

    def use_nodes(self, fabric: FabricIntent) -> list[str]:
        """Replaces the kwok nodes and HyperNodes by `fabric`'s (one control plane, several fabrics in turn)."""
        self.delete_all(HYPERNODES)
        self.delete_all("/api/v1/nodes")
        deadline = time.monotonic() + 120
        while self.get("/api/v1/nodes")["items"]:
            if time.monotonic() > deadline:
                raise KubeLabError("the previous fabric's nodes were not deleted after 120s")
            time.sleep(0.3)
        return self.add_nodes(fabric)

    def stop(self) -> None:
        """Ends what `cleanups` name, then every process this lab started, newest first, and forgets them; removes
        its socket directory."""
        while self.cleanups:
            self.cleanups.pop()()
        for name, p in reversed(list(self.procs.items())):
            if p.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(p.pid, signal.SIGTERM)
                try:
                    p.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    with contextlib.suppress(ProcessLookupError):
                        os.killpg(p.pid, signal.SIGKILL)
                    p.wait(timeout=10)
            del self.procs[name]
        remove_socket_dir(self.workdir)

    def __enter__(self) -> KubeLab:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def cri_log(text_file: Path, out: Path) -> Path:
    """`text_file` in the container runtime's log format (CRI: `<RFC 3339 time> stdout F <line>`), the
    format kwok reads and `kubectl logs` strips again."""
    now = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    out.write_text("".join(f"{now} stdout F {line}\n" for line in text_file.read_text().splitlines()))
    return out


def node_resources(fabric: FabricIntent, host: str) -> dict[str, str]:
    """What the node advertises: CPU, memory and pods of an HGX node, its GPUs, its rail devices per resource."""
    h = fabric.hosts[host]
    res: dict[str, int] = {"nvidia.com/gpu": h.gpus}
    for r in h.rails:
        if r.pod is not None:
            res[r.pod.resource] = res.get(r.pod.resource, 0) + (r.vfs if r.pod.device == "vf" else 1)
    return {"cpu": "192", "memory": "2Ti", "pods": "110", **{k: str(v) for k, v in sorted(res.items())}}


def node_objects(fabric: FabricIntent) -> list[dict[str, Any]]:
    """The kwok Node objects of every host, labelled as `fabric export --format k8s-labels` labels them."""
    from fabric.export.kubernetes import node_labels
    from fabric.export.tiers import tiers

    t = tiers(fabric)
    out = []
    for place in t.hosts:
        res = node_resources(fabric, place.name)
        out.append({"apiVersion": "v1", "kind": "Node", "metadata": {
            "name": place.name, "annotations": {KWOK_ANNOTATION: "fake"},
            "labels": {"kubernetes.io/hostname": place.name, "kubernetes.io/os": "linux",
                       "type": "kwok", **node_labels(t, place)}},
            "status": {"allocatable": res, "capacity": dict(res)}})
    return out


def state_dir(fabric_name: str) -> Path:
    """Where `fabric lab up --k8s` keeps a fabric's control plane: $FABRIC_K8S_LAB_STATE, else
    $XDG_STATE_HOME (~/.local/state)/roce-fabric/k8s/<fabric>."""
    base = os.environ.get("FABRIC_K8S_LAB_STATE") or Path(
        os.environ.get("XDG_STATE_HOME") or Path.home() / ".local" / "state") / "roce-fabric" / "k8s"
    return Path(base) / fabric_name


SOCKETS = Path("/run/roce-fabric/sockets")  # as root; another user's under /tmp/roce-fabric-<uid>/sockets


def socket_path(owner: Path) -> Path:
    """Where the Unix sockets of what lives in `owner` (a lab's state directory, a real node's) go: a short
    directory, since a socket's path holds at most 107 bytes, and containerd refuses one over 104, which a deep state
    directory (a home, a test's temporary directory) passes. Named by a hash of `owner`'s path; nothing is made."""
    base = SOCKETS if os.geteuid() == 0 else Path(f"/tmp/roce-fabric-{os.geteuid()}") / "sockets"
    return base / hashlib.sha256(str(owner).encode()).hexdigest()[:16]


def socket_dir(owner: Path) -> Path:
    """`socket_path(owner)`, made private (0700); `remove_socket_dir` removes it."""
    from fabric.safefile import private_dir

    return private_dir(socket_path(owner))


def remove_socket_dir(owner: Path) -> None:
    import shutil

    shutil.rmtree(socket_path(owner), ignore_errors=True)


def up(fabric: FabricIntent, bins: Path, address: str = "127.0.0.1",
       join: Callable[[KubeLab], list[str]] | None = None) -> KubeLab:
    """The control plane for users: nodes, HyperNodes, the fabric's namespace and rail networks applied; the
    processes keep running after the command (`down` ends them). `join` (fabric.lab.nodes) starts real nodes once
    the control plane runs and returns their hosts, which get no kwok node; the API server then listens on
    `address`, where those nodes reach it."""
    from fabric.render.k8s import network_attachments

    d = state_dir(fabric.name)
    if (d / "pids").exists() and running(fabric.name):
        raise KubeLabError(f"a control plane of {fabric.name} runs already (kubeconfig {d / 'kubeconfig'}): "
                           "`fabric lab down` first")
    lab = KubeLab(d, bins, address=address)
    try:
        lab.start()
        real = join(lab) if join else []
        lab.add_nodes(fabric, exclude=frozenset(real))
        if fabric.kubernetes.namespace != "default":
            lab.apply([{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": fabric.kubernetes.namespace}}])
        lab.apply(network_attachments(fabric))
    except Exception:
        lab.stop()
        raise
    return lab


def running(fabric_name: str) -> dict[str, int]:
    """name → pid of this fabric's control-plane processes still alive (checked by their command line: the
    program `KubeLab._spawn` recorded, or the name itself)."""
    f = state_dir(fabric_name) / "pids"
    try:
        pids: dict[str, int | list[Any]] = json.loads(f.read_text())
    except (OSError, ValueError):
        return {}
    alive = {}
    for name, entry in pids.items():
        pid, program = (entry[0], entry[1]) if isinstance(entry, list) else (entry, name)
        with contextlib.suppress(OSError):
            argv0 = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")[0].decode(errors="replace")
            if Path(argv0).name == program:
                alive[name] = pid
    return alive


def down(fabric_name: str) -> list[str]:
    """Ends the control plane `up` left running and removes its state directory; what it removed."""
    import shutil

    d = state_dir(fabric_name)
    removed = []
    for name, pid in reversed(list(running(fabric_name).items())):
        with contextlib.suppress(ProcessLookupError):
            os.killpg(pid, signal.SIGTERM)
        for _ in range(50):
            if not Path(f"/proc/{pid}").exists() or Path(f"/proc/{pid}/stat").read_text().split()[2] == "Z":
                break
            time.sleep(0.2)
        else:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(pid, signal.SIGKILL)
        removed.append(f"{name} (pid {pid})")
    remove_socket_dir(d)
    if d.exists():
        shutil.rmtree(d)
        removed.append(str(d))
    return removed
