"""SR-IOV VFs for pods and the RDMA subsystem's network-namespace mode.

Per rail NIC with `vfs > 0`, in this order (each step planned from the state the previous one left):

1. firmware: `mlxconfig -d <PCI> -e q SRIOV_EN NUM_OF_VFS` (MFT; mstflint's `mstconfig` prints the same,
   fabric.parsers.mlxconfig). The firmware offers at most NUM_OF_VFS VFs; a change there needs
   `mlxconfig … set SRIOV_EN=1 NUM_OF_VFS=N` and a reboot, so the agent only checks and says so.
2. the kernel's limit `device/sriov_totalvfs` and the count `device/sriov_numvfs`
   (Documentation/ABI/testing/sysfs-bus-pci). The kernel refuses to change a non-zero count other than to 0
   (EBUSY), and going through 0 destroys every VF a pod may hold, so the agent creates VFs only from 0 and
   otherwise fails with the fix (drain the node, write 0, apply again).
3. per VF: its netdev's MTU (`class/net/<vf>/mtu`, writable like `ip link set … mtu`). sriov-cni keeps the
   VF's MTU when it moves it into a pod (k8snetworkplumbingwg/sriov-cni pkg/sriov/sriov.go reads it into
   the result), so a VF left at 1500 gives the pod RoCE path MTU 1024.
4. per VF: trust and spoof-check on the PF through netlink (IFLA_VFINFO_LIST, read with
   RTEXT_FILTER_VF; `ip link set <pf> vf N trust on spoofchk off`). sriov-cni sets the same two from the
   network's config at attach time and restores them at release; the agent gives the idle VFs the same
   baseline.

The RDMA netns mode (`exclusive` where pods get VFs: an RDMA device is then visible only in the network
namespace it was moved to — by rdma-cni, chained after sriov-cni — instead of in every namespace) is read
from ib_core's `netns_mode` module parameter (`Y` shared, `N` exclusive; kernel
drivers/infiniband/core/device.c binds it to the live setting) and set with `rdma system set netns MODE`
(iproute2 rdma-system(8)), which the kernel refuses (EBUSY) while other network namespaces exist. The
mode is also persisted for boot as `options ib_core netns_mode=0|1` in modprobe.d (fabric.render.host,
the file sriov-network-operator writes for the same purpose).

With `vfs: 0` nothing is created; an existing VF count is reported (the device plugin does not offer a
PF that has VFs: sriov-network-device-plugin pkg/netdevice/netDeviceProvider.go skips SR-IOV-configured
PFs), never removed.
"""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

from pyroute2 import IPRoute

from fabric.design.intent import HostIntent, RailIntent
from fabric.errors import InputError
from fabric.host.step import Step, change, fail, same, skip
from fabric.host.sysfs import int_file_step, pci_address, read_int
from fabric.parsers.mlxconfig import parse_mlxconfig

VF_WAIT_S = 5.0  # VF netdevs appear asynchronously after sriov_numvfs is written (driver probe)


def pf_device(sysfs_root: Path, rail: RailIntent) -> Path:
    return sysfs_root / "class" / "net" / rail.netdev / "device"


def vf_netdev(sysfs_root: Path, rail: RailIntent, i: int) -> str | None:
    """The netdev name of VF `i` of the rail's PF (device/virtfn<i>/net/<name>), or None."""
    net = pf_device(sysfs_root, rail) / f"virtfn{i}" / "net"
    try:
        names = sorted(os.listdir(net))
    except OSError:
        return None
    return names[0] if names else None


def _on(flag: bool) -> str:
    return "on" if flag else "off"


