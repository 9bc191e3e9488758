"""GPUDirect RDMA prerequisites of one host (`fabric host prereqs`, acceptance check `host-prereqs`):
checks only, nothing is changed. Each item names the GPU, the rail NIC, the PCIe device it is about and
what to change.

- affinity: GPU k and the NIC of the k-th rail (the rail design pairs them) are PIX or PXB apart in
  `nvidia-smi topo -m` (else from sysfs: they share a PCIe switch below the root port);
- acs: no bridge between them (the ports below their common switch) redirects peer-to-peer requests or
  completions (ACS ReqRedir/CmpltRedir) — else GPUDirect traffic detours through the root complex;
- iommu: GPU and NIC in passthrough (`iommu=pt`, IOMMU group type `identity`) or without an IOMMU;
- relaxed-ordering: the NIC function may use relaxed ordering (PCIe DevCtl RlxdOrd+) and its firmware's
  PCI_WR_ORDERING (`mlxconfig q`) is per_mkey(0) — NCCL opts in per memory key — or force_relax(1);
- ats: ATS_ENABLED in the NIC firmware, needed only where the IOMMU translates (NVIDIA AI Enterprise,
  "ATS and ACS configuration": https://docs.nvidia.com/ai-enterprise/planning-resource/optimizing-vm-configuration-ai-inference/latest/appendix.html);
- peer-memory: nvidia_peermem (or the legacy nv_peer_mem) loaded;
- nccl-version: `gid.policy: auto` leaves NCCL_IB_GID_INDEX unset, which NCCL resolves to the RoCE v2
  GID by address family only from 2.21 on (https://www.juniper.net/documentation/us/en/software/jvd/jvd-ai-dc-evpn-multitenancy/appendix_d_how_to_run_nccl_tests_using_autoconfigured_ipv6_address.html).
"""

from __future__ import annotations

import os
import re
import shutil
from dataclasses import dataclass, field
from pathlib import Path

from fabric.design.intent import HostIntent, RailIntent
from fabric.errors import InputError
from fabric.host.model import Item
from fabric.host.pcie import (
    acs_control,
    bridge_path,
    config_bytes,
    iommu_type,
    nvidia_gpus,
    relaxed_ordering,
)
from fabric.host.sysfs import pci_address
from fabric.host.tools import tool_output
from fabric.parsers.lspci import Lspci, parse_lspci
from fabric.parsers.mlxconfig import parse_mlxconfig
from fabric.parsers.nvidia_smi import Topology, parse_topo

AUTO_GID_NCCL = (2, 21)
GOOD_LINKS = ("PIX", "PXB")


@dataclass
class Evidence:
    """What the checks read besides sysfs: tool outputs, gathered on the host or given by a test."""

    sysfs: Path
    topo: str | None = None  # nvidia-smi topo -m
    lspci: str | None = None  # lspci -vvv (for ACS and RlxdOrd where config space is not readable)
    mlxconfig: dict[str, str] = field(default_factory=dict)  # NIC PCI address → `mlxconfig -d … q` output
    nccl_version: str | None = None  # 2.21.5


def _run(argv: list[str]) -> str | None:
    out = tool_output(argv, timeout=60)
    return out if out and out.strip() else None


def gather(intent: HostIntent, sysfs: Path, nccl_version: str | None = None) -> Evidence:
    """Run the tools the checks need where they are installed (nvidia-smi, lspci, mlxconfig/mstconfig)."""
    ev = Evidence(sysfs=sysfs, topo=_run(["nvidia-smi", "topo", "-m"]), lspci=_run(["lspci", "-vvv"]),
                  nccl_version=nccl_version or installed_nccl())
    tool = "mlxconfig" if shutil.which("mlxconfig") else "mstconfig"
    for rail in intent.rails:
        pci = pci_address(sysfs, f"class/net/{rail.netdev}") or rail.pci
        if pci and (out := _run([tool, "-d", pci, "q", "PCI_WR_ORDERING", "ATS_ENABLED"])):
            ev.mlxconfig[pci] = out
    return ev


