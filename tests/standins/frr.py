"""FRR white-box stand-in for what a plan reads (the real FRR, with apply, runs in the lab:
tests/nos/frr/test_driver.py).

A bash shell (netmiko `linux`, as on the switch) whose `/etc/frr` is the device's own `etc-frr/` (a private mount
namespace: tests.standins.device), so the copies of the setup scripts the last apply kept are read where the driver
reads them (`/etc/frr/roce-fabric/`). On its PATH first:

* `vtysh -c 'show running-config'` — `running.conf` with the banner FRR 10.2 prints before it (`Building
  configuration...`, `Current configuration:`); `-c 'show bgp summary json'` — every `neighbor <port> interface` of
  the running config Established, in FRR's `ipv4Unicast.peers` shape; `-c 'show ip route json'` — `{}`. Several
  `-c`: one answer after another, as vtysh prints them. Any other command: `% Unknown command`, exit 1.
* `ip`, `tc`, `dcb` — the device's `replies/<command line>` file where the test put one (a malformed reply the
  switch gives back; the harness puts each switch's own `ip -j addr show` there), else the real iproute2 tool in
  the stand-ins' namespace.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import sys
from pathlib import Path

from tests.standins.common import dev_dir

BANNER = "Building configuration...\n\nCurrent configuration:\n!\n"


def vtysh(d: Path, args: list[str]) -> int:
    commands = [args[i + 1] for i, a in enumerate(args[:-1]) if a == "-c"]
    running = (d / "running.conf").read_text() if (d / "running.conf").exists() else ""
    for command in commands:
        if command == "show running-config":
            sys.stdout.write(BANNER + running)
        elif command == "show bgp summary json":
            peers = {p: {"state": "Established"} for p in re.findall(r"^ neighbor (\S+) interface", running, re.M)}
            sys.stdout.write(json.dumps({"ipv4Unicast": {"peers": peers, "totalPeers": len(peers)}}, indent=2) + "\n")
        elif command == "show ip route json":
            sys.stdout.write("{}\n")
        else:
            sys.stdout.write("% Unknown command: " + command + "\n")
            return 1
    return 0


def tool(d: Path, prog: str, args: list[str]) -> int:
    reply = d / "replies" / " ".join([prog, *args])
    if reply.is_file():
        sys.stdout.write(reply.read_text())
        return 0
    bindir = str(d / "bin")
    path = os.pathsep.join(p for p in os.environ.get("PATH", "").split(os.pathsep) if p != bindir)
    real = shutil.which(prog, path=path)
    if real is None:
        sys.stderr.write(f"{prog}: command not found\n")
        return 127
    os.execv(real, [prog, *args])
    return 1


def main(argv: list[str]) -> int:
    prog, args = Path(argv[0]).name, argv[1:]
    return vtysh(dev_dir(), args) if prog == "vtysh" else tool(dev_dir(), prog, args)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
