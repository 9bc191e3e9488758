"""fabric.safefile, the one writer of device and host output (issue 21, item 4): 0600 files in 0700
directories, a symlink planted at a file's name replaced and never written through, a file or symlink where a
directory is expected refused with a clear error; and the commands that write such output use it."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from fabric.errors import UsageError
from fabric.safefile import append_private, private_dir, write_private


def _mode(p: Path) -> int:
    return p.stat().st_mode & 0o777


def test_files_are_private_and_directories_created_private(tmp_path: Path) -> None:
    os.umask(0o022)
    path = write_private(tmp_path / "a" / "b" / "sw1.conf", "secret 7 X\n")
    assert path.read_text() == "secret 7 X\n"
    assert (_mode(path), _mode(path.parent), _mode(path.parent.parent)) == (0o600, 0o700, 0o700)
    write_private(path, "again\n")
    assert path.read_text() == "again\n" and _mode(path) == 0o600
    assert [p.name for p in path.parent.iterdir()] == ["sw1.conf"]  # no temporary file left


def test_a_planted_symlink_is_replaced_not_followed(tmp_path: Path) -> None:
    victim = tmp_path / "victim"
    victim.write_text("untouched\n")
    out = private_dir(tmp_path / "out")
    (out / "sw1.conf").symlink_to(victim)
    write_private(out / "sw1.conf", "running config\n")
    assert victim.read_text() == "untouched\n"
    assert not (out / "sw1.conf").is_symlink() and (out / "sw1.conf").read_text() == "running config\n"
    (out / "audit.jsonl").symlink_to(victim)
    with pytest.raises(UsageError, match="cannot append"):
        append_private(out / "audit.jsonl", "{}\n")
    assert victim.read_text() == "untouched\n"


@pytest.mark.parametrize("kind", ["file", "symlink to a directory", "dangling symlink"])
def test_something_else_where_a_directory_is_expected_is_refused(tmp_path: Path, kind: str) -> None:
    where = tmp_path / "out"
    if kind == "file":
        where.write_text("x")
    elif kind == "symlink to a directory":
        (tmp_path / "elsewhere").mkdir()
        where.symlink_to(tmp_path / "elsewhere")
    else:
        where.symlink_to(tmp_path / "nowhere")
    with pytest.raises(UsageError, match=r"expected a directory, found a (file|symlink)"):
        write_private(where / "sw1.conf", "x")
    assert not (tmp_path / "elsewhere" / "sw1.conf").exists() and not (tmp_path / "nowhere").exists()


def test_append_creates_a_private_log(tmp_path: Path) -> None:
    append_private(tmp_path / "s" / "audit.jsonl", "a\n")
    append_private(tmp_path / "s" / "audit.jsonl", "b\n")
    assert (tmp_path / "s" / "audit.jsonl").read_text() == "a\nb\n" and _mode(tmp_path / "s" / "audit.jsonl") == 0o600


def test_the_audit_log_and_records_are_written_privately(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from fabric.push import state

    monkeypatch.setenv("FABRIC_STATE", str(tmp_path / "state"))
    victim = tmp_path / "victim"
    victim.write_text("untouched\n")
    d = state.state_dir("f")
    (d / "audit.jsonl").symlink_to(victim)
    entry = state.AuditEntry(time=state.now(), who="t", fabric="f", device="d", target="frr", action="apply",
                             diff_digest="", added=0, removed=0, result="applied")
    with pytest.raises(UsageError):
        state.audit("f", entry)
    (d / "audit.jsonl").unlink()
    state.audit("f", entry)
    state.begin_journal("f", "apply", ["d"])
    assert victim.read_text() == "untouched\n"
    assert {p.name: _mode(p) for p in d.iterdir()} == {"audit.jsonl": 0o600, "journal.json": 0o600}
    assert _mode(d) == 0o700


def test_fetch_writes_privately_through_the_helper(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """fetch_device with a driver that returns a running config (the SSH path is the lab test's, test_fetch)."""
    from fabric.access import Credentials, SwitchEndpoint
    from fabric.push import fetch

    class Saved:
        def saved(self) -> str:
            return "router bgp 65101\n neighbor swp5 password S3cret\n"

    monkeypatch.setattr(fetch, "connect", lambda *_a, **_k: (Saved(), ""))
    monkeypatch.setattr(fetch, "close", lambda _d: None)
    victim = tmp_path / "victim"
    victim.write_text("untouched\n")
    out = tmp_path / "fetched"
    private_dir(out)
    (out / "leaf1.conf").symlink_to(victim)
    ep = SwitchEndpoint(device="leaf1", target="frr", address="192.0.2.1", device_type="linux", intended="")
    got = fetch.fetch_all([ep], Credentials(username="u"), out)
    assert got[0].status == "saved" and victim.read_text() == "untouched\n"
    assert _mode(out / "leaf1.conf") == 0o600 and _mode(out) == 0o700
    with pytest.raises(UsageError, match="expected a directory, found a file"):
        fetch.fetch_all([ep], Credentials(username="u"), victim)


def test_fetch_o_naming_a_file_is_exit_2_without_traceback(tmp_path: Path) -> None:
    import subprocess

    from tests.conftest import ROOT

    target = tmp_path / "a-file"
    target.write_text("x")
    p = subprocess.run([str(Path(sys.executable).parent / "fabric"), "fetch", str(ROOT / "inventories" / "example"),
                        "-o", str(target)], capture_output=True, text=True, timeout=120, env={**os.environ,
                        "FABRIC_PASSWORD": "x"})
    assert p.returncode == 2 and "expected a directory, found a file" in p.stderr, p.stderr
    assert "Traceback" not in p.stderr and target.read_text() == "x"
