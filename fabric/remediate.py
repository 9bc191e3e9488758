"""Handing located faults to the scheduler: for each faulty host (or NIC), the commands that stop new work
landing on it, and the commands that undo them.

- Slurm: `scontrol update NodeName=<node> State=DRAIN Reason="…"`, undone by `State=RESUME` (scontrol(1):
  https://slurm.schedmd.com/scontrol.html — DRAIN lets running jobs finish, RESUME returns the node).
- Kubernetes: `kubectl cordon -- <node>` and a `NoSchedule` taint whose value names the fault
  (`kubectl taint nodes --overwrite -- <node> fabric.roce.io/fault=<fault>:NoSchedule`); undone by
  `kubectl uncordon -- <node>` and `kubectl taint nodes -- <node> fabric.roce.io/fault:NoSchedule-`
  (https://kubernetes.io/docs/reference/kubectl/generated/kubectl_taint/; `--` ends the flags).
- Volcano: the node leaves its tier-1 HyperNode (as `fabric export --format volcano` wrote it), by a JSON
  patch that first tests the member at that index is this node; undone by adding the member back. Only
  for a node that is a member of one.

Host names come from logs and reports, which users write: an action is only ever built for a host of the
inventory, named exactly (the model's NAME rule: no list, range, pattern or leading `-`; never Slurm's `ALL`),
one host per command; anything else is refused as "not remediated: not an inventory host" (`screen`).
`scontrol update` has no `--`: its NodeName is therefore always such an exact name. Runs act on at most
`Budget.max_hosts` hosts in any `Budget.window` (default `MAX_HOSTS` per `WINDOW`: the CLI keeps the count across
runs in the state directory), so neither a bad log nor a loop of runs can empty a cluster.

Pure: builds the commands; `execute` runs them (argv, no shell).
"""

from __future__ import annotations

import json
import re
import shlex
import subprocess
from datetime import timedelta
from typing import Literal

from pydantic import BaseModel

from fabric.design.intent import FabricIntent
from fabric.errors import UsageError, printable
from fabric.export.kubernetes import DEFAULT_PREFIX, hypernode_name
from fabric.export.tiers import tiers
from fabric.model.inventory import NAME

Scheduler = Literal["slurm", "kubernetes", "volcano"]
SCHEDULERS: tuple[str, ...] = ("slurm", "kubernetes", "volcano")
TAINT_KEY = f"{DEFAULT_PREFIX}/fault"
MAX_HOSTS = 4  # default of --max-hosts: hosts that runs may drain/cordon/taint in one --window
WINDOW = "24h"  # default of --window
MAX_WINDOW = timedelta(days=30)
NOT_INVENTORY = "not remediated: not an inventory host"
_UNITS = {"m": "minutes", "h": "hours", "d": "days"}


class Budget(BaseModel):
    """At most `max_hosts` hosts remediated in any `window` (`text`: the window as the user wrote it)."""

    max_hosts: int
    window: timedelta
    text: str

    def describe(self) -> str:
        return f"{self.max_hosts} host(s) per {self.text}"


def budget(max_hosts: int, window: str) -> Budget:
    """The budget of `--max-hosts N --window W`; W is minutes, hours or days (`90m`, `24h`, `7d`), at most 30 days."""
    m = re.fullmatch(r"([1-9]\d{0,5})([mhd])", window.strip())
    span = timedelta(**{_UNITS[m[2]]: int(m[1])}) if m else None
    if span is None or span > MAX_WINDOW:
        raise UsageError(f"--window: expected minutes, hours or days up to 30d (90m, 24h, 7d), found {window!r}")
    return Budget(max_hosts=max_hosts, window=span, text=window.strip())


class Fault(BaseModel):
    """A located fault: the host, the rail NIC where known, and what found it."""

    host: str
    reason: str  # e.g. "rail-bandwidth: rail 2 below threshold"
    token: str  # short name of the fault for a taint value, e.g. "rail2-bandwidth"
    rail: int | None = None
    nic: str | None = None


class Action(BaseModel):
    scheduler: Scheduler
    host: str
    node: str
    fault: str
    apply: list[list[str]]
    revert: list[list[str]]


def node_name(host: str) -> str:
    """Slurm's name for a host: its short name (NodeName is usually the short hostname)."""
    return host.split(".")[0]


def _label_value(text: str) -> str:
    """A Kubernetes label/taint value: ≤ 63 of [A-Za-z0-9._-], alphanumeric at both ends."""
    value = re.sub(r"[^A-Za-z0-9._-]+", "-", text)[:63]
    return value.strip("-._") or "fault"


class Refusal(BaseModel):
    """A host named by a log or report that no action is built for, and why."""

    host: str  # printable, at most 80 characters
    why: str


