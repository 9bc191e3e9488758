"""`fabric generate gpu-rail`: write a complete rail-optimized inventory with sensible defaults.

The Clos is sized from port counts: two tiers when every leaf can reach every spine, otherwise
pods of scalable units under their own spines joined by planes of super-spines. A topology the
port counts cannot build is refused with the arithmetic.
"""

from __future__ import annotations

import math
import shutil
import stat
import tempfile
from collections.abc import Callable
from ipaddress import IPv4Network
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, field_validator

from fabric.errors import InputError, Problem
from fabric.model.inventory import MAX_PARALLEL_LINKS, NAME, Target
from fabric.model.platforms import PLATFORMS
from fabric.nos import NOS
from fabric.safefile import kind, output_dir, status


class GpuRailSpec(BaseModel):
    """What `fabric generate gpu-rail` was asked for."""

    model_config = ConfigDict(extra="forbid")
    name: str = Field("gpu-rail", pattern=NAME)
    gpus: int = Field(gt=0, le=1_048_576)
    rails: int = Field(8, ge=1, le=16)
    gpus_per_host: int = Field(8, ge=1, le=64)
    hosts_per_su: int = Field(32, ge=1, le=4096)
    spines: int | None = Field(None, ge=1, le=4096)
    uplinks_per_spine: int = Field(1, ge=1, le=64)
    pods: int | None = Field(None, ge=1, le=4096)
    super_spines: int | None = Field(None, ge=1, le=4096)
    platform: str = "sn5600"
    breakout: str | None = Field("2x400G", pattern=r"^[1-8]x\d+G$")
    target: Target = "nvue"
    host_speed: str = Field("400G", pattern=r"^\d+G$")
    host_cable: str = "5m"
    fabric_cable: str = "40m"
    super_cable: str = "100m"
    mode: Literal["svi", "p2p31"] = "svi"
    adaptive_routing: bool = True

    @field_validator("platform")
    @classmethod
    def _known_platform(cls, v: str) -> str:
        if v not in PLATFORMS:
            raise ValueError(f"one of {', '.join(sorted(PLATFORMS))}")
        return v


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
        if sus % spec.pods:
            raise _fail(f"--pods a divisor of the {sus} scalable units ({spec.gpus} GPUs / {spec.gpus_per_host} per "
                        f"host / {h} hosts per SU)", str(spec.pods))
        sus_per_pod = sus // spec.pods
    while sus % sus_per_pod:
        sus_per_pod -= 1
    pods = sus // sus_per_pod
    if sus_per_pod * r * u > radix:
        raise _fail(f"a pod's leaves × uplinks ≤ {radix} spine ports",
                    f"{sus_per_pod} SUs × {r} rails × {u} = {sus_per_pod * r * u}")
    spine_up = radix - sus_per_pod * r * u
    # enough super-spines that a pod's spine reaches each over at most MAX_PARALLEL_LINKS links
    supers = spec.super_spines or max(1, math.ceil(spine_up * pods / radix), math.ceil(spine_up / MAX_PARALLEL_LINKS))
    u2 = max(1, spine_up // supers)
    if u2 > MAX_PARALLEL_LINKS:
        raise _fail(f"links from a spine to each super-spine ≤ {MAX_PARALLEL_LINKS}",
                    f"{spine_up} free spine ports / {supers} super-spines = {u2}; use more --super-spines")
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
    bits = 0  # the rail pool keeps lint's margin (RF306 warns at 90 %: no room left for the next unit)
    while blocks >= 0.9 * 2 ** bits:
        bits += 1
    rails_prefix = 24 - bits
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
        # adaptive routing only where the NOS renders it and the platform runs it at the fabric's speed (lint RF111,
        # RF402 otherwise); the MTU the NOS takes (RF111)
        "switching.yaml": {"switching": {"mtu": min(9216, NOS[spec.target].mtu_max), "adaptive_routing": {
            "enabled": spec.adaptive_routing and NOS[spec.target].adaptive_routing and (
                int(spec.host_speed.rstrip("Gg")) in PLATFORMS[spec.platform].adaptive_routing_speeds)},
                                         "neighbor": {"aging": "300s"}}},
        "hosts.yaml": {"hosts": {"defaults": {"gpus": spec.gpus_per_host, "management_interface": "eth0",
                                              "nics": nics}}},
    }


def write(spec: GpuRailSpec, out: Path, *, check: Callable[[Path], object] = lambda _p: None,
          force: bool = False) -> list[Path]:
    """Write the inventory to `out` (`write_staged`)."""
    texts = {name: yaml.safe_dump(doc, sort_keys=False, default_flow_style=False)
             for name, doc in inventory(spec).items()}
    return write_staged(texts, out, check=check, force=force)


def write_staged(texts: dict[str, str], out: Path, *, check: Callable[[Path], object] = lambda _p: None,
                 force: bool = False) -> list[Path]:
    """Write the files `texts` (name → text) as the inventory directory `out`, only once `check` passed on a copy
    beside it; an existing non-empty `out` is replaced only with `force`."""
    st = status(out)
    if st is not None:
        is_dir = stat.S_ISDIR(st.st_mode)
        replaceable = is_dir or stat.S_ISREG(st.st_mode) or stat.S_ISLNK(st.st_mode)  # never a device or FIFO
        if not ((force and replaceable) or (is_dir and not any(out.iterdir()))):
            raise InputError(Problem(str(out), None, "", "a new or empty directory (--force replaces it)" if replaceable
                                     else "a new or empty directory (--force replaces only a directory, a file or a "
                                     "symlink)", "an existing inventory directory" if is_dir else kind(st)))
    output_dir(out.parent)
    staging = Path(tempfile.mkdtemp(prefix=f".{out.name}.", dir=out.parent))
    try:
        for name, text in texts.items():
            (staging / name).write_text(text)
        check(staging)
        st = status(out)
        if st is not None:
            shutil.rmtree(out) if stat.S_ISDIR(st.st_mode) else out.unlink()
        staging.rename(out)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return [out / name for name in texts]
