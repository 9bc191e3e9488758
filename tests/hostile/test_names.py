"""Injection: every name and string is checked once at the model (fabric.model.inventory patterns),
generated names like explicit ones; shell templates quote what they interpolate; the host agent never manages
the management interface or an interface outside its intent."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from fabric.design.derive import derive
from fabric.design.intent import HostIntent
from fabric.errors import InputError
from fabric.model.load import load
from fabric.render import render_fabric
from tests.hostile.helpers import edited

LOCATED = re.compile(r"^\S+\.yaml:\d+: ")


def problems(inv: Path) -> list[str]:
    with pytest.raises(InputError) as exc:
        derive(load(inv))
    out = [str(p) for p in exc.value.problems]
    assert out and all(LOCATED.match(p) for p in out), out
    return out


@pytest.mark.parametrize("pattern", ["spine{x}", "spine{0}", "spine{", "spine{n!z}", "spine{n!r}", "{n:999999999}",
                                     "../../x{n}", "/abs{n}", "a{n}\nb", "sp ine{n}", "{n.real}", "{n[0]}"])
def test_name_patterns_are_refused_at_their_line(tmp_path: Path, pattern: str) -> None:
    inv = edited(tmp_path, "fabric.yaml", lambda d: d["topology"].update(names={"spine": pattern}))
    got = problems(inv)
    assert len(got) == 1 and ": topology.names.spine: expected " in got[0], got


def test_a_generated_name_too_long_is_reported_once(tmp_path: Path) -> None:
    inv = edited(tmp_path, "fabric.yaml", lambda d: d["topology"].update(names={"host": "h" * 62 + "{su}{h}"}))
    got = problems(inv)
    assert len(got) == 1 and "topology.names.host" in got[0], got


def test_explicit_device_name_with_a_path_is_refused(tmp_path: Path) -> None:
    inv = edited(tmp_path, "fabric.yaml", lambda d: d.update(switches=[{"name": "../x", "role": "leaf"}]))
    got = problems(inv)
    assert "switches[0].name" in got[0] and "'../x'" in got[0]


@pytest.mark.parametrize("port", ["swp1;touch /tmp/x", "swp1;touch${IFS}/tmp/x", "swp1$(id)", "swp1\nrm", "../p"])
def test_port_names_with_shell_characters_are_refused(tmp_path: Path, port: str) -> None:
    inv = edited(tmp_path, "fabric.yaml",
                 lambda d: d.update(links=[{"a": f"leaf-su1-r1:{port}", "b": "spine1:swp9"}]))
    got = problems(inv)
    assert len(got) == 1 and "links[0].a" in got[0], got


@pytest.mark.parametrize(("section", "value", "field"), [
    ("sysctls", {"net.ipv4.tcp_ecn;reboot": 1}, "sysctls"),
    ("sysctls", {"net.ipv4.tcp_ecn": "1\nreboot"}, "sysctls"),
    ("sysctls", {"net/ipv4/../../../etc/x": 1}, "sysctls"),
    ("nccl_env", {"A B": "1"}, "nccl_env"),
    ("nccl_env", {"NCCL_DEBUG": "INFO\nrm -rf /"}, "nccl_env"),
    ("management_interface", "eth0;reboot", "management_interface"),
    ("management_interface", "x" * 16, "management_interface"),
])
def test_host_strings_are_checked(tmp_path: Path, section: str, value: Any, field: str) -> None:
    inv = edited(tmp_path, "hosts.yaml", lambda d: d["hosts"]["defaults"].update({section: value}))
    got = problems(inv)
    assert any(f"hosts.defaults.{field}" in p for p in got), got


def test_a_rail_on_the_management_interface_is_refused(tmp_path: Path) -> None:
    inv = edited(tmp_path, "hosts.yaml", lambda d: d["hosts"]["defaults"]["nics"][0].update(netdev="eth0"))
    got = problems(inv)
    assert got == [f"{inv}/hosts.yaml:8: hosts.defaults.nics[0].netdev: expected a rail NIC other than the "
                   "management interface eth0, found eth0"] or (len(got) == 1 and "nics[0].netdev" in got[0]), got


def test_a_sysctl_of_another_interface_is_refused(tmp_path: Path) -> None:
    inv = edited(tmp_path, "hosts.yaml",
                 lambda d: d["hosts"]["defaults"].update(sysctls={"net.ipv4.conf.eth0.rp_filter": 0}))
    got = problems(inv)
    assert len(got) == 1 and "found eth0" in got[0], got  # once for the shared default, not per host


def _intent(**change: Any) -> dict[str, Any]:
    fabric = derive(load(Path(__file__).resolve().parents[2] / "inventories" / "example"))
    data = next(iter(fabric.hosts.values())).model_dump()
    data.update(change)
    return data


def test_host_intent_refuses_the_management_interface_and_foreign_sysctls() -> None:
    data = _intent()
    data["rails"][0]["netdev"] = data["rails"][0]["ifname"] = data["management_interface"]
    with pytest.raises(ValueError, match="other than the management interface"):
        HostIntent.model_validate(data)
    data = _intent()
    data["sysctls"]["net/ipv4/conf/docker0/rp_filter"] = "0"
    with pytest.raises(ValueError, match="found docker0"):
        HostIntent.model_validate(data)


def test_shell_templates_quote_what_they_interpolate(tmp_path: Path) -> None:
    inv = edited(tmp_path, "hosts.yaml", lambda d: d["hosts"]["defaults"].update(
        sysctls={"net.ipv4.tcp_rmem": "4096 87380 6291456"}, nccl_env={"NCCL_DEBUG_SUBSYS": "INIT NET"}))
    files = render_fabric(derive(load(inv)), k8s=False)
    host = next(v for k, v in files.items() if k.startswith("hosts/"))
    assert "sysctl -qw 'net/ipv4/tcp_rmem=4096 87380 6291456'\n" in host["roce-setup.sh"]
    assert "NCCL_DEBUG_SUBSYS='INIT NET'\n" in host["nccl.env"]
