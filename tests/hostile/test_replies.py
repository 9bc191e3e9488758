"""Parsers of device and host replies: linear time and bounded size for `ethtool -m`
(`fabric optics`), malformed host dumps of `fabric counters` as located problems (never a traceback), control
characters escaped before a reply is printed, YAML 1.1 hex/sexagesimal integers of a few KB in an inventory as a
located problem, and no paramiko thread traceback when a peer closes before the SSH banner."""

from __future__ import annotations

import contextlib
import shutil
import signal
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from fabric.accept.counters import parse_host_dump, rates
from fabric.errors import InputError
from fabric.parsers.transceiver import parse_ethtool_module
from tests.conftest import ROOT

OPTICS = ROOT / "tests" / "fixtures" / "optics" / "ethtool_m_qsfp_plus_sff8636_avago.txt"


@contextlib.contextmanager
def deadline(seconds: int) -> Iterator[None]:
    """Fail (not hang) when the block runs past `seconds`: a parser with backtracking takes minutes."""
    def expired(*_a: object) -> None:
        raise TimeoutError(f"still parsing after {seconds} s")
    old = signal.signal(signal.SIGALRM, expired)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


@pytest.mark.parametrize("reply", [
    " " * 4096 + "\n\n" + " " * 4096,  # a 4 KB line of blanks and a blank line: cubic for the old line regex
    "Identifier : 0x11\n" + " " * 4096 + "\n\n",
    "Identifier : 0x11\nModule voltage : " + "1" * 4096 + "x V\n",  # digits without a unit
    "Identifier : 0x11\n" + " " * 4096 + "(Channel 1 : 3\n",
    "Identifier : 0x11\nLaser tx bias current" + " (Channel 1)" * 400 + " : 6.6 mA\n",
])
def test_ethtool_m_parses_in_linear_time(reply: str) -> None:
    with deadline(5), contextlib.suppress(InputError):
        parse_ethtool_module(reply)


def test_ethtool_m_of_8_mb_is_refused_by_its_size() -> None:
    reply = OPTICS.read_text() + "Module temperature high alarm : On\n" * 250_000
    with deadline(5), pytest.raises(InputError, match="at most 1024 KiB"):
        parse_ethtool_module(reply, "ethtool -m rail1")
    assert parse_ethtool_module(OPTICS.read_text()).identifier  # the real reply still parses


GOOD = """@@ rail1 ethtool
NIC statistics:
     rx_prio3_pause: 5
@@ rail1 link
[{"ifname":"rail1","stats64":{"rx":{"bytes":10},"tx":{"bytes":0}}}]
@@ rail1 hw
     np_cnp_sent: 1
"""
MALFORMED = {
    "short marker": "@@ rail2\n",
    "bare marker": "@@ \n",
    "link not a list of links": "@@ rail2 link\n[1, 2]\n",
    "link stats of another type": '@@ rail2 link\n[{"stats64": 5}]\n',
    "link direction of another type": '@@ rail2 link\n[{"stats64": {"rx": [1]}}]\n',
    "deep link JSON": "@@ rail2 link\n" + "[" * 100_000 + "]" * 100_000 + "\n",
    "huge hw counter": "@@ rail2 hw\n     np_cnp_sent: " + "9" * 5000 + "\n",
    "unicode digits": "@@ rail2 hw\n     np_cnp_sent: ²³\n",
    "huge ethtool counter": "@@ rail2 ethtool\nNIC statistics:\n     rx_prio3_pause: " + "9" * 5000 + "\n",
    "huge link counter": '@@ rail2 link\n[{"stats64": {"rx": {"bytes": ' + "9" * 400 + "}}}]\n",
}


@pytest.mark.parametrize("case", sorted(MALFORMED))
def test_a_malformed_host_reply_is_a_located_problem(case: str) -> None:
    problems: list[str] = []
    got = parse_host_dump(GOOD + MALFORMED[case], "gpu1", problems)
    assert got["rail1"]["ethtool:rx_prio3_pause"] == 5 and got["rail1"]["hw:np_cnp_sent"] == 1
    assert all(0 <= v < 1 << 64 for ports in got.values() for v in ports.values())
    if case not in ("link stats of another type", "link direction of another type", "huge link counter"):
        assert problems and all(p.startswith("gpu1: ") for p in problems), problems
    rates({"gpu1": {p: {k: 0 for k in cs} for p, cs in got.items()}}, 1.0)  # and the rates of it compute


