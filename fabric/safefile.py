"""The one way the tool writes files: what devices and hosts said (running configs, acceptance reports and job
output, the audit log and records), the cache, the boot-time files of a host, and every file an operator names
with `-o`. Nothing is ever written through a planted link, and nothing but a file is ever replaced.

- Directories are created 0700 for private files; a file or a symlink where a directory is expected is refused
  (UsageError, exit 2), never followed or replaced.
- A file is written into a fresh temporary file beside it, of an unpredictable name created exclusively
  (`O_CREAT|O_EXCL|O_NOFOLLOW`, 0600, then given its mode), and renamed over the name (`replace_file`): readers
  never see half a file. A symlink at a name the tool chose (`write_private`: fetch's, accept's, the cache's files) is
  replaced, never written through. A device node, FIFO, socket or directory at the name is refused, never replaced.
- A file the operator named (`write_output`, every `-o FILE`) is written as `cat > NAME` would, with two
  guards. A character device (`/dev/null`, a terminal) or a FIFO there is written into, never replaced; a FIFO
  without a reader is waited for at most FIFO_WAIT_S, then refused. A symlink there is followed when it is the
  caller's own or root's (the operator's `report -> /srv/reports/today`, `/dev/stdout`), refused when another
  user owns it: in a shared directory (/tmp) it may be planted to make the tool write over a file of the caller's
  (a rule like Linux's fs.protected_symlinks, applied in every directory). A block device, a socket or a directory is
  refused.
- An append-only log (`append_private`) is opened `O_APPEND|O_NOFOLLOW`, created 0600.
"""

from __future__ import annotations

import errno
import os
import secrets
import stat
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TypeVar

from fabric.errors import UsageError, printable

