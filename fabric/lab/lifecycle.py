"""`lab up` and `lab down`: build the fabric in namespaces and remove exactly what was built.

Every resource is written to the state file before it is created, so `down` also cleans up after
a crashed or interrupted `up`. `up` that fails at any step tears everything down and raises a
StepError naming the step.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import shutil
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from ipaddress import IPv4Interface, IPv4Network
from pathlib import Path

from fabric.design.intent import FabricIntent
from fabric.errors import UsageError
from fabric.lab import daemons, neigh
from fabric.lab import qos as lab_qos
from fabric.lab.plan import access_networks, build_state, rename_ports, set_access
from fabric.lab.sh import StepError, alive, cmdline, quiet, run, terminate
from fabric.lab.state import LabState, instance, load_state, state_dir
from fabric.nos.frr.scripts import KEPT
from fabric.render import render_switch

WORKERS = 4  # bounded parallelism on small machines
# Held by every `lab up` of this machine from choosing its management subnet until its bridge holds it (whatever
# FABRIC_LAB_STATE says), so two labs coming up at once never take one subnet.
NETWORK_LOCK = Path("/run/roce-fabric/lab-network.lock")


def _pmap(fn: Callable[[str], object], items: list[str]) -> None:
    """Run fn over items with bounded threads; the first StepError propagates."""
    with ThreadPoolExecutor(max_workers=WORKERS) as pool:
        for fut in [pool.submit(fn, i) for i in items]:
            fut.result()


def up(fabric: FabricIntent, *, inventory: str, prefix: str, management: IPv4Network,
       timeout: float = 120, rate: str = lab_qos.PORT_RATE,
       log: Callable[[str], None] = lambda _m: None) -> LabState:
    """Create the lab (switch ports shaped to `rate`) and wait for BGP convergence; on any failure tear down and
    raise StepError."""
    d = state_dir(fabric.name)
    old = load_state(fabric.name, required=False)
    if old is not None:
        raise UsageError(f"a lab for {fabric.name!r} exists ({d}/state.json, phase {old.phase}); "
                         "run `fabric lab down` first")
    st = build_state(fabric, inventory=inventory, prefix=prefix, management=management, state_dir=str(d),
                     instance=instance())
    st.qos_rate = rate
    t0 = time.monotonic()
    with _network_lock():
        if st.instance:
            set_access(st, _free_access(st, management))
        _preflight(st)
        st.save()
        try:
            _bridge(st, log)
        except BaseException:
            down_state(st)
            raise
    try:
        for path, (before, after) in neigh.raise_limits(fabric).items():
            log(f"kernel neighbour table (every namespace's): {path.removeprefix('/proc/sys/')} {before} → {after}")
        _create(st, fabric, log)
        log("waiting for BGP convergence")
        from fabric.lab.status import wait_converged, wait_lldp

        wait_converged(st, fabric, timeout=timeout)
        log("waiting for LLDP neighbours on every cable")
        wait_lldp(st, timeout=timeout)
        st.phase = "up"
        st.up_seconds = round(time.monotonic() - t0, 2)
        st.save()
        return st
    except BaseException as exc:
        down_state(st)
        if isinstance(exc, StepError | UsageError):
            raise
        if isinstance(exc, KeyboardInterrupt):
            raise StepError("interrupted", "lab torn down") from exc
        raise StepError("unexpected", f"{type(exc).__name__}: {exc}") from exc


@contextlib.contextmanager
def _network_lock() -> Iterator[None]:
    NETWORK_LOCK.parent.mkdir(parents=True, exist_ok=True)
    with NETWORK_LOCK.open("a") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        yield


def _routed() -> list[IPv4Network]:
    """Every IPv4 destination routed in the root namespace (all tables)."""
    routes = json.loads(run(["ip", "-j", "-4", "route", "show", "table", "all"], "preflight") or "[]")
    return [IPv4Network(r["dst"], strict=False) for r in routes if r.get("dst", "default") != "default"]


def _free_access(st: LabState, management: IPv4Network) -> IPv4Network:
    """The first access subnet (fabric.lab.plan.access_networks) no route of this machine touches."""
    assert st.bridge_address
    subnet = IPv4Interface(st.bridge_address).network
    routed = _routed()
    for net in access_networks(subnet, management):
        if not any(net.overlaps(r) for r in routed):
            return net
    raise UsageError(f"lab instance {st.instance}: no free /{subnet.prefixlen} left for its access subnet")


def _preflight(st: LabState) -> None:
    assert st.bridge and st.bridge_address
    net = str(IPv4Network(st.bridge_address, strict=False))
    if json.loads(run(["ip", "-j", "route", "show", "exact", net], "preflight") or "[]"):
        raise UsageError(f"management subnet {net} is already routed in the root namespace "
                         "(another lab up, or a host network); change addressing.management, or bring this lab up as "
                         "an instance of its own (FABRIC_LAB_INSTANCE)")
    if quiet(["ip", "link", "show", st.bridge]) == 0:
        raise UsageError(f"interface {st.bridge} exists without lab state; "
                         f"remove it (ip link del {st.bridge})")
    existing = set(run(["ip", "netns", "list"], "preflight").split())
    clash = [n.netns for n in st.nodes.values() if n.netns in existing]
    if clash:
        raise UsageError(f"namespace {clash[0]} already exists without lab state; remove it (ip netns del)")


def _batch(cmds: list[str], step: str, netns: str | None = None) -> None:
    if cmds:
        run(["ip", *(["-n", netns] if netns else []), "-batch", "-"], step, input="\n".join(cmds) + "\n")


def _bridge(st: LabState, log: Callable[[str], None]) -> None:
    """The management bridge in the root namespace, with the lab's address on it (its subnet's route)."""
    assert st.bridge and st.bridge_address
    log(f"management: bridge {st.bridge} {st.bridge_address}")
    st.root_links = [st.bridge]
    st.save()
    _batch([f"link add {st.bridge} type bridge", f"link set {st.bridge} up",
            f"addr add {st.bridge_address} dev {st.bridge}"], "management bridge")


def _create(st: LabState, fabric: FabricIntent, log: Callable[[str], None]) -> None:
    assert st.bridge and st.bridge_address
    log(f"namespaces: {len(st.nodes)}")
    st.namespaces = [n.netns for n in st.nodes.values()]
    st.root_links = [st.bridge] + [n.management_veth for n in st.nodes.values()]
    st.save()
    _batch([f"netns add {ns}" for ns in st.namespaces], "namespaces")
    log(f"cables: {len(st.links)} veth pairs")
    _batch([f"link add name {ln.a_ifname} netns {st.nodes[ln.a].netns} type veth peer name {ln.b_ifname} "
            f"netns {st.nodes[ln.b].netns}" for ln in st.links], "cables")
    cmds = []
    for n in st.nodes.values():
        cmds += [f"link add name {n.management_veth} type veth "
                 f"peer name {n.management_ifname} netns {n.netns}",
                 f"link set {n.management_veth} master {st.bridge} up"]
    _batch(cmds, "management network")
    for n in st.nodes.values():
        access = [f"addr add {n.access_address} dev {n.management_ifname}"] if n.access_address else []
        _batch(["link set lo up", f"addr add {n.management_address} dev {n.management_ifname}", *access,
                f"link set {n.management_ifname} up"], f"management {n.name}", netns=n.netns)
    log("lldpd on every node")  # first: its neighbours show while the rest is set up
    _start_each(st, "lldpd", daemons.start_lldp)
    switches = list(fabric.switches)

    def switch(name: str) -> None:
        n = st.nodes[name]
        files = render_switch(fabric.switches[name], fabric)
        script = rename_ports(files["interfaces.sh"], n.ifnames)
        path = st.dir / "switches" / name / "interfaces.sh"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(script)
        run(st.ns_argv(name, ["sh", str(path)]), f"interfaces.sh {name}")
        st.qos = lab_qos.apply(st, fabric, name, files, st.qos_rate)
        n.pids.update(daemons.start_frr(st, name, rename_ports(files["frr.conf"], n.ifnames)))
        kept = st.frr_dir(name) / KEPT / "interfaces.sh"  # what the FRR driver's plan compares (as after an apply)
        kept.parent.mkdir(parents=True, exist_ok=True)
        kept.write_text(script)

    log(f"switches: interfaces.sh + FRR on {len(switches)}")
    try:
        _pmap(switch, switches)
    finally:
        st.save()
    log(f"hosts: host agent on {len(fabric.hosts)}")
    for name, intent in fabric.hosts.items():
        host_agent(st, name, intent)
    log("sshd on every node")
    daemons.ensure_keys(st)
    st.save()
    _start_each(st, "sshd", daemons.start_sshd)


def _start_each(st: LabState, daemon: str, start: Callable[[LabState, str], int]) -> None:
    """Start `daemon` on every node (bounded threads), its pids recorded even when one fails."""
    def one(name: str) -> None:
        st.nodes[name].pids[daemon] = start(st, name)

    try:
        _pmap(one, list(st.nodes))
    finally:
        st.save()


def host_agent(st: LabState, name: str, intent: object) -> None:
    """Configure a host's rails with the host agent inside its namespace."""
    try:
        from fabric.host.agent import apply
        from fabric.host.model import AgentOptions
    except ImportError as exc:
        raise StepError(f"host {name}", f"host agent unavailable: {exc}") from exc
    result = apply(intent, AgentOptions(netns=st.nodes[name].netns))  # type: ignore[arg-type]
    bad = [i for i in result.items
           if i.status == "failed" and i.section in ("link", "address", "route", "rule", "sysctl")]
    if bad:
        b = bad[0]
        raise StepError(f"host agent {name}", f"{b.section} {b.target} {b.name}: {b.reason}")


