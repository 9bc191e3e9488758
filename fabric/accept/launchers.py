"""Launchers for multi-host tests (nccl-tests): mpirun, slurm, k8s. Pair tools use the ssh transport.

- `mpirun`: a hostfile and the command line, run on the first host through the transport.
- `slurm`: an sbatch script; submitted (`sbatch --wait`) when `sbatch` exists here, else render-only.
- `k8s`: fabric.accept.k8s — a gang-scheduled MPIJob (Kubeflow MPI Operator v2beta1, Volcano PodGroup with
  a network-topology constraint) whose pods attach the rail networks and find their own NCCL devices;
  applied and followed when `kubectl` reaches a cluster.
Every rank gets its own host's rendered NCCL environment (`nccl_env`): a fleet mixing DGX H100
(`mlx5_0,3,4,5,6,9,10,11`) and HGX H100 (`mlx5_0..7`) needs a different `NCCL_IB_HCA` per host. mpirun and
Slurm run each rank through `nccl_env_wrapper` (passed inline with `sh -c`, so nothing has to be copied to the
nodes): it finds the rank's host (Slurm: `$SLURMD_NODENAME`; mpirun: the rank's node in hostfile order,
`OMPI_COMM_WORLD_RANK / slots`, as `--map-by ppr:N:node` places them), exports that host's variables and
execs the test. Kubernetes pods discover their NICs and GID themselves (fabric.accept.k8s).
"""

from __future__ import annotations

import re
import shlex
import shutil
import subprocess
from dataclasses import dataclass, replace
from pathlib import Path

from fabric.accept import transport as tr
from fabric.access import Site
from fabric.design.intent import FabricIntent
from fabric.safefile import private_dir, write_private


@dataclass
class NcclJob:
    name: str
    hosts: list[str]
    addresses: list[str]  # management addresses (mpirun -H, hostfile)
    gpus: int  # per host
    envs: dict[str, dict[str, str]]  # host → its NCCL environment
    argv: list[str]  # all_reduce_perf …
    sus: list[int]
    rails: list[int]
    image: str
    nccl_version: str | None = None  # k8s: NCCL in the image (the pod entrypoint's GID rule)


def json_path(launcher: str, name: str) -> str | None:
    """Where rank 0 writes nccl-tests' `-J` JSON: /tmp on the head host (mpirun: shown so in the rendered command;
    a run puts it in the job's own directory, MpirunRunner), the job's working directory (Slurm runs it in the
    submit directory); Kubernetes jobs are judged on their log."""
    return {"mpirun": f"/tmp/{name}.json", "slurm": f"{name}.json"}.get(launcher)


def nccl_job(fabric: FabricIntent, hosts: list[str], inputs, *, name: str, json_output: bool = False) -> NcclJob:
    """One all_reduce_perf run over `hosts`, one rank per GPU, each host with its own NCCL environment.
    With `json_output`, nccl-tests ≥ 2.17 also writes its JSON result (`-J <file>`; text stays the fallback)."""
    first = fabric.hosts[hosts[0]]
    gpus = inputs.gpus_per_host or min(fabric.hosts[h].gpus for h in hosts)
    argv = [inputs.binary, "-b", inputs.min_bytes, "-e", inputs.max_bytes, "-f", "2", "-g", "1", "-c", "1", "-n", "20"]
    path = json_path(inputs.launcher, name)
    if json_output and path:
        argv += ["-J", path]
    return NcclJob(name=name, hosts=list(hosts),
                   addresses=[fabric.hosts[h].management_address.split("/")[0] for h in hosts], gpus=gpus,
                   envs={h: dict(sorted(fabric.hosts[h].nccl_env.items())) for h in hosts}, argv=argv,
                   sus=sorted({fabric.hosts[h].su for h in hosts}), rails=[r.rail for r in first.rails],
                   image=inputs.image or "", nccl_version=getattr(inputs, "nccl_version", None))


def hostfile(job: NcclJob) -> str:
    return "".join(f"{a} slots={job.gpus}\n" for a in job.addresses)


def nccl_env_wrapper(job: NcclJob) -> str:
    """A POSIX sh script: export the rank's own host's NCCL variables, then exec its arguments. Hosts with the
    same environment share one `case` branch, so its size grows with the hosts' names only."""
    groups: dict[tuple[tuple[str, str], ...], list[str]] = {}
    for h in job.hosts:
        groups.setdefault(tuple(job.envs[h].items()), []).append(h)
    lines = [f"# NCCL environment per host of {job.name} (rendered by fabric): each rank takes its own host's.",
             'node="${SLURMD_NODENAME:-}"',
             'if [ -z "$node" ]; then',
             f'  i=$(( ${{OMPI_COMM_WORLD_RANK:?not started by mpirun or srun}} / {job.gpus} + 1 ))',
             f"  node=$(echo {' '.join(job.hosts)} | cut -d ' ' -f \"$i\")",
             "fi",
             'case "$node" in']
    for env, hosts in groups.items():
        exports = " ".join(f"{k}={shlex.quote(v)}" for k, v in env)
        lines.append(f"  {'|'.join(hosts)}) export {exports} ;;")
    lines += ['  *) echo "nccl-env: no NCCL environment for node \'$node\' in this job" >&2; exit 2 ;;', "esac",
              'exec "$@"']
    return "\n".join(lines) + "\n"


