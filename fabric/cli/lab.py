"""`fabric lab …`: up, status, exec, ssh, fault, down."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.table import Table
from rich.text import Text

from fabric.cli.console import console, styled
from fabric.errors import UsageError

if TYPE_CHECKING:
    from fabric.design.intent import FabricIntent
    from fabric.lab.state import LabState

lab_app = typer.Typer(no_args_is_help=True,
                      help="A whole fabric on this machine: namespaces, veths, FRR, sshd.")
out = console()
err = console(stderr=True)

InventoryArg = Annotated[Path, typer.Argument(help="inventory directory of YAML files", show_default=False)]


def _fabric(inventory: Path):
    """Root check, then the inventory's loaded model and FRR-realized intent."""
    from fabric.design.load import load_fabric
    from fabric.lab.sh import require_root

    require_root()
    f = load_fabric(inventory, target="frr")
    return f.loaded, f.intent


def _state(inventory: Path):
    from fabric.lab.state import load_state

    _loaded, fabric = _fabric(inventory)
    return load_state(fabric.name), fabric


@lab_app.command()
def up(inventory: InventoryArg,
       timeout: Annotated[float, typer.Option(help="seconds to wait for BGP convergence")] = 120,
       k8s: Annotated[bool, typer.Option("--k8s", help="instead: a Kubernetes control plane with one kwok node per "
                                         "host (make k8s-bins); prints its kubeconfig")] = False,
       real_nodes: Annotated[int, typer.Option("--real-nodes", help="with --k8s: the first N hosts get a real kubelet "
                                               "and containerd in the running namespace lab (root; make k8s-nodes)")]
       = 0,
       kernel: Annotated[str, typer.Option(help="native: this machine's kernel; vm: one leaf and up to 4 of its "
                                           "hosts in a VM with Debian's 6.12 kernel (ets, red ecn, Soft-RoCE)")]
       = "native") -> None:
    """Build the lab (namespaces, cables, FRR, host agent, sshd) and wait for BGP convergence."""
    from fabric.lab.lifecycle import up as lab_up
    from fabric.lab.sh import StepError, missing_prerequisites

    if real_nodes and not k8s:
        raise UsageError("--real-nodes goes with --k8s")
    if kernel not in ("native", "vm"):
        raise UsageError(f"--kernel: expected native or vm, found {kernel!r}")
    if k8s and kernel == "vm":
        raise UsageError("--kernel vm goes without --k8s: the control plane and its real nodes run on this machine's "
                         "kernel, in the namespace lab; the VM lab's emulated guest carries no Kubernetes node "
                         "(docs/kubernetes.md, 7. Real nodes)")
    if k8s:
        _k8s_up(inventory, real_nodes)
        return
    if kernel == "vm":
        _vm_up(inventory)
        return
    loaded, fabric = _fabric(inventory)
    missing = missing_prerequisites()
    if missing:
        raise UsageError(f"lab prerequisites missing: {', '.join(missing)} (make deps)")
    t0 = time.monotonic()
    try:
        st = lab_up(fabric, inventory=str(inventory), prefix=loaded.inv.lab.prefix,
                    management=loaded.inv.lab.management, timeout=timeout, rate=loaded.inv.lab.port_rate,
                    log=lambda m: err.print(Text.assemble((f"{time.monotonic() - t0:5.1f}s", "dim"), f" {m}")))
    except StepError as exc:
        raise UsageError(f"lab up failed at {exc.step}: {exc.detail} (lab torn down)") from None
    from fabric.lab.state import instance_key

    reach = f"; reached at {st.bridge_address} (instance {st.instance})" if st.instance else ""
    out.print(f"lab {instance_key(st.fabric, st.instance)} up in {st.up_seconds:.1f}s: {len(fabric.switches)} "
              f"switches, {len(fabric.hosts)} hosts, {len(st.links)} cables; state {st.dir}; "
              f"ssh key {st.ssh_key} (user {st.ssh_user}){reach}")