# -- down ------------------------------------------------------------------------------------------
def _lab_pids(st: LabState) -> list[int]:
    """Recorded pids still running our command lines, plus every process left in the lab namespaces."""
    pids = {p for n in st.nodes.values() for p in n.pids.values() if alive(p) and st.state_dir in cmdline(p)}
    existing = set(quiet_out(["ip", "netns", "list"]).split())
    for ns in st.namespaces:
        if ns in existing:
            pids |= {int(p) for p in quiet_out(["ip", "netns", "pids", ns]).split() if p.isdigit()}
    return sorted(p for p in pids if alive(p))


def quiet_out(argv: list[str]) -> str:
    import subprocess

    try:
        return subprocess.run(argv, capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.TimeoutExpired):
        return ""


def down_state(st: LabState) -> list[str]:
    """Remove every process, namespace, veth and bridge the state lists; idempotent. Returns what went."""
    removed: list[str] = []
    pids = _lab_pids(st)
    terminate(pids)
    removed += [f"pid {p}" for p in pids]
    existing = set(quiet_out(["ip", "netns", "list"]).split())
    for ns in st.namespaces:
        if ns.startswith(st.prefix + "-") and ns in existing and quiet(["ip", "netns", "del", ns]) == 0:
            removed.append(f"netns {ns}")
    for link in reversed(st.root_links):  # veth ends vanish with their namespaces; the bridge does not
        if link.startswith(st.prefix + "-") and quiet(["ip", "link", "show", link]) == 0 \
                and quiet(["ip", "link", "del", link]) == 0:
            removed.append(f"link {link}")
    d = Path(st.state_dir)
    if d.exists():
        shutil.rmtree(d, ignore_errors=True)
    return removed


def down(fabric_name: str) -> list[str]:
    """`lab down`: remove the fabric's lab if there is one (nothing to do otherwise)."""
    st = load_state(fabric_name, required=False)
    return [] if st is None else down_state(st)
