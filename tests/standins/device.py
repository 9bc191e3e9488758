"""sshd's ForceCommand for the stand-ins: pick the device by the address the client connected to.

`$STANDIN_ROOT/<address>/kind` names the OS: `sonic`, `nvue` and `frr` get an interactive bash whose PATH
starts with the stand-in commands (`frr`: in a mount namespace of its own, the device's `etc-frr/` as /etc/frr);
`eos` gets the EOS-like CLI; `host` (a GPU host, tests.standins.host) runs the command ssh was given with
perftest, nccl-tests, mpirun and ethtool stand-ins first on its PATH.
"""

from __future__ import annotations

import os
import sys

# Every SSH session starts this module (a GPU host: every command the tool runs there), so it imports `os` and
# `sys` alone (no pathlib, json, sysconfig: they cost more than the session's own work).
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.realpath(__file__))))
HOST_TOOLS = ("ib_write_bw", "ib_write_lat", "mpirun", "all_reduce_perf", "ethtool")
SHIMS = {"host": dict.fromkeys(HOST_TOOLS, "host"),
         "sonic": {"config": "sonic", "show": "sonic", "vtysh": "sonic", "queuestat": "sonic", "wredstat": "sonic",
                   "pfcstat": "sonic", "sonic-db-cli": "sonic", "sysctl": "sonic", "TSA": "sonic", "TSB": "sonic",
                   "TSC": "sonic"}, "nvue": {"nv": "nvue"},
         "frr": dict.fromkeys(("vtysh", "ip", "tc", "dcb"), "frr")}


# NVUE's per-port counter reads (`nv show interface <swp> counters qos -o json`, `… qos pfc-watchdog -o json`: a
# drain reads every fabric port twice per sample) depend on the device's telemetry.json alone: the first answer is
# kept in answers/ (tests.standins.nvue.nv_show) and given again by the shim while no newer telemetry.json exists
# and the device has no fault planted (a serving process answers those: tests.standins.fleet).
NV_CACHED = """case "$3" in *[!A-Za-z0-9_.-]*|"") ;; *)
  case "$#:$1:$2:$4:$5:$6:$7" in 7:show:interface:counters:qos:-o:json|7:show:interface:qos:pfc-watchdog:-o:json)
    f="$STANDIN_DEV/answers/$3.$4.$5" t="$STANDIN_DEV/telemetry.json"
    [ -f "$f" ] && [ ! -e "$STANDIN_DEV/fault" ] && { [ ! -e "$t" ] || [ "$f" -nt "$t" ]; } && exec cat "$f";;
  esac;;
esac
"""

# SONiC's `show runningconfiguration all` (read several times by every plan and apply) depends on running.json alone:
# the answer kept in answers/ (tests.standins.sonic.show_running) carries the modification time of the running.json
# it was read from, and is given again while running.json has that time (replaced since, or a fault planted: Python
# answers). Each read is one line of running-reads (the tests count the tool's reads, as a switch's command
# accounting would).
SHOW_CACHED = """[ "$#:$1:$2" = 2:runningconfiguration:all ] && {
  echo "$1 $2" >> "$STANDIN_DEV/running-reads"
  f="$STANDIN_DEV/answers/running" t="$STANDIN_DEV/running.json"
  [ -f "$f" ] && [ -f "$t" ] && [ ! -e "$STANDIN_DEV/fault" ] && [ ! "$f" -nt "$t" ] && [ ! "$f" -ot "$t" ] &&
    exec cat "$f"
}
"""
CACHED = {"nv": NV_CACHED, "show": SHOW_CACHED}

# FRR's `ip`, `tc` and `dcb` where a serving process answers the device (tests.standins.fleet): what
# tests.standins.frr.tool does under sshd, in bash: the device's `replies/<command line>`, else the real tool.
FRR_TOOL = """#!/bin/bash
f="$STANDIN_DEV/replies/${0##*/} $*"
[ -f "$f" ] && exec cat "$f"
PATH=${PATH#"$STANDIN_DEV/bin:"} exec "${0##*/}" "$@"
"""

