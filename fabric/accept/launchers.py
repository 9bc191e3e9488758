"""Launchers for multi-host tests (nccl-tests): mpirun, slurm, k8s. Pair tools use the ssh transport.

- `mpirun`: a hostfile and the command line, run on the first host through the transport.
- `slurm`: an sbatch script; submitted (`sbatch --wait`) when `sbatch` exists here, else render-only.
- `k8s`: an MPIJob (Kubeflow MPI Operator, kubeflow.org/v2beta1) with a Volcano PodGroup for gang
  scheduling; workers request the SR-IOV rail resources `nvidia.com/railN` and attach the rendered
  NetworkAttachmentDefinitions `railN-suS`. Applied when `kubectl` exists and reaches a cluster.
Every job carries the host's rendered NCCL environment (`nccl_env`).
"""

from __future__ import annotations

import shlex
import shutil
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from fabric.accept import transport as tr
from fabric.design.intent import FabricIntent
from fabric.render import dumps_yaml


@dataclass
class NcclJob:
    name: str
    hosts: list[str]
    addresses: list[str]  # management addresses (mpirun -H, hostfile)
    gpus: int  # per host
    env: dict[str, str]
    argv: list[str]  # all_reduce_perf …
    sus: list[int]
    rails: list[int]
    image: str


def nccl_job(fabric: FabricIntent, hosts: list[str], inputs, *, name: str) -> NcclJob:
    """One all_reduce_perf run over `hosts`, one rank per GPU, with the first host's NCCL environment."""
    first = fabric.hosts[hosts[0]]
    gpus = inputs.gpus_per_host or first.gpus
    argv = [inputs.binary, "-b", inputs.min_bytes, "-e", inputs.max_bytes, "-f", "2", "-g", "1", "-c", "1", "-n", "20"]
    return NcclJob(name=name, hosts=list(hosts),
                   addresses=[fabric.hosts[h].management_address.split("/")[0] for h in hosts], gpus=gpus,
                   env=dict(sorted(first.nccl_env.items())), argv=argv,
                   sus=sorted({fabric.hosts[h].su for h in hosts}), rails=[r.rail for r in first.rails],
                   image=inputs.image)


def hostfile(job: NcclJob) -> str:
    return "".join(f"{a} slots={job.gpus}\n" for a in job.addresses)


def mpirun_argv(job: NcclJob, hostfile_path: str) -> list[str]:
    argv = ["mpirun", "--allow-run-as-root", "-np", str(job.gpus * len(job.hosts)), "--hostfile", hostfile_path,
            "--bind-to", "none", "--map-by", f"ppr:{job.gpus}:node"]
    for k in job.env:
        argv += ["-x", f"{k}={job.env[k]}"]
    return [*argv, *job.argv]


def sbatch_script(job: NcclJob) -> str:
    env = "".join(f"export {k}={shlex.quote(v)}\n" for k, v in job.env.items())
    return (f"#!/bin/bash\n#SBATCH --job-name={job.name}\n#SBATCH --nodes={len(job.hosts)}\n"
            f"#SBATCH --ntasks-per-node={job.gpus}\n#SBATCH --gpus-per-node={job.gpus}\n"
            f"#SBATCH --nodelist={','.join(job.hosts)}\n#SBATCH --exclusive\n#SBATCH --time=00:15:00\n"
            f"#SBATCH --output={job.name}.out\n\n{env}\nsrun --mpi=pmix {shlex.join(job.argv)}\n")


def k8s_manifests(job: NcclJob, fabric: FabricIntent) -> list[dict]:
    """A Volcano PodGroup and a Kubeflow MPIJob whose workers attach every rail's SR-IOV network."""
    networks = ",".join(f"rail{r}-su{su}" for su in job.sus for r in job.rails)
    resources = {f"nvidia.com/rail{r}": 1 for r in job.rails} | {"nvidia.com/gpu": job.gpus}
    env = [{"name": k, "value": v} for k, v in job.env.items() if k != "NCCL_SOCKET_IFNAME"]
    env.append({"name": "NCCL_SOCKET_IFNAME", "value": "eth0"})  # the pod network, not the rails
    labels = {"app.kubernetes.io/part-of": "roce-fabric-accept", "roce-fabric/job": job.name}
    group = {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup",
             "metadata": {"name": job.name, "labels": labels},
             "spec": {"minMember": len(job.hosts) + 1, "minResources": {
                 k: str(v * len(job.hosts)) for k, v in resources.items()}}}
    pod_meta = {"labels": labels, "annotations": {"k8s.v1.cni.cncf.io/networks": networks,
                                                   "scheduling.k8s.io/group-name": job.name}}
    launcher_cmd = ["mpirun", "--allow-run-as-root", "-np", str(job.gpus * len(job.hosts)), "--bind-to", "none",
                    *[x for k in job.env for x in ("-x", k)], *job.argv]
    mpijob = {"apiVersion": "kubeflow.org/v2beta1", "kind": "MPIJob",
              "metadata": {"name": job.name, "labels": labels},
              "spec": {"slotsPerWorker": job.gpus,
                       "runPolicy": {"cleanPodPolicy": "Running",
                                     "schedulingPolicy": {"minAvailable": len(job.hosts) + 1}},
                       "mpiReplicaSpecs": {
                           "Launcher": {"replicas": 1, "template": {"metadata": {"labels": labels}, "spec": {
                               "schedulerName": "volcano",
                               "containers": [{"name": "launcher", "image": job.image, "command": launcher_cmd,
                                               "env": env}]}}},
                           "Worker": {"replicas": len(job.hosts), "template": {"metadata": pod_meta, "spec": {
                               "schedulerName": "volcano",
                               "containers": [{"name": "worker", "image": job.image, "env": env,
                                               "securityContext": {"capabilities": {"add": ["IPC_LOCK"]}},
                                               "resources": {"limits": {k: v for k, v in resources.items()},
                                                             "requests": {k: v for k, v in resources.items()}}}]}}},
                       }}}
    return [group, mpijob]


