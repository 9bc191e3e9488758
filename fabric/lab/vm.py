"""A full Linux kernel for the lab checks this machine's kernel cannot do: `ets` and `red … ecn` qdiscs that count
CE marks, and Soft-RoCE (`rdma_rxe`): `fabric lab up --kernel vm`.

The Debian 6.12 kernel (`linux-image-6.12-amd64`, bookworm-security) is booted by virtme-ng (`vng`, PyPI) under
QEMU software emulation (`--disable-kvm`: nested KVM does not boot a guest here) with this machine's own root
file system, read-only, and one writable directory, the VM lab's state dir. The guest runs one sh script of ours
(no Python: under emulation the CLI's import alone takes minutes): it builds one leaf of the fabric and up to
four of its hosts in namespaces named after the nodes, with the `frr` target's rendered `ets` + `red … ecn`
tree and DSCP filters on every host port (fabric.lab.qos.port_lines), each host's rail with a Soft-RoCE device
(`soft_roce_lines`: rxe sends from the initial namespace only), then serves commands dropped into the
state dir (`cmd/<n>.sh` → `<n>.out`, `<n>.rc`; each as it comes, beside the ones still running) until `stop`
appears there or its lifetime ends, and powers off. `command_argv` runs one command in a node's namespace from this
machine (what the VM lab's Site, fabric.lab.site.VmSite, reaches hosts and the leaf with).

`up` starts the VM in its own session and returns once the lab is built; `exec` runs a command in it; `down`
asks the guest to stop, kills the VM's whole process group (vng, QEMU, virtiofsd) and removes the state dir.
An `up` that fails or is interrupted does the same before it raises.
"""

from __future__ import annotations

import contextlib
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from pydantic import BaseModel

from fabric.design.intent import FabricIntent, HostIntent
from fabric.errors import UsageError
from fabric.lab.qos import port_lines
from fabric.lab.sh import StepError, cmdline
from fabric.lab.state import state_dir
from fabric.render import render_switch
from fabric.safefile import replace_file

KERNEL_SERIES = "6.12"  # sch_ets (4.19), sch_red ECN marks, rdma_rxe as modules in Debian's build
BOOT = Path("/boot")
MODULES = Path("/lib/modules")
GUEST_MODULES = ["sch_tbf", "sch_ets", "sch_red", "cls_u32", "rdma_rxe"]
PORT_RATE = "20mbit"  # the leaf ports' line rate: what iperf3 under emulation drives well past, 3 senders at a time
MAX_HOSTS = 4
SOFT_ROCE_GID = 1  # rxe's GID table: 0 the link-local GID from the MAC, 1 the rail's IPv4 address (RoCEv2)
# Kernel arguments for a throwaway guest that runs only our script, under emulation where every guest cycle costs
# host CPU: no speculative-execution mitigations (QEMU's TCG does not speculate), and none of the drivers udev would
# load for the emulated q35 board and `-cpu max` (KVM, SATA CD-ROM, watchdogs, PS/2 mouse, SMBus, SIMD crypto):
# loading them took half of the boot (about 25 of 55 s guest time). Our own modules (GUEST_MODULES) load by name.
GUEST_KERNEL_ARGS = ["mitigations=off", "module_blacklist=" + ",".join([
    "kvm", "kvm_amd", "kvm_intel", "irqbypass", "ccp", "ahci", "libahci", "libata", "scsi_mod", "scsi_common", "sr_mod",
    "cdrom", "sg", "iTCO_wdt", "iTCO_vendor_support", "intel_pmc_bxt", "i6300esb", "lpc_ich", "i2c_i801", "i2c_smbus",
    "evdev", "psmouse", "serio_raw", "pcspkr", "button", "ghash_clmulni_intel", "aesni_intel", "crypto_simd",
    "cryptd", "gf128mul", "sha1_ssse3", "sha256_ssse3", "sha512_ssse3", "crct10dif_pclmul"])]
POLL_S = 0.5  # the guest's command loop: how often it looks for a command (busybox's sleep: a static binary)
BUSY_POLL_S, BUSY_POLLS = 0.1, 20  # how often for the 20 polls after one that found a command (a check's next step)


@dataclass(frozen=True)
class Kernel:
    image: Path
    release: str


