"""fabric.safefile, the one writer of device and host output: 0600 files in 0700
directories, a symlink planted at a file's name replaced and never written through, a file or symlink where a
directory is expected refused with a clear error; and the commands that write such output use it."""

from __future__ import annotations

import os
import shutil
import socket
import stat
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from fabric.errors import UsageError
from fabric.safefile import append_private, private_dir, replacing, write_private
from tests import inproc


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


def test_a_file_written_as_it_is_made_replaces_the_name_only_when_complete(tmp_path: Path) -> None:
    """`replacing`: the data grows in a private temporary file beside the name; the name keeps its old file until
    the block ends, and an error in the block leaves it as it was, with no temporary file behind."""
    plan = tmp_path / "dry-run.txt"
    plan.write_text("the last plan\n")
    with pytest.raises(KeyboardInterrupt), replacing(plan) as write:
        write("== rail-bandwidth\n")
        (tmp,) = tmp_path.glob(".dry-run.txt.*.tmp")
        assert tmp.read_text() == "" and _mode(tmp) == 0o600  # buffered; nothing under the name yet
        raise KeyboardInterrupt
    assert plan.read_text() == "the last plan\n" and sorted(p.name for p in tmp_path.iterdir()) == ["dry-run.txt"]
    with replacing(plan) as write:
        write("== rail-bandwidth\n")
        write(b"  round 1 gpu-su1-02 [server]: ib_write_bw\n")
        assert plan.read_text() == "the last plan\n"
    assert plan.read_text() == "== rail-bandwidth\n  round 1 gpu-su1-02 [server]: ib_write_bw\n"
    assert _mode(plan) == 0o600 and sorted(p.name for p in tmp_path.iterdir()) == ["dry-run.txt"]


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


# --- every output the operator names: never replaced unless a file; devices and FIFOs written as cat would ---

EXAMPLE = Path(__file__).resolve().parent.parent / "inventories" / "example"
FABRIC = str(Path(sys.executable).parent / "fabric")
# the commands that write one file an operator names with -o, each with its arguments
FILE_OUTPUTS = {"lint": ["lint", str(EXAMPLE), "--format", "json"],
                "export": ["export", str(EXAMPLE), "-f", "hostfile"]}
# the commands that write into a directory named with -o
DIR_OUTPUTS = {"render": ["render", str(EXAMPLE)], "accept": ["accept", str(EXAMPLE), "--dry-run"],
               "fetch": ["fetch", str(EXAMPLE)], "generate": ["generate", "gpu-rail", "--gpus", "256"],
               "export-prometheus": ["export", str(EXAMPLE), "-f", "prometheus"]}


def _kind(p: Path) -> int:
    return stat.S_IFMT(os.lstat(p).st_mode)


def _clean(p: subprocess.CompletedProcess[str]) -> str:
    """stderr of a refused command: exit 2 and no traceback."""
    assert p.returncode == 2 and "Traceback" not in p.stderr, (p.returncode, p.stderr)
    return p.stderr


def _expected(argv: list[str]) -> str:
    p = inproc.fabric(*argv)
    assert p.returncode == 0, p.stderr
    return p.stdout


@pytest.mark.parametrize("command", FILE_OUTPUTS)
def test_o_writes_into_a_character_device_and_never_replaces_it(tmp_path: Path, command: str) -> None:
    node = tmp_path / "null"
    os.mknod(node, stat.S_IFCHR | 0o666, os.makedev(1, 3))  # a null device of our own, never the system's
    p = inproc.fabric(*FILE_OUTPUTS[command], "-o", node)
    assert p.returncode == 0, p.stderr
    assert _kind(node) == stat.S_IFCHR and os.lstat(node).st_rdev == os.makedev(1, 3)
    assert [q.name for q in tmp_path.iterdir()] == ["null"]  # no temporary file left beside it


@pytest.mark.parametrize("command", FILE_OUTPUTS)
def test_o_writes_into_a_fifo_that_has_a_reader(tmp_path: Path, command: str) -> None:
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    got: list[bytes] = []
    reader = threading.Thread(target=lambda: got.append(fifo.read_bytes()), daemon=True)
    reader.start()
    p = inproc.fabric(*FILE_OUTPUTS[command], "-o", fifo)
    reader.join(timeout=30)
    assert p.returncode == 0, p.stderr
    assert _kind(fifo) == stat.S_IFIFO and got == [_expected(FILE_OUTPUTS[command]).encode()]


@pytest.mark.parametrize("command", FILE_OUTPUTS)
def test_o_a_fifo_without_a_reader_is_refused_in_bounded_time(tmp_path: Path, command: str) -> None:
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    t0 = time.monotonic()
    p = subprocess.run([FABRIC, *FILE_OUTPUTS[command], "-o", str(fifo)], capture_output=True, text=True,
                       timeout=60)
    assert f"{fifo}: expected a FIFO with a reader, found none in" in _clean(p)
    assert time.monotonic() - t0 < 30 and _kind(fifo) == stat.S_IFIFO


