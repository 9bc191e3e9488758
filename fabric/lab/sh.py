"""Running system commands for the lab: root check, steps that fail with one readable line."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import time
from pathlib import Path

from fabric.errors import UsageError

FRR_DIR = Path("/usr/lib/frr")
SSHD = Path("/usr/sbin/sshd")
LLDPD = Path("/usr/sbin/lldpd")


class StepError(Exception):
    """A lab step failed; `lab up` tears down and reports `step: detail` in one line."""

    def __init__(self, step: str, detail: str):
        self.step, self.detail = step, detail
        super().__init__(f"{step}: {detail}")


def require_root() -> None:
    if os.geteuid() != 0:
        raise UsageError("fabric lab needs root (network namespaces, veth pairs, FRR, sshd); run it as root")


def missing_prerequisites() -> list[str]:
    """Binaries the lab needs and does not find."""
    need = [FRR_DIR / "zebra", FRR_DIR / "bgpd", FRR_DIR / "staticd", SSHD, LLDPD]
    missing = [str(p) for p in need if not p.exists()]
    tools = ("ip", "vtysh", "ssh", "ssh-keygen", "ping", "fping", "tc", "lldpcli")
    missing += [b for b in tools if not shutil.which(b)]
    return missing


def run(argv: list[str], step: str, *, input: str | None = None, timeout: float = 60) -> str:
    """Run a command; on failure raise StepError with the last line of its error output."""
    try:
        p = subprocess.run(argv, input=input, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired as exc:
        raise StepError(step, f"{' '.join(argv[:6])} timed out after {timeout:.0f}s") from exc
    except OSError as exc:
        raise StepError(step, f"{argv[0]}: {exc.strerror}") from exc
    if p.returncode != 0:
        lines = [ln for ln in (p.stderr or p.stdout).strip().splitlines() if ln.strip()]
        last = lines[-1] if lines else "no output"
        raise StepError(step, f"{' '.join(argv[:8])} exited {p.returncode}: {last}")
    return p.stdout


def quiet(argv: list[str], timeout: float = 30) -> int:
    """Run a command for cleanup, ignoring output and failures; returns the exit code."""
    try:
        return subprocess.run(argv, capture_output=True, timeout=timeout).returncode
    except (OSError, subprocess.TimeoutExpired):
        return -1


def alive(pid: int) -> bool:
    """Running (not a zombie)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def terminate(pids: list[int], grace: float = 3.0) -> None:
    """SIGTERM, wait up to `grace` seconds, then SIGKILL what is left."""
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline and any(alive(p) for p in pids):
        time.sleep(0.05)
    for pid in pids:
        if alive(pid):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)


def wait_file(path: Path, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if path.exists() and path.stat().st_size > 0:
            return True
        time.sleep(0.05)
    return path.exists()
