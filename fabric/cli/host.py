"""`fabric host plan|apply` (one GPU host) and `fabric hosts inventory|plan|apply` (the fleet)."""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path

import typer
from pydantic import ValidationError

from fabric.design.intent import HostIntent
from fabric.errors import InputError, Problem, UsageError
from fabric.fast.batch import gc_paused
from fabric.host.model import AgentOptions, FleetOptions
from fabric.model.limits import MAX_BYTES
from fabric.model.userfile import read_user_file

host_app = typer.Typer(
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    help="Provision this GPU host: rails, routes, SR-IOV VFs, RDMA netns mode, sysctls, NIC QoS, DCQCN, GID check; "
         "check its GPUDirect RDMA prerequisites.",
)


class Format(StrEnum):
    text = "text"
    json = "json"


def load_intent(intent_file: Path | None, inventory: Path | None, host: str | None) -> HostIntent:
    """The host intent from `--intent host.json`, or derived from INVENTORY for `--host NAME`."""
    if intent_file is not None:
        if inventory is not None:
            raise UsageError("give either --intent FILE or INVENTORY --host NAME, not both")
        text = sys.stdin.read(MAX_BYTES) if str(intent_file) == "-" else read_user_file(intent_file, "a host.json")
        try:
            return HostIntent.model_validate_json(text)
        except ValidationError as exc:
            file = "<stdin>" if str(intent_file) == "-" else str(intent_file)
            raise InputError(_intent_problems(exc, text, file)) from None
    if inventory is None:
        raise UsageError("give --intent host.json or INVENTORY --host NAME")
    if not host:
        raise UsageError("INVENTORY needs --host NAME (the GPU host to provision)")
    from fabric.design.load import load_fabric

    hosts = load_fabric(inventory).intent.hosts
    if host not in hosts:
        known = ", ".join(list(hosts)[:5]) + (", …" if len(hosts) > 5 else "")
        raise InputError(Problem(str(inventory), None, "hosts", f"a host of the inventory ({known})", repr(host)))
    return hosts[host]


def _intent_problems(exc: ValidationError, text: str, file: str) -> list[Problem]:
    """Every validation error of a host intent, each at the line of its key in the JSON."""
    from fabric.model.source import SourceMap, json_source, pydantic_problems

    smap = SourceMap()
    json_source(text, file, smap)  # invalid JSON raises its own located problem
    return pydantic_problems(exc, smap, HostIntent)


@dataclass(frozen=True)
class Output:
    """How a host command reports: `--strict` (skipped items fail), `--format`, `--verbose`."""

    strict: bool
    fmt: Format
    verbose: bool


def _run(apply: bool, hi: HostIntent, opts: AgentOptions, out: Output) -> None:
    with gc_paused():  # pyroute2 imports ~300 modules that all stay: no cyclic collection while they load
        from fabric.host import agent
        from fabric.host.report import render

    for opt, value in (("--mlnx-qos", opts.mlnx_qos), ("--mlxconfig", opts.mlxconfig), ("--rdma", opts.rdma_tool),
                       ("--lldpctl", opts.lldpctl), ("--ethtool", opts.ethtool)):
        if value is not None and not Path(value).is_file():
            raise UsageError(f"{opt} {value}: no such file")
    result = (agent.apply if apply else agent.plan)(hi, opts)
    ok = result.ok(out.strict)
    if out.fmt is Format.json:
        from fabric.host.model import HostReport

        report = HostReport(**result.model_dump(), counts=result.counts, ok=ok, strict=out.strict)
        typer.echo(report.model_dump_json(indent=2, by_alias=True))
    else:
        typer.echo(render(result, out.verbose))
        if out.strict and not ok and result.ok():
            typer.echo("strict: skipped items count as failures", err=True)
    sys.exit(0 if ok else 1)  # not typer.Exit: main() runs click with standalone_mode=False


