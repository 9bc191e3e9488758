"""The lab as a `Site`: its switches are FRR in namespaces, its hosts namespaces with sshd, reached with
the lab's own user, key and known_hosts (or the namespace itself, `via="netns"`, for host commands). The VM lab
(`lab up --kernel vm`, fabric.lab.vm) is a Site too: its leaf and hosts are namespaces in the guest. `lab_site`
opens the one the lab's state names."""

from __future__ import annotations

import shlex
import sys
from pathlib import Path

from fabric.access import COMMAND, Credentials, Site, SwitchEndpoint, ssh_argv
from fabric.design.intent import FabricIntent
from fabric.errors import UsageError
from fabric.lab import vm
from fabric.lab.plan import rename_ports
from fabric.lab.qos import PORT_RATE, rate_bits
from fabric.lab.state import LabState, load_state
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


class VmSite(Site):
    """The VM lab: one leaf and its hosts in namespaces of the guest, the fabric cut to them (fabric.lab.vm.realized),
    every command run there through the guest's command directory (fabric.lab.vm.command_argv). The leaf runs the
    rendered tc tree, not FRR: the FRR driver reads its counters; nothing is pushed to it."""

    kind = "lab"
    rdma = False  # iperf3 and ping for the congestion and latency checks, at the VM's port rate
    soft_roce = True  # each host's rail has a Soft-RoCE device (fabric.lab.vm.soft_roce_lines): ib_write_bw

    def __init__(self, lab: vm.VmLab, fabric: FabricIntent):
        self.lab, self.fabric = lab, vm.realized(fabric, lab)
        self.line_gbps = rate_bits(lab.rate) / 1e9

    def switch(self, name: str) -> SwitchEndpoint:
        return SwitchEndpoint(device=name, target="frr", address=f"{name} (VM lab)", device_type=COMMAND,
                              intended="", options={"command": vm.command_argv(self.lab, name, merged=True)})

    def switch_credentials(self) -> Credentials:
        return Credentials(username=None)

    def host_credentials(self) -> Credentials:
        return Credentials(username=None)

    def host_address(self, host: str) -> str:
        return f"{host} (VM lab)"

    def host_argv(self, host: str, argv: list[str]) -> list[str]:
        return [*vm.command_argv(self.lab, host), shlex.join(argv)]


def lab_site(fabric: FabricIntent, *, via: str = "netns", insecure: bool = False) -> Site:
    """The running lab of this fabric: the VM lab where `lab up --kernel vm` started one, else the namespace lab."""
    if via not in ("netns", "ssh"):
        raise UsageError(f"--via: expected netns or ssh, found {via!r}")
    st, guest = load_state(fabric.name, required=False), vm.load(fabric.name, required=False)
    if guest is not None:
        if st is not None:
            raise UsageError(f"--lab: both a namespace lab and a VM lab of {fabric.name} exist ({st.dir}, "
                             f"{guest.dir}); `fabric lab down` one of them")
        if via != "netns":
            raise UsageError("--via ssh: the VM lab's nodes run no sshd; expected --via netns (the default)")
        return VmSite(guest, fabric)
    st = st or load_state(fabric.name)  # no lab at all: its UsageError
    assert st is not None
    if st.phase != "up":
        raise UsageError(f"--lab: expected a running lab of {fabric.name}, found one in phase {st.phase!r} "
                         "(fabric lab up)")
    return LabSite(st, fabric, via=via, insecure=insecure)