def _vm_up(inventory: Path) -> None:
    """`lab up --kernel vm`: the VM outlives the command; `lab down` stops it."""
    from fabric.lab import vm
    from fabric.lab.sh import StepError

    _loaded, fabric = _fabric(inventory)
    if vm.missing():
        raise UsageError(f"lab up --kernel vm: missing {', '.join(vm.missing())} (make deps)")
    try:
        lab = vm.up(fabric)
    except StepError as exc:
        raise UsageError(f"lab up --kernel vm failed at {exc.step}: {exc.detail} (VM stopped)") from None
    out.print(f"VM lab {lab.fabric} up in {lab.up_seconds:.1f}s (kernel {lab.kernel}, emulated): {lab.leaf} and "
              f"{len(lab.hosts)} hosts ({', '.join(lab.hosts)}) on rail {lab.rail}, host ports at {lab.rate}; "
              f"state {lab.dir}\nreach it: fabric lab exec {inventory} NODE -- CMD (NODE: {lab.leaf} or a host); "
              f"stop it: fabric lab down {inventory}")


def _k8s_up(inventory: Path, real_nodes: int = 0) -> None:
    """`lab up --k8s`: no root needed (but for real nodes); the control plane outlives the command."""
    from fabric.design.load import load_fabric
    from fabric.lab import kube

    fabric = load_fabric(inventory).intent
    bins = kube.bins_dir()
    missing = kube.missing_bins(bins)
    if missing:
        raise UsageError(f"lab up --k8s: {', '.join(missing)} not built in {bins} (make k8s-bins)")
    real = _real_hosts(fabric, real_nodes)
    try:
        if real:
            from fabric.lab import nodes

            lab = nodes.up(fabric, bins, real, nodes.bins_dir())
        else:
            lab = kube.up(fabric, bins)
    except kube.KubeLabError as exc:
        raise UsageError(f"lab up --k8s: {exc}") from None
    kinds = f"{len(real)} real nodes ({', '.join(real)}), {len(fabric.hosts) - len(real)} kwok nodes" if real \
        else f"{len(fabric.hosts)} kwok nodes"
    out.print(f"Kubernetes lab {fabric.name} up in {lab.start_s:.1f}s: {kinds}; state "
              f"{lab.workdir}\n{lab.volcano.describe() if lab.volcano else ''}\nexport KUBECONFIG={lab.kubeconfig}",
              markup=False, soft_wrap=True)  # the export line whole, to copy whatever the terminal's width


def _real_hosts(fabric: FabricIntent, count: int) -> list[str]:
    """The first `count` hosts of the inventory, for `--real-nodes`; root and the node programs checked first."""
    if count == 0:
        return []
    import os

    from fabric.lab import nodes

    if count < 0 or count > len(fabric.hosts):
        raise UsageError(f"--real-nodes: expected 0 to {len(fabric.hosts)} (the hosts of {fabric.name}), found {count}")
    if os.geteuid() != 0:
        raise UsageError("--real-nodes: a kubelet and containerd need root")
    if lacking := nodes.missing(nodes.bins_dir()):
        raise UsageError(f"--real-nodes: missing {', '.join(lacking)}")
    return list(fabric.hosts)[:count]


@lab_app.command()
def down(inventory: InventoryArg) -> None:
    """Remove every namespace, veth, bridge and process the lab made (idempotent); also a `--k8s` lab."""
    import os

    from fabric.design.load import load_fabric
    from fabric.lab import kube
    from fabric.lab.lifecycle import down as lab_down

    name = load_fabric(inventory).intent.name
    stopped = []
    if os.geteuid() == 0:  # real nodes first, while the API server still runs
        from fabric.lab import nodes

        stopped = nodes.stop_all(kube.state_dir(name))
    stopped += kube.down(name)
    if stopped:
        out.print(f"Kubernetes lab stopped: {', '.join(stopped)}")
        if os.geteuid() != 0:
            return
    from fabric.lab import vm

    _, fabric = _fabric(inventory)
    gone = vm.down(fabric.name)
    if gone:
        ended = sum(g.startswith("pid ") for g in gone)
        what = ("the guest powered off" if "powered off" in gone else
                f"the guest did not power off in time, {ended} processes ended" if ended else "it was not running")
        out.print(f"VM lab {fabric.name} down: {what}")
    from fabric.lab.state import instance, instance_key

    removed = lab_down(fabric.name)
    if gone and not removed:
        return
    ns = sum(r.startswith("netns ") for r in removed)
    pids = sum(r.startswith("pid ") for r in removed)
    key = instance_key(fabric.name, instance())
    out.print(f"lab {key} down: {ns} namespaces, {pids} processes removed" if removed
              else f"lab {key}: nothing to remove")


