"""FRR's rendered `interfaces.sh` and `qos.sh` in the push transaction (fabric.nos.frr.scripts, "everything
rendered is pushed"): the plan's lines, the undo written from the state read before, and — in a network namespace
of its own, with the real iproute2 — a run of the rendered interfaces.sh followed by its undo gives back the state
it found, value for value."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
from pathlib import Path

import pytest
from hypothesis import given, settings, strategies

from fabric.design.derive import derive
from fabric.model.load import load
from fabric.nos.frr import scripts
from fabric.render import render_switch
from fabric.targets import shell
from tests.conftest import ROOT, require


def _files(switch: str = "leaf-su1-r1") -> dict[str, str]:
    fabric = derive(load(ROOT / "inventories" / "example"))
    return render_switch(fabric.switches[switch], fabric)


def test_every_rendered_command_has_an_undo() -> None:
    files = _files()
    run = {n: files[n] for n in scripts.SCRIPTS}
    text, problems = scripts.undo(run, scripts.State())
    assert not problems, problems
    qos_ports = {a[a.index("dev") + 1] for a in scripts.commands(files["qos.sh"]) if a[0] == "dcb"}
    assert qos_ports and all(f"tc qdisc del dev {p} root 2>/dev/null" in text for p in qos_ports)
    # nothing existed: every created link and address goes, and the qos undo runs first (reverse order)
    assert "ip link del" in text or not any(a[:3] == ["ip", "link", "add"] for a in scripts.commands(files[
        "interfaces.sh"]))
    assert text.index("tc qdisc del") < text.index("ip addr del")


def test_plan_lines_against_the_kept_copy() -> None:
    files = _files()
    st = scripts.State(installed={"interfaces.sh": files["interfaces.sh"].replace("mtu 9216", "mtu 9000")})
    changes = scripts.changes({n: files[n] for n in scripts.SCRIPTS}, st)
    iface = [c for c in changes if c.section == "interfaces.sh"]
    assert iface and all("mtu" in c.line for c in iface)
    assert {c.op for c in iface} == {"+", "-"} and all(c.earlier for c in iface if c.op == "-")
    assert [c for c in changes if c.section == "qos.sh" and c.op == "+"]  # never applied: every line
    assert set(scripts.to_run({n: files[n] for n in scripts.SCRIPTS}, st)) == {"interfaces.sh", "qos.sh"}
    kept = scripts.State(installed={n: files[n] for n in scripts.SCRIPTS})
    assert not scripts.changes(files, kept) and not scripts.to_run(files, kept)


def test_refusals_and_device_replies_are_data() -> None:
    files = _files()
    port = next(a[a.index("dev") + 1] for a in scripts.commands(files["qos.sh"]) if a[0] == "tc")
    # a root qdisc the tool did not install: qos.sh would replace it
    _, problems = scripts.undo({"qos.sh": files["qos.sh"]}, scripts.State(root={port: ("fq_codel", "8001:")}))
    assert problems == [f"qos.sh: {port} runs a root qdisc fq_codel 8001: the tool did not install; qos.sh would "
                        "replace it: remove it on the switch first"]
    # the tool's own ets tree from an earlier apply: deleted, then the kept lines of that port replayed
    text, problems = scripts.undo({"qos.sh": files["qos.sh"]}, scripts.State(
        root={port: ("ets", "1:")}, installed={"qos.sh": files["qos.sh"]}))
    assert not problems and f"tc qdisc replace dev {port} root handle 1: ets" in text
    # a value read back that is not what the command takes never reaches the undo script
    key = next(a.partition("=")[0] for c in scripts.commands(files["interfaces.sh"]) if c[0] == "sysctl"
               for a in c[1:] if "=" in a)
    _, problems = scripts.undo({"interfaces.sh": files["interfaces.sh"]},
                               scripts.State(sysctl={key: "1; reboot"}))
    assert problems == [f"interfaces.sh: {key}: unexpected value '1; reboot' read from the switch"]
    _, problems = scripts.undo({"x.sh": "#!/bin/sh\n"}, scripts.State())
    assert not problems
    _, problems = scripts.undo({"interfaces.sh": "ip route add 10.0.0.0/8 dev lo\n"}, scripts.State())
    assert problems == ["interfaces.sh: no undo known for `ip route add 10.0.0.0/8 dev lo`"]


def _ns(ns: str, command: str) -> str:
    p = subprocess.run(["ip", "netns", "exec", ns, "sh", "-c", command], capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr[-500:]
    return p.stdout


def _seen(st: scripts.State) -> dict:
    return {"links": st.links, "addrs": st.addrs, "sysctl": st.sysctl}


@pytest.mark.root
def test_interfaces_sh_and_its_undo_in_a_namespace(tmp_path: Path) -> None:
    """The example leaf's rendered interfaces.sh on veth ports named as rendered (some already up with another
    MTU and an address, as a brownfield switch has them), then the undo written before it ran: links, MTUs,
    admin state, masters, addresses and sysctls are back as they were; bridges and VLAN links it made are gone."""
    require(os.geteuid() == 0, "root (network namespaces)")
    files = _files()
    ns = f"rf-scripts-{os.getpid()}"
    ports = sorted({a[a.index("dev") + 1] for a in scripts.commands(files["qos.sh"]) if "dev" in a})
    subprocess.run(["ip", "netns", "add", ns], check=True, timeout=30)
    try:
        setup = ["ip link set lo up"] + [f"ip link add {p} type veth peer name {p}-peer" for p in ports]
        setup += [f"ip link set dev {ports[0]} mtu 1500 up", f"ip addr add 192.0.2.1/24 dev {ports[0]}"]
        _ns(ns, " && ".join(setup))
        only = {"interfaces.sh": files["interfaces.sh"]}
        before = scripts.parse_state(_ns(ns, scripts.reads(only, str(tmp_path))))
        undo, problems = scripts.undo(only, before)
        assert not problems
        (tmp_path / "interfaces.sh").write_text(files["interfaces.sh"])
        (tmp_path / "undo.sh").write_text(undo)
        _ns(ns, f"sh {tmp_path / 'interfaces.sh'}")
        during = scripts.parse_state(_ns(ns, scripts.reads(only, str(tmp_path))))
        assert _seen(during) != _seen(before)
        assert {during.links[p]["mtu"] for p in ports} == {9216}
        # every key the script sets that this namespace has (gc_thresh* are the initial namespace's alone) is read
        # back by the real procps sysctl
        keys = sorted({a.partition("=")[0] for c in scripts.commands(files["interfaces.sh"]) if c[0] == "sysctl"
                       for a in c[1:] if "=" in a})
        present = _ns(ns, f"for k in {' '.join(keys)}; do [ -e /proc/sys/$(echo $k | tr . /) ] && echo $k; done; true")
        assert len(present.split()) >= 4 and set(during.sysctl) == set(present.split()), (present, during.sysctl)
        _ns(ns, f"sh {tmp_path / 'undo.sh'}")
        after = scripts.parse_state(_ns(ns, scripts.reads(only, str(tmp_path))))
        assert json.dumps(_seen(after), default=sorted, sort_keys=True) == \
            json.dumps(_seen(before), default=sorted, sort_keys=True)
    finally:
        subprocess.run(["ip", "netns", "del", ns], timeout=30)


@pytest.mark.root
def test_one_sysctl_read_answers_every_key_by_the_name_procps_prints() -> None:
    """shell.sysctl_read/sysctl_values/sysctl_printed against the real procps `sysctl`: one process for every key,
    a key the kernel lacks left out, a key asked with `/` (an interface name with a dot) found again."""
    require(os.geteuid() == 0, "root (network namespaces)")
    ns = f"rf-sysctl-{os.getpid()}"
    asked = ["net/ipv4/conf/rail1.1001/rp_filter", "net.ipv4.ip_forward", "net.ipv4.no_such_key"]
    subprocess.run(["ip", "netns", "add", ns], check=True, timeout=30)
    try:
        _ns(ns, "ip link add rail1.1001 type veth peer name rail1-peer && "
                "sysctl -qw net/ipv4/conf/rail1.1001/rp_filter=2 net.ipv4.ip_forward=1")
        got = shell.sysctl_values(_ns(ns, shell.sysctl_read(asked)))
    finally:
        subprocess.run(["ip", "netns", "del", ns], timeout=30)
    assert got == {"net.ipv4.conf.rail1/1001.rp_filter": "2", "net.ipv4.ip_forward": "1"}
    assert {k: got.get(shell.sysctl_printed(k)) for k in asked} == {asked[0]: "2", asked[1]: "1", asked[2]: None}


def test_plan_running_says_the_scripts_are_not_compared() -> None:
    """A saved frr.conf holds no Linux state: `plan --running` says the scripts were not compared."""
    from fabric.targets import driver

    files = _files()
    drv = driver("frr", None, "leaf-su1-r1", files["frr.conf"],
                 options={"files": {n: files[n] for n in scripts.SCRIPTS}})
    text = (ROOT / "tests" / "fixtures" / "brownfield" / "frr" / "leaf-su1-r1.conf").read_text()
    assert drv.device_diff(drv.scoped(text)).notes == [
        "interfaces.sh, qos.sh not compared: a saved frr.conf holds no Linux interface or QoS state (a plan on the "
        "switch compares them)"]


LINE_CHARS = ["a", "0", "-", "/", " ", "\t", '"', "'", "\\", "\x0b", "\u00a0", "#", "|", ">", "&", "$"]


@settings(max_examples=3000, deadline=None)
@given(strategies.text(alphabet=LINE_CHARS, max_size=40))
def test_a_line_splits_into_the_words_shlex_gives(line: str) -> None:
    """The plain-words path and shlex agree on every line, the refusals (an open quote, a trailing backslash) too."""
    try:
        want = shlex.split(line)
    except ValueError:
        with pytest.raises(ValueError):
            scripts.shell_words(line)
        return
    assert scripts.shell_words(line) == want


@pytest.mark.parametrize("inventory", ["example", "lab-2su8r"])
def test_every_rendered_script_reads_as_shlex_reads_it(inventory: str) -> None:
    """Every shipped FRR render's scripts, read once (and read again from the cache), give the commands shlex gives
    line by line; a caller's edit of the returned lists reaches no later reading."""
    fabric = derive(load(ROOT / "inventories" / inventory))
    for sw in fabric.switches.values():
        files = render_switch(sw, fabric)
        for name in (n for n in scripts.SCRIPTS if n in files):
            want = []
            for raw in files[name].splitlines():
                line = raw.strip()
                if not line or line.startswith("#") or line in ("fi", "set -eu") or line.startswith("if "):
                    continue
                argv = [a for a in shlex.split(line.rpartition("||")[2]) if a not in (">/dev/null", "2>&1")]
                if argv and argv[:3] != ["ip", "link", "show"]:
                    want.append(argv)
            got = scripts.commands(files[name])
            assert got == want
            assert scripts._read_commands(files[name], ("sysctl", "dcb")) == [a for a in want if a[0] in (
                "sysctl", "dcb")]  # what the state read asks for, its other lines not split
            got[0].append("edited")
            assert scripts.commands(files[name]) == want
