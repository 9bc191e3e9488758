"""`nvidia-smi topo -m` (or `-mp`): the connection type between every GPU and every NIC.

The matrix has a header row of column names (GPU0…, then NIC0… in current drivers or the RDMA device
names in older ones, then `CPU Affinity`, `NUMA Affinity`, `GPU NUMA ID`), one row per GPU and NIC, a
`Legend:` (X, SYS, NODE, PHB, PXB, PIX, NV#) and, in current drivers, a `NIC Legend:` mapping `NICk` to the
RDMA device (`NIC0: mlx5_0`). Cells are separated by tabs or runs of spaces.
"""

from __future__ import annotations

import re

from fabric.parsers._common import Model, fail, require_text
from fabric.replies import reader

_LINK = re.compile(r"^(X|SYS|NODE|PHB|PXB|PIX|NV\d+)$")
_LEGEND = re.compile(r"^\s*(NIC\d+):\s*(\S+)\s*$")
# the distance order NCCL uses (PIX closest); NVLink counts as closest but never joins a GPU to a NIC
RANK = {"X": 0, "PIX": 1, "PXB": 2, "PHB": 3, "NODE": 4, "SYS": 5}


class Topology(Model):
    gpus: list[str]  # GPU0, GPU1, …
    nics: list[str]  # RDMA device names (mlx5_0), from the NIC legend where there is one
    link: dict[str, dict[str, str]]  # GPU → NIC → PIX/PXB/…

    def closest(self, gpu: str) -> list[str]:
        """The NICs nearest to `gpu` (more than one on a tie)."""
        row = self.link.get(gpu, {})
        best = min((RANK.get(v, 9) for v in row.values()), default=9)
        return [n for n, v in row.items() if RANK.get(v, 9) == best]


@reader('nvidia-smi topo -m')
def parse_topo(text: str, file: str = "-") -> Topology:
    lines = require_text(text, file, "nvidia-smi topo -m output")
    header_i = next((i for i, line in enumerate(lines) if re.match(r"^\s+GPU0\b", line.expandtabs())), None)
    if header_i is None:
        raise fail(file, None, "", "a header row starting with GPU0", "none")
    columns = [c for c in re.split(r"\t+|\s{2,}", lines[header_i].strip()) if c]
    devices = [c for c in columns if c not in ("CPU Affinity", "NUMA Affinity", "GPU NUMA ID")]
    legend = dict(m.groups() for line in lines if (m := _LEGEND.match(line)))
    gpus = [d for d in devices if re.fullmatch(r"GPU\d+", d)]
    link: dict[str, dict[str, str]] = {}
    for lineno, line in enumerate(lines[header_i + 1:], header_i + 2):
        cells = line.split()
        if not cells or cells[0] not in gpus:
            if cells and cells[0].startswith("Legend"):
                break
            continue
        values = cells[1:1 + len(devices)]
        if len(values) < len(devices) or not all(_LINK.match(v) for v in values):
            raise fail(file, lineno, cells[0], f"{len(devices)} link types (X, PIX, PXB, PHB, NODE, SYS, NV#)",
                       " ".join(values))
        link[cells[0]] = {legend.get(d, d): v for d, v in zip(devices, values, strict=True) if d not in gpus}
    if not link:
        raise fail(file, None, "", "one row per GPU", "none")
    nics = [legend.get(d, d) for d in devices if d not in gpus]
    return Topology(gpus=gpus, nics=nics, link=link)