def installed_nccl() -> str | None:
    """The version of the libnccl.so.2 the dynamic linker knows (`ldconfig -p` → its resolved file name)."""
    listing = _run(["ldconfig", "-p"]) or ""
    found = []
    for m in re.finditer(r"libnccl\.so\.2\b.*=> (\S+)", listing):
        if v := re.search(r"libnccl\.so\.(2\.\d+\.\d+)$", os.path.realpath(m.group(1))):
            found.append(v.group(1))
    return max(found, key=_version) if found else None


def _version(text: str) -> tuple[int, ...]:
    return tuple(int(x) for x in re.findall(r"\d+", text)[:3])


def check(intent: HostIntent, ev: Evidence) -> list[Item]:
    """Every prerequisite, one item each (per GPU/NIC pair, per NIC, per host)."""
    gpus = nvidia_gpus(ev.sysfs)
    items: list[Item] = []
    if not gpus:
        return [Item(section="gpudirect", target=intent.name, name="gpus", op="check", status="skipped",
                     reason=f"no NVIDIA GPU (vendor 0x10de, class 0x03…) under {ev.sysfs}/bus/pci/devices")]
    lspci = _lspci(ev.lspci)
    topo = _topo(ev.topo)
    for k, rail in enumerate(intent.rails):
        nic = pci_address(ev.sysfs, f"class/net/{rail.netdev}") or rail.pci
        if k >= len(gpus):
            items.append(_item(f"{rail.rdma} (rail {rail.rail})", "affinity", "skipped",
                               reason=f"no GPU{k} on this host ({len(gpus)} GPUs) for rail {rail.rail}"))
            continue
        gpu = gpus[k]
        target = f"GPU{k} {gpu} ↔ rail {rail.rail} {rail.rdma} {nic or '?'}"
        if nic is None:
            items.append(_item(target, "affinity", "skipped", reason=f"no PCI device for {rail.netdev} "
                               f"({ev.sysfs}/class/net/{rail.netdev}/device)"))
            continue
        items.append(_affinity(ev, topo, k, gpu, rail, nic, target))
        items.append(_acs(ev, lspci, gpu, nic, target))
        items.append(_iommu(ev, gpu, nic, target))
        items += _nic_firmware(ev, lspci, rail, nic)
    items.append(_peermem(intent, ev))
    items.append(_nccl(intent, ev))
    return items


def _item(target: str, name: str, status: str, **kw: str | None) -> Item:
    return Item(section="gpudirect", target=target, name=name, op="check", status=status, **kw)  # type: ignore[arg-type]


def _lspci(text: str | None) -> Lspci | None:
    try:
        return parse_lspci(text, "lspci -vvv") if text else None
    except InputError:
        return None


def _topo(text: str | None) -> Topology | None:
    try:
        return parse_topo(text, "nvidia-smi topo -m") if text else None
    except InputError:
        return None


def _affinity(ev: Evidence, topo: Topology | None, k: int, gpu: str, rail: RailIntent, nic: str,
              target: str) -> Item:
    want = "PIX or PXB"
    if topo is not None and rail.rdma in topo.link.get(f"GPU{k}", {}):
        link = topo.link[f"GPU{k}"][rail.rdma]
        if link in GOOD_LINKS:
            return _item(target, "affinity", "unchanged", current=link, desired=want)
        closest = topo.closest(f"GPU{k}")
        better = [n for n in closest if n != rail.rdma]
        hint = (f"GPU{k}'s nearest NIC is {', '.join(better)}: the inventory's rail {rail.rail} NIC "
                f"({rail.rdma}) is not the one next to GPU{k} — reorder the host's nics (rail k = the NIC "
                "beside GPU k-1) or recable" if better else
                f"no NIC is PIX/PXB to GPU{k}: the NIC sits under another PCIe switch or socket")
        return _item(target, "affinity", "failed", current=link, desired=want,
                     reason=f"nvidia-smi topo -m: GPU{k} ↔ {rail.rdma} is {link}; {hint}")
    gpath, npath = bridge_path(ev.sysfs, gpu), bridge_path(ev.sysfs, nic)
    shared = _common(gpath, npath)
    if len(shared) >= 2:  # below the same root port: a PCIe switch joins them
        return _item(target, "affinity", "unchanged", current=f"shared switch below {shared[0]}", desired=want)
    return _item(target, "affinity", "failed", current="different root ports (PHB or farther)", desired=want,
                 reason=f"{gpu} and {nic} meet only at the root complex ({' → '.join(gpath)} vs "
                        f"{' → '.join(npath)}): GPUDirect RDMA crosses the CPU; put the rail NIC in the slot "
                        f"beside GPU{k} or fix the inventory's NIC order")