DIR_MODE, FILE_MODE = 0o700, 0o600
FIFO_WAIT_S = 2.0  # how long a FIFO at an output's name is given to get a reader
MAX_LINKS = 40  # symlinks followed for one name (Linux's own limit)
T = TypeVar("T")
_KINDS = ((stat.S_ISREG, "a file"), (stat.S_ISDIR, "a directory"), (stat.S_ISLNK, "a symlink"),
          (stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
          (stat.S_ISSOCK, "a socket"))


def kind(st: os.stat_result) -> str:
    """What a stat result is, for a message: `a file`, `a FIFO`, `a character device`, …"""
    return next((name for test, name in _KINDS if test(st.st_mode)), "something else")


def refusal(path: Path | str, expected: str, exc: OSError | ValueError) -> UsageError:
    """The error for an operating-system refusal at `path`: `PATH: expected …, found <why>`."""
    found = (exc.strerror or str(exc)) if isinstance(exc, OSError) else "a NUL byte in the name"
    found = found[:1].lower() + found[1:]  # `No such file or directory` → `…, found no such file or directory`
    try:
        st = os.lstat(path)
        if not (stat.S_ISREG(st.st_mode) or stat.S_ISDIR(st.st_mode)):
            found = f"{kind(st)} ({found})"
    except (OSError, ValueError):
        pass
    return UsageError(f"{printable(os.fsdecode(path))}: expected {expected}, found {found}")


def status(path: Path, expected: str = "a name to write") -> os.stat_result | None:
    """`path`'s own status; None where nothing is there (or a directory on the way is missing or a file)."""
    try:
        return os.lstat(path)
    except (FileNotFoundError, NotADirectoryError):
        return None
    except (OSError, ValueError) as exc:
        raise refusal(path, expected, exc) from None


def _is_dir(p: Path, named: Path) -> bool:
    """Whether a directory is at `p` (False: nothing, to create); refused when something else is there, or a
    symlink at `named` itself."""
    st = status(p, "a directory")
    if st is None:
        return False
    if p == named and stat.S_ISLNK(st.st_mode):
        raise UsageError(f"{printable(str(p))}: expected a directory, found a symlink (not followed)")
    if stat.S_ISLNK(st.st_mode):
        st = os.stat(p)
    if not stat.S_ISDIR(st.st_mode):
        raise UsageError(f"{printable(str(p))}: expected a directory, found {kind(st)}")
    return True


def private_dir(path: Path, *, mode: int = DIR_MODE) -> Path:
    """`path` as a directory: created (with its missing parents) `mode` (0700); refused when something else is
    there."""
    path = Path(path)
    missing = []
    p = path
    while not _is_dir(p, path):  # not there, or below a file (refused when that file is reached)
        missing.append(p)
        if p.parent == p:
            break
        p = p.parent
    for d in reversed(missing):
        try:
            os.mkdir(d, mode)
        except FileExistsError:  # made by another writer meanwhile: judged as above
            return private_dir(path, mode=mode)
        except OSError as exc:
            raise refusal(d, "a directory that can be created", exc) from None
    return path


def output_dir(path: Path, *, mode: int = 0o777) -> Path:
    """An output directory the operator named (`render -o`, `export -f prometheus -o`): followed where it is a
    symlink (as a shell would), created where missing (`mode`, less the umask); refused when something else is
    there."""
    try:
        st = os.stat(path)
    except (FileNotFoundError, NotADirectoryError):
        return private_dir(path, mode=mode)
    except (OSError, ValueError) as exc:
        raise refusal(path, "a directory", exc) from None
    if not stat.S_ISDIR(st.st_mode):
        raise UsageError(f"{printable(str(path))}: expected a directory, found {kind(st)}")
    return path


def replace_file(path: Path, data: str | bytes, mode: int = FILE_MODE) -> Path:
    """Write `data` to `path` (exactly `mode`, whatever the umask) through a fresh temporary file of an
    unpredictable name beside it, renamed over the name. Only a file or a symlink at the name is replaced."""
    with replacing(path, mode) as write:
        write(data)
    return Path(path)


@contextmanager
def replacing(path: Path, mode: int = FILE_MODE) -> Iterator[Callable[[str | bytes], None]]:
    """`replace_file` for data made while it is written: the block gets a `write` into the temporary file (which
    grows as it goes), renamed over `path` when the block ends; an error in the block (or an interruption) leaves
    `path` as it was. What the system refuses (a full disk included) is a UsageError naming `path`; the block's
    own errors pass as they are."""
    path = Path(path)
    st = status(path)
    if st is not None and not (stat.S_ISREG(st.st_mode) or stat.S_ISLNK(st.st_mode)):
        raise UsageError(f"{printable(str(path))}: expected a file, found {kind(st)} (not replaced)")
    tmp = path.with_name(f".{path.name[:64]}.{secrets.token_hex(8)}.tmp")
    fd = _refused(path, os.open, tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, FILE_MODE)
    try:
        with os.fdopen(fd, "wb") as f:
            _refused(path, os.fchmod, fd, mode)
            yield lambda data: _refused(path, f.write, data.encode() if isinstance(data, str) else data)
            _refused(path, f.flush)
        _refused(path, os.replace, tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


def _refused(path: Path, call: Callable[..., T], *args: object) -> T:
    """`call(*args)`, an operating-system refusal becoming the error of `path` (`refusal`)."""
    try:
        return call(*args)
    except (OSError, ValueError) as exc:
        raise refusal(path, "a file that can be written", exc) from None


def _dir_mode(mode: int) -> int:
    return DIR_MODE if not mode & 0o077 else 0o777


def write_private(path: Path, data: str | bytes, *, mode: int = FILE_MODE) -> Path:
    """Write `data` to `path`, a name the tool chose (0600 unless `mode`, its directories 0700 when private)."""
    path = Path(path)
    private_dir(path.parent, mode=_dir_mode(mode))
    return replace_file(path, data, mode)


def _followed(path: Path) -> tuple[Path, os.stat_result | None]:
    """The name `path` leads to through the symlinks of the caller or root, and what is there (None: nothing)."""
    for _ in range(MAX_LINKS):
        st = status(path)
        if st is None or not stat.S_ISLNK(st.st_mode):
            return path, st
        if st.st_uid not in (0, os.geteuid()):
            raise UsageError(f"{printable(str(path))}: expected a file or a symlink of yours, found a symlink of "
                             f"uid {st.st_uid} (not followed: it may have been planted; remove it or name its "
                             "target)")
        target = Path(os.path.join(os.path.dirname(path), os.readlink(path)))
        if status(target) is None:
            try:  # /proc/self/fd/N of a pipe or socket names nothing; opened, it is the pipe
                return path, os.stat(path)
            except (FileNotFoundError, NotADirectoryError):
                pass  # dangling: the name to create
            except OSError as exc:
                raise refusal(path, "a name to write", exc) from None
        path = target
    raise UsageError(f"{printable(str(path))}: expected a file, found more than {MAX_LINKS} symlinks in a row")


def _open_fifo(path: Path) -> int:
    """Open a FIFO for writing once it has a reader, waiting at most FIFO_WAIT_S."""
    deadline = time.monotonic() + FIFO_WAIT_S
    while True:
        try:
            return os.open(path, os.O_WRONLY | os.O_NONBLOCK | os.O_CLOEXEC)
        except OSError as exc:
            if exc.errno != errno.ENXIO:  # ENXIO: no reader yet
                raise
        if time.monotonic() > deadline:
            raise UsageError(f"{printable(str(path))}: expected a FIFO with a reader, found none in "
                             f"{FIFO_WAIT_S:g} s (not written)")
        time.sleep(0.05)


def _write_into(path: Path, raw: bytes, st: os.stat_result) -> None:
    """Write `raw` into the character device or FIFO at `path` (never truncated, never replaced), as cat does."""
    try:
        fd = _open_fifo(path) if stat.S_ISFIFO(st.st_mode) else os.open(
            path, os.O_WRONLY | os.O_NOCTTY | os.O_NONBLOCK | os.O_CLOEXEC)
        with os.fdopen(fd, "wb") as f:
            if stat.S_IFMT(os.fstat(fd).st_mode) != stat.S_IFMT(st.st_mode):  # changed since judged
                raise UsageError(f"{printable(str(path))}: expected {kind(st)}, found {kind(os.fstat(fd))}")
            os.set_blocking(fd, True)
            f.write(raw)
    except OSError as exc:
        raise refusal(path, f"{kind(st)} that takes what is written", exc) from None


def write_output(path: Path, data: str | bytes, *, mode: int = FILE_MODE) -> Path:
    """Write `data` to `path`, a file the operator named (`-o FILE`): a file replaced (exactly `mode`), a
    character device or FIFO written into; see the module's docstring for symlinks and what is refused."""
    target, st = _followed(Path(path))
    if st is None or stat.S_ISREG(st.st_mode):
        output_dir(target.parent, mode=_dir_mode(mode))
        return replace_file(target, data, mode)
    if stat.S_ISCHR(st.st_mode) or stat.S_ISFIFO(st.st_mode):
        _write_into(target, data.encode() if isinstance(data, str) else data, st)
        return Path(path)
    raise UsageError(f"{printable(str(target))}: expected a file, a character device or a FIFO, found {kind(st)} "
                     "(not replaced)")


def append_private(path: Path, text: str) -> None:
    """Append `text` to a private log (created 0600); a symlink at its name is refused, never followed."""
    path = Path(path)
    private_dir(path.parent)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, FILE_MODE)
    except OSError as exc:
        raise UsageError(f"{path}: cannot append: {exc.strerror or exc}"
                         + (" (a symlink is not followed)" if path.is_symlink() else "")) from None
    with os.fdopen(fd, "a") as f:
        f.write(text)