_INV = typer.Argument(None, help="Inventory directory (with --host); or use --intent.", show_default=False)
_HOST = typer.Option(None, "--host", help="Host name in INVENTORY.")
_INTENT = typer.Option(None, "--intent", help="Rendered host intent (hosts/<name>/host.json; - reads stdin).")
_NETNS = typer.Option(None, "--netns", help="Act inside this network namespace.")
_SYSFS = typer.Option(Path("/sys"), "--sysfs-root", help="Root of sysfs (a prepared tree in tests).")
_PROCFS = typer.Option(Path("/proc"), "--procfs-root", help="Root of procfs (sysctls under sys/).")
_MLNX = typer.Option(None, "--mlnx-qos", help="mlnx_qos executable (default: the one on PATH).")
_MLXCONFIG = typer.Option(None, "--mlxconfig", help="mlxconfig (or mstconfig) for the firmware VF limit "
                          "(default: the one on PATH).")
_RDMA = typer.Option(None, "--rdma", help="iproute2 rdma tool for the RDMA netns mode (default: the one on PATH).")
_LLDPCTL = typer.Option(None, "--lldpctl", help="lldpd's lldpctl, to check that lldpd runs and sees each rail's "
                        "neighbour (default: the one on PATH).")
_ETHTOOL = typer.Option(None, "--ethtool", help="ethtool, to read a NIC's firmware LLDP agent (default: the one on "
                        "PATH).")
_STRICT = typer.Option(False, "--strict", help="Items skipped on this host count as failures.")
_FORMAT = typer.Option(Format.text, "--format", help="text or json.")
_VERBOSE = typer.Option(False, "--verbose", "-v", help="Also list unchanged items.")


@host_app.command("plan")
def plan_cmd(
    inventory: Path | None = _INV,
    host: str | None = _HOST,
    intent: Path | None = _INTENT,
    netns: str | None = _NETNS,
    sysfs_root: Path = _SYSFS,
    procfs_root: Path = _PROCFS,
    mlnx_qos: str | None = _MLNX,
    mlxconfig: str | None = _MLXCONFIG,
    rdma_tool: str | None = _RDMA,
    lldpctl: str | None = _LLDPCTL,
    ethtool: str | None = _ETHTOOL,
    strict: bool = _STRICT,
    fmt: Format = _FORMAT,
    verbose: bool = _VERBOSE,
    persist_root: Path | None = typer.Option(None, "--persist-root", help="Also diff the boot-time files below DIR."),
) -> None:
    """Show what apply would change on this host; changes nothing. Exit 1 if an item cannot be done."""
    _run(False, load_intent(intent, inventory, host),
         AgentOptions(netns=netns, sysfs_root=sysfs_root, procfs_root=procfs_root, mlnx_qos=mlnx_qos,
                      persist_root=persist_root, mlxconfig=mlxconfig, rdma_tool=rdma_tool,
                      lldpctl=lldpctl, ethtool=ethtool),
         Output(strict, fmt, verbose))


@host_app.command("apply")
def apply_cmd(
    inventory: Path | None = _INV,
    host: str | None = _HOST,
    intent: Path | None = _INTENT,
    netns: str | None = _NETNS,
    sysfs_root: Path = _SYSFS,
    procfs_root: Path = _PROCFS,
    mlnx_qos: str | None = _MLNX,
    mlxconfig: str | None = _MLXCONFIG,
    rdma_tool: str | None = _RDMA,
    lldpctl: str | None = _LLDPCTL,
    ethtool: str | None = _ETHTOOL,
    strict: bool = _STRICT,
    fmt: Format = _FORMAT,
    verbose: bool = _VERBOSE,
    persist: bool = typer.Option(False, "--persist", help="Install netplan, sysctl.d, the roce-qos (and roce-sriov) "
                                 "units, modprobe.d and the node's CNI configs too."),
    persist_root: Path = typer.Option(Path("/"), "--persist-root", help="Root for --persist files."),
) -> None:
    """Apply only the differences; skipped items are reported with the reason. Exit 1 on any failure."""
    _run(True, load_intent(intent, inventory, host),
         AgentOptions(netns=netns, sysfs_root=sysfs_root, procfs_root=procfs_root, mlnx_qos=mlnx_qos,
                      persist_root=persist_root if persist else None, mlxconfig=mlxconfig, rdma_tool=rdma_tool,
                      lldpctl=lldpctl, ethtool=ethtool),
         Output(strict, fmt, verbose))