@lab_app.command()
def status(inventory: InventoryArg,
           fmt: Annotated[str, typer.Option("--format", help="table or json")] = "table",
           pings: Annotated[bool, typer.Option(help="measure host reachability")] = True) -> None:
    """BGP sessions, ECMP width and the per-rail reachability matrix; exit 1 when anything is down."""
    from fabric.lab.status import lab_status

    if fmt not in ("table", "json"):
        raise UsageError(f"--format: expected table or json, found {fmt!r}")
    st, fabric = _state(inventory)
    s = lab_status(st, fabric, pings=pings)
    if fmt == "json":
        data = s.model_dump()
        data["ok"], data["problems"] = s.ok, s.problems
        import json

        out.print_json(json.dumps(data))
    else:
        _print_status(s, fabric)
    sys.exit(0 if s.ok else 1)  # not typer.Exit: main() runs click with standalone_mode=False


def _print_status(s, fabric) -> None:
    t = Table(title=f"lab {s.fabric}: switches")
    for col in ("switch", "role", "sessions", "down", "ECMP min/expected", "prefixes missing"):
        t.add_column(col)
    for sw in s.switches:
        est = sum(x.state == "Established" for x in sw.sessions)
        bad = ", ".join(f"{x.neighbor}({x.peer}) {x.state}" for x in sw.sessions if x.state != "Established")
        ecmp = f"{sw.ecmp_min if sw.ecmp_min is not None else '-'}/{sw.ecmp_expected or '-'}"
        ok_ecmp = sw.ecmp_expected is None or (sw.ecmp_min or 0) >= sw.ecmp_expected
        t.add_row(sw.name, sw.role, f"{est}/{len(sw.sessions)}", styled(bad, "red") if bad else "",
                  ecmp if ok_ecmp else styled(ecmp, "red"),
                  styled(str(len(sw.missing)), "red") if sw.missing else "0")
    out.print(t)
    if s.pings:
        out.print(_reachability_matrix(s.pings, list(fabric.hosts)))
        out.print(_reachability_per_rail(s.pings))
    if s.faults:
        f = Table(title="faults")
        for col in ("kind", "port", "ifname", "rate"):
            f.add_column(col)
        for x in s.faults:
            f.add_row(x.kind, f"{x.node}:{x.port}" + (f" {x.other}" if x.other else ""), x.ifname, x.rate or "")
        out.print(f)
    out.print(styled("all sessions established, full ECMP, every rail reachable", "green") if s.ok
              else Text.assemble((f"{len(s.problems)} problems", "red"), ": " + "; ".join(s.problems[:5])))


def _reachability_matrix(pings: list, hosts: list[str]) -> Table:
    """Source host × destination host: rails reachable of those probed (one pass over the probes)."""
    cells: dict[tuple[str, str], list] = {}
    for p in pings:
        cells.setdefault((p.src, p.dst), []).append(p)
    m = Table(title="reachability: rails reachable from source host (fping -S rail address)")
    m.add_column("from \\ to")
    for h in hosts:
        m.add_column(h)
    for a in hosts:
        row = []
        for b in hosts:
            ps = cells.get((a, b), [])
            down = [str(p.rail) for p in ps if not p.ok]
            cell = f"{len(ps) - len(down)}/{len(ps)}"
            row.append("-" if not ps else styled(f"{cell} rail {','.join(down)}", "red") if down
                       else styled(cell, "green"))
        m.add_row(a, *row)
    return m


def _reachability_per_rail(pings: list) -> Table:
    by_rail: dict[int, list] = {}
    for p in pings:
        by_rail.setdefault(p.rail, []).append(p)
    r = Table(title="reachability per rail")
    for col in ("rail", "within SU", "across SUs", "avg rtt ms"):
        r.add_column(col)

    def frac(group: list) -> str:
        ok = sum(p.ok for p in group)
        return "-" if not group else (f"{ok}/{len(group)}" if ok == len(group) else styled(f"{ok}/{len(group)}", "red"))

    for rail, ps in sorted(by_rail.items()):
        rtts = [p.rtt_ms for p in ps if p.rtt_ms is not None]
        r.add_row(str(rail), frac([p for p in ps if p.same_su]), frac([p for p in ps if not p.same_su]),
                  f"{sum(rtts) / len(rtts):.3f}" if rtts else "-")
    return r


