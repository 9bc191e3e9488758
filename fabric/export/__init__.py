"""`fabric export`: the fabric's topology for schedulers and launchers (Slurm, Kubernetes, Volcano, MPI).

Every format is computed from the cabling in the inventory (fabric/export/tiers.py): tier 1 is a
scalable unit's rail-leaf group, tier 2 its spine group (pod), tier 3 the super-spine group when
the fabric has one. Each format's module documents its output with an example:

| format | file | module |
| --- | --- | --- |
| `slurm` | topology.conf, topology/tree | fabric/export/slurm.py |
| `slurm-block` | topology.conf, topology/block | fabric/export/slurm.py |
| `slurm-yaml` | topology.yaml, both | fabric/export/slurm.py |
| `k8s-labels` | node labels as YAML | fabric/export/kubernetes.py |
| `k8s-label-script` | `kubectl label node … --overwrite` script | fabric/export/kubernetes.py |
| `volcano` | Volcano HyperNode resources | fabric/export/kubernetes.py |
| `hostfile` | Open MPI hostfile with slots=GPUs | fabric/export/mpi.py |
| `prometheus` | rules, their unit tests, file_sd targets, dashboards (-o DIR) | fabric/export/prometheus.py |
"""

from __future__ import annotations

from collections.abc import Callable
from enum import StrEnum

from fabric.design.intent import FabricIntent
from fabric.errors import UsageError
from fabric.export.kubernetes import DEFAULT_PREFIX, label_script, labels_yaml, volcano_yaml
from fabric.export.mpi import hostfile
from fabric.export.slurm import block_conf, topology_yaml, tree_conf
from fabric.export.tiers import Tiers, tiers


class ExportFormat(StrEnum):
    slurm = "slurm"
    slurm_block = "slurm-block"
    slurm_yaml = "slurm-yaml"
    k8s_labels = "k8s-labels"
    k8s_label_script = "k8s-label-script"
    volcano = "volcano"
    hostfile = "hostfile"
    prometheus = "prometheus"  # several files: fabric.export.monitoring.files


_WRITERS: dict[ExportFormat, Callable[[Tiers, str], str]] = {
    ExportFormat.slurm: lambda t, _: tree_conf(t),
    ExportFormat.slurm_block: lambda t, _: block_conf(t),
    ExportFormat.slurm_yaml: lambda t, _: topology_yaml(t),
    ExportFormat.k8s_labels: labels_yaml,
    ExportFormat.k8s_label_script: label_script,
    ExportFormat.volcano: volcano_yaml,
    ExportFormat.hostfile: lambda t, _: hostfile(t),
}


def export(fabric: FabricIntent, fmt: ExportFormat | str, label_prefix: str = DEFAULT_PREFIX) -> str:
    """The text of one export format for `fabric` (`prometheus` writes several files: fabric.export.prometheus)."""
    if ExportFormat(fmt) is ExportFormat.prometheus:
        raise UsageError("--format prometheus: expected an output directory (fabric.export.monitoring.files)")
    return _WRITERS[ExportFormat(fmt)](tiers(fabric), label_prefix)


__all__ = ["DEFAULT_PREFIX", "ExportFormat", "Tiers", "export", "tiers"]