@host_app.command("prereqs")
def prereqs_cmd(
    inventory: Path | None = _INV,
    host: str | None = _HOST,
    intent: Path | None = _INTENT,
    sysfs_root: Path = _SYSFS,
    nccl_version: str | None = typer.Option(None, "--nccl-version", help="NCCL the jobs use (default: the "
                                            "libnccl.so.2.* found on this host)."),
    strict: bool = _STRICT,
    fmt: Format = _FORMAT,
    verbose: bool = _VERBOSE,
) -> None:
    """Check the GPUDirect RDMA prerequisites (GPU↔NIC affinity, ACS, IOMMU, relaxed ordering, ATS, peer memory,
    NCCL version); changes nothing. Exit 1 if one is not met."""
    from fabric.host.gpudirect import check, gather
    from fabric.host.model import HostPlan, HostReport
    from fabric.host.report import render_checks

    hi = load_intent(intent, inventory, host)
    result = HostPlan(host=hi.name, items=check(hi, gather(hi, sysfs_root, nccl_version)))
    ok = result.ok(strict)
    if fmt is Format.json:
        typer.echo(HostReport(**result.model_dump(), counts=result.counts, ok=ok, strict=strict)
                   .model_dump_json(indent=2, by_alias=True))
    else:
        typer.echo(render_checks(result, "GPUDirect RDMA prerequisites", verbose))
    sys.exit(0 if ok else 1)


hosts_app = typer.Typer(
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    help="Provision the GPU host fleet through ansible-runner (playbooks/host.yml).",
)


@hosts_app.command("inventory")
def hosts_inventory(inventory: Path = typer.Argument(..., help="Inventory directory."),
                    lab: bool = typer.Option(False, "--lab", help="The running lab's hosts.")) -> None:
    """Print the Ansible inventory (YAML): management addresses, groups per SU and per rail."""
    from fabric.cli.site import open_site
    from fabric.host.fleet import inventory_yaml

    _loaded, site = open_site(inventory, lab=lab)
    typer.echo(inventory_yaml(site), nl=False)


def _fleet(mode: str, inventory: Path, opts: FleetOptions, out: Output, *, lab: bool, insecure_lab: bool) -> None:
    from rich.table import Table

    from fabric.cli.console import console
    from fabric.cli.progress import track
    from fabric.cli.site import open_site
    from fabric.host.fleet import HostOutcome, run

    if opts.forks < 1 or opts.timeout < 1 or (opts.serial is not None and opts.serial < 1):
        raise UsageError("--forks, --timeout and --serial must be at least 1")
    _loaded, site = open_site(inventory, lab=lab, via="ssh", insecure_lab=insecure_lab)
    fabric = site.fabric
    with track(f"hosts {mode}", total=None if opts.limit else len(fabric.hosts)) as progress:

        def on_host(out: HostOutcome) -> None:
            progress.advance()
            progress.print(f"{out.host}: {out.status}" + (f" ({out.note})" if out.note else ""))

        result = run(site, mode, opts, on_host)  # type: ignore[arg-type]
    names = [h.host for h in result.hosts]
    if not names:
        raise UsageError(f"--limit: expected a pattern matching hosts of {fabric.name}, found {opts.limit!r}")
    if all(h.status == "unreachable" for h in result.hosts):
        from fabric.cli.console import console
        from fabric.cli.site import none_answered

        console(stderr=True).print(f"error: {none_answered(site, 'hosts', names)}", soft_wrap=True)
    if out.fmt is Format.json:
        typer.echo(json.dumps({**result.model_dump(mode="json"), "ok": result.ok}, indent=2))
    else:
        table = Table(title=f"hosts {mode}")
        for col in ("host", "status", "changed", "unchanged", "skipped", "failed", "note"):
            table.add_column(col)
        for h in result.hosts:
            table.add_row(h.host, h.status, str(h.changed), str(h.unchanged), str(h.skipped), str(h.failed), h.note)
        console(width=200).print(table)
        bad = sum(h.status != "ok" for h in result.hosts)
        typer.echo(f"{len(result.hosts)} hosts, {bad} failed")
    sys.exit(0 if result.ok else 1)


