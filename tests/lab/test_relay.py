"""fabric.lab.relay: a program in a network namespace of its own reaches a TCP server of the lab's namespace
through the two relays, and a connection left quiet longer than the connect time-out stays up (a watch)."""

from __future__ import annotations

import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

from fabric.lab.relay import unshare_argv
from tests.conftest import require

CLIENT = """
import socket, sys, time
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=30)
s.sendall(b"one\\n"); print(s.recv(64).decode().strip())
time.sleep(11)
s.sendall(b"two\\n"); print(s.recv(64).decode().strip())
"""


def test_a_program_in_its_own_namespace_reaches_the_server_and_a_quiet_connection_stays(tmp_path: Path) -> None:
    probe = subprocess.run([*unshare_argv(), "true"], capture_output=True, text=True, timeout=30)
    require(probe.returncode == 0, f"a network namespace (unshare): {probe.stderr.strip()}")
    server = socket.create_server(("127.0.0.1", 0))
    port = server.getsockname()[1]

    def echo() -> None:
        conn, _ = server.accept()
        with conn:
            while data := conn.recv(64):
                conn.sendall(data.upper())

    threading.Thread(target=echo, daemon=True).start()
    sock = tmp_path / "api.sock"
    relay = [sys.executable, "-m", "fabric.lab.relay"]
    outside = subprocess.Popen([*relay, "unix", str(sock), str(port)])
    try:
        deadline = time.monotonic() + 10
        while not sock.exists() and time.monotonic() < deadline:
            time.sleep(0.1)
        # inside, the same port number is free (its own loopback): the client dials it as it would the API server
        run = subprocess.run([*unshare_argv(), *relay, "netns", str(sock), str(port), "--", sys.executable, "-c",
                              CLIENT, str(port)], capture_output=True, text=True, timeout=60)
        assert run.returncode == 0, run.stderr
        assert run.stdout.split() == ["ONE", "TWO"]
    finally:
        outside.terminate()
        outside.wait(timeout=10)
        server.close()