def _key(release: str) -> list[int]:
    return [int(x) for x in re.findall(r"\d+", release)]


def find_kernel(series: str = KERNEL_SERIES) -> Kernel | None:
    """The newest installed `/boot/vmlinuz-<series>.*` whose modules are installed too."""
    found = [Kernel(p, p.name.removeprefix("vmlinuz-")) for p in BOOT.glob(f"vmlinuz-{series}.*")]
    found = [k for k in found if (MODULES / k.release / "modules.dep").exists()]
    return max(found, key=lambda k: _key(k.release), default=None)


def vng() -> str | None:
    """virtme-ng's `vng`: beside this Python (the project venv) or on PATH."""
    local = Path(sys.executable).with_name("vng")
    return str(local) if local.exists() else shutil.which("vng")


def missing() -> list[str]:
    """What booting the VM needs and this machine lacks (with the package that brings it)."""
    out = []
    if vng() is None:
        out.append("vng (PyPI virtme-ng)")
    if shutil.which("qemu-system-x86_64") is None:
        out.append("qemu-system-x86_64 (qemu-system-x86)")
    if shutil.which("busybox") is None:
        out.append("busybox (busybox-static)")
    if find_kernel() is None:
        out.append(f"/boot/vmlinuz-{KERNEL_SERIES}.* with its modules (linux-image-{KERNEL_SERIES}-amd64)")
    return out




class VmLab(BaseModel):
    """A running VM lab: `vm.json` in its state dir (also the guest's writable directory)."""

    fabric: str
    dir: str
    pid: int  # vng, the leader of the VM's session (QEMU and virtiofsd in its process group)
    kernel: str
    leaf: str
    rail: int
    hosts: list[str]
    rate: str
    up_seconds: float = 0.0

    @property
    def path(self) -> Path:
        return Path(self.dir)

    def save(self) -> None:
        (self.path / "vm.json").write_text(self.model_dump_json(indent=1) + "\n")

    @property
    def running(self) -> bool:
        """Any process of the VM's group still there (vng, or a QEMU it left)."""
        return bool(_group(self.pid, self.dir))

    def node(self, name: str) -> str:
        """`name`, a node of this lab (its leaf or one of its hosts); else a UsageError naming them."""
        if name not in (self.leaf, *self.hosts):
            raise UsageError(f"node: expected one of the VM lab's {', '.join([self.leaf, *self.hosts])}, "
                             f"found {name!r}")
        return name


def vm_dir(fabric_name: str) -> Path:
    """The VM lab's state dir, beside the native lab's (`<base>/<fabric>.vm`)."""
    d = state_dir(fabric_name)
    return d.with_name(d.name + ".vm")


def load(fabric_name: str, *, required: bool = True) -> VmLab | None:
    path = vm_dir(fabric_name) / "vm.json"
    if not path.exists():
        if required:
            raise UsageError(f"no VM lab for {fabric_name!r} ({path} absent); run `fabric lab up --kernel vm` first")
        return None
    return VmLab.model_validate_json(path.read_text())


def lab_nodes(fabric: FabricIntent) -> tuple[str, int, list[str]]:
    """(leaf, rail, hosts) of the VM lab: the first leaf with host ports, its rail, its first four hosts."""
    for name in sorted(fabric.switches):
        hosts = sorted(h for h, hi in fabric.hosts.items() if any(r.leaf == name for r in hi.rails))
        if hosts:
            rail = next(r.rail for r in fabric.hosts[hosts[0]].rails if r.leaf == name)
            return name, rail, hosts[:MAX_HOSTS]
    raise UsageError(f"fabric {fabric.name!r}: no leaf with host ports to run in the VM")


def batch(tool: str, cmds: list[str], on_failure: str = "") -> list[str]:
    """Guest script lines: one `<tool> -batch` of the commands from a here-document (no file; it stops at the first
    command that fails), `on_failure` after it. Under emulation every process started costs the host about 0.1 CPU-s
    (the dynamic loader alone), an `ip` twice that."""
    return [f"{tool} -batch - <<'EOF'{on_failure}", *cmds, "EOF"]


def soft_roce_device(k: int) -> str:
    """The Soft-RoCE device of the lab's k-th host (1-based): one name per host, as the guest's RDMA devices are
    seen from every namespace (`rdma system`: netns shared, the kernel's default)."""
    return f"rxe{k}"