class Mlxconfig:
    """Runs `mlxconfig` (or mstflint's `mstconfig`) to read SRIOV_EN and NUM_OF_VFS of one device."""

    def __init__(self, exe: str) -> None:
        self.exe = exe

    def read(self, pci: str) -> tuple[int | None, int | None, int | None]:
        """(SRIOV_EN, NUM_OF_VFS, NUM_OF_VFS at next boot) of the running firmware."""
        proc = subprocess.run([self.exe, "-d", pci, "-e", "q", "SRIOV_EN", "NUM_OF_VFS"], capture_output=True,
                              text=True, timeout=60, check=False)
        if proc.returncode != 0:
            text = (proc.stderr.strip() or proc.stdout.strip() or f"exit {proc.returncode}").splitlines()
            raise RuntimeError(f"{Path(self.exe).name} -d {pci} q: {text[-1]}")
        dev = parse_mlxconfig(proc.stdout, f"{Path(self.exe).name} -d {pci}").devices[0]
        return dev.value("SRIOV_EN"), dev.value("NUM_OF_VFS"), dev.value("NUM_OF_VFS", "next_boot")


def firmware_step(rail: RailIntent, sysfs_root: Path, tool: Mlxconfig | None) -> Step:
    base = dict(section="sriov", target=rail.netdev, name="firmware SRIOV_EN, NUM_OF_VFS", op="check",
                desired=f"on, ≥ {rail.vfs}")
    if tool is None:
        return skip("mlxconfig not found (install MFT or mstflint, or pass --mlxconfig PATH)", **base)
    pci = pci_address(sysfs_root, f"class/net/{rail.netdev}") or rail.pci
    if pci is None:
        return skip(f"no PCI address for {rail.netdev} (no {sysfs_root}/class/net/{rail.netdev}/device)", **base)
    try:
        enabled, num, next_boot = tool.read(pci)
    except (OSError, RuntimeError, subprocess.TimeoutExpired, InputError) as exc:
        return fail(str(exc).splitlines()[0], **base)
    current = f"{'on' if enabled else 'off'}, {num if num is not None else '?'}"
    if enabled == 1 and num is not None and num >= rail.vfs:
        return same(**{**base, "current": current})
    fix = f"mlxconfig -d {pci} set SRIOV_EN=1 NUM_OF_VFS={rail.vfs}, then reboot (or mlxfwreset)"
    if next_boot is not None and next_boot >= rail.vfs:
        fix = f"NUM_OF_VFS is {next_boot} for the next boot: reboot (or mlxfwreset) to apply it"
    return fail(f"the firmware offers {num if enabled == 1 else 0} VFs, {rail.vfs} wanted: {fix}",
                **{**base, "current": current})


def vf_count_steps(rail: RailIntent, sysfs_root: Path) -> tuple[list[Step], bool]:
    """The kernel limit and the VF count; returns (steps, VFs will exist after these steps)."""
    dev = pf_device(sysfs_root, rail)
    total_f, num_f = dev / "sriov_totalvfs", dev / "sriov_numvfs"
    base = dict(section="sriov", target=rail.netdev)
    if not num_f.is_file():
        why = f"{rail.netdev} is not SR-IOV capable here (no {num_f})" if dev.exists() else \
            f"no PCI device behind {rail.netdev} ({dev})"
        return [fail(why, **base, name="sriov_numvfs", desired=str(rail.vfs))], False
    try:
        total, num = read_int(total_f) if total_f.is_file() else None, read_int(num_f)
    except OSError as exc:
        return [fail(f"cannot read {num_f}: {exc.strerror}", **base, name="sriov_numvfs")], False
    steps: list[Step] = []
    if total is not None:
        if total < rail.vfs:
            steps.append(fail(f"the kernel offers {total} VFs (sriov_totalvfs, the firmware's NUM_OF_VFS), "
                              f"{rail.vfs} wanted", **base, name="sriov_totalvfs", op="check", current=str(total),
                              desired=f"≥ {rail.vfs}"))
            return steps, False
        steps.append(same(**base, name="sriov_totalvfs", op="check", current=str(total)))
    if num == rail.vfs:
        steps.append(same(**base, name="sriov_numvfs", current=str(num)))
        return steps, True
    if num:
        steps.append(fail(f"{num} VFs exist, {rail.vfs} wanted: changing the count destroys the existing VFs "
                          f"(and the pods using them); drain the node, `echo 0 > {num_f}`, apply again",
                          **base, name="sriov_numvfs", current=str(num), desired=str(rail.vfs)))
        return steps, False

    def create() -> None:
        num_f.write_text(f"{rail.vfs}\n")

    steps.append(change(create, **base, name="sriov_numvfs", op="create", current="0", desired=str(rail.vfs)))
    return steps, True


