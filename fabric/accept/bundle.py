"""The whole Kubernetes acceptance bundle `fabric accept --launcher k8s --render-only` writes: the jobs of the
host checks (NCCL, rail and cross-SU bandwidth) as pod jobs, with the networks, device-plugin config,
HyperNodes and node CNI configs. Above the checks: it asks them for their host groups and pairs."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

from fabric.accept.checks.bandwidth import CrossSuBandwidth, TrafficInput
from fabric.accept.checks.base import hosts_per_rail
from fabric.accept.checks.nccl import NcclInput
from fabric.accept.k8s.manifests import PodJob, manifests_yaml, nccl_pod_job, perftest_pod_job, pod_pairs
from fabric.accept.launchers import nccl_job
from fabric.accept.schedule import schedule
from fabric.design.intent import FabricIntent
from fabric.export.kubernetes import volcano_yaml
from fabric.export.tiers import tiers
from fabric.order import natural
from fabric.render import k8s as rk
from fabric.render.k8s import pod_entrypoint
from fabric.safefile import write_private


def acceptance_jobs(fabric: FabricIntent, image: str, *, quick: bool = True) -> list[PodJob]:
    """The jobs `--render-only` writes: NCCL inside one SU (tier 1), across SUs (one host per SU) and over the
    whole cluster; perftest between pods on every rail, within and across SUs (the pairs of rail-bandwidth and
    cross-su-bandwidth), and ib_write_lat between pods inside the first SU."""
    sus: dict[int, list[str]] = {}
    for name in sorted(fabric.hosts, key=natural):
        sus.setdefault(fabric.hosts[name].su, []).append(name)
    inputs = NcclInput(launcher="k8s", image=image)
    groups: list[tuple[str, list[str]]] = []
    first = min(sus)
    if len(sus[first]) > 1:
        groups.append((f"nccl-su{first}", sus[first]))
    if len(sus) > 1:
        groups.append(("nccl-cross-su", [hosts[0] for _su, hosts in sorted(sus.items())]))
    if len(fabric.hosts) > 2:
        groups.append(("nccl-cluster", [h for _su, hosts in sorted(sus.items()) for h in hosts]))
    jobs = []
    for name, hosts in groups:
        j = nccl_job(fabric, hosts, inputs, name=name)
        jobs.append(nccl_pod_job(fabric, name, j.hosts, j.argv, j.gpus, image))
    bw = TrafficInput()
    one_su = {rail: [h for h in hosts if fabric.hosts[h].su == first]
              for rail, hosts in hosts_per_rail(fabric, None).items()}
    sources = [(f"pods-su{first}-bw", [rd.pairs for rd in schedule(one_su, quick=quick)])]
    if len(sus) > 1:
        ctx = SimpleNamespace(fabric=fabric)  # the cross-SU scheduler reads only the fabric
        sources.append(("pods-cross-su-bw", list(CrossSuBandwidth(bw).pairs(ctx, quick))))  # type: ignore[arg-type]
    for name, rounds in sources:
        if rounds:
            jobs.append(perftest_pod_job(fabric, name, pod_pairs(fabric, rounds, "p"), tool="ib_write_bw",
                                         image=image))
    if sources[0][1]:  # latency between pods, the pairs of rail-latency inside the first SU
        jobs.append(perftest_pod_job(fabric, f"pods-su{first}-lat", pod_pairs(fabric, sources[0][1], "l"),
                                     tool="ib_write_lat", image=image))
    return jobs


def render_bundle(fabric: FabricIntent, out_dir: Path, image: str, *, quick: bool = True) -> list[Path]:
    """Every manifest of Kubernetes acceptance, without a cluster: the rail networks, the device plugin's
    ConfigMap, the HyperNodes, each node's CNI configs (nodes/<host>/), the pod entrypoint, and the jobs."""
    files: dict[str, str] = {
        "networks.yaml": rk.network_attachments(fabric),
        "sriovdp-config.yaml": rk.device_plugin_configmap(fabric),
        "hypernodes.yaml": volcano_yaml(tiers(fabric)),
        "roce-pod-env.sh": "#!/bin/sh\n" + pod_entrypoint(),
    }
    if any(r.pod is not None and r.pod.pooled for h in fabric.hosts.values() for r in h.rails):
        files["roce-pod-setup.sh"] = "#!/bin/sh\n" + rk.pod_rail_setup()
    for name, host in sorted(fabric.hosts.items()):
        for path, text in {**rk.node_cni_configs(host), **rk.node_rail_map(host)}.items():
            files[f"nodes/{name}/{path.rsplit('/', 1)[1]}"] = text
    for job in acceptance_jobs(fabric, image, quick=quick):
        files[f"jobs/{job.name}.yaml"] = manifests_yaml(job, fabric)
    return [write_private(out_dir / rel, text) for rel, text in files.items()]
