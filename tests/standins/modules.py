"""Ansible modules run for the stand-in GPU hosts of the fleet (tests.standins.fleet) as `python3` runs them there.

A host's Python runs an AnsiballZ payload (a pipelined module: the wrapper on stdin) by importing Ansible's module
code, about 0.1 s of CPU per module; thousands of hosts with a few modules each would measure this machine's Python
start-up, not the tool. This process imports that code once and forks a child per payload, which runs the payload
as `python3 -` would: as `__main__` without a `__file__`, stdin at its end, in the session's working directory and
environment, its exit code and both outputs sent back. The module code run is Ansible's own (the controller's
copy: the same version as the payload's).

Protocol on the Unix socket: the field count, the working directory, `KEY=VALUE` environment fields and the
payload, NUL-terminated; the answer is a `rc stdout-bytes stderr-bytes` line, then both outputs.

`python -m tests.standins.modules SOCKET` (the fleet starts it).
"""

from __future__ import annotations

import io
import os
import signal
import socket
import sys
import types

import ansible.module_utils._internal._ansiballz._loader
import ansible.module_utils.basic  # noqa: F401 (imported once, for every child)


def _fields(conn: socket.socket) -> list[bytes]:
    data = b""
    while chunk := conn.recv(1 << 16):
        data += chunk
    count, *rest = data.split(b"\0")
    return rest[: int(count)]


def _run(payload: bytes) -> int:
    main = types.ModuleType("__main__")
    sys.modules["__main__"] = main
    sys.argv = ["-"]
    try:
        exec(compile(payload, "<stdin>", "exec"), main.__dict__)
    except SystemExit as exc:
        return exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    except BaseException as exc:  # what python3 prints for an uncaught exception: its last line is enough here
        print(f"Traceback (most recent call last):\n{type(exc).__name__}: {exc}", file=sys.stderr)
        return 1
    return 0


def child(conn: socket.socket) -> None:
    """Run one payload with the session's directory and environment; answer on `conn`."""
    cwd, *env, payload = _fields(conn)
    os.chdir(cwd)
    os.environ.clear()
    os.environ.update(dict(f.decode().split("=", 1) for f in env))
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    outs = [os.memfd_create("stdout"), os.memfd_create("stderr")]
    os.dup2(outs[0], 1)
    os.dup2(outs[1], 2)
    sys.stdout = io.TextIOWrapper(io.FileIO(1, "w", closefd=False), write_through=True)
    sys.stderr = io.TextIOWrapper(io.FileIO(2, "w", closefd=False), write_through=True)
    rc = _run(payload)
    sys.stdout.flush()
    sys.stderr.flush()
    out, err = (os.pread(fd, os.fstat(fd).st_size, 0) for fd in outs)
    conn.sendall(f"{rc} {len(out)} {len(err)}\n".encode() + out + err)


def reap() -> None:
    """Wait for the children that have ended (their CPU time then counts in this process's: the bench reads it)."""
    try:
        while os.waitpid(-1, os.WNOHANG)[0]:
            pass
    except ChildProcessError:
        pass


def main(argv: list[str]) -> int:
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(argv[0])
    server.listen(256)
    while True:
        conn, _ = server.accept()
        if os.fork() == 0:
            server.close()
            signal.signal(signal.SIGTERM, signal.SIG_DFL)
            try:
                child(conn)
            finally:
                os._exit(0)
        conn.close()
        reap()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
