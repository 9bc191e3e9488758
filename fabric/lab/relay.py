"""A program of the Kubernetes lab in a network namespace of its own, still reaching the lab's API server.

The MPI Operator v0.6.0 binds its health check to :8080 whatever its flags (cmd/mpi-operator/app/server.go,
`healthCheckPort`), so two labs on one machine collided. Each lab runs it in a fresh network namespace
(util-linux `unshare`, with a user namespace too when not root): its :8080 is its own. The namespace has only its
loopback; the API server is reached through a Unix socket in the lab's state directory, which both namespaces see:

    operator → 127.0.0.1:<API port> (inside) → `netns` relay → <state>/apiserver.sock → `unix` relay → API server

`python -m fabric.lab.relay unix SOCKET PORT [HOST]`: listens on SOCKET, forwards each connection to HOST:PORT
(default 127.0.0.1; the lab's management bridge where real nodes reach the API server there).
`python -m fabric.lab.relay netns SOCKET PORT -- ARGV...`: inside the namespace: loopback up, listens on
127.0.0.1:PORT, forwards each connection to SOCKET, runs ARGV and exits with its status (a TERM is passed on).
Bytes are copied as they are (the TLS session is the client's and the API server's).
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import signal
import socket
import struct
import subprocess
import sys
import threading
from collections.abc import Callable

SIOCGIFFLAGS, SIOCSIFFLAGS, IFF_UP = 0x8913, 0x8914, 0x1


def unshare_argv() -> list[str]:
    """util-linux `unshare` for a new network namespace (it then runs the program in it): as root directly, else
    with a user namespace too, mapping this user to its root (unprivileged user namespaces): no privilege needed."""
    return ["unshare", "--net"] if os.geteuid() == 0 else ["unshare", "--user", "--map-root-user", "--net"]


def loopback_up() -> None:
    """`ip link set lo up` by ioctl (a fresh namespace's loopback is down; no iproute2 needed)."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        req = struct.pack("16sH14s", b"lo", 0, b"")
        flags = struct.unpack("16sH14s", fcntl.ioctl(s.fileno(), SIOCGIFFLAGS, req))[1]
        fcntl.ioctl(s.fileno(), SIOCSIFFLAGS, struct.pack("16sH14s", b"lo", flags | IFF_UP, b""))


def _pipe(src: socket.socket, dst: socket.socket) -> None:
    with contextlib.suppress(OSError):
        while data := src.recv(65536):
            dst.sendall(data)
    with contextlib.suppress(OSError):
        dst.shutdown(socket.SHUT_WR)


def _splice(client: socket.socket, connect: Callable[[], socket.socket]) -> None:
    try:
        upstream = connect()
    except OSError:
        client.close()
        return
    back = threading.Thread(target=_pipe, args=(upstream, client), daemon=True)
    back.start()
    _pipe(client, upstream)
    back.join()
    client.close()
    upstream.close()


def serve(listener: socket.socket, connect: Callable[[], socket.socket]) -> None:
    """Accepts forever; each connection is copied both ways to a fresh `connect()`."""
    while True:
        client, _ = listener.accept()
        threading.Thread(target=_splice, args=(client, connect), daemon=True).start()


def unix_to_tcp(path: str, port: int, host: str = "127.0.0.1") -> None:
    with contextlib.suppress(FileNotFoundError):
        os.unlink(path)
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    old = os.umask(0o077)
    listener.bind(path)
    os.umask(old)
    listener.listen(64)
    def connect() -> socket.socket:  # a bounded connect, then no time-out: a watch stays quiet for minutes
        s = socket.create_connection((host, port), timeout=10)
        s.settimeout(None)
        return s

    serve(listener, connect)


def _unix(path: str) -> socket.socket:
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect(path)
    return s


def netns(path: str, port: int, argv: list[str]) -> int:
    loopback_up()
    listener = socket.create_server(("127.0.0.1", port), backlog=64)
    threading.Thread(target=serve, args=(listener, lambda: _unix(path)), daemon=True).start()
    child = subprocess.Popen(argv, stdin=subprocess.DEVNULL)
    signal.signal(signal.SIGTERM, lambda *_: child.terminate())
    return child.wait()


def main(args: list[str]) -> int:
    if len(args) in (3, 4) and args[0] == "unix":
        unix_to_tcp(args[1], int(args[2]), *args[3:])
        return 0
    if len(args) >= 5 and args[0] == "netns" and args[3] == "--":
        return netns(args[1], int(args[2]), args[4:])
    print("usage: python -m fabric.lab.relay unix SOCKET PORT [HOST] | netns SOCKET PORT -- ARGV...", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