def soft_roce_netdev(k: int) -> str:
    return f"rxe{k}n"


def soft_roce_mac(rail: int, k: int) -> str:
    return f"02:72:66:00:{rail:02x}:{k:02x}"


def soft_roce_lines(rail: int, addresses: list[str], subnet: str) -> list[str]:
    """`ip -batch` lines of the guest's initial namespace for the hosts' Soft-RoCE netdevs: Debian 6.12's rdma_rxe
    sends and receives in the initial namespace only (its one UDP socket and its route lookups are there), so each
    host's rail gets a macvlan there (its frames leave by the host's own rail and leaf port) with the host's rail
    address. Each host's packets leave by its own macvlan (a rule per source address ahead of the local table; to
    its own address they stay local), the others' addresses resolved statically: the macvlans neither answer nor
    need ARP, so the hosts' namespaces keep their own neighbours."""
    cmds = ["rule add pref 1000 lookup local", "rule del pref 0 lookup local"]
    for k, address in enumerate(addresses, 1):
        ip, dev = address.split("/")[0], soft_roce_netdev(k)
        cmds += [f"addr add {address} dev {dev}", f"link set {dev} up",
                 f"rule add pref 100 iif lo from {ip} to {ip} lookup local",  # to itself: not out by its rail
                 f"rule add pref {100 + k} iif lo from {ip} lookup {100 + k}",
                 f"route add {subnet} dev {dev} src {ip} table {100 + k}"]
        cmds += [f"neigh add {other.split('/')[0]} lladdr {soft_roce_mac(rail, j)} dev {dev} nud permanent"
                 for j, other in enumerate(addresses, 1) if j != k]
    return cmds


def soft_roce_sysctls(hosts: int) -> str:
    """Both ends of a Soft-RoCE pair are local addresses of the initial namespace: accepted on arrival
    (accept_local, no reverse-path filter); `arp_ignore` 8: no ARP answers from the macvlans."""
    keys = ["net.ipv4.conf.all.rp_filter=0", "net.ipv4.conf.default.rp_filter=0"]
    for k in range(1, hosts + 1):
        dev = soft_roce_netdev(k)
        keys += [f"net.ipv4.conf.{dev}.{key}" for key in ("accept_local=1", "rp_filter=0", "arp_ignore=8")]
    return "sysctl -qw " + " ".join(keys)


