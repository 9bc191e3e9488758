"""The check catalog: YAML that selects and parameterizes checks, and the default derived from the inventory.

Format::

    checks:
      - check: rail-bandwidth          # a key of fabric.accept.checks.CHECKS (one module per family)
        name: rail-bw-large             # optional unique name (default: the check name, -2, -3 … if repeated)
        tags: [traffic, bandwidth]      # optional, replaces the check's default tags
        input: {tool: ib_write_bw, fraction_of_link: 0.9, seconds: 5}   # the check's pydantic Input

`fabric accept INV --dump-catalog` prints the default catalog for an inventory as a starting point.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from fabric.accept.checks import CHECKS, Check
from fabric.design.intent import FabricIntent
from fabric.errors import InputError, Problem
from fabric.model.source import SourceMap, load_yaml, pydantic_problems


class Entry(BaseModel):
    model_config = ConfigDict(extra="forbid")

    check: str
    name: str | None = None
    tags: list[str] | None = None
    input: dict[str, Any] = Field(default_factory=dict)


class Catalog(BaseModel):
    model_config = ConfigDict(extra="forbid")

    checks: list[Entry]


def build(catalog: Catalog, file: str = "catalog", smap: SourceMap | None = None) -> list[Check]:
    """Instantiate every entry; all problems are reported at once, at their lines when `smap` has them
    (InputError, exit 2)."""
    if smap is None:
        smap = SourceMap()
        smap.files.append(file)
    problems: list[Problem] = []
    checks: list[Check] = []
    seen: dict[str, int] = {}
    for i, e in enumerate(catalog.checks):
        cls = CHECKS.get(e.check)
        if cls is None:
            problems.append(smap.problem(("checks", i, "check"), f"one of {', '.join(CHECKS)}", repr(e.check)))
            continue
        try:
            inputs = cls.Input.model_validate(e.input)
        except ValidationError as exc:
            problems += pydantic_problems(exc, smap, cls.Input, ("checks", i, "input"))
            continue
        name = e.name or e.check
        seen[name] = seen.get(name, 0) + 1
        if seen[name] > 1:
            if e.name:
                problems.append(smap.problem(("checks", i, "name"), "a name unique in the catalog", repr(e.name)))
                continue
            name = f"{name}-{seen[name]}"
        checks.append(cls(inputs, name=name, tags=e.tags))
    if problems:
        raise InputError(problems)
    return checks


def load_catalog(path: Path) -> list[Check]:
    """A catalog file: every YAML, structure and check-input problem reported with its file:line."""
    smap = SourceMap()
    doc = load_yaml(path, smap)
    try:
        catalog = Catalog.model_validate(doc)
    except ValidationError as exc:
        raise InputError(pydantic_problems(exc, smap, Catalog)) from None
    return build(catalog, str(path), smap)


def default_catalog(fabric: FabricIntent, *, rdma: bool = True, launcher: str = "mpirun",
                    image: str | None = None, line_gbps: float = 1.0, soft_roce: bool = False) -> Catalog:
    """Every check, parameterized from the inventory. RDMA tools where the hosts have RDMA NICs; where
    they have not (the lab's veths) iperf3 and ping stand in, with absolute thresholds for the veth rate.
    `launcher` runs nccl-tests; with `k8s` the pod-to-pod checks join (pod-rail-bandwidth, and across
    SUs pod-cross-su-bandwidth), all with `image`. `line_gbps`: the lab's port rate the stand-ins' thresholds
    scale with. `soft_roce`: a lab whose hosts have Soft-RoCE devices (the VM lab): the bandwidth checks run
    ib_write_bw on the RoCE class at those thresholds."""
    sus = len({h.su for h in fabric.hosts.values()})
    if not rdma:  # the lab: its switch ports are shaped to line_gbps (fabric.lab.qos.PORT_RATE, 1 Gb/s by default)
        # 4 links at a time: the lab's veths move bytes with the machine's CPUs (8 links at 1 Gb/s each are about 4
        # cores of work on a 2-core machine). The floor, a quarter of the line rate: a healthy link reads 0.74-0.89
        # of it, but as little as 0.38 while other work takes the CPUs (a whole test run's start: the VM booting,
        # a control plane starting); a throttled rail, the lab's fault (`lab fault … throttle … 100mbit`), reads 0.1
        bw = {"tool": "iperf3", "threshold_gbps": round(0.25 * line_gbps, 6), "seconds": 1, "timeout_s": 15,
              "parallel": 4}
        if soft_roce:  # rxe, the CPU's work: one pair at a time, messages of 64 KiB on 2 QPs, a QP timeout past an
            # emulated CPU's stalls, 5 s to average them (two pairs at once on the VM's 2 emulated CPUs: one pair fell
            # to 0.010 Gb/s; over 3 s one pair read 0.008 at load 16-18 and 0.016 when measured again); every server
            # waits for its client from the start: 90 s (at 45 s, load 26-37, a server ended before its client did)
            bw |= {"tool": "ib_write_bw", "seconds": 5, "timeout_s": 90, "message_size": 65536, "qps": 2,
                   "qp_timeout": 18, "parallel": 1}
        lat = {"tool": "ping", "max_p99_us": 5000.0, "timeout_s": 15, "parallel": 8}
        incast: dict[str, Any] = {"tool": "iperf3", "threshold_gbps": round(0.8 * line_gbps, 6), "seconds": 3,
                                  "timeout_s": 20, "streams": 4}
        ets: dict[str, Any] = {"tool": "iperf3", "seconds": 3, "timeout_s": 20}
    else:
        bw = {"tool": "ib_write_bw", "fraction_of_link": 0.9, "seconds": 5}
        lat = {"tool": "ib_write_lat", "max_p99_us": 5.0}
        incast, ets = {"tool": "ib_write_bw"}, {"tool": "ib_write_bw"}
    entries = [Entry(check="cabling"), Entry(check="host-config")]
    if rdma:  # GPU hosts: the GPUDirect prerequisites (the lab's hosts have no GPU)
        entries.append(Entry(check="host-prereqs"))
    entries += [Entry(check="bgp"), Entry(check="rail-bandwidth", input=bw)]
    if sus > 1:
        entries.append(Entry(check="cross-su-bandwidth", input=bw))
    nccl: dict[str, Any] = {"launcher": launcher, "pairs": "quick", "cluster": True}
    if launcher == "k8s" and image:
        nccl["image"] = image
    entries += [Entry(check="rail-latency", input=lat), Entry(check="incast", input=incast),
                Entry(check="ets", input=ets), Entry(check="nccl-allreduce", input=nccl)]
    if launcher == "k8s":
        pod = {"image": image} if image else {}
        entries.append(Entry(check="pod-rail-bandwidth", input=pod))
        entries.append(Entry(check="pod-rail-latency", input={**pod, "max_p99_us": lat["max_p99_us"]}))
        if sus > 1:
            entries.append(Entry(check="pod-rail-bandwidth", name="pod-cross-su-bandwidth",
                                 input={**pod, "scope": "cross-su"}))
    entries += [Entry(check="lossless-counters"), Entry(check="pfc-watchdog"), Entry(check="traffic-class")]
    return Catalog(checks=entries)


def dump(catalog: Catalog) -> str:
    return yaml.safe_dump(catalog.model_dump(exclude_none=True, exclude_defaults=False), sort_keys=False)


def select(checks: list[Check], tags: list[str] | None) -> list[Check]:
    """Checks having any of `tags` (or whose name is one of them); all when no tags are given."""
    if not tags:
        return checks
    want = set(tags)
    return [c for c in checks if want & set(c.tag_list) or c.id in want or c.name in want]