def render(job: NcclJob, launcher: str, fabric: FabricIntent, out_dir: Path) -> list[Path]:
    """Write the launcher's files for `job` (always, so they can be reviewed or run by hand)."""
    out_dir.mkdir(parents=True, exist_ok=True)
    if launcher == "mpirun":
        hf = out_dir / f"{job.name}.hostfile"
        hf.write_text(hostfile(job))
        cmd = out_dir / f"{job.name}.mpirun.sh"
        cmd.write_text("#!/bin/sh\n" + shlex.join(mpirun_argv(job, hf.name)) + "\n")
        return [hf, cmd]
    if launcher == "slurm":
        p = out_dir / f"{job.name}.sbatch"
        p.write_text(sbatch_script(job))
        return [p]
    p = out_dir / f"{job.name}.k8s.yaml"
    p.write_text("".join("---\n" + dumps_yaml(d) for d in k8s_manifests(job, fabric)))
    return [p]


class Runner:
    """Runs rendered jobs; `skip` says why it cannot (render-only)."""

    skip = ""

    def run(self, job: NcclJob, out_dir: Path, timeout: float) -> tuple[str, str]:
        raise NotImplementedError


class MpirunRunner(Runner):
    def __init__(self, t: tr.Transport, hosts: list[str], binary: str) -> None:
        self.t, self.head = t, hosts[0]
        for tool in ("mpirun", binary):
            for h in hosts:
                if not tr.which(t, h, tool):
                    self.skip = f"{tool} not found on {h}"
                    return

    def run(self, job: NcclJob, out_dir: Path, timeout: float) -> tuple[str, str]:
        path = f"/tmp/{job.name}.hostfile"
        c = tr.run(self.t, job.hosts[0], ["sh", "-c", f"cat > {path} <<'EOF'\n{hostfile(job)}EOF"], timeout=10)
        if c.rc != 0:
            return "", f"hostfile: {c.last_error}"
        c = tr.run(self.t, job.hosts[0], mpirun_argv(job, path), timeout=timeout)
        (out_dir / f"{job.name}.out").write_text(c.stdout + c.stderr)
        return (c.stdout, "") if c.rc == 0 else (c.stdout, f"mpirun exited {c.rc}: {c.last_error}")


class SlurmRunner(Runner):
    def __init__(self) -> None:
        if not shutil.which("sbatch"):
            self.skip = "sbatch not found here (render-only)"

    def run(self, job: NcclJob, out_dir: Path, timeout: float) -> tuple[str, str]:
        try:
            p = subprocess.run(["sbatch", "--wait", "--parsable", f"{job.name}.sbatch"], cwd=out_dir,
                               capture_output=True, text=True, timeout=timeout)
        except subprocess.TimeoutExpired:
            return "", f"sbatch --wait timed out after {timeout:.0f}s"
        out = out_dir / f"{job.name}.out"
        text = out.read_text() if out.exists() else ""
        return (text, "") if p.returncode == 0 else (text, f"sbatch exited {p.returncode}: {p.stderr.strip()}")


class K8sRunner(Runner):
    def __init__(self) -> None:
        if not shutil.which("kubectl"):
            self.skip = "kubectl not found here (render-only)"
            return
        try:
            p = subprocess.run(["kubectl", "version", "--request-timeout=5s"], capture_output=True, text=True,
                               timeout=10)
            if p.returncode != 0:
                self.skip = f"kubectl cannot reach a cluster: {(p.stderr.strip().splitlines() or [''])[-1]}"
        except (OSError, subprocess.TimeoutExpired) as exc:
            self.skip = f"kubectl: {exc}"

    def run(self, job: NcclJob, out_dir: Path, timeout: float) -> tuple[str, str]:
        manifest = out_dir / f"{job.name}.k8s.yaml"
        try:
            subprocess.run(["kubectl", "apply", "-f", str(manifest)], check=True, capture_output=True, text=True,
                           timeout=30)
            deadline = time.monotonic() + timeout
            w = subprocess.run(["kubectl", "wait", "--for=condition=Succeeded", f"mpijob/{job.name}",
                                f"--timeout={int(max(1, deadline - time.monotonic()))}s"],
                               capture_output=True, text=True, timeout=timeout + 10)
            logs = subprocess.run(["kubectl", "logs", "-l", f"roce-fabric/job={job.name}",
                                   "--tail=-1"], capture_output=True, text=True, timeout=30).stdout
            return (logs, "") if w.returncode == 0 else (logs, f"MPIJob not Succeeded: {w.stderr.strip()}")
        except (subprocess.CalledProcessError, subprocess.TimeoutExpired) as exc:
            return "", f"kubectl: {exc}"
        finally:
            subprocess.run(["kubectl", "delete", "-f", str(manifest), "--ignore-not-found"], capture_output=True,
                           timeout=30)


def runner(launcher: str, t: tr.Transport, hosts: list[str], binary: str) -> Runner:
    if launcher == "mpirun":
        return MpirunRunner(t, hosts, binary)
    if launcher == "slurm":
        return SlurmRunner()
    return K8sRunner()