def is_inventory_host(fabric: FabricIntent, host: str) -> bool:
    """`host` names exactly one host of the inventory: a key of the fabric's hosts that passes the model's NAME
    rule (so no list, range, pattern or option) and whose Slurm name is not `ALL` (scontrol expands it)."""
    return (isinstance(host, str) and host in fabric.hosts and re.fullmatch(NAME, host) is not None
            and node_name(host).upper() != "ALL")


def screen(fabric: FabricIntent, faults: list[Fault]) -> tuple[list[Fault], list[Refusal]]:
    """The merged faults on inventory hosts, and a refusal for every other host named."""
    ok, refused = [], []
    for f in merge(faults):
        if is_inventory_host(fabric, f.host):
            ok.append(f)
        else:
            refused.append(Refusal(host=printable(str(f.host))[:80], why=NOT_INVENTORY))
    return ok, refused


def merge(faults: list[Fault]) -> list[Fault]:
    """One fault per host (reasons and tokens joined, first NIC kept), in first-seen order."""
    by_host: dict[str, Fault] = {}
    for f in faults:
        if f.host not in by_host:
            by_host[f.host] = f
            continue
        have = by_host[f.host]
        if f.reason not in have.reason:
            by_host[f.host] = have.model_copy(update={"reason": f"{have.reason}; {f.reason}",
                                                      "token": f"{have.token}.{f.token}"})
    return list(by_host.values())


def actions(fabric: FabricIntent, faults: list[Fault], schedulers: list[str]) -> list[Action]:
    """The commands for the faults on inventory hosts (`screen`: the others get none)."""
    out = []
    hn = _hypernode_members(fabric) if "volcano" in schedulers else {}
    for f in screen(fabric, faults)[0]:
        node = f.host  # Kubernetes node name as `fabric export` writes it; Slurm uses the short name
        reason = printable(f"roce-fabric: {f.reason}")[:200]
        token = _label_value(f.token)
        for s in schedulers:
            if s == "slurm":
                update = ["scontrol", "update", f"NodeName={node_name(f.host)}"]
                out.append(Action(scheduler="slurm", host=f.host, node=node_name(f.host), fault=f.reason,
                                  apply=[[*update, "State=DRAIN", f"Reason={reason}"]],
                                  revert=[[*update, "State=RESUME"]]))
            elif s == "kubernetes":
                out.append(Action(scheduler="kubernetes", host=f.host, node=node, fault=f.reason,
                                  apply=[["kubectl", "cordon", "--", node],
                                         ["kubectl", "taint", "nodes", "--overwrite", "--", node,
                                          f"{TAINT_KEY}={token}:NoSchedule"]],
                                  revert=[["kubectl", "uncordon", "--", node],
                                          ["kubectl", "taint", "nodes", "--", node, f"{TAINT_KEY}:NoSchedule-"]]))
            elif s == "volcano" and node in hn:
                name, index = hn[node]
                member = {"type": "Node", "selector": {"exactMatch": {"name": node}}}
                remove = [{"op": "test", "path": f"/spec/members/{index}/selector/exactMatch/name", "value": node},
                          {"op": "remove", "path": f"/spec/members/{index}"}]
                add = [{"op": "add", "path": "/spec/members/-", "value": member}]
                patch = ["kubectl", "patch", "hypernode", "--type=json", "-p"]
                out.append(Action(scheduler="volcano", host=f.host, node=node, fault=f.reason,
                                  apply=[[*patch, json.dumps(remove), "--", name]],
                                  revert=[[*patch, json.dumps(add), "--", name]]))
    return out


def _hypernode_members(fabric: FabricIntent) -> dict[str, tuple[str, int]]:
    """node → (its tier-1 HyperNode, its index among the members), as `fabric export --format volcano` lists them."""
    t = tiers(fabric)
    out = {}
    for level in t.levels:
        for g in level:
            if g.tier == 1:
                for i, m in enumerate(g.members):
                    out[m] = (hypernode_name(t, g.name), i)
    return out


def command_lines(action: Action, revert: bool = False) -> list[str]:
    return [shlex.join(argv) for argv in (action.revert if revert else action.apply)]


def execute(action: Action, revert: bool = False, timeout: float = 60) -> tuple[bool, str]:
    """Run an action's commands in order; stop at the first that fails. (ok, last output line)."""
    last = ""
    for argv in action.revert if revert else action.apply:
        try:
            p = subprocess.run(argv, capture_output=True, text=True, timeout=timeout)
        except (OSError, subprocess.TimeoutExpired) as exc:
            return False, f"{argv[0]}: {getattr(exc, 'strerror', None) or exc}"
        lines = (p.stdout + p.stderr).strip().splitlines()
        last = lines[-1] if lines else f"exit {p.returncode}"
        if p.returncode != 0:
            return False, f"{shlex.join(argv)[:120]}: {last}"
    return True, last
