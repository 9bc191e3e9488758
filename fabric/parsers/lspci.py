"""`lspci -vvv` (pciutils): per device its address, its description, the ACS control flags (`ACSCtl:`) and
whether relaxed ordering is enabled in its PCIe Device Control register (`DevCtl: … RlxdOrd+`).

A device block starts at column 0 with `[domain:]bus:dev.fn description`; capability lines are indented.
`ACSCtl:` lists SrcValid, TransBlk, ReqRedir, CmpltRedir, UpstreamFwd, EgressCtrl and DirectTrans, each
with `+` or `-` (pciutils ls-ecaps.c cap_acs). For GPUDirect RDMA, ReqRedir and CmpltRedir must be off on
the bridges between GPU and NIC, or peer-to-peer requests are redirected up to the root complex
(NVIDIA/nccl#214, #304). Without root, lspci cannot read extended capabilities and prints no ACS lines.
"""

from __future__ import annotations

import re

from fabric.parsers._common import Model, fail, require_text
from fabric.replies import reader

_HEADER = re.compile(r"^(?P<bdf>(?:[0-9a-fA-F]{4}:)?[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7])\s+(?P<desc>\S.*)$")
_FLAGS = re.compile(r"(\w+)([+-])")


class PciDevice(Model):
    bdf: str  # always with the domain: 0000:00:01.1
    description: str
    line: int
    acs_ctl: dict[str, bool] | None = None  # None: no ACS capability shown
    relaxed_ordering: bool | None = None  # DevCtl RlxdOrd; None when not shown

    @property
    def acs_redirects(self) -> list[str]:
        """The ACS controls that send peer-to-peer traffic up to the root complex, where enabled."""
        return [f for f in ("ReqRedir", "CmpltRedir") if (self.acs_ctl or {}).get(f)]


class Lspci(Model):
    devices: dict[str, PciDevice]


def full_bdf(bdf: str) -> str:
    """`00:01.1` → `0000:00:01.1` (lowercase)."""
    bdf = bdf.lower()
    return bdf if bdf.count(":") == 2 else f"0000:{bdf}"


@reader('lspci -vvv')
def parse_lspci(text: str, file: str = "-") -> Lspci:
    lines = require_text(text, file, "lspci -vvv output")
    devices: dict[str, PciDevice] = {}
    dev: PciDevice | None = None
    devctl = False  # the line before was DevCtl: (newer lspci wraps RlxdOrd onto the next line)
    for lineno, raw in enumerate(lines, 1):
        line = raw.rstrip()
        if m := _HEADER.match(line):
            dev = PciDevice(bdf=full_bdf(m["bdf"]), description=m["desc"], line=lineno)
            devices[dev.bdf] = dev
            continue
        if dev is None or not line.strip():
            continue
        body = line.strip()
        if body.startswith("ACSCtl:"):
            dev.acs_ctl = {name: sign == "+" for name, sign in _FLAGS.findall(body[len("ACSCtl:"):])}
        elif (body.startswith("DevCtl:") or devctl) and "RlxdOrd" in body:
            dev.relaxed_ordering = "RlxdOrd+" in body
        devctl = body.startswith("DevCtl:")
    if not devices:
        raise fail(file, None, "", "a device line such as '00:01.1 PCI bridge: …'", "none")
    return Lspci(devices=devices)
