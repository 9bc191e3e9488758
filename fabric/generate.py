"""`fabric generate gpu-rail`: write a complete rail-optimized inventory with sensible defaults.

The Clos is sized from port counts: two tiers when every leaf can reach every spine, otherwise
pods of scalable units under their own spines joined by planes of super-spines. A topology the
port counts cannot build is refused with the arithmetic.
"""

from __future__ import annotations

import math
from ipaddress import IPv4Network
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, Field

from fabric.errors import InputError, Problem
from fabric.model.platforms import PLATFORMS


class GpuRailSpec(BaseModel):
    """What `fabric generate gpu-rail` was asked for."""

    model_config = ConfigDict(extra="forbid")
    name: str = "gpu-rail"
    gpus: int = Field(gt=0)
    rails: int = Field(8, ge=1, le=16)
    gpus_per_host: int = Field(8, ge=1)
    hosts_per_su: int = Field(32, ge=1)
    spines: int | None = None
    uplinks_per_spine: int = 1
    pods: int | None = None
    super_spines: int | None = None
    platform: str = "sn5600"
    breakout: str | None = "2x400G"
    target: str = "nvue"
    host_speed: str = "400G"
    host_cable: str = "5m"
    fabric_cable: str = "40m"
    super_cable: str = "100m"
    mode: str = "svi"
    adaptive_routing: bool = True


def _fail(expected: str, found: str) -> InputError:
    return InputError(Problem("fabric generate", None, "", expected, found))


def plan_topology(spec: GpuRailSpec) -> dict[str, Any]:
    """The `topology:` section, or InputError with the arithmetic when the ports cannot build it."""
    if spec.gpus % spec.gpus_per_host:
        raise _fail(f"--gpus a multiple of --gpus-per-host {spec.gpus_per_host}", str(spec.gpus))
    hosts = spec.gpus // spec.gpus_per_host
    if hosts % spec.hosts_per_su:
        raise _fail(f"hosts ({spec.gpus} GPUs / {spec.gpus_per_host} = {hosts}) a multiple of --hosts-per-su",
                    str(spec.hosts_per_su))
    sus = hosts // spec.hosts_per_su
    plat = PLATFORMS[spec.platform]
    ways = int(spec.breakout.split("x")[0]) if spec.breakout else 1
    radix = plat.ports * ways
    h, r, u = spec.hosts_per_su, spec.rails, spec.uplinks_per_spine
    up = radix - h  # leaf ports left for uplinks
    spines = spec.spines or math.ceil(h / u)  # non-blocking: as much up as down
    if spines * u > up:
        raise _fail(f"spines × uplinks ≤ {up} free leaf ports ({radix}-port leaf − {h} hosts)",
                    f"{spines} × {u} = {spines * u}")
    leaves = sus * r
    topo: dict[str, Any] = {"rails": r, "scalable_units": sus, "hosts_per_su": h, "spines": spines,
                            "uplinks_per_spine": u}
    if spec.pods is None and leaves * u <= radix and not spec.super_spines:
        return topo  # two tiers: every leaf reaches every spine
    # Three tiers: half of each spine down to its pod's leaves, half up to its plane of super-spines.
    down = radix // 2
    sus_per_pod = max(1, down // (r * u))
    if spec.pods:
        sus_per_pod = sus // spec.pods
    while sus % sus_per_pod:
        sus_per_pod -= 1
    pods = sus // sus_per_pod
    if sus_per_pod * r * u > radix:
        raise _fail(f"a pod's leaves × uplinks ≤ {radix} spine ports",
                    f"{sus_per_pod} SUs × {r} rails × {u} = {sus_per_pod * r * u}")
    spine_up = radix - sus_per_pod * r * u
    supers = spec.super_spines or max(1, math.ceil(spine_up * pods / radix))
    u2 = max(1, spine_up // supers)
    if pods * u2 > radix:
        raise _fail(f"pods × links per super-spine ≤ {radix} super-spine ports",
                    f"{pods} pods × {u2} = {pods * u2}; use more --super-spines")
    if supers * u2 > spine_up:
        raise _fail(f"super-spines × links ≤ {spine_up} free spine ports", f"{supers} × {u2}")
    topo.update(pods=pods, super_spines=supers, uplinks_per_super_spine=u2)
    return topo


def inventory(spec: GpuRailSpec) -> dict[str, dict[str, Any]]:
    """File name → YAML document of a complete inventory."""
    topo = plan_topology(spec)
    blocks = topo["scalable_units"] * spec.rails
    rails_prefix = 24 - max(0, math.ceil(math.log2(blocks)))
    leaves = blocks
    asn: dict[str, int] = {"spines": 65000, "super_spines": 64900, "leaves": 65100}
    if leaves + topo.get("pods", 1) > 400:
        asn["leaves"] = 4200000000
    mgmt_needed = blocks + 2 * topo.get("pods", 1) * topo["spines"] + topo["scalable_units"] * spec.hosts_per_su
    mgmt_prefix = min(24, 32 - math.ceil(math.log2(mgmt_needed * 2 + 2)))
    roles = {"leaf": {"platform": spec.platform, "target": spec.target},
             "spine": {"platform": spec.platform, "target": spec.target}}
    if topo.get("super_spines"):
        roles["super-spine"] = {"platform": spec.platform, "target": spec.target}
    if spec.breakout:
        for role in roles.values():
            role["breakout"] = spec.breakout
    nics = [{"rail": k, "rdma": f"mlx5_{k - 1}", "netdev": f"rail{k}"} for k in range(1, spec.rails + 1)]
    return {
        "fabric.yaml": {
            "fabric": {"name": spec.name, "description": f"{spec.gpus} GPUs, generated by fabric generate gpu-rail"},
            "topology": topo, "roles": roles,
            "cabling": {"host_leaf": {"speed": spec.host_speed, "cable": spec.host_cable},
                        "leaf_spine": {"speed": spec.host_speed, "cable": spec.fabric_cable},
                        "spine_super_spine": {"speed": spec.host_speed, "cable": spec.super_cable}},
        },
        "addressing.yaml": {"addressing": {
            "mode": spec.mode, "loopbacks": "10.255.0.0/16",
            "rails": str(IPv4Network(f"10.0.0.0/{rails_prefix}")), "rail_prefix_length": 24,
            "management": str(IPv4Network(f"198.18.0.0/{mgmt_prefix}")), "asn": asn}},
        "qos.yaml": {"qos": {"preset": "nvidia-roce"}},
        "switching.yaml": {"switching": {"mtu": 9216, "adaptive_routing": {"enabled": spec.adaptive_routing},
                                         "neighbor": {"aging": "300s"}}},
        "hosts.yaml": {"hosts": {"defaults": {"gpus": spec.gpus_per_host, "management_interface": "eth0",
                                              "nics": nics}}},
    }


def write(spec: GpuRailSpec, out: Path) -> list[Path]:
    docs = inventory(spec)
    out.mkdir(parents=True, exist_ok=True)
    paths = []
    for name, doc in docs.items():
        path = out / name
        path.write_text(yaml.safe_dump(doc, sort_keys=False, default_flow_style=False))
        paths.append(path)
    return paths
