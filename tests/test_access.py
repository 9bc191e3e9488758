"""How the tool reaches switches (fabric.access): the known_hosts file is read once for a whole plan, and each
connection still knows only its own switch's keys; a read without terminal escapes is not searched for them."""

from __future__ import annotations

import re
import time
from pathlib import Path

import paramiko
import pytest

from fabric.access import _KNOWN, _plain_text_kept, known_client
from tests.support.timing import cpu_seconds


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


def test_the_file_is_read_in_time_linear_in_its_lines_and_looked_up_as_paramiko_does(tmp_path: Path) -> None:
    """Each host's keys as paramiko's own lookup gives them (several key types, a host on two lines: the first line's
    key of each type, a port, a comment, a line of two words), and a file four times as long costs about four times as
    much to read, not sixteen (paramiko's reading looks every line's names up among the lines before it)."""
    rsa = paramiko.RSAKey.generate(1024)
    path, _, own = _known_hosts(tmp_path, 300)
    text = path.read_text() + "\n".join([
        "# a comment", "10.0.0.1 two-words", f"10.0.0.1 {rsa.get_name()} {rsa.get_base64()}",
        f"10.0.0.1,10.8.8.8 {own.get_name()} {own.get_base64()}", ""])
    path.write_text(text)
    theirs = paramiko.HostKeys(str(path))
    for name, port in [("10.0.0.1", 22), ("10.8.8.8", 22), ("10.9.9.9", 2222), ("10.0.1.1", 22), ("10.7.7.7", 22)]:
        shown = name if port == 22 else f"[{name}]:{port}"
        assert dict(known_client(str(path), name, port).get_host_keys().lookup(shown) or {}) == dict(
            theirs.lookup(shown) or {}), name

    def first_read(lines: int) -> float:
        kh, _, _ = _known_hosts(tmp_path / str(lines), lines)
        return cpu_seconds(lambda: (_KNOWN.clear(), known_client(str(kh), "10.0.0.1", 22)))  # each a first read

    (tmp_path / "500").mkdir()
    (tmp_path / "2000").mkdir()
    short, long = first_read(500), first_read(2000)
    assert long < 8 * short + 0.05, f"{short * 1000:.0f} → {long * 1000:.0f} CPU-ms"


def test_a_read_is_stripped_of_escapes_as_netmiko_strips_it_and_plain_text_is_not_searched(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """What bash 5.1+ prints around a prompt (bracketed paste on and off, ESC [?2004h / l), a coloured `ls` and a
    cursor move come back from the wrapped connection exactly as from netmiko's own method; a CONFIG_DB-sized read
    without ESC is the same text, with none of netmiko's per-sequence regex passes run over it."""
    from netmiko import ConnectHandler

    conn = ConnectHandler(device_type="linux", host="192.0.2.1", username="admin", password="x", auto_connect=False)
    own = conn.strip_ansi_escape_codes
    _plain_text_kept(conn)
    for text in ("\x1b[?2004hadmin@leaf1:~$ ", "\x1b[?2004l\r\nshow\r\n", "\x1b[0m\x1b[01;34metc\x1b[0m  x\n",
                 "a\x1b[2Kb\x1b[12;1Hc\x1bEd"):
        assert conn.strip_ansi_escape_codes(text) == own(text), text
    subs = []
    real_sub = re.sub
    monkeypatch.setattr(re, "sub", lambda *a, **kw: subs.append(a[0]) or real_sub(*a, **kw))
    plain = '{\n    "PORT": {\n        "Ethernet0": {"mtu": "9100"}\n    }\n}\n' * 2000
    assert conn.strip_ansi_escape_codes(plain) == plain and subs == []
    assert own(plain) == plain and len(subs) > 30  # netmiko's own: a pass for each sequence it knows
