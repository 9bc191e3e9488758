"""PCIe topology and configuration space as sysfs shows them: a device's path of bridges from the root
complex (`/sys/devices/pci0000:00/0000:00:01.0/0000:01:00.0/…`), its IOMMU group type, and two registers
read from its `config` file — the ACS Control register (extended capability 0x000D, offset 6) and the
Enable Relaxed Ordering bit of the PCI Express Device Control register (capability 0x10, offset 8, bit 4).

Register layouts: PCI Express Base Specification (ACS Extended Capability; Device Control Register), as
the kernel names them in include/uapi/linux/pci_regs.h (PCI_EXT_CAP_ID_ACS, PCI_ACS_CTRL, PCI_ACS_SV…,
PCI_EXP_DEVCTL_RELAX_EN). Only root reads past the first 64 bytes of `config`; then None is returned
and the caller falls back to `lspci -vvv` or reports the check as not possible.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

ACS_FLAGS = ("SrcValid", "TransBlk", "ReqRedir", "CmpltRedir", "UpstreamFwd", "EgressCtrl", "DirectTrans")
_BDF = re.compile(r"^[0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]$")
EXT_CAP_ACS = 0x000D
CAP_EXP = 0x10
DEVCTL_RELAX_EN = 0x0010


def _u16(data: bytes, off: int) -> int:
    return int.from_bytes(data[off:off + 2], "little")


def acs_control(config: bytes) -> dict[str, bool] | None:
    """The ACS Control flags, or None when the extended config space is not readable or has no ACS."""
    off, seen = 0x100, set()
    while len(config) >= off + 8 and off and off not in seen:
        seen.add(off)
        header = int.from_bytes(config[off:off + 4], "little")
        if header in (0, 0xFFFFFFFF):
            return None
        if header & 0xFFFF == EXT_CAP_ACS:
            ctrl = _u16(config, off + 6)
            return {name: bool(ctrl >> bit & 1) for bit, name in enumerate(ACS_FLAGS)}
        off = (header >> 20) & 0xFFC
    return None


def relaxed_ordering(config: bytes) -> bool | None:
    """Enable Relaxed Ordering in the PCIe Device Control register; None when the capability is not readable."""
    if len(config) < 0x40 or not config[0x06] & 0x10:  # Status: capabilities list
        return None
    ptr, seen = config[0x34] & 0xFC, set()
    while ptr and ptr not in seen and len(config) >= ptr + 0x0A:
        seen.add(ptr)
        if config[ptr] == CAP_EXP:
            return bool(_u16(config, ptr + 0x08) & DEVCTL_RELAX_EN)
        ptr = config[ptr + 1] & 0xFC
    return None


def device_dir(sysfs: Path, bdf: str) -> Path:
    return sysfs / "bus" / "pci" / "devices" / bdf


def bridge_path(sysfs: Path, bdf: str) -> list[str]:
    """PCI addresses from the root port down to the device itself, from the resolved sysfs path."""
    real = Path(os.path.realpath(device_dir(sysfs, bdf)))
    return [part for part in real.parts if _BDF.match(part)]


def config_bytes(sysfs: Path, bdf: str) -> bytes:
    try:
        return (device_dir(sysfs, bdf) / "config").read_bytes()
    except OSError:
        return b""


def iommu_type(sysfs: Path, bdf: str) -> str | None:
    """`identity` (passthrough), `DMA`/`DMA-FQ` (translated), or None when the device has no IOMMU group."""
    group = device_dir(sysfs, bdf) / "iommu_group" / "type"
    try:
        return group.read_text().strip()
    except OSError:
        return None


def nvidia_gpus(sysfs: Path) -> list[str]:
    """PCI addresses of NVIDIA display/3D controllers (vendor 0x10de, class 0x03xxxx), in PCI order —
    the order nvidia-smi numbers them (GPU0 first)."""
    root = sysfs / "bus" / "pci" / "devices"
    out = []
    for dev in sorted(root.iterdir()) if root.is_dir() else []:
        try:
            vendor, cls = (dev / "vendor").read_text().strip(), (dev / "class").read_text().strip()
        except OSError:
            continue
        if vendor == "0x10de" and cls.startswith("0x03"):
            out.append(dev.name)
    return out
