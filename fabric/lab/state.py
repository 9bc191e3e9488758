"""The lab's state file: everything `lab up` created, so `lab down` removes exactly that.

`state.json` lives in the state dir, `/run/roce-fabric/lab/<fabric>/` by default; the environment
variable `FABRIC_LAB_STATE` replaces the base `/run/roce-fabric/lab`. `FABRIC_LAB_INSTANCE` names a lab
instance: a second lab of the same inventory on this machine, with its own state dir (`<fabric>+<instance>`),
namespace and link names and management access subnet (fabric.lab.plan); every lab command of that
environment finds that instance.
"""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict

from fabric.errors import UsageError
from fabric.safefile import replace_file

DEFAULT_BASE = Path("/run/roce-fabric/lab")
INSTANCE_ENV = "FABRIC_LAB_INSTANCE"
_INSTANCE = re.compile(r"^[a-z0-9]{1,8}$")


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class NodeState(_Model):
    """One switch or host: its namespace, management address and the processes running in it."""

    name: str
    kind: Literal["switch", "host"]
    netns: str
    management_address: str  # with prefix length, 198.18.0.3/24 (the inventory's, inside the lab)
    access_address: str = ""  # with prefix length: the address this machine reaches the node at, when not that one
    management_ifname: str  # inside the namespace, eth0
    management_veth: str  # root-namespace end, on the management bridge
    ifnames: dict[str, str] = {}  # port name → Linux ifname (differ only when the port name does not fit)
    pids: dict[str, int] = {}  # zebra/bgpd/staticd/sshd/lldpd → pid

    @property
    def address(self) -> str:
        """The address this machine reaches the node at, without prefix length (what ssh, netmiko and Ansible
        connect to): the management address, or in a named instance its access address."""
        return (self.access_address or self.management_address).split("/")[0]

    @property
    def addresses(self) -> list[str]:
        """Every address the node's sshd listens on: the management address (the lab's nodes reach each other at
        the inventory's addresses) and the access address."""
        return list(dict.fromkeys([self.management_address.split("/")[0], self.address]))


class LinkState(_Model):
    a: str
    a_port: str
    a_ifname: str
    b: str
    b_port: str
    b_ifname: str


class End(_Model):
    """One end of a lab cable: the device `ifname` of the node's `port` (node "": an end in the lab's namespace of
    unplugged cable ends, port "") and its MAC address, which the port keeps whatever cable is in it."""

    node: str
    port: str
    ifname: str
    mac: str


class Cable(_Model):
    """A veth pair as it is cabled: its two ends."""

    a: End
    b: End


class Fault(_Model):
    kind: Literal["link", "throttle", "swap-cables", "cross-uplinks", "pull"]
    node: str
    port: str
    ifname: str
    rate: str | None = None  # throttle: tc rate, e.g. 100mbit
    other: str | None = None  # swap-cables, cross-uplinks: the other port, DEV:PORT
    was: list[Cable] = []  # cable faults: the cables as `lab up` made them, put back by `lab fault clear`
    now: list[Cable] = []  # cable faults: the cables made in their place


