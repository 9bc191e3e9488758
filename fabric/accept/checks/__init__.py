"""The acceptance checks, ANTA-style: the framework in `base` (Input, Context, Check, the CHECKS registry,
run_check), then one module per family that registers its checks:

cabling    cabling (LLDP against the model's cables: first, and the traffic checks wait for it)
bandwidth  rail-bandwidth, cross-su-bandwidth (and fault location)
latency    rail-latency
congestion incast, ets (queue counters of the receivers' leaf ports before/after)
nccl       nccl-allreduce
pods       pod-rail-bandwidth, pod-rail-latency (Kubernetes: perftest between pods)
host       host-config, host-prereqs (GPUDirect RDMA prerequisites)
bgp        bgp
lossless   lossless-counters, pfc-watchdog, traffic-class
"""

from fabric.accept.checks.base import CHECKS, Check, Context, Input, register, run_check

# Importing a family registers its checks; this order is the catalog's order.
from fabric.accept.checks import cabling, host, bgp, bandwidth, latency, congestion, nccl, pods, lossless  # noqa: F401  # isort: skip
from fabric.accept.checks.lossless import lossless_findings
from fabric.accept.checks.nccl import NcclInput, expected_busbw, judge_nccl

__all__ = ["CHECKS", "Check", "Context", "Input", "NcclInput", "expected_busbw", "judge_nccl", "lossless_findings",
           "register", "run_check"]
