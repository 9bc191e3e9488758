"""The PCI address of a NIC read from its predictable network interface name.

systemd-udevd names PCI NICs by their location (systemd.net-naming-scheme(7), "PCI geographical
location" in src/udev/udev-builtin-net_id.c): `en` + optional `P<domain>` + `p<bus>s<slot>` + `f<function>`
(written only for a function > 0 or a multi-function device) + an optional port suffix (`n<phys_port_name>`
such as `np0`, or `d<dev_port>`). Bus, slot and function are decimal there and hexadecimal in the PCI
address: `enp24s0np0` (DGX H100 mlx5_0) is 0000:18:00.0, `enp220s0np0` is 0000:dc:00.0.

The device plugin selects a passed-through PF by this address (`pciAddresses`), because its `pfNames`
selector only matches functions that have a parent PF (VFs): sriov-network-device-plugin
pkg/resources/deviceSelectors.go pfNameSelector.Filter skips devices without a PF name.
"""

from __future__ import annotations

import re

_PATH_NAME = re.compile(r"^en(?:P(\d+))?p(\d+)s(\d+)(?:f(\d+))?(?:n[A-Za-z0-9_]+|d\d+)?$")


def pci_from_netdev(netdev: str) -> str | None:
    """`enp24s0np0` → `0000:18:00.0`; None for a name that does not encode its PCI location."""
    m = _PATH_NAME.match(netdev)
    if not m:
        return None
    domain, bus, slot, func = (int(x) if x else 0 for x in m.groups())
    if bus > 0xFF or slot > 0x1F or func > 7 or domain > 0xFFFF:
        return None
    return f"{domain:04x}:{bus:02x}:{slot:02x}.{func}"
