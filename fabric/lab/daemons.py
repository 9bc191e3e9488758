"""Real FRR and OpenSSH per node, each instance with its own config, sockets, pid files and logs.

FRR: zebra, bgpd and staticd run inside the switch's namespace with `--vty_socket`, `-z` (zserv
socket), `-i` (pid file) and `--log` pointing into `<state>/frr/<node>/`; then `vtysh -b
--config_dir <that dir>` loads the rendered integrated `frr.conf` into them, as frrinit.sh does.
Nothing under /etc/frr or /var/run/frr is touched.

OpenSSH: one sshd per node, listening on the node's management (and access) address only, with a config,
host key, pid file and authorized_keys in `<state>/ssh/`; root login by key only.

lldpd: one per node on the node's cable ports only (`-I`, never the management interface), with its control socket
(`-u`), pid file (`-p`) and configuration (`-O`, instead of /etc/lldpd.*) in `<state>/lldp/`; it sends the node's
inventory name as system name every second (`tx-interval 1`: a neighbour shows within seconds) with a TTL of 10 s
(`tx-hold 10`: a daemon starved of CPU for a few seconds on a loaded machine does not lose its neighbours; a cable
fault restarts the lldpd of every port it touches, so no neighbour outlives its cable). `lldpctl` and `lldpcli` on
the node reach that instance without flags.
"""

from __future__ import annotations

import grp
import os
import pwd
import shutil
import subprocess
import sys
from pathlib import Path

from fabric.lab.sh import FRR_DIR, LLDPD, SSHD, StepError, run, terminate, wait_file
from fabric.lab.state import LabState

FRR_DAEMONS = ("zebra", "bgpd", "staticd")


def _chown_frr(path: Path) -> None:
    try:
        uid, gid = pwd.getpwnam("frr").pw_uid, grp.getgrnam("frr").gr_gid
    except KeyError as exc:
        raise StepError("frr", "no user/group 'frr' (install the Debian frr package)") from exc
    os.chown(path, uid, gid)


def start_frr(st: LabState, node: str, frr_conf: str) -> dict[str, int]:
    """Start zebra, bgpd, staticd in the node's namespace and load `frr_conf`; returns their pids."""
    d = st.frr_dir(node)
    if d.exists():
        shutil.rmtree(d)
    d.mkdir(parents=True)
    d.chmod(0o755)
    _chown_frr(d)
    (d / "frr.conf").write_text(frr_conf)
    (d / "vtysh.conf").write_text("")
    (d / "empty.conf").write_text("")  # daemons read nothing themselves; vtysh -b pushes frr.conf
    pids: dict[str, int] = {}
    for daemon in FRR_DAEMONS:
        argv = [str(FRR_DIR / daemon), "-d", "-A", "127.0.0.1", "-P", "0", "--vty_socket", str(d),
                "-z", str(d / "zserv.api"), "-i", str(d / f"{daemon}.pid"), "-f", str(d / "empty.conf"),
                "--log", f"file:{d / f'{daemon}.log'}", "--log-level", "notifications"]
        run(st.ns_argv(node, argv), f"frr {node} {daemon}", timeout=30)
        pidfile = d / f"{daemon}.pid"
        if not wait_file(pidfile, 10):
            raise StepError(f"frr {node} {daemon}", f"no pid file {pidfile}; see {d / f'{daemon}.log'}")
        pids[daemon] = int(pidfile.read_text().strip())
    run(st.ns_argv(node, ["vtysh", "--vty_socket", str(d), "--config_dir", str(d), "-b"]),
        f"frr {node} load frr.conf", timeout=60)
    # `vtysh` on the node (lab exec, lab ssh) reaches this instance without flags
    wrapper = st.node_bin(node) / "vtysh"
    wrapper.parent.mkdir(parents=True, exist_ok=True)
    wrapper.write_text(f"#!/bin/sh\nexec /usr/bin/vtysh --vty_socket {d} --config_dir {d} \"$@\"\n")
    wrapper.chmod(0o755)
    return pids


