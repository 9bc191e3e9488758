"""How acceptance reaches hosts: the `ssh` launcher's transport.

`SshTransport` runs commands on the hosts' management addresses with the inventory's access
settings (host keys verified). `LabTransport` is the same in the lab: namespace exec (default, cheap
on small machines) or the lab's real ssh. Long-running servers are always wrapped in `timeout` on the
host and killed (process group) by the caller's `finally`, so none outlives its test.
"""

from __future__ import annotations

import contextlib
import os
import shlex
import signal
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol


@dataclass
class Completed:
    rc: int
    stdout: str
    stderr: str

    @property
    def last_error(self) -> str:
        lines = [ln.strip() for ln in (self.stderr or self.stdout).splitlines() if ln.strip()]
        return lines[-1] if lines else f"exit {self.rc}"


class Transport(Protocol):
    kind: str  # "lab" or "ssh"

    def argv(self, host: str, argv: list[str]) -> list[str]: ...
    def netns(self, host: str) -> str | None: ...


def run(t: Transport, host: str, argv: list[str], *, timeout: float = 30) -> Completed:
    """Run a command on a host; a timeout is exit 124 with a readable message, never an exception."""
    try:
        p = subprocess.run(t.argv(host, argv), capture_output=True, text=True, timeout=timeout,
                           start_new_session=True)
    except subprocess.TimeoutExpired as exc:
        out = exc.stdout.decode(errors="replace") if isinstance(exc.stdout, bytes) else (exc.stdout or "")
        return Completed(124, out, f"timed out after {timeout:.0f}s: {shlex.join(argv[:4])}")
    except OSError as exc:
        return Completed(127, "", f"{argv[0]}: {exc.strerror}")
    return Completed(p.returncode, p.stdout, p.stderr)


def start(t: Transport, host: str, argv: list[str], *, seconds: float) -> subprocess.Popen[str]:
    """Start a server bounded by `timeout` on the host; stop it with `stop`."""
    bounded = ["timeout", "-k", "1", f"{max(1, round(seconds))}", *argv]
    return subprocess.Popen(t.argv(host, bounded), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)


def stop(proc: subprocess.Popen[str], grace: float = 2.0) -> tuple[str, str]:
    """Terminate a server's process group (if still running) and return its output."""
    if proc.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGTERM)
    try:
        out, err = proc.communicate(timeout=grace)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        out, err = proc.communicate()
    return out or "", err or ""


def which(t: Transport, host: str, tool: str) -> bool:
    return run(t, host, ["sh", "-c", f"command -v {shlex.quote(tool)}"], timeout=10).rc == 0


class LabTransport:
    """The lab's hosts: `ip netns exec` (via="netns") or the lab's real ssh (via="ssh")."""

    kind = "lab"

    def __init__(self, state, via: str = "netns") -> None:  # state: fabric.lab.state.LabState
        self.state, self.via = state, via

    def argv(self, host: str, argv: list[str]) -> list[str]:
        if self.via == "ssh":
            return self.state.ssh_argv(host, [shlex.join(argv)])
        return self.state.ns_argv(host, argv)

    def netns(self, host: str) -> str | None:
        return self.state.node(host).netns


class SshTransport:
    """Real hosts over ssh to their management addresses; keys from the agent or `key_file`."""

    kind = "ssh"

    def __init__(self, addresses: dict[str, str], *, user: str | None = None, key_file: str | None = None,
                 known_hosts: str = "~/.ssh/known_hosts", port: int = 22) -> None:
        self.addresses, self.user, self.key_file = addresses, user, key_file
        self.known_hosts, self.port = str(Path(known_hosts).expanduser()), port

    def argv(self, host: str, argv: list[str]) -> list[str]:
        out = ["ssh", "-o", "BatchMode=yes", "-o", "ConnectTimeout=5", "-o", "StrictHostKeyChecking=yes",
               "-o", f"UserKnownHostsFile={self.known_hosts}", "-p", str(self.port)]
        if self.key_file:
            out += ["-i", str(Path(self.key_file).expanduser()), "-o", "IdentitiesOnly=yes"]
        if self.user:
            out += ["-l", self.user]
        return [*out, self.addresses[host], shlex.join(argv)]

    def netns(self, host: str) -> str | None:
        return None