_LIMIT = typer.Option(None, "--limit", help="Ansible host pattern (e.g. su1, rail2, gpu-su1-0*).")
_FORKS = typer.Option(50, "--forks", help="Hosts worked on in parallel (Ansible forks).")
_TIMEOUT = typer.Option(600, "--timeout", help="Seconds a host may take (its intent shipped, the agent run) before "
                        "it is reported failed (one that hangs).")
_SERIAL = typer.Option(None, "--serial", help="Batch size: hosts per batch, batches one after another.")
_INSECURE = typer.Option(False, "--insecure-lab", help="With --lab: do not verify SSH host keys.")
_AGENT = typer.Option(None, "--agent", help="The fabric executable on the hosts (default: fabric; the lab: this one).")
_REMOTE = typer.Option("/var/lib/roce-fabric", "--remote-dir", help="Where intents are put on the hosts.")
_PYTHON = typer.Option(None, "--python", help="Python interpreter on the hosts (default: discovered).")
_BECOME = typer.Option(None, "--become/--no-become", help="sudo on the hosts (default: unless user is root).")
_LAB = typer.Option(False, "--lab", help="Reach the running lab's hosts with the lab's user, key and known_hosts.")


@hosts_app.command("plan")
def hosts_plan(
    inventory: Path = typer.Argument(..., help="Inventory directory."),
    limit: str | None = _LIMIT,
    forks: int = _FORKS,
    serial: int | None = _SERIAL,
    timeout: int = _TIMEOUT,
    insecure_lab: bool = _INSECURE,
    agent: str | None = _AGENT,
    remote_dir: str = _REMOTE,
    become: bool | None = _BECOME,
    strict: bool = _STRICT,
    fmt: Format = _FORMAT,
    python: str | None = _PYTHON,
    lab: bool = _LAB,
) -> None:
    """Run `fabric host plan` on every host (via ansible-runner) and summarize. Exit 1 if any failed."""
    opts = FleetOptions(limit=limit, forks=forks, serial=serial, agent=agent, agent_args=["--strict"] if strict else [],
                        remote_dir=remote_dir, become=become, python=python, timeout=timeout)
    _fleet("plan", inventory, opts, Output(strict, fmt, False), lab=lab, insecure_lab=insecure_lab)


@hosts_app.command("apply")
def hosts_apply(
    inventory: Path = typer.Argument(..., help="Inventory directory."),
    limit: str | None = _LIMIT,
    forks: int = _FORKS,
    serial: int | None = _SERIAL,
    timeout: int = _TIMEOUT,
    insecure_lab: bool = _INSECURE,
    agent: str | None = _AGENT,
    remote_dir: str = _REMOTE,
    become: bool | None = _BECOME,
    strict: bool = _STRICT,
    persist: bool = typer.Option(False, "--persist", help="Also install the boot-time files."),
    fmt: Format = _FORMAT,
    python: str | None = _PYTHON,
    lab: bool = _LAB,
) -> None:
    """Run `fabric host apply` on every host; one failing host does not stop the others. Exit 1 if any failed."""
    args = (["--strict"] if strict else []) + (["--persist"] if persist else [])
    opts = FleetOptions(limit=limit, forks=forks, serial=serial, agent=agent, agent_args=args, remote_dir=remote_dir,
                        become=become, python=python, timeout=timeout)
    _fleet("apply", inventory, opts, Output(strict, fmt, False), lab=lab, insecure_lab=insecure_lab)