def _vf_info(ipr: IPRoute, pf: str) -> dict[int, dict[str, int]] | None:
    """{vf: {'trust': 0|1, 'spoofchk': 0|1}} from netlink, or None when the PF is not a link here."""
    try:
        index = ipr.link_lookup(ifname=pf)
        if not index:
            return None
        msg = ipr.link("get", index=index[0], ext_mask=1)[0]
    except Exception:  # netlink errors: reported as "not readable"
        return None
    out: dict[int, dict[str, int]] = {}
    vfl = msg.get_attr("IFLA_VFINFO_LIST")
    for info in vfl.get_attrs("IFLA_VF_INFO") if vfl else []:
        for attr, key in (("IFLA_VF_TRUST", "trust"), ("IFLA_VF_SPOOFCHK", "spoofchk")):
            nla = info.get_attr(attr)
            if nla is not None:
                out.setdefault(nla["vf"], {})[key] = nla[key]
    return out


def vf_steps(rail: RailIntent, sysfs_root: Path, ipr: IPRoute, *, pending: bool, wait: float) -> list[Step]:
    """MTU, trust and spoof-check of each VF. `pending`: the VFs are created by an earlier step of a plan."""
    trust, spoof = _on(rail.vf_trust), _on(rail.vf_spoof_check)
    last = rail.vfs - 1
    if pending:
        later = "after the VFs are created"
        return [change(lambda: None, section="sriov", target=f"{rail.netdev} vf 0-{last}", name="mtu", op="set",
                       desired=str(rail.mtu), reason=later),
                change(lambda: None, section="sriov", target=f"{rail.netdev} vf 0-{last}", name="trust, spoofchk",
                       op="set", desired=f"trust {trust}, spoofchk {spoof}", reason=later)]
    deadline = time.monotonic() + wait
    while vf_netdev(sysfs_root, rail, last) is None and time.monotonic() < deadline:
        time.sleep(0.2)
    steps: list[Step] = []
    for i in range(rail.vfs):
        name = vf_netdev(sysfs_root, rail, i)
        target = f"{rail.netdev} vf {i}"
        if name is None:
            steps.append(skip(f"VF {i} has no netdev (not probed yet, or bound to a user-space driver)",
                              section="sriov", target=target, name="mtu", desired=str(rail.mtu)))
            continue
        mtu = sysfs_root / "class" / "net" / name / "mtu"
        if mtu.is_file():
            steps.append(int_file_step(mtu, rail.mtu, section="sriov", target=f"{target} ({name})", name="mtu"))
        else:
            steps.append(skip(f"no {mtu}", section="sriov", target=f"{target} ({name})", name="mtu"))
    info = _vf_info(ipr, rail.netdev)
    want = {"trust": int(rail.vf_trust), "spoofchk": int(rail.vf_spoof_check)}
    for i in range(rail.vfs):
        target = f"{rail.netdev} vf {i}"
        have = (info or {}).get(i)
        if have is None:
            steps.append(skip(f"netlink reports no VF {i} on {rail.netdev}", section="sriov", target=target,
                              name="trust, spoofchk", desired=f"trust {trust}, spoofchk {spoof}"))
            continue
        cur = f"trust {_on(bool(have.get('trust')))}, spoofchk {_on(bool(have.get('spoofchk')))}"
        if all(have.get(k) == v for k, v in want.items()):
            steps.append(same(section="sriov", target=target, name="trust, spoofchk", current=cur))
            continue

        def setter(i: int = i) -> None:
            index = ipr.link_lookup(ifname=rail.netdev)[0]
            ipr.link("set", index=index, vf={"vf": i, **want})

        steps.append(change(setter, section="sriov", target=target, name="trust, spoofchk", current=cur,
                            desired=f"trust {trust}, spoofchk {spoof}"))
    return steps