def lab_script(fabric: FabricIntent, leaf: str, rail: int, hosts: list[str], rate: str, out: Path,
               lifetime: float) -> str:
    """The guest's whole job as one sh script of our own (every value from the intent, nothing untrusted): the leaf
    and hosts in namespaces named after them, the leaf's host ports joined by its SVI bridge `br0` and queued by
    the rendered tree, the hosts' Soft-RoCE devices, then the command loop."""
    qos_sh = render_switch(fabric.switches[leaf], fabric)["qos.sh"]
    rails = {h: next(r for r in fabric.hosts[h].rails if r.rail == rail) for h in hosts}
    tc_lines = [ln for r in rails.values() for ln in port_lines(fabric, leaf, r.leaf_port, r.leaf_port, qos_sh, rate)]
    (out / "leaf-tc.batch").write_text("\n".join(tc_lines) + "\n")  # kept: applied again where the ports are rebuilt
    # one `ip -batch` per namespace (`batch`)
    ip_batches = {"root": [f"netns add {n}" for n in [leaf, *hosts]]
                  + [f"link add {r.ifname} netns {h} type veth peer name {r.leaf_port} netns {leaf}"
                     for h, r in rails.items()],
                  leaf: ["link add br0 type bridge", "link set br0 up"]
                  + [f"link set {r.leaf_port} master br0 up" for r in rails.values()]}
    ip_batches |= {h: ["link set lo up", f"addr add {r.address} dev {r.ifname}", f"link set {r.ifname} up",
                       f"link add link {r.ifname} name {soft_roce_netdev(k)} address {soft_roce_mac(rail, k)} "
                       "type macvlan mode bridge", f"link set {soft_roce_netdev(k)} netns 1"]
                   for k, (h, r) in enumerate(rails.items(), 1)}
    # the initial namespace again, once the hosts' batches have moved their macvlans into it
    ip_batches["init"] = soft_roce_lines(rail, [r.address for r in rails.values()], rails[hosts[0]].subnet)
    lines = ["set -u", f"O={out}", "exec >$O/guest.log 2>&1", "echo BOOTED $(date +%s.%N)", "fail() { echo \"$*\" "
             "> $O/failed; exit 1; }",
             f"modprobe -a {' '.join(GUEST_MODULES)} || fail modprobe -a {' '.join(GUEST_MODULES)}",
             "sysctl -qw net.core.rmem_max=4194304 net.core.wmem_max=4194304"]  # iperf3 -w 1M (global in 6.12)
    for n, cmds in ip_batches.items():
        ip = "ip" if n in ("root", "init") else f"ip -n {n}"
        lines += batch(ip, cmds, f" || fail {ip} -batch")
    lines += [f"ip netns exec {h} sysctl -qw net.ipv4.tcp_ecn=1" for h in hosts]
    lines += [soft_roce_sysctls(len(hosts)) + " || fail sysctl of the Soft-RoCE netdevs"]
    lines += [f"rdma link add {soft_roce_device(k)} type rxe netdev {soft_roce_netdev(k)} || fail rdma link add "
              f"{soft_roce_device(k)}" for k in range(1, len(hosts) + 1)]
    first, last = rails[hosts[0]], rails[hosts[-1]]
    lines += [f"tc -n {leaf} -batch $O/leaf-tc.batch || fail tc -batch of the leaf",
              f"ip netns exec {hosts[-1]} ping -c 3 -W 5 {first.address.split('/')[0]} >/dev/null "
              f"|| fail {last.ifname} of {hosts[-1]} cannot reach {hosts[0]}",
              "mkdir -p $O/cmd", "echo READY $(date +%s.%N)", "touch $O/ready",
              f"end=$(( $(date +%s) + {int(lifetime)} )); polls=0; busy=0",
              "while [ ! -e $O/stop ]; do",
              "  for f in $O/cmd/*.sh; do",
              '    [ -e "$f" ] || continue',
              # each command in the background: an acceptance check's server and its client run at once
              f'    n=${{f%.sh}}; mv "$f" "$n.run"; busy={BUSY_POLLS}',
              '    (sh "$n.run" > "$n.out" 2>&1; echo $? > "$n.tmp"; mv "$n.tmp" "$n.rc") &',
              "  done",
              # every process started costs the emulated guest: the clock is read every 20th poll
              '  polls=$((polls + 1)); [ $((polls % 20)) -ne 0 ] || [ "$(date +%s)" -lt "$end" ] || break',
              f"  if [ $busy -gt 0 ]; then busy=$((busy - 1)); busybox sleep {BUSY_POLL_S}; "
              f"else busybox sleep {POLL_S}; fi",
              "done", "echo STOPPED $(date +%s.%N)"]
    return "\n".join(lines) + "\n"