def test_replies_are_printed_with_control_characters_escaped(capsys: pytest.CaptureFixture[str]) -> None:
    from fabric.cli.optics import _table
    from fabric.optics.collect import OpticsRow

    mod = parse_ethtool_module(OPTICS.read_text().replace("AVAGO", "AVAGO\x1b[2J[bold red]x[/]"))
    row = OpticsRow(side="host", device="gpu1", port="rail1", peer="leaf1:swp1", module=mod)
    _table([row], all_rows=True)
    out = capsys.readouterr().out
    assert "\x1b[2J" not in out and "\\x1b[2J" in out and "[bold red]x[/]" in out


@pytest.mark.parametrize("value", ["0x" + "f" * 4000, "1:" + "59:" * 2000 + "59", "0b" + "1" * 5000])
def test_huge_yaml_1_1_integers_in_an_inventory_are_located(tmp_path: Path, value: str) -> None:
    from fabric.model.load import load

    inv = tmp_path / "inv"
    shutil.copytree(ROOT / "inventories" / "example", inv)
    (inv / "access.yaml").write_text(f"access:\n  port: {value}\n")
    with pytest.raises(InputError) as exc:
        load(inv)
    assert str(exc.value).startswith(f"{inv / 'access.yaml'}:2: access.port: expected an integer of at most 64 bits")


def test_no_paramiko_traceback_when_the_peer_closes_before_the_banner() -> None:
    """A TCP listener on loopback that closes every connection at once: the switch answers no SSH banner."""
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(8)

    def serve() -> None:
        with contextlib.suppress(OSError):
            while True:
                srv.accept()[0].close()

    threading.Thread(target=serve, daemon=True).start()
    code = f"""
from fabric.access import Credentials, SwitchEndpoint
from fabric.targets.session import conn_errors, open_driver, reason
ep = SwitchEndpoint(device="sw", target="frr", address="127.0.0.1", device_type="linux", intended="")
try:
    open_driver(ep, Credentials(username="u", password="x", port={srv.getsockname()[1]}), timeout=3)
except conn_errors() as exc:
    print("unreachable:", reason(exc))
"""
    try:
        p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, cwd=ROOT)
    finally:
        srv.close()
    assert "unreachable:" in p.stdout, p.stdout + p.stderr
    assert "Traceback" not in p.stderr and "Exception (client)" not in p.stderr, p.stderr


def _frr_leaves(tmp_path: Path) -> tuple[Path, dict[str, dict[str, str]], dict[str, str]]:
    """The example fabric (FRR) with its access pointed at the stand-ins' keys: each leaf's rendered files and its
    management address."""
    from fabric.design.derive import derive
    from fabric.model.load import load
    from fabric.render import render_switch
    from tests.push.test_standins import _inventory

    inv = _inventory("example", tmp_path / "inv", tmp_path)
    fabric = derive(load(inv))
    names = ("leaf-su1-r1", "leaf-su1-r2")
    return (inv, {n: render_switch(fabric.switches[n], fabric) for n in names},
            {n: fabric.switches[n].management.split("/")[0] for n in names})


DEEP = "[" * 100_000 + "]" * 100_000