def unmanaged_vfs_step(rail: RailIntent, sysfs_root: Path) -> list[Step]:
    """`vfs: 0`: report VFs that exist anyway (the PF then cannot be passed to a pod); change nothing."""
    num_f = pf_device(sysfs_root, rail) / "sriov_numvfs"
    try:
        num = read_int(num_f) if num_f.is_file() else None
    except OSError:
        num = None
    if not num:
        return []
    return [same(section="sriov", target=rail.netdev, name="sriov_numvfs", op="check", current=str(num),
                 warning=f"{rail.netdev} has {num} VFs but the inventory says vfs: 0; the device plugin does not "
                         "offer a PF with VFs to pods (left as is)")]


def rail_steps(intent: HostIntent, rail: RailIntent, sysfs_root: Path, ipr: IPRoute, tool: Mlxconfig | None,
               *, apply: bool) -> list[Phase]:
    """The phases for one rail NIC (each planned after the previous one ran)."""
    if rail.vfs == 0:
        return [lambda: unmanaged_vfs_step(rail, sysfs_root)]
    state = {"ok": False, "pending": False}

    def counts() -> list[Step]:
        steps, will_exist = vf_count_steps(rail, sysfs_root)
        state["ok"] = will_exist
        state["pending"] = any(s.action is not None for s in steps)
        return steps

    def vfs() -> list[Step]:
        if not state["ok"]:
            return []
        pending = state["pending"] and not apply
        return vf_steps(rail, sysfs_root, ipr, pending=pending, wait=VF_WAIT_S if apply and state["pending"] else 0)

    return [lambda: [firmware_step(rail, sysfs_root, tool)], counts, vfs]


Phase = Callable[[], list[Step]]

NETNS_PARAM = ("module", "ib_core", "parameters", "netns_mode")


def netns_mode(sysfs_root: Path) -> str | None:
    """`shared` or `exclusive` from ib_core's netns_mode parameter (Y/1 shared, N/0 exclusive), None if absent."""
    path = sysfs_root.joinpath(*NETNS_PARAM)
    try:
        text = path.read_text().strip()
    except OSError:
        return None
    return {"Y": "shared", "1": "shared", "N": "exclusive", "0": "exclusive"}.get(text)


def netns_steps(intent: HostIntent, sysfs_root: Path, rdma_tool: str | None) -> list[Step]:
    """The RDMA subsystem netns mode the intent asks for (nothing when it asks for none)."""
    want = intent.rdma_netns
    if want is None:
        return []
    base = dict(section="rdma", target="rdma system", name="netns mode", desired=want)
    have = netns_mode(sysfs_root)
    if have is None:
        return [skip(f"ib_core not loaded (no {sysfs_root.joinpath(*NETNS_PARAM)})", **base)]
    if have == want:
        return [same(**{**base, "current": have})]
    if rdma_tool is None:
        return [fail("rdma (iproute2) not found; the mode applies at the next boot from modprobe.d "
                     "(host apply --persist)", **{**base, "current": have})]

    def set_mode() -> None:
        proc = subprocess.run([rdma_tool, "system", "set", "netns", want], capture_output=True, text=True,
                              timeout=30, check=False)
        if proc.returncode != 0:
            err = (proc.stderr.strip() or proc.stdout.strip() or f"exit {proc.returncode}").splitlines()[-1]
            raise RuntimeError(f"rdma system set netns {want}: {err} (the kernel refuses while other network "
                               "namespaces exist; it applies at the next boot from modprobe.d, host apply --persist)")

    return [change(set_mode, **{**base, "current": have})]
