"""The lab as a `Site`: its switches are FRR in namespaces, its hosts namespaces with sshd, reached with
the lab's own user, key and known_hosts (or the namespace itself, `via="netns"`, for host commands)."""

from __future__ import annotations

import sys
from pathlib import Path

from fabric.access import Credentials, Site, SwitchEndpoint, ssh_argv
from fabric.design.intent import FabricIntent
from fabric.lab.plan import rename_ports
from fabric.lab.qos import PORT_RATE, rate_bits
from fabric.lab.state import LabState
from fabric.render import render_switch


class LabSite(Site):
    kind = "lab"
    rdma = False  # veths: iperf3 and ping stand in for perftest
    python = "/usr/bin/python3"

    def __init__(self, state: LabState, fabric: FabricIntent, *, via: str = "netns", insecure: bool = False):
        self.state, self.fabric, self.via, self.insecure = state, fabric, via, insecure
        self.line_gbps = rate_bits(state.qos_rate or PORT_RATE) / 1e9
        self.agent = str(Path(sys.executable).parent / "fabric")  # the nodes share this machine's files

    def switch(self, name: str) -> SwitchEndpoint:
        """The lab switch's FRR and its rendered interfaces.sh (lab port names). Its qos.sh is not pushed: veths take no
        `dcb`, and `lab up` realizes the script's tc tree under a port shaper (fabric.lab.qos)."""
        node, d = self.state.node(name), str(self.state.frr_dir(name))
        files = render_switch(self.fabric.switches[name], self.fabric)
        return SwitchEndpoint(device=name, target="frr", address=node.address, device_type="linux",
                              intended=rename_ports(files["frr.conf"], node.ifnames),
                              options={"confdir": d, "vty_socket": d, "lldp_socket": str(self.state.lldp_socket(name)),
                                       "workdir": str(self.state.dir / "push"),
                                       "files": {"interfaces.sh": rename_ports(files["interfaces.sh"], node.ifnames)}})

    def _cred(self) -> Credentials:
        st = self.state
        return Credentials(username=st.ssh_user, key_file=st.ssh_key,
                           known_hosts=None if self.insecure else st.known_hosts)

    def switch_credentials(self) -> Credentials:
        return self._cred()

    def host_credentials(self) -> Credentials:
        return self._cred()

    def host_address(self, host: str) -> str:
        return self.state.node(host).address

    def host_argv(self, host: str, argv: list[str]) -> list[str]:
        if self.via == "ssh":
            return ssh_argv(self._cred(), self.host_address(host), argv)
        return self.state.ns_argv(host, argv)
