"""GID selection: the RoCE v2, IPv4-mapped GID of a rail address on its RDMA port, from sysfs."""

from __future__ import annotations

import ipaddress
from pathlib import Path

from pydantic import BaseModel

MAPPED_PREFIX = "0000:0000:0000:0000:0000:ffff:"


class Gid(BaseModel):
    index: int
    gid: str
    type: str
    ndev: str | None
    ipv4: str | None


def _read(path: Path) -> str | None:
    try:
        return path.read_text().strip()
    except OSError:  # unpopulated entries return EINVAL on real kernels
        return None


def gid_table(sysfs_root: Path, rdma: str, port: int = 1) -> list[Gid]:
    """Every populated GID of `rdma` port `port` (`ports/<p>/gids/<N>`, `gid_attrs/types|ndevs/<N>`)."""
    base = sysfs_root / "class" / "infiniband" / rdma / "ports" / str(port)
    gids = base / "gids"
    if not gids.is_dir():
        return []
    out = []
    for entry in sorted(gids.iterdir(), key=lambda p: int(p.name) if p.name.isdigit() else -1):
        if not entry.name.isdigit():
            continue
        gid = (_read(entry) or "").lower()
        if not gid or set(gid) <= {"0", ":"}:
            continue
        ipv4 = None
        if gid.startswith(MAPPED_PREFIX):
            try:
                ipv4 = str(ipaddress.IPv6Address(gid).ipv4_mapped)
            except ValueError:
                ipv4 = None
        out.append(
            Gid(
                index=int(entry.name),
                gid=gid,
                type=_read(base / "gid_attrs" / "types" / entry.name) or "",
                ndev=_read(base / "gid_attrs" / "ndevs" / entry.name),
                ipv4=ipv4,
            )
        )
    return out


def roce_v2_ipv4_index(table: list[Gid], ipv4: str, ifname: str) -> int | None:
    """Index of the GID with type 'RoCE v2', IPv4-mapped `ipv4`, on netdev `ifname` (or None)."""
    for g in table:
        if g.type == "RoCE v2" and g.ipv4 == ipv4 and g.ndev in (ifname, None):
            return g.index
    return None