# `fabric host plan|apply --intent FILE --format json [--strict] [--persist]` on a GPU host: the real agent's report
# for this host in its state (`fresh`, then `applied` once an apply ran), recorded by tests.standins.hostagent; the
# intent must be this host's (what the fleet run ships).
HOST_AGENT = """#!/bin/sh
d="$STANDIN_DEV" mode="$2"
if [ "$1 $3 $5 $6" != "host --intent --format json" ] || ! cmp -s "$4" "$d/intent.json" ||
   [ ! -f "$d/agent/$mode-$(cat "$d/state").json" ]; then
  echo "error: stand-in agent: expected host plan|apply --intent <this host's intent> --format json" >&2; exit 2
fi
state=$(cat "$d/state")
cat "$d/agent/$mode-$state.json"
rc=$(cat "$d/agent/$mode-$state.rc")
[ "$mode" = apply ] && echo applied > "$d/state"
exit "$rc"
"""


def pythonpath() -> str:
    """What a stand-in command runs with: `python -S` (no site: the editable install's finder alone costs more than
    the command's work; a switch push runs hundreds) and this tree and the venv's packages on PYTHONPATH."""
    import sysconfig

    return f"{ROOT}:{sysconfig.get_paths()['purelib']}"


_INSTALLED: dict[str, str] = {}  # path → the script this process found or wrote there


def _install(path: str, script: str) -> None:
    """An executable script, written once and atomically: sessions of one device start at once, and a shim
    seen half-written (empty, or not yet executable, so PATH falls through to a real tool) fails a command. A
    serving process (tests.standins.fleet) reads each shim once, not at every session."""
    if _INSTALLED.get(path) == script and os.path.exists(path):
        return
    try:
        with open(path) as f:
            if f.read() == script:
                _INSTALLED[path] = script
                return
    except OSError:
        pass
    tmp = os.path.join(os.path.dirname(path), f".{os.path.basename(path)}.{os.getpid()}")
    with open(tmp, "w") as f:
        f.write(script)
    os.chmod(tmp, 0o755)
    os.replace(tmp, path)
    _INSTALLED[path] = script


def served(port: int, module: str, cmd: str) -> str:
    """A stand-in command answered by a serving process (tests.standins.fleet) on 127.0.0.1:`port` of the device's
    namespace: bash sends the argument count, the device, the working directory, the module and the argv
    (NUL-terminated); the answer is a `rc stdout-bytes stderr-bytes` line, then both outputs."""
    return (f'exec 3<>/dev/tcp/127.0.0.1/{port} || exit 126\n'
            f'printf \'%s\\0\' "$#" "$STANDIN_DEV" "$PWD" {module} {cmd} "$@" >&3\n'
            'IFS=" " read -r rc out err <&3 || exit 126\n'
            '[ "$out" = 0 ] || head -c "$out" <&3\n[ "$err" = 0 ] || head -c "$err" <&3 >&2\nexit "$rc"\n')


def shims(bindir: str | os.PathLike[str], kind: str, path: str | None = None, *, port: int | None = None) -> None:
    """The stand-in commands of `kind` in `bindir`; `path`: their PYTHONPATH (`pythonpath()`; a session gets it
    from the harness's ForceCommand); `port`: answered by a serving process there instead (`served`)."""
    bindir = os.fspath(bindir)
    os.makedirs(bindir, exist_ok=True)
    path = path or pythonpath()
    for cmd, mod in SHIMS.get(kind, {}).items():
        cached = CACHED.get(cmd, "")
        if port is not None:
            if mod == "frr" and cmd != "vtysh":
                _install(os.path.join(bindir, cmd), FRR_TOOL)
                continue
            _install(os.path.join(bindir, cmd), f"#!/bin/bash\n{cached}{served(port, mod, cmd)}")
            continue
        _install(os.path.join(bindir, cmd), f'#!/bin/sh\n{cached}PYTHONPATH={path} exec {sys.executable} -S -m '
                                            f'tests.standins.{mod} {cmd} "$@"\n')
    _install(os.path.join(bindir, "sudo"), '#!/bin/sh\n[ "$1" = "-n" ] && shift\nexec "$@"\n')
    if kind == "host":
        _install(os.path.join(bindir, "fabric"), HOST_AGENT)


