"""The EOS running-config fixtures (tests/fixtures/running/eos, see SOURCE.md) stay what `plan --running` needs.

One file per switch of inventories/eos-example; each holds the unmanaged sections a real switch has, and a fabric
part that differs from today's render only where SOURCE.md says it does (a small, real plan diff).
"""

from __future__ import annotations

import re

import pytest

from tests.conftest import ROOT
from tests.nos.eos.test_render import EOS_EXAMPLE, Eos, intent_of, parse, render_ours

FIXTURES = ROOT / "tests" / "fixtures" / "running" / "eos"
SWITCHES = ["spine1", "spine2", "leaf-su1-r1", "leaf-su1-r2"]
UNMANAGED = [  # (what, a top-level line or section pattern every fixture must have)
    ("header", r"! Command: show running-config"),
    ("no aaa root", r"no aaa root"),
    ("local user", r"username admin privilege 15 role network-admin secret sha512 \$6\$\S+"),
    ("TACACS server", r"tacacs-server host \S+ vrf MGMT key 7 \S+"),
    ("AAA", r"aaa authentication login default group TACACS local"),
    ("AAA", r"aaa authorization exec default group TACACS local"),
    ("SNMP", r"snmp-server community \S+ ro"),
    ("NTP", r"ntp server vrf MGMT \S+.*"),
    ("syslog", r"logging vrf MGMT host \S+"),
    ("management VRF", r"vrf instance MGMT"),
    ("management route", r"ip route vrf MGMT 0\.0\.0\.0/0 \S+"),
    ("eAPI", r"management api http-commands"),
    ("LLDP", r"lldp management-address Management1"),
    ("spanning tree", r"spanning-tree mode mstp"),
]


@pytest.fixture(scope="module")
def rendered(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Eos]:
    return render_ours(EOS_EXAMPLE, tmp_path_factory.mktemp("eos-render"))


def fixture(switch: str) -> tuple[str, Eos]:
    text = (FIXTURES / f"{switch}.cfg").read_text()
    return text, parse(text)


def test_one_fixture_per_switch_of_the_example() -> None:
    assert sorted(p.stem for p in FIXTURES.glob("*.cfg")) == sorted(s.name for s in intent_of(EOS_EXAMPLE).switches)


@pytest.mark.parametrize("switch", SWITCHES)
def test_fixture_holds_the_unmanaged_sections(switch: str) -> None:
    text, cfg = fixture(switch)
    lines = text.splitlines()
    assert re.fullmatch(rf"! device: {re.escape(switch)} \(DCS-7060DX5-64S, EOS-4\.3\d\.\d+F\)", lines[1])
    assert lines[-1] == "end" and not any(x != x.rstrip() or "\t" in x for x in lines)
    assert all((len(x) - len(x.lstrip(" "))) % 3 == 0 for x in lines), "EOS indents by 3 spaces"
    missing = [what for what, pattern in UNMANAGED if not any(re.fullmatch(pattern, x) for x in lines)]
    assert not missing, missing
    mgmt = cfg.interfaces["Management1"].lines()
    assert "vrf MGMT" in mgmt and any(x.startswith("ip address ") for x in mgmt)
    api = next(n for n in cfg.top if n.line == "management api http-commands")
    assert "no shutdown" in api.lines() and "vrf MGMT" in api.lines()
    bare = [n for n, node in cfg.interfaces.items() if n.startswith("Ethernet") and not node.children]
    assert len(bare) > 50, "unused front-panel ports appear as bare stanzas"


@pytest.mark.parametrize("switch", SWITCHES)
def test_fabric_part_is_an_older_render(rendered: dict[str, Eos], switch: str) -> None:
    """Every interface and BGP neighbour the tool renders is on the switch; some owned lines differ."""
    _, cfg = fixture(switch)
    ours = rendered[switch]
    assert set(ours.interfaces) - {"Management1"} <= set(cfg.interfaces)
    assert cfg.bgp.line == ours.bgp.line
    assert sorted(cfg.bgp.lines("neighbor interface")) == sorted(ours.bgp.lines("neighbor interface"))
    owned = [n for n in ours.interfaces if n != "Loopback0"]
    changed = [n for n in owned if cfg.interfaces[n].lines() != ours.interfaces[n].lines()
               or [c.lines() for c in cfg.interfaces[n].children] != [c.lines() for c in ours.interfaces[n].children]]
    if sorted(cfg.bgp.lines()) != sorted(ours.bgp.lines()):  # spines: only their BGP timers are older (SOURCE.md)
        changed.append(cfg.bgp.line)
    assert changed, "the fixture must give a plan something to change"
