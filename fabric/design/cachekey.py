"""Where the derive cache's entries live, their keys, and reading and writing them (`fabric.design.load` says what
the cache is). Light on purpose: a command answered from an entry (`explain` of one device) imports this, not
the models, PyYAML nor pydantic."""

from __future__ import annotations

import contextlib
import hashlib
import importlib.util
import os
import stat
import sys
from functools import lru_cache
from pathlib import Path

from fabric import __version__
from fabric.model.limits import MAX_BYTES
from fabric.safefile import write_private

_PACKAGE = Path(__file__).resolve().parent.parent
# The libraries that read and validate an inventory, by the file of theirs that holds their version: their bytes
# go into the key without importing them (pydantic's import alone is about 0.06 CPU-s).
_LIBRARIES = (("pydantic", "version.py"), ("yaml", "__init__.py"))


def _library_files() -> bytes:
    out = b""
    for name, file in _LIBRARIES:
        spec = importlib.util.find_spec(name)
        where = spec.submodule_search_locations if spec is not None else None
        data = Path(next(iter(where)), file).read_bytes() if where else b"missing"
        out += f"{name}\0{len(data)}\0".encode() + data
    return out


@lru_cache(maxsize=1)
def code_digest(package: Path = _PACKAGE) -> str:
    """SHA-256 of the tool itself: every file of the package (code, templates, data), the Python version and the
    file that holds the version of each library that reads and validates an inventory (PyYAML, pydantic)."""
    h = hashlib.sha256(f"{__version__}\0{sys.version}\0".encode() + _library_files())
    for path in sorted(package.rglob("*")):
        if path.is_file() and "__pycache__" not in path.parts:
            data = path.read_bytes()
            h.update(f"{path.relative_to(package)}\0{len(data)}\0".encode())
            h.update(data)
    return h.hexdigest()


def inventory_key(directory: Path, target: str | None = None) -> str | None:
    """The cache key of `directory` derived for `target`; None where the directory cannot be read (the loader
    then says why)."""
    h = hashlib.sha256(f"{code_digest()}\0{target}\0".encode())
    try:  # the directory's own path too: problems and lint findings name its files
        h.update(os.fsencode(os.path.realpath(directory)) + b"\0")  # a name may be any bytes; a link loop: kept
        names = sorted(p.name for p in directory.iterdir() if p.suffix in (".yaml", ".yml"))
        for name in names:
            st = (directory / name).stat()
            if not stat.S_ISREG(st.st_mode) or st.st_size > MAX_BYTES:  # a FIFO, a device, too large: no key
                return None
            data = (directory / name).read_bytes()
            h.update(os.fsencode(name) + f"\0{len(data)}\0".encode())
            h.update(data)
    except OSError:
        return None
    return h.hexdigest()


def cache_dir() -> Path | None:
    env = os.environ.get("ROCE_FABRIC_CACHE")
    if env == "off":
        return None
    if env:
        return Path(env)
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "roce-fabric" / "derived"


def read_entry(path: Path) -> bytes | None:
    """The bytes of a cache entry written by this user, private; None otherwise (never a link, never another's)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)  # a FIFO never blocks
    except OSError:
        return None
    with os.fdopen(fd, "rb") as f:
        st = os.fstat(f.fileno())
        if not stat.S_ISREG(st.st_mode) or st.st_uid != os.getuid() or st.st_mode & 0o077:
            return None
        return f.read()


def write_entry(path: Path, data: bytes) -> None:
    with contextlib.suppress(Exception):  # a cache that cannot be written is no cache, never a failed command
        write_private(path, data)


def entry_path(directory: Path, target: str | None) -> Path | None:
    """The path (without suffix) of `directory`'s entries; None where the cache is off or there is no key."""
    base = cache_dir()
    key = inventory_key(directory, target) if base is not None else None
    return base / key if base is not None and key is not None else None


def answer_path(directory: Path, kind: str, variant: str) -> Path | None:
    """Where a command's `kind` of answer about `directory` for `variant` (its options, a device name) is kept,
    beside the inventory's derived entries; None where the cache is off or there is no key."""
    entry = entry_path(directory, None)
    return entry.with_suffix(f".{kind}-{hashlib.sha256(variant.encode()).hexdigest()[:32]}") if entry else None
