"""The one way the tool writes what devices and hosts said (running configs, acceptance reports and job output,
the audit log and records): private and never through a planted link.

- Directories are created 0700; a file or a symlink where a directory is expected is refused (UsageError,
  exit 2), never followed or replaced.
- A file is written into a fresh temporary file beside it (`O_CREAT|O_EXCL|O_NOFOLLOW`, mode 0600) and renamed
  over the name: a symlink planted at the name is replaced, never written through; readers never see half a file.
- An append-only log (`append_private`) is opened `O_APPEND|O_NOFOLLOW`, created 0600.
"""

from __future__ import annotations

import os
import secrets
import stat
from pathlib import Path

from fabric.errors import UsageError

DIR_MODE, FILE_MODE = 0o700, 0o600


def private_dir(path: Path) -> Path:
    """`path` as a directory: created (with its missing parents) 0700; refused when something else is there."""
    path = Path(path)
    missing = []
    p = path
    while True:
        try:
            st = os.lstat(p)
        except FileNotFoundError:
            missing.append(p)
            if p.parent == p:
                break
            p = p.parent
            continue
        except OSError as exc:
            raise UsageError(f"{p}: expected a directory, found {exc.strerror or exc}") from None
        if p == path and stat.S_ISLNK(st.st_mode):
            raise UsageError(f"{path}: expected a directory, found a symlink (not followed)")
        if not stat.S_ISDIR(os.stat(p).st_mode if stat.S_ISLNK(st.st_mode) else st.st_mode):
            raise UsageError(f"{p}: expected a directory, found a file")
        break
    for d in reversed(missing):
        try:
            os.mkdir(d, DIR_MODE)
        except FileExistsError:  # made by another writer meanwhile: judged as above
            return private_dir(path)
        except OSError as exc:
            raise UsageError(f"{d}: cannot create the directory: {exc.strerror or exc}") from None
    return path


def write_private(path: Path, data: str | bytes, *, mode: int = FILE_MODE) -> Path:
    """Write `data` to `path` (0600 unless `mode`): a fresh temporary file in its directory, renamed over it."""
    path = Path(path)
    private_dir(path.parent)
    if path.is_dir() and not path.is_symlink():
        raise UsageError(f"{path}: expected a file, found a directory")
    tmp = path.with_name(f".{path.name}.{secrets.token_hex(6)}.tmp")
    raw = data.encode() if isinstance(data, str) else data
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, mode)
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(raw)
            os.replace(tmp, path)
        finally:
            tmp.unlink(missing_ok=True)
    except OSError as exc:
        raise UsageError(f"{path}: cannot write: {exc.strerror or exc}") from None
    return path


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