def _socket(path: Path) -> None:
    s = socket.socket(socket.AF_UNIX)
    s.bind(str(path))
    s.close()


@pytest.mark.parametrize("what", ["a block device", "a socket", "a directory"])
def test_o_refuses_a_block_device_a_socket_and_a_directory(tmp_path: Path, what: str) -> None:
    at = tmp_path / "out"
    if what == "a block device":  # a loop device's number, never opened: refused before any write
        os.mknod(at, stat.S_IFBLK | 0o600, os.makedev(7, 250))
    elif what == "a socket":
        _socket(at)
    else:
        at.mkdir()
    before = _kind(at)
    for argv in FILE_OUTPUTS.values():
        err = _clean(inproc.fabric(*argv, "-o", at))
        assert f"{at}: expected a file, a character device or a FIFO, found {what} (not replaced)" in err
        assert _kind(at) == before


def test_o_follows_the_callers_own_symlink_and_refuses_another_users(tmp_path: Path) -> None:
    """As `cat > link` would, for the operator's own link (the target replaced, the link kept; a dangling one
    creates its target); a link another user owns (planted in a shared directory) is refused."""
    argv = FILE_OUTPUTS["lint"]
    reports = tmp_path / "reports"
    reports.mkdir()
    (reports / "today.json").write_text("yesterday\n")
    (tmp_path / "out.json").symlink_to(reports / "today.json")
    assert inproc.fabric(*argv, "-o", tmp_path / "out.json").returncode == 0
    assert (tmp_path / "out.json").is_symlink() and (reports / "today.json").read_text() == _expected(argv)
    assert _mode(reports / "today.json") == 0o600
    (tmp_path / "new.json").symlink_to("reports/new.json")  # dangling, relative
    assert inproc.fabric(*argv, "-o", tmp_path / "new.json").returncode == 0
    assert (reports / "new.json").read_text() == _expected(argv)
    victim = tmp_path / "victim"
    victim.write_text("untouched\n")
    (tmp_path / "planted").symlink_to(victim)
    os.lchown(tmp_path / "planted", 4242, 4242)
    err = _clean(inproc.fabric(*argv, "-o", tmp_path / "planted"))
    assert f"{tmp_path / 'planted'}: expected a file or a symlink of yours, found a symlink of uid 4242" in err
    assert victim.read_text() == "untouched\n" and (tmp_path / "planted").is_symlink()


def test_a_name_the_tool_chooses_is_never_replaced_when_it_is_not_a_file(tmp_path: Path) -> None:
    """accept writes dry-run.txt into its -o directory (fetch and the cache their files alike): a FIFO or device
    there is refused, never replaced nor written into."""
    out = private_dir(tmp_path / "accept")
    os.mkfifo(out / "dry-run.txt")
    err = _clean(inproc.fabric(*DIR_OUTPUTS["accept"], "-o", out))
    assert f"{out / 'dry-run.txt'}: expected a file, found a FIFO (not replaced)" in err
    assert _kind(out / "dry-run.txt") == stat.S_IFIFO


@pytest.mark.parametrize("what", ["a FIFO", "a character device"])
def test_generate_force_never_removes_a_device_or_fifo(tmp_path: Path, what: str) -> None:
    at = tmp_path / "inv"
    os.mkfifo(at) if what == "a FIFO" else os.mknod(at, stat.S_IFCHR | 0o666, os.makedev(1, 3))
    err = _clean(inproc.fabric(*DIR_OUTPUTS["generate"], "-o", at, "--force"))
    assert f"{at}: expected a new or empty directory (--force replaces only a directory, a file or a symlink), " \
           f"found {what}" in err
    assert _kind(at) in (stat.S_IFIFO, stat.S_IFCHR)


# --- bad paths: one line naming the path, what was expected and what was found; exit 2, no traceback ---

BAD_PATHS = {
    "a directory": (lambda t: t / "d", "expected a file, a character device or a FIFO, found a directory"),
    "under a file": (lambda t: t / "f" / "x", "expected a directory, found a file"),
    "a parent that cannot be created": (lambda t: Path("/proc/self/none/x"),
                                        "expected a directory that can be created, found no such file"),
    "a name too long": (lambda t: t / ("n" * 300), "found file name too long"),
}


@pytest.mark.parametrize("kind", BAD_PATHS)
@pytest.mark.parametrize("command", FILE_OUTPUTS)
def test_o_bad_paths_are_one_clear_line(tmp_path: Path, command: str, kind: str) -> None:
    (tmp_path / "d").mkdir()
    (tmp_path / "f").write_text("x")
    make, message = BAD_PATHS[kind]
    err = _clean(inproc.fabric(*FILE_OUTPUTS[command], "-o", make(tmp_path)))
    assert err.startswith("error: ") and message in err and err.count("\n") == 1, err