def _common(a: list[str], b: list[str]) -> list[str]:
    out = []
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        out.append(x)
    return out


def _acs(ev: Evidence, lspci: Lspci | None, gpu: str, nic: str, target: str) -> Item:
    gpath, npath = bridge_path(ev.sysfs, gpu), bridge_path(ev.sysfs, nic)
    shared = _common(gpath, npath)
    between = [b for b in gpath[len(shared):-1] + npath[len(shared):-1]]
    if shared:
        between.insert(0, shared[-1])  # the switch (or root) port where the paths meet
    on, unknown = [], []
    for bdf in dict.fromkeys(between):
        flags = acs_control(config_bytes(ev.sysfs, bdf))
        if flags is None and lspci is not None and bdf in lspci.devices:
            flags = lspci.devices[bdf].acs_ctl
            if flags is None:
                continue  # lspci read it: no ACS capability on this bridge
        if flags is None:
            if len(config_bytes(ev.sysfs, bdf)) <= 256 and lspci is None:
                unknown.append(bdf)
            continue
        redirects = [f for f in ("ReqRedir", "CmpltRedir") if flags.get(f)]
        if redirects:
            on.append((bdf, redirects))
    if on:
        where = "; ".join(f"{bdf} ({'+ '.join(r)}+, {ev.sysfs}/bus/pci/devices/{bdf})" for bdf, r in on)
        fix = "; ".join(f"setpci -s {bdf} ECAP_ACS+0x6.w=0000" for bdf, _ in on)
        return _item(target, "acs", "failed", current="redirect on " + ", ".join(b for b, _ in on),
                     desired="ReqRedir- CmpltRedir- on every bridge between", reason=f"ACS redirects GPUDirect "
                     f"traffic to the root complex at {where}: disable ACS in the BIOS or at boot ({fix})")
    if unknown:
        return _item(target, "acs", "skipped", reason="cannot read the extended config space of "
                     f"{', '.join(unknown)} (run as root, or give lspci -vvv output)")
    return _item(target, "acs", "unchanged", current=f"off on {len(dict.fromkeys(between))} bridge(s)",
                 desired="ReqRedir- CmpltRedir-")


def _iommu(ev: Evidence, gpu: str, nic: str, target: str) -> Item:
    kinds = {bdf: iommu_type(ev.sysfs, bdf) for bdf in (gpu, nic)}
    translated = {bdf: t for bdf, t in kinds.items() if t and t != "identity"}
    current = ", ".join(f"{bdf} {t or 'no IOMMU'}" for bdf, t in kinds.items())
    if translated:
        return _item(target, "iommu", "failed", current=current, desired="identity (iommu=pt) or no IOMMU",
                     reason=f"the IOMMU translates DMA of {', '.join(translated)} "
                            f"({ev.sysfs}/bus/pci/devices/<bdf>/iommu_group/type): add iommu=pt "
                            "(intel_iommu=on iommu=pt / amd_iommu=on iommu=pt) to the kernel command line, or "
                            "for VMs enable ATS on the NIC and ACS Direct Translated P2P")
    return _item(target, "iommu", "unchanged", current=current, desired="identity or no IOMMU")


