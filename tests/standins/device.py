"""sshd's ForceCommand for the stand-ins: pick the device by the address the client connected to.

`$STANDIN_ROOT/<address>/kind` names the OS: `sonic` and `nvue` get an interactive bash whose PATH
starts with the stand-in commands; `eos` gets the EOS-like CLI; `host` (a GPU host, tests.standins.host) runs
the command ssh was given with perftest, nccl-tests, mpirun and ethtool stand-ins first on its PATH.
"""

from __future__ import annotations

import os
import sys
import sysconfig
from pathlib import Path

from tests.standins.common import ROOT

# A stand-in command runs with `python -S` (no site: the editable install's finder alone costs more than the
# command's work) and the venv's packages on PYTHONPATH: a switch push runs it hundreds of times.
SITE = sysconfig.get_paths()["purelib"]
HOST_TOOLS = ("ib_write_bw", "ib_write_lat", "mpirun", "all_reduce_perf", "ethtool")
SHIMS = {"host": dict.fromkeys(HOST_TOOLS, "host"),
         "sonic": {"config": "sonic", "show": "sonic", "vtysh": "sonic", "queuestat": "sonic", "wredstat": "sonic",
                   "pfcstat": "sonic", "sonic-db-cli": "sonic", "sysctl": "sonic"}, "nvue": {"nv": "nvue"}}


# NVUE's per-port counter reads (`nv show interface <swp> counters qos -o json`, `… qos pfc-watchdog -o json`: a
# drain reads every fabric port twice per sample) depend on the device's telemetry.json alone: the first answer is
# kept in answers/ (tests.standins.nvue.nv_show) and given again by the shim while no newer telemetry.json exists.
NV_CACHED = """case "$3" in *[!A-Za-z0-9_.-]*|"") ;; *)
  case "$#:$1:$2:$4:$5:$6:$7" in 7:show:interface:counters:qos:-o:json|7:show:interface:qos:pfc-watchdog:-o:json)
    f="$STANDIN_DEV/answers/$3.$4.$5" t="$STANDIN_DEV/telemetry.json"
    [ -f "$f" ] && { [ ! -e "$t" ] || [ "$f" -nt "$t" ]; } && exec cat "$f";;
  esac;;
esac
"""


def _install(path: Path, script: str) -> None:
    """An executable script, written once and atomically: sessions of one device start at once, and a shim
    seen half-written (empty, or not yet executable, so PATH falls through to a real tool) fails a command."""
    if path.is_file() and path.read_text() == script:
        return
    tmp = path.with_name(f".{path.name}.{os.getpid()}")
    tmp.write_text(script)
    tmp.chmod(0o755)
    tmp.replace(path)


def shims(bindir: Path, kind: str) -> None:
    bindir.mkdir(exist_ok=True)
    for cmd, mod in SHIMS.get(kind, {}).items():
        cached = NV_CACHED if cmd == "nv" else ""
        _install(bindir / cmd, f'#!/bin/sh\n{cached}PYTHONPATH={ROOT}:{SITE} exec {sys.executable} -S -m '
                               f'tests.standins.{mod} {cmd} "$@"\n')
    _install(bindir / "sudo", '#!/bin/sh\n[ "$1" = "-n" ] && shift\nexec "$@"\n')


def main() -> int:
    local = os.environ.get("SSH_CONNECTION", "").split()[2]
    d = Path(os.environ["STANDIN_ROOT"]) / local
    kind = (d / "kind").read_text().strip()
    env = {**os.environ, "STANDIN_DEV": str(d), "PYTHONPATH": str(ROOT), "HOME": str(d)}
    if kind == "eos":
        os.chdir(ROOT)
        os.execve(sys.executable, [sys.executable, "-m", "tests.standins.eos"], env)
    shims(d / "bin", kind)
    if kind == "host":  # a GPU host: the command ssh was given, with the stand-in tools and sysfs first
        env.update(PATH=f"{d / 'bin'}:{os.environ.get('PATH', '/usr/bin:/bin')}", ROCE_FABRIC_SYSFS=str(d / "sys"))
        os.chdir(d)
        command = os.environ.get("SSH_ORIGINAL_COMMAND", "")
        os.execve("/bin/sh", ["sh", "-c", command] if command else ["sh"], env)
    # the host part follows an applied hostname (NVUE: tests/standins/nvue.py writes `hostname`), as `\h` does
    env.update(PATH=f"{d / 'bin'}:{os.environ.get('PATH', '/usr/bin:/bin')}",
               PS1=f"admin@$(cat hostname 2>/dev/null || echo {d.name}):~$ ", TERM="dumb")
    if kind == "sonic":  # the device's /etc/sysctl.d (tests.standins.sonic), never the test machine's
        (d / "sysctl.d").mkdir(exist_ok=True)
        env["ROCE_FABRIC_SYSCTL_D"] = str(d / "sysctl.d")
    os.chdir(d)
    os.execve("/bin/bash", ["bash", "--norc", "--noprofile", "-i"], env)
    return 1


if __name__ == "__main__":
    sys.exit(main())