def ensure_keys(st: LabState) -> None:
    """The lab's client key (ed25519), the sshd host key and authorized_keys, all in the state dir."""
    d = st.ssh_dir()
    d.mkdir(parents=True, exist_ok=True)
    d.chmod(0o700)
    for name in ("id_ed25519", "host_ed25519"):
        if not (d / name).exists():
            run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", f"fabric-lab-{st.fabric}-{name}",
                 "-f", str(d / name)], "ssh keys")
    (d / "authorized_keys").write_text((d / "id_ed25519.pub").read_text())
    (d / "authorized_keys").chmod(0o600)
    host_pub = (d / "host_ed25519.pub").read_text().split()
    (d / "known_hosts").write_text(
        "".join(f"{a} {host_pub[0]} {host_pub[1]}\n" for n in st.nodes.values() for a in n.addresses))
    st.ssh_key = str(d / "id_ed25519")
    st.known_hosts = str(d / "known_hosts")


# The key exchange of every sshd that runs only on this machine (the lab's, the tests' stand-ins): OpenSSH 9.2's
# default, sntrup761x25519, costs the client about 0.14 CPU-s per connection, X25519 alone 0.016 (measured with
# Debian 12's OpenSSH 9.2p1); the lab and the tests open thousands of connections to namespaces of this machine.
SSHD_KEX = "KexAlgorithms curve25519-sha256,curve25519-sha256@libssh.org"


def sshd_setenv(home: Path, path: str | None = None) -> str:
    """The `SetEnv` line (sshd applies only the first) of those sshds: a HOME of the node's own and its PATH.
    Bash, the login shell sshd runs each command with, reads ~/.bashrc when sshd started it: in the operator's
    home a node or stand-in would run the operator's ~/.bashrc (this machine's runs `pyenv init`: about 100
    processes and 0.12 CPU-s per SSH command) and take its PATH."""
    return "SetEnv " + (f"PATH={path} " if path else "") + f"HOME={home}"


def start_sshd(st: LabState, node: str) -> int:
    """Start sshd in the node's namespace on its management address; returns its pid."""
    d = st.ssh_dir()
    n = st.node(node)
    cfg = d / f"sshd_{node}.conf"
    pidfile = d / f"sshd_{node}.pid"
    pidfile.unlink(missing_ok=True)
    home = st.dir / "home" / node
    home.mkdir(parents=True, exist_ok=True)
    sftp = next((p for p in ("/usr/lib/openssh/sftp-server", "/usr/libexec/openssh/sftp-server")
                 if Path(p).exists()), None)
    cfg.write_text("\n".join([
        f"# sshd of lab node {node} (fabric lab); not the system sshd",
        "Port 22", *(f"ListenAddress {a}" for a in n.addresses), f"HostKey {d / 'host_ed25519'}", f"PidFile {pidfile}",
        f"AuthorizedKeysFile {d / 'authorized_keys'}", "PermitRootLogin prohibit-password",
        "PubkeyAuthentication yes", "PasswordAuthentication no", "KbdInteractiveAuthentication no",
        "UsePAM no", "StrictModes no", "PrintMotd no", "UseDNS no", "MaxStartups 64:30:128",
        "MaxSessions 32", SSHD_KEX, "LogLevel ERROR", "AcceptEnv LANG LC_*", sshd_setenv(home, st.node_path(node)),
        *([f"Subsystem sftp {sftp}"] if sftp else []), "",
    ]))
    Path("/run/sshd").mkdir(mode=0o755, exist_ok=True)  # privilege separation dir sshd insists on
    run(st.ns_argv(node, [str(SSHD), "-f", str(cfg), "-E", str(d / f"sshd_{node}.log")]), f"sshd {node}")
    if not wait_file(pidfile, 10):
        raise StepError(f"sshd {node}", f"no pid file {pidfile}; see {d / f'sshd_{node}.log'}")
    return int(pidfile.read_text().strip())


