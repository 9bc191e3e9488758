"""Fleet rollout: the Ansible inventory derived from the fabric model, and `playbooks/host.yml` run
through ansible-runner with the per-host JSON results of the agent gathered into one summary."""

from __future__ import annotations

import os
import shutil
import signal
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from importlib import resources
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel

from fabric.access import Site, ansible_ssh_args
from fabric.errors import UsageError
from fabric.host.model import FleetOptions, host_report
from fabric.secrets import scrubbed_env

PLAYBOOK = resources.files("fabric") / "playbooks" / "host.yml"  # package data: the repository's playbooks/
AGENT_TASK = "Run the host agent"


class HostOutcome(BaseModel):
    """One host of a fleet run: `status` ok/failed/unreachable, the agent's counts and a short note."""

    host: str
    status: Literal["ok", "failed", "unreachable"]
    changed: int = 0
    unchanged: int = 0
    skipped: int = 0
    failed: int = 0
    note: str = ""
    items: list[dict[str, Any]] = []


class FleetResult(BaseModel):
    mode: Literal["plan", "apply"]
    hosts: list[HostOutcome]

    @property
    def ok(self) -> bool:
        return bool(self.hosts) and all(h.status == "ok" for h in self.hosts)


def ansible_inventory(site: Site) -> dict[str, Any]:
    """YAML-ready inventory: every GPU host with its management address, groups per SU and per rail.

    Only names and paths go in (user, port, key file path); never a password or key material.
    """
    fabric = site.fabric
    hosts = {name: {"ansible_host": site.host_address(name)} for name in fabric.hosts}
    groups: dict[str, Any] = {}
    for name, h in fabric.hosts.items():
        groups.setdefault(f"su{h.su}", {"hosts": {}})["hosts"][name] = None
    for name, h in fabric.hosts.items():
        for rail in h.rails:
            groups.setdefault(f"rail{rail.rail}", {"hosts": {}})["hosts"][name] = None
    cred = site.host_credentials()
    gvars: dict[str, Any] = {"ansible_port": cred.port}
    if cred.username:
        gvars["ansible_user"] = cred.username
    if cred.key_file:
        gvars["ansible_ssh_private_key_file"] = cred.key_file
    return {"all": {"vars": gvars, "children": {"gpu_hosts": {"hosts": hosts, "children": groups}}}}


class Unsafe(str):
    """A value Ansible must never template: written as YAML `!unsafe` (Ansible's own mark for data)."""


class _UnsafeDumper(yaml.SafeDumper):
    pass


_UnsafeDumper.add_representer(Unsafe, lambda d, v: d.represent_scalar("!unsafe", str(v)))


def unsafe(data: Any) -> Any:
    """`data` with every string value (not the mapping keys: host and group names, checked by the model)
    marked `!unsafe`, so no inventory, environment or option text is ever rendered as a Jinja template."""
    if isinstance(data, str):
        return Unsafe(data)
    if isinstance(data, dict):
        return {k: unsafe(v) for k, v in data.items()}
    if isinstance(data, list | tuple):
        return [unsafe(v) for v in data]
    return data


def ansible_yaml(data: Any) -> str:
    """YAML for Ansible (inventory, extra vars) with every string value `!unsafe`."""
    return yaml.dump(unsafe(data), Dumper=_UnsafeDumper, sort_keys=False, default_flow_style=False)


class _UnsafeLoader(yaml.SafeLoader):
    pass


_UnsafeLoader.add_constructor("!unsafe", lambda lo, node: Unsafe(lo.construct_scalar(node)))  # type: ignore[arg-type]


def read_ansible_yaml(text: str) -> Any:
    """What `ansible_yaml` wrote, the `!unsafe` values as `Unsafe` strings."""
    return yaml.load(text, Loader=_UnsafeLoader)


def inventory_yaml(site: Site) -> str:
    return ansible_yaml(ansible_inventory(site))


def _outcome(host: str, event: str, res: dict[str, Any]) -> HostOutcome:
    if event == "runner_on_unreachable" or res.get("unreachable"):
        return HostOutcome(host=host, status="unreachable", note=_one_line(res.get("msg", "unreachable")))
    if event == "runner_on_failed" or res.get("failed"):
        detail = res.get("module_stdout") or res.get("stderr") or ""
        msg = res.get("msg", "task failed") + (f": {detail.strip().splitlines()[0]}" if detail.strip() else "")
        return HostOutcome(host=host, status="failed", note=_one_line(msg))
    try:
        report = host_report(str(res.get("stdout", "")))
    except ValueError as exc:
        stdout = str(res.get("stdout", ""))
        text = res.get("stderr") or (str(exc) if stdout.strip() else "") or res.get("msg") or \
            f"agent exit {res.get('rc')}"
        return HostOutcome(host=host, status="failed", note=_one_line(text))
    bad = [i for i in report.items if i.status == "failed"]
    note = f"{bad[0].target} {bad[0].name}: {bad[0].reason}" if bad else "; ".join(report.warnings)
    counts = report.counts_ or report.counts
    return HostOutcome(
        host=host,
        status="ok" if report.ok_ else "failed",
        note=_one_line(note),
        items=[i.model_dump() for i in report.items],
        **counts.model_dump(),
    )


