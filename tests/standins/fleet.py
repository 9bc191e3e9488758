"""A fleet of stand-in switches served by one process: asyncssh instead of sshd, the stand-ins' commands in-process.

The devices, their state directories and their seeding are the harness's (tests.standins.harness, `server="fleet"`):
this process runs in the harness's namespace, listens on port 22 of every address there, and picks the device by
the address a connection reached, as the sshd's ForceCommand does (tests.standins.device). What each device answers
is the existing stand-ins' own code, imported, not a second implementation:

* `eos` — the EOS CLI of tests.standins.eos (`Cli`), one per SSH session, echoing what is typed as a terminal does.
* `sonic`, `nvue`, `frr` — the same bash that sshd starts (`device.shell`: PATH, prompt, /etc/frr), on a pty; its
  stand-in commands (`config`, `show`, `nv`, `vtysh`…) are small bash scripts that hand the argv to this process
  over 127.0.0.1 (`device.served`), which runs the stand-in module's `main` for that device (common.DEVICE) and
  sends back its output and exit code. A confirm timer (common.spawn) is a timer of this process (common.TIMER).
  FRR's `ip`/`tc`/`dcb` answer as the stand-in's do, in bash (device.FRR_TOOL): a planted reply (each switch's own
  `ip -j addr show`, from the harness), else the real tool of the namespace.
* `host` — a GPU host as the sshd stand-in has it (tests.standins.device): each command ssh was given run by
  /bin/sh in the host's directory and environment (its stand-in tools and `fabric` agent first on PATH; files are
  put with scp, as through sshd); a pipelined Ansible module (`python3` reading the AnsiballZ payload from stdin)
  is run by tests.standins.modules, which has Ansible's module code imported once.

Faults a test plants in a device directory (`fault`, read at each login): `refuse-login` (every key and password
refused), `hang` (the session opens, then the first stand-in command never answers; a host: every command),
`garbage` (every stand-in command answers noise; a host: every command). Every process a session starts, and the
orphans of detached device jobs (this process is their subreaper), are ended when the session or the server ends.

`python -m tests.standins.fleet ROOT HOST_KEY AUTHORIZED_KEYS READY_FILE` (the harness starts it).
"""

from __future__ import annotations

import asyncio
import codecs
import contextlib
import ctypes
import fcntl
import importlib
import io
import os
import pty
import re
import signal
import struct
import subprocess
import sys
import termios
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TextIO

import asyncssh

from tests.standins import common, device
from tests.standins.eos import Cli

CMD_PORT = 2200  # the commands' port on 127.0.0.1 of the namespace
GARBAGE = "\x1b[?2004h%%\x07 �\x00$#> ~~ ;{[\n" * 3  # noise, as a console with a wrong line setting prints
PR_SET_CHILD_SUBREAPER = 36
EOS_TURN = 16  # EOS CLI lines one session gets done in one turn of the command thread
LOGIN_ENV = {"PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "USER": "root",
             "LOGNAME": "root", "SHELL": "/bin/sh"}  # what sshd gives a session of root
# how Ansible runs a pipelined module: the interpreter (discovered or given) reading the payload from stdin
PIPELINED = re.compile(r"/bin/sh -c '(?:[A-Z_]+=\S+ )*/\S*/python[\d.]*(?: && sleep 0)?'")


class Output:
    """sys.stdout and sys.stderr of this process, written to a command's buffers by the thread that runs it
    (`to`) and to the real streams by every other (the event loop's own messages never reach a device's reply)."""

    def __init__(self) -> None:
        self.local = threading.local()
        self.real = {"stdout": sys.stdout, "stderr": sys.stderr}
        sys.stdout, sys.stderr = _Stream(self, "stdout"), _Stream(self, "stderr")  # type: ignore[assignment]

    @contextlib.contextmanager
    def to(self, out: io.StringIO, err: io.StringIO) -> Iterator[None]:
        self.local.streams = {"stdout": out, "stderr": err}
        try:
            yield
        finally:
            self.local.streams = None

    def stream(self, name: str) -> TextIO:
        return (getattr(self.local, "streams", None) or self.real)[name]