def up(fabric: FabricIntent, *, directory: Path | None = None, rate: str = PORT_RATE, timeout: float = 600,
       lifetime: float = 3600, cpus: int = 2, memory: str = "2G") -> VmLab:
    """Boot the VM and build the lab in it; returns once it is ready. Two emulated CPUs: on one, the Soft-RoCE pair
    (both ends, the leaf and its qdiscs on that CPU) fell to half the port's rate whenever the host was busy.
    StepError (everything stopped and removed) when it cannot boot, its script fails, it overruns `timeout` or the
    caller is interrupted."""
    kernel, exe = find_kernel(), vng()
    if kernel is None or exe is None:
        raise StepError("vm", "cannot boot: missing " + ", ".join(missing()))
    d = directory or vm_dir(fabric.name)
    if (d / "vm.json").exists():
        raise UsageError(f"a VM lab for {fabric.name!r} exists ({d}/vm.json); run `fabric lab down` first")
    leaf, rail, hosts = lab_nodes(fabric)
    shutil.rmtree(d, ignore_errors=True)  # what an `up` killed before it saved vm.json left
    d.mkdir(parents=True, mode=0o700)
    (d / "guest.sh").write_text(lab_script(fabric, leaf, rail, hosts, rate, d, lifetime))
    argv = [exe, "--disable-kvm", "--run", str(kernel.image), "--cpus", str(cpus), "--memory", memory,
            *(x for arg in GUEST_KERNEL_ARGS for x in ("--append", arg)), "--rwdir", str(d),
            "--exec", f"sh {d}/guest.sh"]
    env = {**os.environ, "PATH": f"{Path(exe).parent}:{os.environ.get('PATH', '/usr/bin:/bin')}"}
    t0 = time.monotonic()
    with open(d / "console.log", "w") as console:
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=console, stderr=subprocess.STDOUT, env=env,
                                start_new_session=True)
    lab = VmLab(fabric=fabric.name, dir=str(d), pid=proc.pid, kernel=kernel.release, leaf=leaf, rail=rail,
                hosts=hosts, rate=rate)
    try:
        lab.save()
        while not (d / "ready").exists():
            if (d / "failed").exists() or proc.poll() is not None or time.monotonic() - t0 > timeout:
                why = (d / "failed").read_text().strip() if (d / "failed").exists() else (
                    f"the VM exited ({proc.returncode})" if proc.poll() is not None
                    else f"not ready in {timeout:.0f}s under emulation")
                raise StepError("vm", f"{kernel.release}: {why}; console: {_tail(d / 'console.log')}")
            time.sleep(0.2)
        lab.up_seconds = round(time.monotonic() - t0, 1)
        lab.save()
        return lab
    except BaseException as exc:
        stop(lab, grace=0)
        if isinstance(exc, KeyboardInterrupt):
            raise StepError("interrupted", "VM stopped") from exc
        raise


def _tail(path: Path, lines: int = 3) -> str:
    text = path.read_text(errors="replace") if path.exists() else ""
    return " | ".join(ln.strip() for ln in text.strip().splitlines()[-lines:]) or "(empty)"


_seq = 0


def shell(lab: VmLab, script: str, *, timeout: float = 120) -> tuple[int, str]:
    """Run `script` (sh, our own) as root in the guest's initial namespace: (exit status, stdout and stderr).
    StepError when the VM is gone or the script overruns `timeout` (the guest may still be running it)."""
    global _seq
    _seq += 1
    name = f"{os.getpid()}-{_seq}"
    cmd = lab.path / "cmd"
    replace_file(cmd / f"{name}.sh", script, 0o644)  # the guest takes *.sh: written whole, then named
    deadline = time.monotonic() + timeout
    rc = cmd / f"{name}.rc"
    while not rc.exists():
        if not lab.running:
            raise StepError("vm", "the VM is not running")
        if time.monotonic() > deadline:
            raise StepError("vm", f"command {name} did not finish in {timeout:.0f}s")
        time.sleep(0.2)
    return int(rc.read_text().strip() or 1), (cmd / f"{name}.out").read_text(errors="replace")


# The local half of `command_argv`, run by this machine's Python (isolated, no imports of ours): the command's text
# goes to <n>.in, then the guest's script to <n>.sh (written whole, then named); it waits for <n>.rc, prints <n>.out
# (and <n>.err to stderr), removes the files and exits with the command's status; 255 where there is no VM lab
# (OpenSSH's "could not reach", fabric.accept.transport.Completed.unreachable).
WAITER = """
import os, sys, time
d, guest, command = sys.argv[1:4]
n = os.path.join(d, "cmd", f"w{os.getpid()}-{os.urandom(4).hex()}")  # a killed waiter leaves its files
try:
    with open(n + ".in", "w") as f:
        f.write(command + "\\n")
    with open(n + ".new", "w") as f:
        f.write(guest)
    os.rename(n + ".new", n + ".sh")
except OSError as e:
    sys.exit(print(f"no VM lab at {d}: {e.strerror}", file=sys.stderr) or 255)
while not os.path.exists(n + ".rc"):
    if not os.path.isdir(d):
        sys.exit(print(f"the VM lab at {d} went away", file=sys.stderr) or 255)
    time.sleep(0.1)
def text(ext):
    try:
        with open(n + ext, errors="replace") as f:
            return f.read()
    except OSError:
        return ""
out, err, rc = text(".out"), text(".err"), text(".rc").strip()
for ext in (".in", ".run", ".out", ".err", ".rc"):
    try:
        os.unlink(n + ext)
    except OSError:
        pass
sys.stdout.write(out)
sys.stderr.write(err)
sys.exit(int(rc) if rc.isdigit() else 255)
"""


