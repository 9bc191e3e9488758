"""How the tool reaches switches (fabric.access): the known_hosts file is read once for a whole plan, and each
connection still knows only its own switch's keys."""

from __future__ import annotations

import time
from pathlib import Path

import paramiko

from fabric.access import known_client


def _known_hosts(tmp: Path, switches: int) -> tuple[Path, paramiko.PKey, paramiko.PKey]:
    """A known_hosts of `switches` lines (one key for all but the last, which has its own), as OpenSSH writes it."""
    common, own = paramiko.Ed25519Key.from_private_key_file(_key(tmp, "a")), paramiko.Ed25519Key.from_private_key_file(
        _key(tmp, "b"))
    lines = [f"10.0.{i // 250}.{i % 250 + 1} {common.get_name()} {common.get_base64()}" for i in range(switches - 1)]
    lines.append(f"[10.9.9.9]:2222 {own.get_name()} {own.get_base64()}")
    path = tmp / "known_hosts"
    path.write_text("\n".join(lines) + "\n")
    return path, common, own


def _key(tmp: Path, name: str) -> str:
    import subprocess

    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(tmp / name)], check=True)
    return str(tmp / name)


def test_each_connection_knows_only_its_switch_and_the_file_is_read_once(tmp_path: Path) -> None:
    path, common, own = _known_hosts(tmp_path, 2000)
    client = known_client(str(path), "10.0.0.1", 22)
    assert dict(client.get_host_keys()) == {"10.0.0.1": {common.get_name(): common}}
    client = known_client(str(path), "10.9.9.9", 2222)  # off port 22: paramiko's `[host]:port`
    assert client.get_host_keys().lookup("[10.9.9.9]:2222")[own.get_name()] == own
    assert dict(known_client(str(path), "10.9.9.9", 22).get_host_keys()) == {}  # unknown there: refused
    t0 = time.process_time()
    for i in range(500):
        known_client(str(path), f"10.0.{i // 250}.{i % 250 + 1}", 22)
    assert time.process_time() - t0 < 0.5  # netmiko's alt_key_file read the file for each: 0.1 CPU-s apiece
    path.write_text(path.read_text().replace("10.0.0.1 ", "10.0.0.199 ", 1))  # the file changed: read again
    assert dict(known_client(str(path), "10.0.0.1", 22).get_host_keys()) == {}