def _one_line(text: str) -> str:
    """The last line of a host's message, at most 200 characters, its control characters shown as escapes (a host
    answering noise never sends the terminal an escape sequence)."""
    lines = [ln.strip() for ln in str(text).strip().splitlines() if ln.strip()]
    line = lines[-1][:200] if lines else ""
    return "".join(c if c.isprintable() else ascii(c)[1:-1] for c in line)


RUN_PREFIX = "fabric-hosts-"

# Ansible settings that make a fleet run cheaper without changing what it does; each can be overridden by
# the same variable in the operator's environment. Pipelining: each module runs in the SSH session that sends
# it (no remote temp directory, transfer, chmod and removal per task: 1 SSH command instead of about 4). SSH
# multiplexing as Ansible's default has it, without its `-C` (compressing module payloads that are zip files
# already costs both ends CPU for nothing). Only the YAML inventory plugin: the run writes YAML.
SPEED = {
    "ANSIBLE_PIPELINING": "True",
    "ANSIBLE_SSH_ARGS": "-o ControlMaster=auto -o ControlPersist=60s",
    "ANSIBLE_INVENTORY_ENABLED": "yaml",
}


@contextmanager
def scrubbed_environ() -> Iterator[None]:
    """While ansible-runner runs, this process's environment holds only what the fleet needs (no
    FABRIC_PASSWORD or any other secret): ansible-runner copies it into artifacts/<id>/command."""
    saved = dict(os.environ)
    os.environ.clear()
    os.environ.update(scrubbed_env(saved))
    try:
        yield
    finally:
        os.environ.clear()
        os.environ.update(saved)


@contextmanager
def cleanup_on_signals() -> Iterator[None]:
    """SIGTERM and SIGHUP end the run through the `finally` that removes its private data dir."""
    def stop(signum: int, _frame: Any) -> None:
        raise SystemExit(128 + signum)
    if threading.current_thread() is not threading.main_thread():  # only the main thread handles signals
        yield
        return
    old = {s: signal.signal(s, stop) for s in (signal.SIGTERM, signal.SIGHUP)}
    try:
        yield
    finally:
        for s, handler in old.items():
            signal.signal(s, handler)


# ssh binds a control socket at <dir>/<%C: 40 hex characters> plus a 17-character suffix first, in 107 bytes
CONTROL_DIR_MAX = 107 - 1 - 40 - 17


def run_base() -> Path:
    """Where a run's private data dir goes: the temporary directory, or /tmp where that is too deep for ssh's
    control sockets in the run's `cp` (a long TMPDIR left every host unreachable: ssh could not bind them)."""
    base = Path(tempfile.gettempdir())
    room = len(f"/{RUN_PREFIX}{os.getpid()}-xxxxxxxx/cp")
    return base if len(str(base)) + room <= CONTROL_DIR_MAX else Path("/tmp")


def remove_stale_runs() -> None:
    """Private data dirs left by runs that were killed (SIGKILL, OOM): their process is gone."""
    for d in [d for base in {Path(tempfile.gettempdir()), run_base()} for d in base.glob(f"{RUN_PREFIX}*-*")]:
        pid = d.name.removeprefix(RUN_PREFIX).split("-", 1)[0]
        if pid.isdigit() and not Path(f"/proc/{pid}").exists():
            shutil.rmtree(d, ignore_errors=True)


def stop_masters(control_dir: Path, wait_s: float = 5.0) -> None:
    """End this run's SSH multiplexing masters: ControlPersist keeps each for a minute after its last session (a
    process and a connection per host left behind the command, more than a thousand at once on a large fleet).
    They are the processes ssh names `ssh: <control path> [mux]`, their control paths in this run's own `control_dir`
    (Linux /proc; elsewhere they end on their own)."""
    prefix = f"ssh: {control_dir}{os.sep}".encode()
    pids = []
    for proc in Path("/proc").glob("[0-9]*"):
        try:
            if (proc / "cmdline").read_bytes().startswith(prefix):
                pids.append(int(proc.name))
        except OSError:
            continue
    for pid in pids:
        with suppress(ProcessLookupError):
            os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + wait_s
    while any(Path(f"/proc/{pid}").exists() for pid in pids) and time.monotonic() < deadline:
        time.sleep(0.05)