def command_argv(lab: VmLab, node: str, *, merged: bool = False) -> list[str]:
    """The argv, run on this machine, that runs a command in `node`'s namespace in the guest: append the command as
    one sh line (its text goes to a file the guest's sh reads, never into a script of ours). Its stdout and stderr
    come back apart (`merged`: both in stdout, as a terminal shows them), its exit status is the command's."""
    lab.node(node)
    errors = "2>&1" if merged else '2>"${0%.run}.err"'
    guest = f'exec ip netns exec {shlex.quote(node)} sh "${{0%.run}}.in" {errors}\n'
    return [sys.executable, "-I", "-c", WAITER, lab.dir, guest]


def realized(fabric: FabricIntent, lab: VmLab) -> FabricIntent:
    """The fabric as the VM lab realizes it: its leaf, its hosts with their rail on that leaf (the RDMA device its
    Soft-RoCE, whose RoCEv2 IPv4 GID is index 1: index 0 is the link-local one rxe derives from the MAC), the cables
    between them."""
    nodes = {lab.leaf, *lab.hosts}

    def host(k: int, name: str) -> HostIntent:
        h = fabric.hosts[name]
        rails = [r.model_copy(update={"rdma": soft_roce_device(k)}) for r in h.rails if r.rail == lab.rail]
        return h.model_copy(update={"rails": rails, "gid": h.gid.model_copy(update={"index": SOFT_ROCE_GID})})

    hosts = {h: host(k, h) for k, h in enumerate(lab.hosts, 1)}
    return fabric.model_copy(update={"switches": {lab.leaf: fabric.switches[lab.leaf]}, "hosts": hosts,
                                     "links": [x for x in fabric.links if x.a in nodes and x.b in nodes]})


def exec_argv(lab: VmLab, node: str, argv: list[str], *, timeout: float = 120) -> tuple[int, str]:
    """`argv` in a node's namespace in the guest (`fabric lab exec INV NODE -- …`)."""
    lab.node(node)
    return shell(lab, f"ip netns exec {node} {shlex.join(argv)}\n", timeout=timeout)


def stop(lab: VmLab, *, grace: float = 30) -> list[str]:
    """Ask the guest to stop (it powers off), give it `grace` seconds, end the VM's process group, remove the state
    dir. Idempotent; returns what went ("powered off" where the guest did in time, the pids ended, the dir)."""
    removed = []
    d = lab.path
    if lab.running:
        with contextlib.suppress(OSError):
            (d / "stop").touch()
        deadline = time.monotonic() + grace
        while time.monotonic() < deadline and lab.running:
            time.sleep(0.2)
        removed += [f"pid {p}" for p in _group(lab.pid, lab.dir)] or ["powered off"]
        _kill_group(lab.pid)
    if d.exists():
        shutil.rmtree(d, ignore_errors=True)
        removed.append(f"dir {d}")
    return removed


def down(fabric_name: str) -> list[str]:
    """`lab down`: stop the fabric's VM lab if there is one (nothing to do otherwise)."""
    lab = load(fabric_name, required=False)
    return [] if lab is None else stop(lab)


def _members(pgid: int) -> list[int]:
    """Live (not zombie) processes of process group `pgid`."""
    out = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        with contextlib.suppress(OSError, IndexError, ValueError):
            fields = stat.read_text().rsplit(")", 1)[1].split()
            if int(fields[2]) == pgid and fields[0] != "Z":
                out.append(int(stat.parent.name))
    return sorted(out)


def _group(pgid: int, directory: str) -> list[int]:
    """The VM's processes: group `pgid`, provided one of them runs with `directory` on its command line (a reused
    pid is never taken for the VM)."""
    members = _members(pgid)
    return members if any(directory in cmdline(p) for p in members) else []


def _kill_group(pid: int) -> None:
    """vng, QEMU and virtiofsd share the session vng leads: end all of it (TERM, then KILL)."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pid, sig)
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline:
            with contextlib.suppress(ChildProcessError):
                os.waitpid(pid, os.WNOHANG)
            if not _members(pid):
                break
            time.sleep(0.1)
