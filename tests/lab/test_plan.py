"""The lab's names and addresses per instance, planned without creating anything (fabric.lab.plan)."""

from __future__ import annotations

from ipaddress import IPv4Interface, IPv4Network
from pathlib import Path

import pytest

from fabric.design.load import load_fabric
from fabric.errors import UsageError
from fabric.lab.plan import ACCESS_POOL, IFNAMSIZ, access_networks, build_state, set_access

ROOT = Path(__file__).resolve().parents[2]


def _plan(instance: str, prefix: str = "abcd"):
    fabric = load_fabric(ROOT / "inventories" / "lab-2su8r", target="frr").intent  # the tests' largest lab
    return build_state(fabric, inventory="inv", prefix=prefix, management=IPv4Network("198.18.0.0/16"),
                       state_dir="/x", instance=instance)


def _root_names(st) -> set[str]:
    return {st.bridge, *(n.management_veth for n in st.nodes.values())}


def test_an_instance_names_everything_apart_within_ifnamsiz() -> None:
    default, named = _plan(""), _plan("t4194303")  # the longest prefix and instance
    assert {n.netns for n in default.nodes.values()}.isdisjoint(n.netns for n in named.nodes.values())
    assert _root_names(default).isdisjoint(_root_names(named))
    longest = max(_root_names(named) | _root_names(default), key=len)
    assert len(longest.encode()) <= IFNAMSIZ, longest
    assert named.nodes["spine1"].netns == "abcd-lab-2su8r+t4194303-spine1"
    assert default.nodes["spine1"].netns == "abcd-lab-2su8r-spine1"  # the default lab's names as they were


def test_access_addresses_keep_offsets_in_a_subnet_of_their_own() -> None:
    st = _plan("b")
    subnet = IPv4Interface(st.bridge_address).network
    access = next(access_networks(subnet, IPv4Network("198.18.0.0/16")))
    assert access.subnet_of(ACCESS_POOL) and not access.overlaps(IPv4Network("198.18.0.0/16"))
    set_access(st, access)
    for n in st.nodes.values():
        inside, outside = IPv4Interface(n.management_address), IPv4Interface(n.access_address)
        assert outside.network == access and int(outside.ip) - int(access[0]) == int(inside.ip) - int(subnet[0])
        assert n.address == str(outside.ip) and n.addresses == [str(inside.ip), str(outside.ip)]
    assert IPv4Interface(st.bridge_address).network == access


def test_a_management_subnet_wider_than_the_pool_is_refused() -> None:
    with pytest.raises(UsageError, match="larger than the access pool"):
        next(access_networks(IPv4Network("10.0.0.0/8"), IPv4Network("10.0.0.0/8")))