def shell(d: str, kind: str, local: str, env: dict[str, str], *, path: str | None = None,
          port: int | None = None) -> list[str]:
    """argv of the interactive shell of a `sonic`, `nvue` or `frr` device; `env` is completed for it (run it in
    `d`). `path`, `port`: the stand-in commands' PYTHONPATH, or the serving process that answers them (`shims`)."""
    bindir = os.path.join(d, "bin")
    shims(bindir, kind, path, port=port)
    # the host part follows an applied hostname (NVUE: tests/standins/nvue.py writes `hostname`), as `\h` does; read
    # before each prompt by bash itself (a `$(cat …)` in PS1 started two processes at every prompt)
    env.update(STANDIN_DEV=d, HOME=d, PATH=f"{bindir}:{env.get('PATH', '/usr/bin:/bin')}", TERM="dumb",
               PROMPT_COMMAND=f"_host={local}; {{ read -r _host < hostname; }} 2>/dev/null", PS1="admin@${_host}:~$ ")
    if kind == "sonic":  # the device's /etc/sysctl.d (tests.standins.sonic), never the test machine's
        os.makedirs(os.path.join(d, "sysctl.d"), exist_ok=True)
        env["ROCE_FABRIC_SYSCTL_D"] = os.path.join(d, "sysctl.d")
    if kind == "frr":  # the switch's /etc/frr, never the test machine's: a private mount of the device's etc-frr/
        os.makedirs(os.path.join(d, "etc-frr"), exist_ok=True)
        return ["unshare", "-m", "--propagation", "private", "/bin/sh", "-c",
                'mount --bind "$0" /etc/frr && exec /bin/bash --norc --noprofile -i', os.path.join(d, "etc-frr")]
    return ["/bin/bash", "--norc", "--noprofile", "-i"]


def host_env(d: str, env: dict[str, str], path: str) -> dict[str, str]:
    """The environment of a command on GPU host `d`, completed from `env`: the stand-in tools (`path`: their
    PYTHONPATH, the harness's) and the agent first on PATH, the host's sysfs."""
    bindir = os.path.join(d, "bin")
    shims(bindir, "host", path)
    return {**env, "STANDIN_DEV": d, "HOME": d, "PATH": f"{bindir}:{env.get('PATH', '/usr/bin:/bin')}",
            "ROCE_FABRIC_SYSFS": os.path.join(d, "sys")}


def main() -> int:
    local = os.environ.get("SSH_CONNECTION", "").split()[2]
    d = os.path.join(os.environ["STANDIN_ROOT"], local)
    with open(os.path.join(d, "kind")) as f:
        kind = f.read().strip()
    with open(os.path.join(d, "logins"), "a") as f:  # one line per SSH session (the tests count the tool's logins)
        f.write(f"{os.environ.get('SSH_ORIGINAL_COMMAND', '')[:60]}\n")
    env = {**os.environ, "STANDIN_DEV": d, "PYTHONPATH": ROOT, "HOME": d}
    if kind == "eos":
        os.chdir(ROOT)
        os.execve(sys.executable, [sys.executable, "-m", "tests.standins.eos"], env)
    if kind == "host":  # a GPU host: the command ssh was given, with the stand-in tools and sysfs first
        env = host_env(d, env, os.environ["PYTHONPATH"])  # the harness's: this tree and the venv's packages
        os.chdir(d)
        command = os.environ.get("SSH_ORIGINAL_COMMAND", "")
        os.execve("/bin/sh", ["sh", "-c", command] if command else ["sh"], env)
    argv = shell(d, kind, local, env, path=os.environ["PYTHONPATH"])  # the harness's: this tree and the venv's
    os.chdir(d)
    os.execve(argv[0] if argv[0].startswith("/") else "/usr/bin/" + argv[0], argv, env)
    return 1


if __name__ == "__main__":
    sys.exit(main())