class LabState(_Model):
    """The whole lab. `phase` is `creating` until `lab up` has finished, then `up`."""

    fabric: str
    inventory: str
    prefix: str
    instance: str = ""  # FABRIC_LAB_INSTANCE at `lab up`; "" for the default lab
    state_dir: str
    phase: Literal["creating", "up"] = "creating"
    bridge: str | None = None
    bridge_address: str | None = None  # root namespace's address on the management bridge
    namespaces: list[str] = []
    root_links: list[str] = []  # root-namespace veth ends and the bridge
    nodes: dict[str, NodeState] = {}
    links: list[LinkState] = []
    faults: list[Fault] = []
    ssh_user: str = "root"
    ssh_key: str = ""  # private key path; the public key is next to it with .pub
    known_hosts: str = ""
    up_seconds: float | None = None  # lab up → converged
    qos: str = ""  # switch egress queues: "ets+red" (the rendered tree) or "htb" (fabric.lab.qos), at qos_rate
    qos_rate: str = ""

    # -- paths ------------------------------------------------------------------------------------
    @property
    def dir(self) -> Path:
        return Path(self.state_dir)

    def frr_dir(self, node: str) -> Path:
        return self.dir / "frr" / node

    def ssh_dir(self) -> Path:
        return self.dir / "ssh"

    def lldp_dir(self) -> Path:
        return self.dir / "lldp"

    def lldp_socket(self, node: str) -> Path:
        """The control socket of the node's lldpd (its `lldpctl` and `lldpcli` wrappers pass it)."""
        return self.lldp_dir() / f"{node}.sock"

    @property
    def unplugged_netns(self) -> str:
        """The namespace that holds cable ends pulled out of their ports (created by the first `lab fault pull`)."""
        return f"{self.prefix}-{instance_key(self.fabric, self.instance)}.unplugged"

    def netns_of(self, node: str) -> str:
        """The namespace of a node, or of the unplugged cable ends for `""`."""
        return self.node(node).netns if node else self.unplugged_netns

    def node_bin(self, node: str) -> Path:
        """Commands of the node (its FRR's `vtysh`, its lldpd's `lldpctl`), first on its PATH in `lab exec` and
        `lab ssh`."""
        return self.dir / "bin" / node

    def node_path(self, node: str) -> str:
        return f"{self.node_bin(node)}:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

    # -- helpers for other capabilities -----------------------------------------------------------
    def node(self, name: str) -> NodeState:
        if name not in self.nodes:
            raise UsageError(f"no node {name!r} in lab {self.fabric}; nodes: {', '.join(self.nodes)}")
        return self.nodes[name]

    def ns_argv(self, node: str, argv: list[str]) -> list[str]:
        """argv that runs `argv` inside the node's namespace, with the node's commands first on PATH."""
        return ["ip", "netns", "exec", self.node(node).netns, "env", f"PATH={self.node_path(node)}", *argv]

    def run(self, node: str, argv: list[str], *, timeout: float = 30,
            check: bool = False) -> subprocess.CompletedProcess[str]:
        """Run a command in a node's namespace and capture its output (text)."""
        return subprocess.run(self.ns_argv(node, argv), capture_output=True, text=True, timeout=timeout,
                              check=check)

    def vtysh(self, node: str, *commands: str, timeout: float = 15) -> str:
        """Run vtysh commands in a switch's FRR instance; returns stdout."""
        argv = ["vtysh", "--vty_socket", str(self.frr_dir(node))]
        for c in commands:
            argv += ["-c", c]
        return self.run(node, argv, timeout=timeout).stdout

    def save(self) -> None:
        self.dir.mkdir(parents=True, exist_ok=True)
        replace_file(self.dir / "state.json", self.model_dump_json(indent=2) + "\n", 0o644)


def instance() -> str:
    """The lab instance this process works on: `FABRIC_LAB_INSTANCE`, "" (the default lab) when unset."""
    value = os.environ.get(INSTANCE_ENV, "")
    if value and not _INSTANCE.match(value):
        raise UsageError(f"{INSTANCE_ENV}: expected 1 to 8 lowercase letters or digits, found {value!r}")
    return value


def instance_key(fabric_name: str, lab_instance: str) -> str:
    """The fabric's name qualified by its instance (`example+b`; `example` for the default lab): its state dir's
    name and the root of its kernel-visible names. `+` is in no fabric name, so no two keys are alike (and,
    unlike `@`, virtme-ng's --rwdir takes it: the VM lab shares its state dir with the guest)."""
    return f"{fabric_name}+{lab_instance}" if lab_instance else fabric_name


def state_dir(fabric_name: str) -> Path:
    """`$FABRIC_LAB_STATE/<key>` or `/run/roce-fabric/lab/<key>`, key as in `instance_key`."""
    base = os.environ.get("FABRIC_LAB_STATE")
    return (Path(base) if base else DEFAULT_BASE) / instance_key(fabric_name, instance())


def load_state(fabric_name: str, *, required: bool = True) -> LabState | None:
    """The state of the fabric's lab, or UsageError (None when `required` is false) if there is none."""
    path = state_dir(fabric_name) / "state.json"
    if not path.exists():
        if required:
            named = f" instance {instance()!r}" if instance() else ""
            raise UsageError(f"no lab for fabric {fabric_name!r}{named} (no {path}); run `fabric lab up` first")
        return None
    return LabState.model_validate_json(path.read_text())