class _Stream(io.TextIOBase):
    def __init__(self, output: Output, name: str) -> None:
        self.output, self.name = output, name

    def write(self, text: str) -> int:
        return self.output.stream(self.name).write(text)

    def flush(self) -> None:
        self.output.stream(self.name).flush()


OUTPUT: Output  # set by `serve`


def fault(d: Path) -> str:
    f = d / "fault"
    return f.read_text().strip() if f.exists() else ""


class Fleet:
    """The devices under `root` (`<address>/kind`, as the harness lays them out) and the work they share."""

    def __init__(self, root: Path, authorized: list[asyncssh.SSHKey], modules: Path) -> None:
        self.root, self.authorized, self.modules = root, authorized, modules
        self.work = started_pool(1)  # the commands, one at a time: they chdir and take stdout
        self.loop = asyncio.get_running_loop()
        self.hung: dict[Path, list[asyncio.StreamWriter]] = {}  # command connections a `hang` device never answers
        self.shells: set[int] = set()  # the pids of the sessions' shells

    def device(self, address: str) -> Path:
        return self.root / address

    # -- stand-in commands ---------------------------------------------------------------------------------
    def run_command(self, d: Path, cwd: str, module: str, argv: list[str]) -> tuple[int, str, str]:
        """The stand-in module's `main(argv)` for device `d` in `cwd`: (exit code, stdout, stderr)."""
        out, err = io.StringIO(), io.StringIO()
        here = os.getcwd()
        try:
            os.chdir(cwd)
            with self.as_device(d), OUTPUT.to(out, err):
                try:
                    rc = importlib.import_module(f"tests.standins.{module}").main(argv)
                except SystemExit as exc:
                    rc = exc.code if isinstance(exc.code, int) else 1
        finally:
            os.chdir(here)
        return rc or 0, out.getvalue(), err.getvalue()

    @contextlib.contextmanager
    def as_device(self, d: Path) -> Iterator[None]:
        """The stand-in code called inside is for device `d`, its confirm timers this process's (`timer`)."""
        dev, timer = common.DEVICE.set(d), common.TIMER.set(self.timer)
        try:
            yield
        finally:
            common.DEVICE.reset(dev)
            common.TIMER.reset(timer)

    def timer(self, module: str, args: tuple[str, ...]) -> None:
        """common.spawn's `--expire DIR X SECONDS` timer: that module's expiry, SECONDS from now, in this process."""
        *head, secs = args

        def expire() -> None:
            self.work.submit(importlib.import_module(module).main, [*head, "0"])

        self.loop.call_soon_threadsafe(self.loop.call_later, int(secs), expire)

    async def command(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        """One stand-in command from a device's bash (device.served)."""
        try:
            count = int((await reader.readuntil(b"\0"))[:-1])
            fields = [(await reader.readuntil(b"\0"))[:-1].decode() for _ in range(count + 4)]
        except (asyncio.IncompleteReadError, ValueError):
            writer.close()
            return
        d, cwd, module, argv = Path(fields[0]), fields[1], fields[2], fields[3:]
        if d.parent != self.root or module not in ("sonic", "nvue", "frr"):
            writer.close()
            return
        what = fault(d)
        if what == "hang":
            self.hung.setdefault(d, []).append(writer)
            return
        if what == "garbage":
            rc, out, err = 0, GARBAGE, ""
        else:
            rc, out, err = await self.loop.run_in_executor(self.work, self.run_command, d, cwd, module, argv)
        o, e = out.encode(), err.encode()
        writer.write(f"{rc} {len(o)} {len(e)}\n".encode() + o + e)
        with contextlib.suppress(ConnectionError):
            await writer.drain()
        writer.close()

    def release(self, d: Path) -> None:
        for writer in self.hung.pop(d, []):
            writer.close()

    # -- sessions ------------------------------------------------------------------------------------------
    async def session(self, process: asyncssh.SSHServerProcess) -> None:
        conn = process.get_extra_info("connection")
        d = self.device(conn.get_extra_info("sockname")[0])
        kind = (d / "kind").read_text().strip()
        with open(d / "logins", "a") as f:  # as the sshd stand-in's ForceCommand: one line per session
            f.write(f"{(process.command or '')[:60]}\n")
        try:
            if kind == "eos":
                await self.eos(process, d)
            elif kind == "host":
                await self.host(process, d)
            else:
                await self.shell(process, d, kind)
        except (asyncssh.Error, OSError, asyncio.CancelledError):
            pass
        finally:
            self.release(d)
            process.exit(0)

    async def eos(self, process: asyncssh.SSHServerProcess, d: Path) -> None:
        """The EOS CLI of tests.standins.eos, behind what a terminal does (`Terminal`): the lines typed so far, up to
        EOS_TURN of them in one turn of the command thread (a session's lines, written at once, wait behind the other
        switches once per EOS_TURN lines, not once per line, and no switch holds the thread for a whole session); a
        `hang` device stops answering at its first `show`. When the login ends, the session it was in is kept
        (`Cli.close`)."""
        cli, term = Cli(d), Terminal(process)
        (d / "sessions").mkdir(exist_ok=True)
        try:
            await self._eos_login(process, cli, term, fault(d))
        finally:
            cli.close()

    async def _eos_login(self, process: asyncssh.SSHServerProcess, cli: Cli, term: Terminal, what: str) -> None:
        term.write(await self.loop.run_in_executor(self.work, cli.prompt))
        while lines := await term.readlines():
            hung = what == "hang" and any(ln.strip().startswith("show") for ln in lines)
            if hung:
                lines = lines[:next(i for i, ln in enumerate(lines) if ln.strip().startswith("show"))]
            for at in range(0, len(lines), EOS_TURN):
                printed, goes_on = await self.loop.run_in_executor(self.work, self._eos_lines, cli,
                                                                   lines[at:at + EOS_TURN], what == "garbage")
                term.write(printed)
                if not goes_on:
                    return
            if hung:
                await process.stdin.read()  # until the client gives up
                return

    async def host(self, process: asyncssh.SSHServerProcess, d: Path) -> None:
        """The command ssh was given, as the sshd stand-in's ForceCommand runs it (tests.standins.device.main); its
        exit code ends the session (`session`). A `hang` host never answers; a `garbage` host answers noise."""
        what = fault(d)
        if what == "hang":
            await process.wait_closed()  # until the client gives up
            return
        command = process.command or ""
        if what == "garbage":
            process.stdout.write(GARBAGE)
            return
        env = device.host_env(str(d), {**LOGIN_ENV, "STANDIN_ROOT": str(self.root), "PYTHONPATH": str(common.ROOT)},
                              os.environ["PYTHONPATH"])
        if PIPELINED.fullmatch(command):
            rc, out, err = await self.module(d, env, (await process.stdin.read()).encode())
        else:
            rc, out, err = await self.sh(process, d, env, command)
        process.stdout.write(out.decode(errors="replace"))
        process.stderr.write(err.decode(errors="replace"))
        process.exit(rc)

    async def sh(self, process: asyncssh.SSHServerProcess, d: Path, env: dict[str, str],
                 command: str) -> tuple[int, bytes, bytes]:
        """`/bin/sh -c COMMAND` in the host's directory, fed the channel's input; every process it started is
        ended with it."""
        pipe = asyncio.subprocess.PIPE
        proc = await asyncio.create_subprocess_exec("/bin/sh", "-c", command, stdin=pipe, stdout=pipe, stderr=pipe,
                                                    cwd=d, env=env, start_new_session=True)
        self.shells.add(proc.pid)

        async def feed() -> None:
            assert proc.stdin is not None
            with contextlib.suppress(ConnectionError):
                while data := await process.stdin.read(65536):
                    proc.stdin.write(data.encode())
                    await proc.stdin.drain()
                proc.stdin.close()

        feeding = asyncio.ensure_future(feed())
        try:
            assert proc.stdout is not None and proc.stderr is not None
            out, err = await asyncio.gather(proc.stdout.read(), proc.stderr.read())
            return await proc.wait(), out, err
        finally:
            feeding.cancel()
            kill_session(proc.pid)
            await proc.wait()
            self.shells.discard(proc.pid)

    async def module(self, d: Path, env: dict[str, str], payload: bytes) -> tuple[int, bytes, bytes]:
        """A pipelined Ansible module run by tests.standins.modules in the host's directory and environment."""
        reader, writer = await asyncio.open_unix_connection(str(self.modules))
        fields = [str(d).encode(), *(f"{k}={v}".encode() for k, v in env.items()), payload]
        writer.write(f"{len(fields)}\0".encode() + b"".join(f + b"\0" for f in fields))
        writer.write_eof()
        try:
            rc, n_out, n_err = (int(f) for f in (await reader.readline()).split())
            return rc, await reader.readexactly(n_out), await reader.readexactly(n_err)
        finally:
            writer.close()

    def _eos_lines(self, cli: Cli, lines: list[str], garbage: bool) -> tuple[str, bool]:
        """What the CLI prints for typed lines, each followed by the next prompt (noise for a `show` where
        `garbage`); False: the login ended (at a line, whose output and the lines after it are not printed)."""
        out = io.StringIO()
        for line in lines:
            printed = io.StringIO()
            with self.as_device(cli.d), OUTPUT.to(printed, printed):
                goes_on = cli.typed(line)
            if not goes_on:
                return out.getvalue(), False
            out.write(GARBAGE if garbage and line.strip().startswith("show") else printed.getvalue())
            out.write(cli.prompt())
        return out.getvalue(), True

    async def shell(self, process: asyncssh.SSHServerProcess, d: Path, kind: str) -> None:
        """The device's bash (device.shell) on a pty, its bytes to and from the SSH channel."""
        master, slave = pty.openpty()
        cols, rows, *_ = process.get_terminal_size()
        fcntl.ioctl(master, termios.TIOCSWINSZ, struct.pack("HHHH", rows or 24, cols or 80, 0, 0))
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LANG": "C.UTF-8"}
        argv = device.shell(str(d), kind, d.name, env, port=CMD_PORT)
        proc = await asyncio.create_subprocess_exec(
            "setsid", "-c", *argv, stdin=slave, stdout=slave, stderr=slave, cwd=d, env=env)
        os.close(slave)
        self.shells.add(proc.pid)
        os.set_blocking(master, False)
        closed = asyncio.Event()
        text = codecs.getincrementaldecoder("utf-8")("replace")

        def readable() -> None:
            try:
                data = os.read(master, 65536)
            except OSError:
                data = b""
            if not data:
                self.loop.remove_reader(master)
                closed.set()
                return
            with contextlib.suppress(BrokenPipeError):  # the client has gone: the session ends below
                process.stdout.write(text.decode(data))

        self.loop.add_reader(master, readable)
        pump, ended = asyncio.ensure_future(self._to_pty(process, master)), asyncio.ensure_future(closed.wait())
        try:
            await asyncio.wait([pump, ended], return_when=asyncio.FIRST_COMPLETED)
        finally:
            pump.cancel()
            ended.cancel()
            self.loop.remove_reader(master)
            kill_session(proc.pid)
            os.close(master)
            await proc.wait()
            self.shells.discard(proc.pid)

    async def _to_pty(self, process: asyncssh.SSHServerProcess, master: int) -> None:
        while data := await process.stdin.read(65536):
            raw = data.encode()
            while raw:
                try:
                    raw = raw[os.write(master, raw):]
                except BlockingIOError:
                    await asyncio.sleep(0.01)


class Terminal:
    """What a pty in its default modes does for a program reading lines: echo what is typed, a typed CR as NL
    (icrnl), and NL written as CR NL (onlcr)."""

    def __init__(self, process: asyncssh.SSHServerProcess) -> None:
        self.process, self.pending = process, ""

    def write(self, text: str) -> None:
        self.process.stdout.write(text.replace("\n", "\r\n"))

    async def readlines(self) -> list[str]:
        """Every whole line typed so far (at least one); none: the client has gone."""
        while "\n" not in self.pending:
            data = await self.process.stdin.read(65536)
            if not data:
                return []
            typed = data.replace("\r\n", "\n").replace("\r", "\n")
            self.write(typed)
            self.pending += typed
        *lines, self.pending = self.pending.split("\n")
        return [ln + "\n" for ln in lines]


def kill_session(sid: int) -> None:
    """SIGKILL every process of the session `sid` (the shell and what it started, in its own process groups)."""
    for pid in _pids():
        with contextlib.suppress(OSError):
            if os.getsid(pid) == sid:
                os.kill(pid, signal.SIGKILL)


def _pids() -> list[int]:
    return [int(p) for p in os.listdir("/proc") if p.isdigit()]


def end_orphans() -> None:
    """SIGKILL and reap every child left (detached device jobs, reparented to this subreaper)."""
    me = os.getpid()
    for pid in _pids():
        with contextlib.suppress(OSError, ValueError):
            stat = Path(f"/proc/{pid}/stat").read_text()
            if int(stat.rpartition(")")[2].split()[1]) == me:
                os.kill(pid, signal.SIGKILL)
    with contextlib.suppress(ChildProcessError):
        while os.waitpid(-1, os.WNOHANG)[0]:
            pass


def started_pool(workers: int) -> ThreadPoolExecutor:
    """A thread pool with all its threads started: the server's thread count stays what it is at the start."""
    pool, barrier = ThreadPoolExecutor(max_workers=workers), threading.Barrier(workers + 1)
    for _ in range(workers):
        pool.submit(barrier.wait)
    barrier.wait()
    return pool


class Server(asyncssh.SSHServer):
    """Public-key logins with the harness's client key, refused where the device's fault says so."""

    def __init__(self, fleet: Fleet) -> None:
        self.fleet = fleet
        self.d: Path | None = None

    def connection_made(self, conn: asyncssh.SSHServerConnection) -> None:
        self.d = self.fleet.device(conn.get_extra_info("sockname")[0])

    def begin_auth(self, username: str) -> bool:
        return True

    def password_auth_supported(self) -> bool:
        return False  # as the sshd stand-in: PasswordAuthentication no

    def public_key_auth_supported(self) -> bool:
        return True

    def validate_public_key(self, username: str, key: asyncssh.SSHKey) -> bool:
        if self.d is None or not (self.d / "kind").exists() or fault(self.d) == "refuse-login":
            return False
        return any(key.public_data == k.public_data for k in self.fleet.authorized)


async def serve(root: Path, host_key: Path, authorized_keys: Path, ready: Path,
                stopped: Callable[[], asyncio.Future[None]] | None = None) -> None:
    global OUTPUT
    OUTPUT = Output()
    asyncio.get_running_loop().set_default_executor(started_pool(2))  # asyncssh's own blocking calls
    modules = root.parent / "modules.sock"
    runner = subprocess.Popen([sys.executable, "-m", "tests.standins.modules", str(modules)])
    fleet = Fleet(root, asyncssh.load_public_keys(str(authorized_keys)), modules)
    while not modules.exists() and runner.poll() is None:
        await asyncio.sleep(0.02)
    commands = await asyncio.start_server(fleet.command, "127.0.0.1", CMD_PORT)
    ssh = await asyncssh.listen("", 22, server_factory=lambda: Server(fleet), server_host_keys=[str(host_key)],
                                process_factory=fleet.session, encoding="utf-8", line_editor=False,
                                login_timeout=30, keepalive_interval=0)
    ready.write_text(str(os.getpid()))
    stop = asyncio.get_running_loop().create_future()
    for sig in (signal.SIGTERM, signal.SIGINT):
        asyncio.get_running_loop().add_signal_handler(sig, lambda: stop.done() or stop.set_result(None))
    try:
        await (stopped() if stopped else stop)
    finally:
        ssh.close()
        commands.close()
        for pid in list(fleet.shells):
            kill_session(pid)
        fleet.work.shutdown(wait=True, cancel_futures=True)
        runner.terminate()
        runner.wait()
        end_orphans()


def main(argv: list[str]) -> int:
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)  # detached device jobs stay ours, to end with the server
    root, host_key, authorized, ready = (Path(a) for a in argv)
    asyncio.run(serve(root, host_key, authorized, ready))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