def wrapped_argv(job: NcclJob) -> list[str]:
    """The test's argv behind the inline per-host environment wrapper."""
    return ["sh", "-c", nccl_env_wrapper(job), "nccl-env", *job.argv]


def mpirun_argv(job: NcclJob, hostfile_path: str) -> list[str]:
    return ["mpirun", "--allow-run-as-root", "-np", str(job.gpus * len(job.hosts)), "--hostfile", hostfile_path,
            "--bind-to", "none", "--map-by", f"ppr:{job.gpus}:node", *wrapped_argv(job)]


def sbatch_script(job: NcclJob) -> str:
    return (f"#!/bin/bash\n#SBATCH --job-name={job.name}\n#SBATCH --nodes={len(job.hosts)}\n"
            f"#SBATCH --ntasks-per-node={job.gpus}\n#SBATCH --gpus-per-node={job.gpus}\n"
            f"#SBATCH --nodelist={','.join(job.hosts)}\n#SBATCH --exclusive\n#SBATCH --time=00:15:00\n"
            f"#SBATCH --output={job.name}.out\n\n"
            f"# every task runs behind {job.name}.nccl-env.sh (inline): its own host's NCCL environment\n"
            f"srun --mpi=pmix {shlex.join(wrapped_argv(job))}\n")


def launch_command(job: NcclJob, launcher: str, out_dir: Path) -> tuple[str, str]:
    """(where, command) that starts a rendered job: the head host for mpirun, this machine otherwise."""
    if launcher == "mpirun":  # shown with the wrapper by name (`sh -c "$(cat …)"` runs the same)
        argv = mpirun_argv(job, f"/tmp/{job.name}.hostfile")
        i = argv.index("nccl-env")
        return job.hosts[0], (shlex.join(argv[: i - 1]) + f' "$(cat {shlex.quote(job.name + ".nccl-env.sh")})" '
                              + shlex.join(argv[i:]))
    if launcher == "slurm":
        return "here", f"cd {shlex.quote(str(out_dir))} && sbatch --wait --parsable {job.name}.sbatch"
    return "here", f"kubectl apply -f {shlex.quote(str(out_dir / 'networks.yaml'))} -f " \
                   f"{shlex.quote(str(out_dir / (job.name + '.k8s.yaml')))}"


def render(job: NcclJob, launcher: str, fabric: FabricIntent, out_dir: Path) -> list[Path]:
    """Write the launcher's files for `job` (always, so they can be reviewed or run by hand)."""
    private_dir(out_dir)
    if launcher in ("mpirun", "slurm"):  # the wrapper is for review; the launchers pass it inline
        wrapper = write_private(out_dir / f"{job.name}.nccl-env.sh", "#!/bin/sh\n" + nccl_env_wrapper(job))
    if launcher == "mpirun":
        hf = write_private(out_dir / f"{job.name}.hostfile", hostfile(job))
        cmd = write_private(out_dir / f"{job.name}.mpirun.sh",
                            "#!/bin/sh\n" + shlex.join(mpirun_argv(job, hf.name)) + "\n")
        return [hf, wrapper, cmd]
    if launcher == "slurm":
        return [wrapper, write_private(out_dir / f"{job.name}.sbatch", sbatch_script(job))]
    from fabric.accept import k8s

    p = write_private(out_dir / f"{job.name}.k8s.yaml", k8s.manifests_yaml(k8s_job(job, fabric), fabric))
    return [p, k8s.write_networks(fabric, out_dir)]


def k8s_job(job: NcclJob, fabric: FabricIntent):  # fabric.accept.k8s.PodJob (imported lazily)
    from fabric.accept import k8s

    return k8s.nccl_pod_job(fabric, job.name, job.hosts, job.argv, job.gpus, job.image,
                            nccl_version=job.nccl_version)


@dataclass
class RunOutput:
    text: str  # the test's stdout
    error: str = ""  # why the run failed ('' when it ran)
    json: str = ""  # the `-J` JSON document where one was written


class Runner:
    """Runs rendered jobs; `skip` says why it cannot (render-only); `json` whether the binary has `-J`."""

    skip = ""
    json = False

    def run(self, job: NcclJob, out_dir: Path, timeout: float) -> RunOutput:
        raise NotImplementedError


HEAD_DIR = re.compile(r"/tmp/roce-fabric-nccl\.[A-Za-z0-9]{8}")  # what `mktemp -d` made for a job on its head host


