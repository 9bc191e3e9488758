"""The single-host agent: read the live state, diff it against the host intent, apply the differences.

Order: rails (netlink) → SR-IOV VFs per rail NIC (firmware limit, count, VF MTU/trust/spoof-check) → RDMA
netns mode → sysctls → NIC QoS (mlnx_qos) → RoCE ToS → DCQCN → GID check → LLDP check → persistence.
Each phase is planned from the state left by the previous one, so apply never acts on a stale diff.
"""

from __future__ import annotations

import shutil
import time
from collections.abc import Callable
from ipaddress import IPv4Interface
from pathlib import Path

from pyroute2 import IPRoute

from fabric.design.intent import HostIntent
from fabric.host.gid import gid_table, roce_v2_ipv4_index
from fabric.host.lldp import lldp_steps
from fabric.host.model import AgentOptions, HostPlan, HostResult, Item
from fabric.host.nic import MlnxQosTool, dcqcn_steps, qos_steps, roce_steps
from fabric.host.ns import netns as enter_netns
from fabric.host.rails import RailPlanner
from fabric.host.sriov import Mlxconfig, netns_steps
from fabric.host.sriov import rail_steps as sriov_rail_steps
from fabric.host.step import Step, describe, fail, same, skip
from fabric.host.sysctls import plan_sysctls

GID_WAIT_S = 3.0


def _execute(steps: list[Step]) -> list[Item]:
    items = []
    for step in steps:
        item = step.item
        if step.action is not None:
            try:
                step.action()
            except Exception as exc:  # every failure becomes a failed item; the rest still applies
                item = item.model_copy(update={"status": "failed", "reason": describe(exc)})
        items.append(item)
    return items


def _gid_steps(intent: HostIntent, sysfs_root: Path, pending_addr: set[str], wait: float) -> list[Step]:
    steps: list[Step] = []
    want = intent.gid.index
    for rail in intent.rails:
        ip = str(IPv4Interface(rail.address).ip)
        base = dict(section="gid", target=rail.rdma, name="roce-v2-ipv4 index", op="check")
        if not (sysfs_root / "class" / "infiniband" / rail.rdma).exists():
            steps.append(skip(f"no RDMA device {rail.rdma}", **base, desired=str(want)))
            continue
        deadline = time.monotonic() + wait
        while True:  # the kernel fills the GID table shortly after an address is added
            idx = roce_v2_ipv4_index(gid_table(sysfs_root, rail.rdma), ip, rail.ifname)
            if idx is not None or time.monotonic() >= deadline:
                break
            time.sleep(0.2)
        if idx is None:
            if rail.ifname in pending_addr:
                steps.append(skip(f"{ip} is not on {rail.ifname} yet; its GID appears once it is", **base))
            else:
                steps.append(fail(f"no RoCE v2 IPv4-mapped GID for {ip} on {rail.ifname}", **base, desired=str(want)))
            continue
        warning = ""
        if intent.gid.policy == "roce-v2-ipv4" and idx != want:
            warning = f"RoCE v2 IPv4 GID of {ip} is index {idx}, but NCCL_IB_GID_INDEX is {want}"
        steps.append(same(**base, current=str(idx), desired=str(want), warning=warning))
    return steps


Phase = Callable[[], list[Step]]


def _run(intent: HostIntent, apply: bool, opts: AgentOptions) -> list[Item]:
    sysfs_root, procfs_root, persist_root = Path(opts.sysfs_root), Path(opts.procfs_root), opts.persist_root
    exe = opts.mlnx_qos or shutil.which("mlnx_qos")
    tool = MlnxQosTool(exe) if exe else None
    fw_exe = opts.mlxconfig or shutil.which("mlxconfig") or shutil.which("mstconfig")
    fw = Mlxconfig(fw_exe) if fw_exe and any(r.vfs for r in intent.rails) else None
    rdma = opts.rdma_tool or shutil.which("rdma")
    items: list[Item] = []
    with enter_netns(opts.netns), IPRoute() as ipr:
        rails = RailPlanner(ipr, intent)
        steps = rails.plan()
        pending_if = set() if apply else rails.created
        pending_addr = {s.item.target for s in steps if s.item.section == "address" and s.action}
        items += _execute(steps) if apply else [s.item for s in steps]
        nics = {r.netdev: r for r in intent.rails}
        phases: list[Phase] = [p for r in nics.values()
                               for p in sriov_rail_steps(intent, r, sysfs_root, ipr, fw, apply=apply)]
        phases.append(lambda: netns_steps(intent, sysfs_root, rdma))
        phases.append(lambda: plan_sysctls(intent, procfs_root, pending_if))
        rdmas = {r.rdma: r for r in intent.rails}
        phases += [lambda r=r: qos_steps(intent, r, tool) for r in nics.values()]
        phases += [lambda r=r: roce_steps(intent, r, sysfs_root) for r in rdmas.values()]
        phases += [lambda r=r: dcqcn_steps(intent, r, sysfs_root) for r in nics.values()]
        phases.append(
            lambda: _gid_steps(
                intent,
                sysfs_root,
                set() if apply else pending_addr,
                GID_WAIT_S if apply and pending_addr else 0.0,
            )
        )
        phases.append(lambda: lldp_steps(intent, opts.lldpctl, opts.ethtool))
        if persist_root is not None:
            from fabric.host.persist import install_steps

            phases.append(lambda: install_steps(intent, persist_root))
        for phase in phases:
            planned = phase()
            items += _execute(planned) if apply else [s.item for s in planned]
    return items


def plan(intent: HostIntent, opts: AgentOptions = AgentOptions()) -> HostPlan:
    """Diff the live host against `intent`; changes nothing."""
    items = _run(intent, False, opts)
    return HostPlan(host=intent.name, netns=opts.netns, items=items, warnings=[i.warning for i in items if i.warning])


def apply(intent: HostIntent, opts: AgentOptions = AgentOptions()) -> HostResult:
    """Apply only the differences; what cannot be done here is skipped with its reason, the rest applies.

    With `opts.persist_root` the netplan file, sysctl.d file and the boot-time QoS unit/script are installed
    below it too.
    """
    items = _run(intent, True, opts)
    return HostResult(host=intent.name, netns=opts.netns, items=items,
                      warnings=[i.warning for i in items if i.warning])
