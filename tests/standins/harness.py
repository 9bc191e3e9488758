"""Serve stand-in devices over a real sshd in a test network namespace (root), and clean up.

Each device gets its management address on the namespace's loopback and a state directory
`<root>/<address>/`; one sshd listens on all of them with a test-generated host key and client key,
and its ForceCommand starts `tests.standins.device`. Run the tool inside the namespace
(`argv(...)`) so it reaches the stand-ins at the inventory's management addresses.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from fabric.lab.daemons import SSHD_KEX, sshd_setenv
from tests.standins.common import ROOT, write_json
from tests.standins.device import pythonpath

SSHD = "/usr/sbin/sshd"


@dataclass
class StandinNet:
    netns: str
    root: Path
    key: Path
    known_hosts: Path
    devices: dict[str, Path] = field(default_factory=dict)  # device name → state dir

    def argv(self, argv: list[str]) -> list[str]:
        return ["ip", "netns", "exec", self.netns, *argv]


def _ns_pids(ns: str) -> list[int]:
    out = subprocess.run(["ip", "netns", "pids", ns], capture_output=True, text=True).stdout
    return [int(p) for p in out.split() if p.isdigit()]


def _remove_stale() -> None:
    """Namespaces of earlier runs killed before their cleanup: `rfsi<pid>` whose test process is gone and that
    holds no process (a live pid with that number, another run's, keeps its namespace)."""
    for path in Path("/run/netns").glob("rfsi*"):
        pid = path.name.removeprefix("rfsi")
        if pid.isdigit() and not Path(f"/proc/{pid}").exists() and not _ns_pids(path.name):
            subprocess.run(["ip", "netns", "del", path.name], check=False)


@contextmanager
def standins(tmp: Path, devices: dict[str, tuple[str, str]], *,
             server: Literal["sshd", "fleet"] = "sshd") -> Iterator[StandinNet]:
    """devices: name → (kind, management address). Yields the running StandinNet; always cleans up.
    `server`: OpenSSH's sshd with a process per command (tests.standins.device), or one process for them all
    (tests.standins.fleet)."""
    ns = f"rfsi{os.getpid() % 100000}"
    root = tmp / "standins"
    root.mkdir(parents=True)
    root.chmod(0o755)
    net = StandinNet(ns, root, tmp / "id_ed25519", tmp / "known_hosts")
    sshd = None
    _remove_stale()
    subprocess.run(["ip", "netns", "add", ns], check=True)
    try:
        subprocess.run(["ip", "-n", ns, "-batch", "-"], check=True, text=True, input="link set lo up\n" + "".join(
            f"addr add {addr}/32 dev lo\n" for _kind, addr in devices.values()))
        for name, (kind, addr) in devices.items():
            d = root / addr
            d.mkdir()
            (d / "kind").write_text(kind)
            (d / "name").write_text(name)
            net.devices[name] = d
        _own_addresses(ns, {root / addr: addr for kind, addr in devices.values() if kind == "frr"})
        for key in ("id_ed25519", "host_ed25519"):
            subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(tmp / key)], check=True)
        (tmp / "authorized_keys").write_text((tmp / "id_ed25519.pub").read_text())
        host = (tmp / "host_ed25519.pub").read_text().split()
        net.known_hosts.write_text("".join(f"{a} {host[0]} {host[1]}\n" for _k, a in devices.values()))
        sshd = _fleet(net, tmp) if server == "fleet" else _sshd(net, tmp, devices)
        yield net
    finally:
        if sshd is not None:
            sshd.terminate()
        for pid in _ns_pids(ns):  # sessions and confirm timers left in the namespace
            with suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        if sshd is not None:
            sshd.wait(timeout=10)
        subprocess.run(["ip", "netns", "del", ns], capture_output=True)


def _own_addresses(ns: str, frr: dict[Path, str]) -> None:
    """Each FRR switch's `ip -j addr show` (a reply in its `replies/`, tests.standins.frr): the namespace's own
    answer with only the switch's management address on `lo` besides the loopback's, as its own kernel shows it. All
    the stand-ins' addresses share the namespace, and a plan of N switches would otherwise read N² of them."""
    if not frr:
        return
    links = json.loads(subprocess.run(["ip", "-n", ns, "-j", "addr", "show"], check=True, capture_output=True,
                                      text=True).stdout)
    for d, addr in frr.items():
        own = [{**link, "addr_info": [a for a in link.get("addr_info", []) if a.get("local") in (
            addr, "127.0.0.1", "::1")]} for link in links]
        (d / "replies").mkdir()
        (d / "replies" / "ip -j addr show").write_text(json.dumps(own, separators=(",", ":")) + "\n")


