"""A full Linux kernel for the lab checks this machine's kernel cannot do: `ets` and `red … ecn` qdiscs that count
CE marks, and Soft-RoCE (`rdma_rxe`).

The Debian 6.12 kernel (`linux-image-6.12-amd64`, bookworm-security) is booted by virtme-ng (`vng`, PyPI) under
QEMU software emulation (`--disable-kvm`: nested KVM does not boot a guest here) with this machine's own root
file system, read-only, and one writable directory for the results. The guest runs one command and powers off;
the VM's whole process group is killed when the command overruns its time or the caller is interrupted, so
nothing is left behind. Inside, `fabric lab up` builds the same lab as on the machine (its namespaces live in the
guest kernel, its state in the guest's /run).
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from fabric.lab.sh import StepError

KERNEL_SERIES = "6.12"  # sch_ets (4.19), sch_red ECN marks, rdma_rxe as modules in Debian's build
BOOT = Path("/boot")
MODULES = Path("/lib/modules")
GUEST_MODULES = ["sch_tbf", "sch_ets", "sch_red", "cls_u32", "rdma_rxe"]


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


@dataclass
class VmRun:
    returncode: int
    output: str  # the guest console: the command's stdout and stderr
    seconds: float
    kernel: str


def run(command: str, *, rwdir: Path, timeout: float, cpus: int = 2, memory: str = "2G") -> VmRun:
    """Boot the kernel, run `command` (a shell command line of our own) as root in the guest with `rwdir`
    writable, and power off. StepError when the VM cannot start or overruns `timeout` (then it is killed)."""
    kernel, exe = find_kernel(), vng()
    if kernel is None or exe is None:
        raise StepError("vm", "cannot boot: missing " + ", ".join(missing()))
    argv = [exe, "--disable-kvm", "--run", str(kernel.image), "--cpus", str(cpus), "--memory", memory,
            "--rwdir", str(rwdir), "--exec", command]
    env = {**os.environ, "PATH": f"{Path(exe).parent}:{os.environ.get('PATH', '/usr/bin:/bin')}"}
    t0 = time.monotonic()
    proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True, errors="replace", env=env, start_new_session=True)
    try:
        out, _ = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired as exc:
        raise StepError("vm", f"{kernel.release} under emulation did not finish in {timeout:.0f}s (killed)") from exc
    finally:
        _kill_group(proc)
    return VmRun(proc.returncode, out or "", round(time.monotonic() - t0, 1), kernel.release)


def _kill_group(proc: subprocess.Popen[str]) -> None:
    """vng, QEMU and virtiofsd share the session vng leads: end all of it (TERM, then KILL)."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, sig)
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=5)