def run(site: Site, mode: Literal["plan", "apply"], opts: FleetOptions = FleetOptions(),
        on_host: Callable[[HostOutcome], None] | None = None) -> FleetResult:
    """Run playbooks/host.yml over the fleet; `on_host` is called as each host's result arrives."""
    import ansible_runner

    bindir = str(Path(sys.executable).parent)
    path = f"{bindir}{os.pathsep}{os.environ.get('PATH', '')}"
    if not shutil.which("ansible-playbook", path=path):
        raise UsageError("ansible-playbook not found (pip install ansible-core)")
    fabric, cred = site.fabric, site.host_credentials()
    agent, python = opts.agent or site.agent, opts.python or site.python
    become = cred.username not in (None, "root") if opts.become is None else opts.become
    outcomes: dict[str, HostOutcome] = {}

    def handle(ev: dict[str, Any]) -> bool:
        """Each host's outcome from its event; False: ansible-runner writes no event to the run's artifacts (a
        copy of every agent report, hundreds of MB at thousands of hosts, removed unread at the end)."""
        data = ev.get("event_data") or {}
        event = ev.get("event", "")
        host = data.get("host")
        if not host or event not in ("runner_on_ok", "runner_on_failed", "runner_on_unreachable"):
            return False
        agent_ok = event == "runner_on_ok" and data.get("task") == AGENT_TASK
        if not agent_ok and (event == "runner_on_ok" or host in outcomes):
            return False
        out = _outcome(host, event, data.get("res") or {})
        outcomes[host] = out
        if on_host:
            on_host(out)
        return False

    remove_stale_runs()
    pdd = Path(tempfile.mkdtemp(prefix=f"{RUN_PREFIX}{os.getpid()}-", dir=run_base()))
    try:
        (pdd / "inventory").mkdir()
        (pdd / "inventory" / "hosts.yml").write_text(inventory_yaml(site))
        for name, h in fabric.hosts.items():
            (pdd / "intents" / name).mkdir(parents=True)
            (pdd / "intents" / name / "host.json").write_text(h.model_dump_json(indent=2) + "\n")
        extravars = {
            "fabric_mode": mode,
            "fabric_agent": agent,
            "fabric_agent_args": opts.agent_args,
            "fabric_intent_dir": str(pdd / "intents"),
            "fabric_remote_dir": opts.remote_dir,
            "fabric_become": become,
            "fabric_timeout": opts.timeout,
            "ansible_ssh_common_args": ansible_ssh_args(cred),
        }
        if python:
            extravars["ansible_python_interpreter"] = python
        if opts.serial:
            extravars["fabric_serial"] = opts.serial
        # written here, not passed as `extravars=`: ansible-runner would dump them without the `!unsafe` mark
        (pdd / "env").mkdir()
        (pdd / "env" / "extravars").write_text(ansible_yaml(extravars))
        envvars = {
            "PATH": path,
            "ANSIBLE_HOST_KEY_CHECKING": "False" if cred.known_hosts is None else "True",
            "ANSIBLE_LOCAL_TEMP": str(pdd / "tmp"),
            # SSH multiplexing masters of this run only: one left by an earlier run whose peer is gone (a lab
            # namespace torn down) would take the new connection and hang it
            "ANSIBLE_SSH_CONTROL_PATH_DIR": str(pdd / "cp"),
            "ANSIBLE_RETRY_FILES_ENABLED": "False",
            "ANSIBLE_NOCOLOR": "1",
            "ANSIBLE_PYTHON_INTERPRETER": "auto_silent",
            **{k: os.environ.get(k, v) for k, v in SPEED.items()},
        }
        with resources.as_file(PLAYBOOK) as playbook, scrubbed_environ(), cleanup_on_signals():
            r = ansible_runner.run(
                private_data_dir=str(pdd),
                playbook=str(playbook),
                limit=opts.limit,
                forks=opts.forks,
                envvars=envvars,
                quiet=True,
                event_handler=handle,
            )
        if r.status == "canceled":  # ansible-runner's own SIGTERM/SIGINT handling stopped the playbook
            raise UsageError("the fleet run was stopped by a signal; hosts already done are listed by a new plan")
        if r.rc != 0 and not outcomes:
            tail = _one_line(r.stdout.read() if hasattr(r.stdout, "read") else "")
            raise UsageError(f"ansible-playbook failed (rc {r.rc}): {tail or r.status}")
    finally:
        stop_masters(pdd / "cp")
        shutil.rmtree(pdd, ignore_errors=True)
    return FleetResult(mode=mode, hosts=sorted(outcomes.values(), key=lambda o: o.host))