def _sshd(net: StandinNet, tmp: Path, devices: dict[str, tuple[str, str]]) -> subprocess.Popen[bytes]:
    """OpenSSH's sshd on every address, its ForceCommand tests.standins.device."""
    root = net.root
    # `-S` as for the stand-in commands (tests.standins.device.pythonpath): each SSH session starts this
    cmd = f"STANDIN_ROOT={root} PYTHONPATH={pythonpath()} exec {sys.executable} -S -m tests.standins.device"
    cfg = tmp / "sshd_config"
    cfg.write_text("\n".join([
        *(f"ListenAddress {a}" for _k, a in devices.values()), "Port 22", f"HostKey {tmp / 'host_ed25519'}",
        f"PidFile {tmp / 'sshd.pid'}", f"AuthorizedKeysFile {tmp / 'authorized_keys'}",
        "PermitRootLogin prohibit-password", "PasswordAuthentication no", "KbdInteractiveAuthentication no",
        "UsePAM no", "StrictModes no", "UseDNS no", "PrintMotd no", "LogLevel ERROR", "MaxStartups 64:30:128",
        SSHD_KEX, sshd_setenv(root),
        f"ForceCommand {cmd}", "",
    ]))
    Path("/run/sshd").mkdir(mode=0o755, exist_ok=True)
    sshd = subprocess.Popen(net.argv([SSHD, "-D", "-f", str(cfg), "-E", str(tmp / "sshd.log")]))
    deadline = time.monotonic() + 10  # sshd writes its pid file once its listening sockets are bound
    while not (tmp / "sshd.pid").exists():
        if time.monotonic() > deadline or sshd.poll() is not None:
            raise TimeoutError(f"stand-in sshd did not listen; see {tmp / 'sshd.log'}")
        time.sleep(0.02)
    return sshd


def _fleet(net: StandinNet, tmp: Path) -> subprocess.Popen[bytes]:
    """tests.standins.fleet on port 22 of the namespace (its one process)."""
    ready = tmp / "fleet.ready"
    log = open(tmp / "fleet.log", "wb")  # noqa: SIM115 (the server's, for as long as it runs)
    proc = subprocess.Popen(net.argv([sys.executable, "-m", "tests.standins.fleet", str(net.root),
                                      str(tmp / "host_ed25519"), str(tmp / "authorized_keys"), str(ready)]),
                            cwd=ROOT, stdout=log, stderr=log, env={**os.environ, "PYTHONPATH": pythonpath()})
    log.close()
    deadline = time.monotonic() + 30
    while not ready.exists():
        if time.monotonic() > deadline or proc.poll() is not None:
            raise TimeoutError(f"stand-in fleet did not listen; see {tmp / 'fleet.log'}")
        time.sleep(0.05)
    return proc


def seed(d: Path, kind: str, running: str, peers: dict[str, int]) -> None:
    """Initial device state: its running configuration and what its BGP peers expect."""
    write_json(d / "peers.json", peers)
    if kind == "sonic":  # with its `show runningconfiguration all` answer, as after the switch's first print of it
        from tests.standins.sonic import running_answer

        (d / "running.json").write_text(running)
        running_answer(d)
    elif kind == "nvue":
        (d / "revisions").mkdir(exist_ok=True)
        (d / "revisions" / "0.json").write_text(running)
        write_json(d / "meta.json", {"applied": 0, "pending": None, "confirm": None, "next": 1, "history": []})
    else:
        (d / "running.cfg").write_text(running)




def seed_render(d: Path, kind: str, intended: str, files: dict[str, str]) -> None:
    """A device whose running configuration is its own render (`intended`, and the other rendered `files`), as
    after an earlier apply; no BGP peer expects anything."""
    if kind == "nvue":
        from fabric.nos.nvue.driver import load_running

        seed(d, kind, json.dumps(load_running(intended)), {})
    elif kind == "frr":
        (d / "running.conf").write_text(intended)
        kept = d / "etc-frr" / "roce-fabric"  # the setup scripts an apply keeps (tests.standins.frr)
        kept.mkdir(parents=True)
        for script in ("interfaces.sh", "qos.sh"):
            (kept / script).write_text(files[script])
    elif kind == "sonic":  # CONFIG_DB, and the kernel settings an apply persists and sets (tests.standins.sonic)
        from fabric.nos.sonic.driver import parse_sysctl
        from tests.standins.sonic import SONIC_SYSCTL

        seed(d, kind, intended, {})
        if (text := files.get("sysctl.conf")) is not None:
            write_json(d / "sysctl.json", {**SONIC_SYSCTL, **parse_sysctl(text)})
            (d / "sysctl.d").mkdir(exist_ok=True)
            (d / "sysctl.d" / "95-roce-fabric.conf").write_text(text)
    else:
        seed(d, kind, intended, {})