@pytest.mark.parametrize("command", FILE_OUTPUTS)
def test_o_with_a_nul_byte_or_a_non_utf8_name(tmp_path: Path, command: str) -> None:
    """A NUL cannot be in a path (typer refuses it, exit 2); bytes that are not UTF-8 are a valid name: written,
    and named escaped in the message."""
    assert "embedded null byte" in _clean(inproc.fabric(*FILE_OUTPUTS[command], "-o", f"{tmp_path}/a\0b"))
    name = tmp_path / os.fsdecode(b"r\xff.txt")
    p = inproc.fabric(*FILE_OUTPUTS[command], "-o", name)
    assert p.returncode == 0 and name.read_text() == _expected(FILE_OUTPUTS[command]), p.stderr


@pytest.mark.skipif(not shutil.which("setpriv") or os.geteuid() != 0, reason="needs root and setpriv")
@pytest.mark.parametrize("command", [*FILE_OUTPUTS, "render"])
def test_o_without_permission_is_one_clear_line(tmp_path: Path, command: str) -> None:
    """Run as root without its capabilities (so permission bits apply) into a read-only directory."""
    ro = tmp_path / "ro"
    ro.mkdir(mode=0o555)
    argv = {**FILE_OUTPUTS, **DIR_OUTPUTS}[command]
    p = subprocess.run(["setpriv", "--bounding-set=-all", "--inh-caps=-all", FABRIC, *argv, "-o", str(ro / "x")],
                       capture_output=True, text=True, timeout=120)
    assert f"{ro / 'x'}: expected a " in _clean(p) and "found permission denied" in p.stderr
    assert list(ro.iterdir()) == []


@pytest.mark.parametrize("what", ["a file", "a FIFO", "below a file"])
@pytest.mark.parametrize("command", DIR_OUTPUTS)
def test_every_directory_o_refuses_what_is_not_a_directory(tmp_path: Path, command: str, what: str) -> None:
    at = tmp_path / "out"
    if what == "a FIFO":
        os.mkfifo(at)
    else:
        at.write_text("x")
    target = at / "x" if what == "below a file" else at
    env = {**os.environ, "FABRIC_PASSWORD": "x"}  # fetch asks for a password only once its directory is judged
    p = subprocess.run([FABRIC, *DIR_OUTPUTS[command], "-o", str(target)], capture_output=True, text=True,
                       timeout=120, env=env)
    found = "a file" if what != "a FIFO" else "a FIFO"
    assert f"{at}: expected a " in _clean(p) and "directory" in p.stderr and f"found {found}" in p.stderr
    assert _kind(at) == (stat.S_IFIFO if what == "a FIFO" else stat.S_IFREG)


def test_render_never_hangs_on_a_fifo_in_its_tree(tmp_path: Path) -> None:
    out = tmp_path / "build"
    assert inproc.fabric("render", str(EXAMPLE), "-o", out, "--only", "spine1").returncode == 0
    conf = next(p for p in (out / "switches" / "spine1").iterdir() if p.is_file())
    conf.unlink()
    os.mkfifo(conf)
    p = subprocess.run([FABRIC, "render", str(EXAMPLE), "-o", str(out), "--only", "spine1"], capture_output=True,
                       text=True, timeout=60)
    assert f"{conf}: expected a file or directory that can be written, found a FIFO" in _clean(p)
    assert _kind(conf) == stat.S_IFIFO


# --- no fixed temporary name anywhere: a link planted at the old one is never written through ---

def test_the_state_probe_and_lab_state_use_no_fixed_temporary_name(tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    from fabric.lab.state import LabState
    from fabric.push import state

    victim = tmp_path / "victim"
    victim.write_text("untouched\n")
    monkeypatch.setenv("FABRIC_STATE", str(tmp_path / "state"))
    d = state.state_dir("f")
    (d / f".probe-{os.getpid()}").symlink_to(victim)
    state.check_writable("f", need=4096)
    lab = tmp_path / "lab"
    lab.mkdir()
    (lab / "state.json.tmp").symlink_to(victim)
    LabState(fabric="f", inventory="i", prefix="p", state_dir=str(lab)).save()
    assert victim.read_text() == "untouched\n"
    assert LabState.model_validate_json((lab / "state.json").read_text()).fabric == "f"


def test_o_dev_stdout_writes_to_the_pipe(tmp_path: Path) -> None:
    """/dev/stdout is root's link to /proc/self/fd/1, itself a link to the pipe: followed, written into."""
    argv = FILE_OUTPUTS["export"]
    p = subprocess.run([FABRIC, *argv, "-o", "/dev/stdout"], capture_output=True, text=True, timeout=120)
    assert p.returncode == 0 and p.stdout == _expected(argv), p.stderr