@lab_app.command("exec", context_settings={"allow_extra_args": True, "ignore_unknown_options": True})
def exec_(inventory: InventoryArg, node: Annotated[str, typer.Argument(help="switch or host")],
          command: Annotated[list[str], typer.Argument(help="command after --")]) -> None:
    """Run a command in the node's namespace (`fabric lab exec INV NODE -- CMD …`), in the VM lab if one runs."""
    from fabric.lab import vm

    _, fabric = _fabric(inventory)
    lab = vm.load(fabric.name, required=False)
    if lab is not None:
        from fabric.lab.sh import StepError

        try:
            rc, text = vm.exec_argv(lab, node, command)
        except StepError as exc:
            raise UsageError(f"lab exec: {exc.detail}") from None
        sys.stdout.write(text)
        sys.exit(rc)
    st, _ = _state(inventory)
    sys.exit(subprocess.run(st.ns_argv(node, command)).returncode)


@lab_app.command(context_settings={"allow_extra_args": True, "ignore_unknown_options": True})
def ssh(inventory: InventoryArg, node: Annotated[str, typer.Argument(help="switch or host")],
        command: Annotated[list[str] | None, typer.Argument(help="optional command after --")] = None,
        ) -> None:
    """Real ssh with the lab key to the node's management address (`-- CMD` optional)."""
    from fabric.access import ssh_argv
    from fabric.lab.site import LabSite

    st, fabric = _state(inventory)
    site = LabSite(st, fabric)
    # interactive sessions (no command) may prompt, so no BatchMode there
    argv = ssh_argv(site.host_credentials(), st.node(node).address, command or None, batch=bool(command))
    sys.exit(subprocess.run(argv).returncode)


def _reconverge(st: LabState, fabric: FabricIntent, timeout: float = 60) -> None:
    """Wait until every session is Established and ECMP is full width again; exit 1 if not within `timeout`."""
    from fabric.lab.sh import StepError
    from fabric.lab.status import wait_converged

    t0 = time.monotonic()
    try:
        wait_converged(st, fabric, timeout=timeout)
    except StepError as exc:
        err.print(f"error: {exc.detail}")
        sys.exit(1)
    out.print(f"converged again in {time.monotonic() - t0:.1f}s")


FAULTS = ("`fault INV link DEV:PORT down|up`, `throttle DEV:PORT RATE`, `swap-cables DEV:PORT DEV:PORT`, "
          "`cross-uplinks DEV:PORT DEV:PORT`, `pull DEV:PORT` or `clear`")


@lab_app.command()
def fault(inventory: InventoryArg,
          action: Annotated[str, typer.Argument(help="link | throttle | swap-cables | cross-uplinks | pull | clear")],
          args: Annotated[list[str] | None,
                          typer.Argument(help="link DEV:PORT down|up; throttle DEV:PORT RATE; swap-cables DEV:PORT "
                                         "DEV:PORT (two host cables); cross-uplinks DEV:PORT DEV:PORT (two "
                                         "switch-to-switch cables); pull DEV:PORT")] = None,
          ) -> None:
    """Inject or clear faults: `link DEV:PORT down|up`, `throttle DEV:PORT RATE`, cable faults `swap-cables A:PORT
    B:PORT`, `cross-uplinks A:PORT B:PORT`, `pull DEV:PORT`; `clear` undoes them all (once BGP has converged
    again)."""
    from fabric.lab import faults

    st, fabric = _state(inventory)
    args = args or []
    if action == "link" and len(args) == 2:
        f = faults.link(st, args[0], args[1])
        out.print(f"{args[0]} {args[1]}" + (" (fault recorded)" if f else " (fault cleared)"))
    elif action == "throttle" and len(args) == 2:
        f = faults.throttle(st, args[0], args[1])
        out.print(f"{args[0]} throttled to {f.rate} (tbf on {f.node}:{f.ifname})")
    elif action in ("swap-cables", "cross-uplinks") and len(args) == 2:
        f = faults.swap(st, fabric, action, args[0], args[1])
        out.print(f"cables in {args[0]} and {args[1]} swapped (fault recorded)")
    elif action == "pull" and len(args) == 1:
        f = faults.pull(st, fabric, args[0])
        out.print(f"cable pulled out of {args[0]} (fault recorded)")
    elif action == "clear" and not args:
        cleared = faults.clear(st, fabric)
        out.print(f"{len(cleared)} faults cleared")
        if any(f.kind not in ("throttle",) for f in cleared):  # BGP over a cable back takes seconds: done once it has
            _reconverge(st, fabric)
    else:
        raise UsageError(f"expected {FAULTS}, found {' '.join([action, *args])!r}")
