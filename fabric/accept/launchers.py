"""Launchers for multi-host tests (nccl-tests): mpirun, slurm, k8s. Pair tools use the ssh transport.

- `mpirun`: a hostfile and the command line, run on the first host through the transport.
- `slurm`: an sbatch script; submitted (`sbatch --wait`) when `sbatch` exists here, else render-only.
- `k8s`: fabric.accept.k8s — a gang-scheduled MPIJob (Kubeflow MPI Operator v2beta1, Volcano PodGroup with
  a network-topology constraint) whose pods attach the rail networks and find their own NCCL devices;
  applied and followed when `kubectl` reaches a cluster.
mpirun and Slurm jobs carry the host's rendered NCCL environment (`nccl_env`).
"""

from __future__ import annotations

import shlex
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from fabric.accept import transport as tr
from fabric.access import Site
from fabric.design.intent import FabricIntent


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
                   image=inputs.image or "")


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
    from fabric.accept import k8s

    p = out_dir / f"{job.name}.k8s.yaml"
    p.write_text(k8s.manifests_yaml(k8s_job(job, fabric), fabric))
    return [p, k8s.write_networks(fabric, out_dir)]


def k8s_job(job: NcclJob, fabric: FabricIntent):  # fabric.accept.k8s.PodJob (imported lazily)
    from fabric.accept import k8s

    return k8s.nccl_pod_job(fabric, job.name, job.hosts, job.argv, job.gpus, job.image)


class Runner:
    """Runs rendered jobs; `skip` says why it cannot (render-only)."""

    skip = ""

    def run(self, job: NcclJob, out_dir: Path, timeout: float) -> tuple[str, str]:
        raise NotImplementedError


class MpirunRunner(Runner):
    def __init__(self, site: Site, hosts: list[str], binary: str) -> None:
        self.site, self.head = site, hosts[0]
        for tool in ("mpirun", binary):
            for h in hosts:
                if not tr.which(site, h, tool):
                    self.skip = f"{tool} not found on {h}"
                    return

    def run(self, job: NcclJob, out_dir: Path, timeout: float) -> tuple[str, str]:
        path = f"/tmp/{job.name}.hostfile"
        c = tr.run(self.site, job.hosts[0], ["sh", "-c", f"cat > {path} <<'EOF'\n{hostfile(job)}EOF"], timeout=10)
        if c.rc != 0:
            return "", f"hostfile: {c.last_error}"
        c = tr.run(self.site, job.hosts[0], mpirun_argv(job, path), timeout=timeout)
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
    """Runs an NCCL job's rendered MPIJob through fabric.accept.k8s.K8sRunner."""

    def __init__(self, fabric: FabricIntent) -> None:
        from fabric.accept import k8s

        self.fabric = fabric
        self.k = k8s.K8sRunner(fabric.kubernetes.namespace)
        self.skip = self.k.skip

    def run(self, job: NcclJob, out_dir: Path, timeout: float) -> tuple[str, str]:
        return self.k.run(out_dir / f"{job.name}.k8s.yaml", job.name, timeout, networks=out_dir / "networks.yaml")


def runner(launcher: str, site: Site, hosts: list[str], binary: str) -> Runner:
    if launcher == "mpirun":
        return MpirunRunner(site, hosts, binary)
    if launcher == "slurm":
        return SlurmRunner()
    return K8sRunner(site.fabric)