def supports_json(help_text: str) -> bool:
    """nccl-tests ≥ 2.17 lists `-J,--output_file <file>` in its usage."""
    return "--output_file" in help_text


class MpirunRunner(Runner):
    def __init__(self, site: Site, hosts: list[str], binary: str) -> None:
        self.site, self.head = site, hosts[0]
        for tool in ("mpirun", binary):
            for h in hosts:
                if not tr.which(site, h, tool):
                    self.skip = f"{tool} not found on {h}"
                    return
        usage = tr.run(site, self.head, [binary, "-h"], timeout=20)
        self.json = supports_json(usage.stdout + usage.stderr)

    def run(self, job: NcclJob, out_dir: Path, timeout: float) -> RunOutput:
        """The job from a directory of its own on the head host (mktemp: no other run's or user's file is read,
        followed or overwritten there), removed afterwards."""
        made = tr.run(self.site, self.head, ["mktemp", "-d", "/tmp/roce-fabric-nccl.XXXXXXXX"], timeout=10)
        work = made.stdout.strip()
        if made.rc != 0 or not HEAD_DIR.fullmatch(work):
            return RunOutput("", f"mktemp -d on {self.head}: expected a new directory /tmp/roce-fabric-nccl.*, "
                                 f"found {made.last_error or work[:80]!r}")
        try:
            return self._run_in(work, job, out_dir, timeout)
        finally:
            tr.run(self.site, self.head, ["rm", "-rf", "--", work], timeout=10)

    def _run_in(self, work: str, job: NcclJob, out_dir: Path, timeout: float) -> RunOutput:
        path = f"{work}/{job.name}.hostfile"
        c = tr.run(self.site, self.head, ["sh", "-c", 'cat > "$1"', "sh", path], stdin=hostfile(job), timeout=10)
        if c.rc != 0:
            return RunOutput("", f"hostfile: {c.last_error}")
        doc = f"{work}/{job.name}.json" if "-J" in job.argv else None
        if doc:  # rank 0 writes nccl-tests' JSON into the job's directory
            i = job.argv.index("-J")
            job = replace(job, argv=[*job.argv[: i + 1], doc, *job.argv[i + 2:]])
        c = tr.run(self.site, self.head, mpirun_argv(job, path), timeout=timeout)
        write_private(out_dir / f"{job.name}.out", c.stdout + c.stderr)
        if c.rc != 0:
            return RunOutput(c.stdout, f"mpirun exited {c.rc}: {c.last_error}")
        js = tr.run(self.site, self.head, ["cat", doc], timeout=20).stdout if doc else ""
        if js:
            write_private(out_dir / f"{job.name}.json", js)
        return RunOutput(c.stdout, json=js)


class SlurmRunner(Runner):
    def __init__(self, binary: str) -> None:
        if not shutil.which("sbatch"):
            self.skip = "sbatch not found here (render-only)"
            return
        try:  # the submit host usually has the tests on the shared filesystem as well
            p = subprocess.run([binary, "-h"], capture_output=True, text=True, timeout=20)
            self.json = supports_json(p.stdout + p.stderr)
        except (OSError, subprocess.TimeoutExpired):
            self.json = False

    def run(self, job: NcclJob, out_dir: Path, timeout: float) -> RunOutput:
        try:
            p = subprocess.run(["sbatch", "--wait", "--parsable", f"{job.name}.sbatch"], cwd=out_dir,
                               capture_output=True, text=True, timeout=timeout)
        except subprocess.TimeoutExpired:
            return RunOutput("", f"sbatch --wait timed out after {timeout:.0f}s")
        out = out_dir / f"{job.name}.out"
        text = out.read_text() if out.exists() else ""
        if p.returncode != 0:
            return RunOutput(text, f"sbatch exited {p.returncode}: {p.stderr.strip()}")
        doc = out_dir / f"{job.name}.json"
        return RunOutput(text, json=doc.read_text() if "-J" in job.argv and doc.exists() else "")


class K8sRunner(Runner):
    """Runs an NCCL job's rendered MPIJob through fabric.accept.k8s.K8sRunner."""

    def __init__(self, fabric: FabricIntent) -> None:
        from fabric.accept import k8s

        self.fabric = fabric
        self.k = k8s.K8sRunner(fabric.kubernetes.namespace)
        self.skip = self.k.skip

    def run(self, job: NcclJob, out_dir: Path, timeout: float) -> RunOutput:
        text, err = self.k.run(out_dir / f"{job.name}.k8s.yaml", job.name, timeout,
                               networks=out_dir / "networks.yaml")
        return RunOutput(text, err)


def runner(launcher: str, site: Site, hosts: list[str], binary: str) -> Runner:
    if launcher == "mpirun":
        return MpirunRunner(site, hosts, binary)
    if launcher == "slurm":
        return SlurmRunner(binary)
    return K8sRunner(site.fabric)
