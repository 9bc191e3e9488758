"""Running commands on a site's hosts (fabric.access.Site): the ssh launcher of acceptance.

Long-running servers are always wrapped in `timeout` on the host and killed (process group) by the
caller's `finally`, so none outlives its test. A failed or timed-out command is a `Completed` with its
exit code, never an exception.
"""

from __future__ import annotations

import contextlib
import os
import shlex
import signal
import subprocess
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from fabric.access import Site

# The hosts' sysfs root in commands run there: /sys, or $ROCE_FABRIC_SYSFS where a host (a test's stand-in host,
# as in the pod entrypoint of fabric.render.k8s) sets one.
SYSFS = "${ROCE_FABRIC_SYSFS:-/sys}"


@dataclass
class Completed:
    rc: int
    stdout: str
    stderr: str

    @property
    def last_error(self) -> str:
        lines = [ln.strip() for ln in (self.stderr or self.stdout).splitlines() if ln.strip()]
        return lines[-1] if lines else f"exit {self.rc}"

    @property
    def unreachable(self) -> bool:
        """ssh could not connect or log in (OpenSSH's own exit 255), or the command timed out."""
        return self.rc in (124, 255)


def run(site: Site, host: str, argv: list[str], *, timeout: float = 30, stdin: str | None = None) -> Completed:
    """Run a command on a host; a timeout is exit 124 with a readable message, never an exception."""
    try:
        p = subprocess.run(site.host_argv(host, argv), capture_output=True, text=True, timeout=timeout,
                           start_new_session=True, input=stdin)
    except subprocess.TimeoutExpired as exc:
        out = exc.stdout.decode(errors="replace") if isinstance(exc.stdout, bytes) else (exc.stdout or "")
        return Completed(124, out, f"timed out after {timeout:.0f}s: {shlex.join(argv[:4])}")
    except OSError as exc:
        return Completed(127, "", f"{argv[0]}: {exc.strerror}")
    return Completed(p.returncode, p.stdout, p.stderr)


def start(site: Site, host: str, argv: list[str], *, seconds: float) -> subprocess.Popen[str]:
    """Start a server bounded by `timeout` on the host; stop it with `stop`."""
    bounded = ["timeout", "-k", "1", f"{max(1, round(seconds))}", *argv]
    return subprocess.Popen(site.host_argv(host, bounded), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, start_new_session=True)


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


def which(site: Site, host: str, tool: str) -> bool:
    return run(site, host, ["sh", "-c", f"command -v {shlex.quote(tool)}"], timeout=10).rc == 0


def reachable(site: Site, hosts: list[str], *, workers: int = 32, timeout: float = 10,
              progress: Callable[[str, str], None] = lambda _h, _s: None) -> dict[str, str]:
    """Hosts that do not answer (`true` over the site's transport, all at once): host → why. Each host is
    reported to `progress` as it is known (`reachable` or `unreachable`), so a dead fleet shows in seconds."""

    def one(host: str) -> tuple[str, str]:
        progress(host, "connecting")
        c = run(site, host, ["true"], timeout=timeout)
        why = c.last_error if c.rc else ""
        progress(host, "unreachable" if why else "reachable")
        return host, why

    with ThreadPoolExecutor(max_workers=max(1, min(workers, len(hosts)))) as pool:
        return {h: why for h, why in pool.map(one, hosts) if why}
