"""What the lab will create for a fabric: namespace, interface and link names. Pure, no I/O.

Inside a node's namespace interfaces keep the inventory's port names (swp1, rail1) so the rendered
configs apply unchanged; a port name that is not a valid Linux ifname (over 15 characters, or with
`/`, `:` or spaces) is mapped to a short one and the mapping is kept in the state file. Names in the
root namespace (management bridge and veth ends) start with the lab prefix and a tag of the fabric
name and instance, namespaces with the prefix, fabric name and instance (`rf-example-spine1`,
`rf-example+b-spine1`), so two labs, also two instances of one inventory, never collide. A named instance
is reached from this machine at access addresses: the management addresses moved into a subnet of its own
(`access_networks`), added beside them on each node's management interface, so its management network
takes no route of another lab's.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterator
from ipaddress import IPv4Interface, IPv4Network

from fabric.design.intent import FabricIntent
from fabric.errors import UsageError
from fabric.lab.state import LabState, LinkState, NodeState, instance_key

IFNAMSIZ = 15
ACCESS_POOL = IPv4Network("198.18.0.0/15")  # RFC 2544 benchmarking range: the named instances' access subnets
_BAD = re.compile(r"[/:\s]")


def valid_ifname(name: str) -> bool:
    return 0 < len(name) <= IFNAMSIZ and not _BAD.search(name) and name not in (".", "..")


def tag(fabric: str, instance: str = "") -> str:
    return hashlib.sha1(instance_key(fabric, instance).encode()).hexdigest()[:4]


def netns_name(prefix: str, fabric: str, node: str, instance: str = "") -> str:
    return f"{prefix}-{instance_key(fabric, instance)}-{node}"


def build_state(fabric: FabricIntent, *, inventory: str, prefix: str, management: IPv4Network,
                state_dir: str, instance: str = "") -> LabState:
    """The lab's full plan as a LabState in phase `creating` (nothing exists yet)."""
    t = tag(fabric.name, instance)
    st = LabState(fabric=fabric.name, inventory=inventory, prefix=prefix, instance=instance, state_dir=state_dir,
                  bridge=f"{prefix}-{t}-mgmt")
    nodes = [(n, "switch", sw.management, "eth0") for n, sw in fabric.switches.items()]
    nodes += [(n, "host", h.management_address, h.management_interface) for n, h in fabric.hosts.items()]
    subnets = set()
    used = set()
    for i, (name, kind, mgmt, mif) in enumerate(nodes):
        try:
            iface = IPv4Interface(mgmt)
        except ValueError as exc:
            raise UsageError(f"{name}: management address {mgmt!r} is not an IPv4 address/prefix") from exc
        if not iface.network.subnet_of(management):
            raise UsageError(f"{name}: management address {mgmt} is outside the lab management network "
                             f"{management} (lab.management)")
        subnets.add(iface.network)
        used.add(iface.ip)
        st.nodes[name] = NodeState(name=name, kind=kind,  # type: ignore[arg-type]
                                   netns=netns_name(prefix, fabric.name, name, instance),
                                   management_address=mgmt, management_ifname=mif,
                                   management_veth=f"{prefix}-{t}m{i}")
    if len(subnets) != 1:
        found = sorted(map(str, subnets))
        raise UsageError(f"lab needs every management address in one subnet, found {found}")
    net = subnets.pop()
    free = [a for a in reversed(list(net.hosts())) if a not in used]
    if not free:
        raise UsageError(f"no free address left in management subnet {net} for the lab bridge")
    st.bridge_address = f"{free[0]}/{net.prefixlen}"
    for name in [st.bridge] + [n.management_veth for n in st.nodes.values()]:
        if not valid_ifname(name):
            raise UsageError(f"lab interface name {name!r} is longer than {IFNAMSIZ} characters")
    # cables: port name → ifname inside the namespace, unique per node
    for ln in fabric.links:
        a_if = _ifname(st.nodes[ln.a], ln.a_port)
        b_if = _ifname(st.nodes[ln.b], ln.b_port)
        st.links.append(LinkState(a=ln.a, a_port=ln.a_port, a_ifname=a_if,
                                  b=ln.b, b_port=ln.b_port, b_ifname=b_if))
    return st


def access_networks(subnet: IPv4Network, management: IPv4Network) -> Iterator[IPv4Network]:
    """Where a named instance may put its access subnet: subnets of the management subnet's size in ACCESS_POOL,
    highest first, outside the inventory's lab management network (the default lab's)."""
    if subnet.prefixlen < ACCESS_POOL.prefixlen:
        raise UsageError(f"lab instance: management subnet {subnet} is larger than the access pool {ACCESS_POOL}")
    for net in reversed(list(ACCESS_POOL.subnets(new_prefix=subnet.prefixlen))):
        if not net.overlaps(management) and not net.overlaps(subnet):
            yield net


def set_access(st: LabState, access: IPv4Network) -> None:
    """Reach the lab at `access`: each node's management address and the bridge's moved into it, same offsets."""
    assert st.bridge_address
    subnet = IPv4Interface(st.bridge_address).network

    def moved(address: str) -> str:
        offset = int(IPv4Interface(address).ip) - int(subnet.network_address)
        return f"{access.network_address + offset}/{access.prefixlen}"

    for n in st.nodes.values():
        n.access_address = moved(n.management_address)
    st.bridge_address = moved(st.bridge_address)


def _ifname(node: NodeState, port: str) -> str:
    if port in node.ifnames:
        return node.ifnames[port]
    name = port if valid_ifname(port) else ""
    if not name:
        short = _BAD.sub("_", port)[:IFNAMSIZ]
        taken = set(node.ifnames.values())
        name = short if valid_ifname(short) and short not in taken else f"p{len(node.ifnames)}"
    node.ifnames[port] = name
    return name


def rename_ports(text: str, ifnames: dict[str, str]) -> str:
    """Replace port names in rendered text with their Linux ifnames where they differ."""
    for port, ifname in sorted(ifnames.items(), key=lambda kv: -len(kv[0])):
        if port != ifname:
            text = re.sub(rf"(?<![\w/:.-]){re.escape(port)}(?![\w/:.-])", ifname, text)
    return text