LLDP_TX_INTERVAL = 1  # seconds between LLDPDUs (lldpd's default 30)
LLDP_TX_HOLD = 10  # TTL = hold × interval (lldpd's default 4: 4 s at 1 s expired a busy machine's neighbours)


def start_lldpd(st: LabState, node: str) -> int:
    """Start lldpd in the node's namespace on its cable ports, named as in the inventory; returns its pid."""
    d = st.lldp_dir()
    d.mkdir(parents=True, exist_ok=True)
    sock, pidfile, conf = st.lldp_socket(node), d / f"{node}.pid", d / f"{node}.conf"
    pidfile.unlink(missing_ok=True)
    conf.write_text(f"# lldpd of lab node {node} (fabric lab)\nconfigure system hostname {node}\n"
                    f"configure lldp tx-interval {LLDP_TX_INTERVAL}\nconfigure lldp tx-hold {LLDP_TX_HOLD}\n")
    ports = sorted(st.node(node).ifnames.values()) or ["!*"]  # a node without cables: lldpd on no interface
    run(st.ns_argv(node, [str(LLDPD), "-u", str(sock), "-p", str(pidfile), "-O", str(conf), "-I", ",".join(ports)]),
        f"lldpd {node}")
    if not wait_file(pidfile, 10):
        raise StepError(f"lldpd {node}", f"no pid file {pidfile}")
    for cli in ("lldpctl", "lldpcli"):
        wrapper = st.node_bin(node) / cli
        wrapper.parent.mkdir(parents=True, exist_ok=True)
        wrapper.write_text(f"#!/bin/sh\nexec /usr/sbin/{cli} -u {sock} \"$@\"\n")
        wrapper.chmod(0o755)
    return int(pidfile.read_text().strip())


# A switch traps LLDP to its CPU; on a Linux bridge port a frame no protocol takes counts as a receive drop
# (`rx_dropped`: every LLDPDU a host sends to a leaf port, one a second), which the switch does not show. One
# process per switch holds a packet socket for LLDP's ethertype on each cable port, never read (its overflow is the
# socket's own drop count, not the port's): the frame is taken, as on the switch, after lldpd's capture has it.
LLDP_TRAP = ("import signal, socket, sys\n"
             "held = []\n"
             "for name in sys.argv[1:]:\n"
             "    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(0x88CC))\n"
             "    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1)\n"
             "    s.bind((name, 0x88CC))\n"
             "    held.append(s)\n"
             "signal.pause()\n")


def start_lldp_trap(st: LabState, node: str) -> int | None:
    """The LLDP trap of a switch (LLDP_TRAP) on its cable ports; its pid (None on a host: its NICs are no bridge
    ports)."""
    n = st.node(node)
    if n.kind != "switch" or not n.ifnames:
        return None
    proc = subprocess.Popen(st.ns_argv(node, [sys.executable, "-c", LLDP_TRAP, *sorted(n.ifnames.values())]),
                            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)
    return proc.pid


def restart_lldpd(st: LabState, node: str) -> None:
    """Stop the node's lldpd (every lldpd process in its namespace) and start it again: lldpd 1.0.16 does not take
    up a new interface that has a port's name again (a cable fault's moved end; seen here: the port stopped sending
    and receiving until lldpd restarted)."""
    pids = [int(p) for p in run(["ip", "netns", "pids", st.node(node).netns], f"lldpd {node}").split()
            if _comm(p) == "lldpd"]
    trap = st.nodes[node].pids.pop("lldp-trap", None)
    terminate(pids + ([trap] if trap else []))
    start_lldp(st, node)


def start_lldp(st: LabState, node: str) -> int:
    """lldpd and, on a switch, its LLDP trap; returns lldpd's pid (the trap's is recorded as `lldp-trap`)."""
    trap = start_lldp_trap(st, node)
    if trap is not None:
        st.nodes[node].pids["lldp-trap"] = trap
    st.nodes[node].pids["lldpd"] = pid = start_lldpd(st, node)
    return pid


def _comm(pid: str) -> str:
    try:
        return Path(f"/proc/{pid}/comm").read_text().strip()
    except OSError:
        return ""