@pytest.mark.root
@pytest.mark.parametrize("case", ["unbalanced quote in the kept qos.sh", "deeply nested ip -j reply"])
def test_a_malformed_frr_reply_is_one_located_problem_and_the_other_switch_is_planned(tmp_path: Path,
                                                                                    case: str) -> None:
    """`fabric plan` of two FRR leaves in sync with their intent (tests/standins/frr.py), one of which answers
    badly: the copy of qos.sh the last apply kept on it has an unbalanced quote (a hand edit), or its
    `ip -j -d link show` is 100,000 levels deep. That leaf is one located problem; the other is planned."""
    from tests.push.test_standins import _json, _prereq, run
    from tests.standins.harness import standins

    _prereq()
    inv, files, addrs = _frr_leaves(tmp_path)
    bad, good = "leaf-su1-r1", "leaf-su1-r2"
    with standins(tmp_path, {n: ("frr", a) for n, a in addrs.items()}) as net:
        for name, d in net.devices.items():
            (d / "running.conf").write_text(files[name]["frr.conf"])
            kept = d / "etc-frr" / "roce-fabric"
            kept.mkdir(parents=True)
            for script in ("interfaces.sh", "qos.sh"):
                (kept / script).write_text(files[name][script])
        d = net.devices[bad]
        if case.startswith("unbalanced"):
            qos = files[bad]["qos.sh"].splitlines()
            line = next(i for i, ln in enumerate(qos, 1) if ln.startswith("tc qdisc replace"))
            qos[line - 1] += " # 'hand edit"
            (d / "etc-frr" / "roce-fabric" / "qos.sh").write_text("\n".join(qos) + "\n")
            expected = (f"reply of `cat roce-fabric/qos.sh`, line {line}: expected a command line of the rendered "
                        "qos.sh (No closing quotation), found ")
        else:
            (d / "replies").mkdir(exist_ok=True)  # the harness's own `ip -j addr show` is there
            (d / "replies" / "ip -j -d link show").write_text(DEEP)
            expected = ("reply of `ip -j -d link show`, line 1: expected JSON nested at most 64 levels, found deeper "
                        "nesting")
        p = run(net, "plan", str(inv), "--limit", f"{bad},{good}", "--format", "json", state=tmp_path / "state")
    assert "Traceback" not in p.stderr, p.stderr[-2000:]
    devices = _json(p)
    assert p.returncode == 1, p.stdout + p.stderr
    assert devices[good]["status"] == "unchanged", devices[good]
    assert devices[bad]["status"] == "error" and devices[bad]["detail"].startswith(expected), devices[bad]
    assert len(devices[bad]["detail"]) < 400


DEEP_ROUTES = "{\n" + '"10.0.0.0/24": ' + "[" * 70 + "]" * 70 + "}"
READERS = {  # a malformed reply of each switch or host → the located problem it reads as
    "sonic running": ("fabric.nos.sonic.driver.config_db_reply", '{"PORT": {"Ethernet0": {"mtu": "9100"}}, "X": 5}',
                      "reply of `show runningconfiguration all`, X: expected a mapping of keys to entries, found 5"),
    "nvue running": ("fabric.nos.nvue.driver.applied_reply", "- set:\n    router: [1\n",
                     "reply of `nv config show -o json`, line 3: expected valid YAML, found did not find expected ','"),
    "frr running": ("fabric.nos.frr.driver.clean_running",
                    "Building configuration...\n" + "".join(" " * i + "x\n" for i in range(100)),
                    "reply of `vtysh -c 'show running-config'`, line 66: expected at most 64 levels of indentation"),
    "eos running": ("fabric.nos.eos.driver.running_reply", "".join(" " * i + "x\n" for i in range(100)),
                    "reply of `show running-config`, line 65: expected at most 64 levels of indentation"),
    "frr nested": ("fabric.parsers.frr.bgp_peers", DEEP_ROUTES, "reply of `vtysh -c 'show bgp summary json'`, line 2: "
                   "expected JSON nested at most 64 levels, found deeper nesting"),
    "frr bgp": ("fabric.parsers.frr.bgp_peers", '{"ipv4Unicast": {"peers": {"swp1": {"state": "Established"}}}',
                "reply of `vtysh -c 'show bgp summary json'`, line 1 column 62: expected JSON, found Expecting ','"),
    "host report": ("fabric.host.model.host_report", '{"host": "gpu1", "items": [{"section": "s", "target": "t", '
                    '"name": "n", "status": "changed"}]}', "reply of `fabric host plan|apply --format json`, "
                    "items.0.section: expected 'link', 'address'"),
    "nvue revisions": ("fabric.parsers.switch_state.nvue_revisions", "[1]",
                       "reply of `nv config revision -o json`: expected a JSON object (revisions), found a JSON list"),
}


@pytest.mark.parametrize("case", sorted(READERS))
def test_a_malformed_reply_reads_as_its_located_problem(case: str) -> None:
    import importlib

    from fabric.errors import ReplyError

    name, reply, expected = READERS[case]
    module, _, fn = name.rpartition(".")
    with pytest.raises(ReplyError) as exc:
        getattr(importlib.import_module(module), fn)(reply)
    assert str(exc.value).startswith(expected) and not exc.value.unchecked and len(str(exc.value)) < 400, exc.value
