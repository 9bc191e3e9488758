"""The Kubernetes launcher: gang-scheduled MPIJobs for nccl-tests and perftest between pods.

- manifests: the jobs and every choice in them (the module docstring says which controller behaviour each
  was checked against);
- runner: apply, follow, read the launcher's log, say why pods wait (K8sRunner);
- judging: a perftest job's per-pair measurements from the launcher's log.

What `fabric accept --launcher k8s --render-only` writes is fabric.accept.bundle (above the checks, which use
this package).
"""

from __future__ import annotations

from fabric.accept.k8s.judging import judge_pairs
from fabric.accept.k8s.manifests import (
    API_MPIJOB,
    API_PODGROUP,
    DISCOVERED,
    GROUP_ANNOTATION,
    MARK,
    NETWORKS_ANNOTATION,
    POD_SH,
    RUN_DIR,
    WAIT_FOR_WORKERS,
    PodJob,
    PodPair,
    job_tier,
    manifests_yaml,
    mpijob_manifests,
    nccl_pod_job,
    perftest_argv,
    perftest_pod_job,
    pod_env,
    pod_pairs,
    write_networks,
)
from fabric.accept.k8s.runner import K8sRunner

__all__ = ["API_MPIJOB", "API_PODGROUP", "DISCOVERED", "GROUP_ANNOTATION", "MARK", "NETWORKS_ANNOTATION", "POD_SH",
           "RUN_DIR", "WAIT_FOR_WORKERS", "K8sRunner", "PodJob", "PodPair", "job_tier", "judge_pairs",
           "manifests_yaml", "mpijob_manifests", "nccl_pod_job", "perftest_argv", "perftest_pod_job", "pod_env",
           "pod_pairs", "write_networks"]