def _nic_firmware(ev: Evidence, lspci: Lspci | None, rail: RailIntent, nic: str) -> list[Item]:
    target = f"rail {rail.rail} {rail.rdma} {nic}"
    items = []
    ro = relaxed_ordering(config_bytes(ev.sysfs, nic))
    if ro is None and lspci is not None and nic in lspci.devices:
        ro = lspci.devices[nic].relaxed_ordering
    wr = ats = None
    if nic in ev.mlxconfig:
        try:
            dev = parse_mlxconfig(ev.mlxconfig[nic], f"mlxconfig -d {nic}").devices[0]
            wr, ats = dev.params.get("PCI_WR_ORDERING"), dev.params.get("ATS_ENABLED")
        except InputError:
            pass
    wr_text = (wr.current or wr.next_boot) if wr else None
    if ro is False:
        items.append(_item(target, "relaxed-ordering", "failed", current="RlxdOrd-", desired="RlxdOrd+",
                           reason=f"relaxed ordering is disabled in the PCIe Device Control of {nic} "
                                  f"({ev.sysfs}/bus/pci/devices/{nic}): NCCL_IB_PCI_RELAXED_ORDERING cannot take "
                                  "effect; enable it in the BIOS or with setpci (CAP_EXP+8.w bit 4)"))
    elif wr_text is not None and not re.match(r"(per_mkey|force_relax)\(", wr_text):
        items.append(_item(target, "relaxed-ordering", "failed", current=f"PCI_WR_ORDERING {wr_text}",
                           desired="per_mkey(0) or force_relax(1)",
                           reason=f"mlxconfig -d {nic} set PCI_WR_ORDERING=0, then reboot or mlxfwreset"))
    elif ro is None and wr_text is None:
        items.append(_item(target, "relaxed-ordering", "skipped", reason="neither the PCIe config space (root) "
                           "nor lspci/mlxconfig output was readable"))
    else:
        current = " ".join(p for p in ("RlxdOrd+" if ro else "", f"PCI_WR_ORDERING {wr_text}" if wr_text else "") if p)
        items.append(_item(target, "relaxed-ordering", "unchanged", current=current, desired="RlxdOrd+"))
    ats_text = (ats.current or ats.next_boot) if ats else None
    translated = (iommu_type(ev.sysfs, nic) or "identity") != "identity"
    if ats_text is None:
        items.append(_item(target, "ats", "skipped", reason="no mlxconfig output for this NIC (MFT or mstflint "
                           "not installed, or ATS_ENABLED not offered by the firmware)"))
    elif translated and not ats_text.startswith("True"):
        items.append(_item(target, "ats", "failed", current=ats_text, desired="True(1) while the IOMMU translates",
                           reason=f"mlxconfig -d {nic} set ATS_ENABLED=true and reboot, or put the IOMMU in "
                                  "passthrough (iommu=pt)"))
    else:
        items.append(_item(target, "ats", "unchanged", current=ats_text,
                           desired="any (IOMMU passthrough)" if not translated else "True(1)"))
    return items


def _peermem(intent: HostIntent, ev: Evidence) -> Item:
    for module in ("nvidia_peermem", "nv_peer_mem"):
        if (ev.sysfs / "module" / module).exists():
            return _item(intent.name, "peer-memory", "unchanged", current=module, desired="nvidia_peermem loaded")
    return _item(intent.name, "peer-memory", "failed", current="not loaded", desired="nvidia_peermem loaded",
                 reason=f"no {ev.sysfs}/module/nvidia_peermem: `modprobe nvidia_peermem` and add it to "
                        "/etc/modules-load.d/ (or use a driver and NCCL with DMA-BUF)")


def _nccl(intent: HostIntent, ev: Evidence) -> Item:
    need = ".".join(map(str, AUTO_GID_NCCL))
    if intent.gid.policy != "auto":
        return _item(intent.name, "nccl-version", "unchanged", current=ev.nccl_version or "unknown",
                     desired=f"any (NCCL_IB_GID_INDEX={intent.gid.index} is set)")
    if ev.nccl_version is None:
        return _item(intent.name, "nccl-version", "skipped", desired=f"≥ {need}",
                     reason="no libnccl.so.2.* found; pass --nccl-version")
    if _version(ev.nccl_version) < AUTO_GID_NCCL:
        return _item(intent.name, "nccl-version", "failed", current=ev.nccl_version, desired=f"≥ {need}",
                     reason=f"gid.policy auto leaves NCCL_IB_GID_INDEX unset, which NCCL {ev.nccl_version} does "
                            f"not resolve to the RoCE v2 IPv4 GID: upgrade NCCL to {need}+ or set gid.policy "
                            f"roce-v2-ipv4 (index {intent.gid.index}) in the inventory")
    return _item(intent.name, "nccl-version", "unchanged", current=ev.nccl_version, desired=f"≥ {need}")
