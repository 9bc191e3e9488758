"""The push state directory: audit log, apply lock, and what each device looked like before an apply.

`$FABRIC_STATE/<fabric>/` or `~/.local/state/roce-fabric/<fabric>/` (mode 0700):
`audit.jsonl` (one JSON line per device change), `apply.lock` (pid, host, time), and
`records/<device>.json` (the Txn of the last successful apply: snapshot and native checkpoint/revision).
Credentials are never written here; `scrub` removes any secret value that reaches a message.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import getpass
import json
import os
import socket
from collections.abc import Iterator
from pathlib import Path

from pydantic import BaseModel

from fabric.errors import UsageError
from fabric.targets.base import Txn


def state_root(fabric: str) -> Path:
    base = os.environ.get("FABRIC_STATE")
    return (Path(base) if base else Path.home() / ".local" / "state" / "roce-fabric") / fabric


def state_dir(fabric: str) -> Path:
    d = state_root(fabric)
    d.mkdir(parents=True, exist_ok=True, mode=0o700)
    return d


def manifest(fabric: str, device: str) -> list[list[str]] | None:
    """The leaves the last confirmed apply rendered (`fabric.targets.owned`), read without creating anything."""
    path = state_root(fabric) / "records" / f"{device}.json"
    try:
        return Txn.model_validate_json(path.read_text()).native.get("manifest")
    except (OSError, ValueError):
        return None


def check_writable(fabric: str, need: int = 1 << 20) -> None:
    """Refuse before any device is touched when the audit log and records cannot be written (read-only,
    full): write, fsync and remove a probe of `need` bytes."""
    try:
        d = state_dir(fabric)
        probe = d / f".probe-{os.getpid()}"
        fd = os.open(probe, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        try:
            os.write(fd, b"\0" * need)
            os.fsync(fd)
        finally:
            os.close(fd)
            probe.unlink(missing_ok=True)
    except OSError as exc:
        raise UsageError(f"state directory {state_root(fabric)}: expected writable with free space for the audit log "
                         f"and records, found {exc.strerror or exc}; nothing was changed") from None


_SECRETS: set[str] = set()


def register_secret(value: str | None) -> None:
    """A value that must never appear in the audit log or output (e.g. the SSH password)."""
    if value and len(value) >= 3:
        _SECRETS.add(value)


def scrub(text: str) -> str:
    for s in _SECRETS:
        text = text.replace(s, "***")
    return text


class AuditEntry(BaseModel):
    time: str
    who: str
    fabric: str
    device: str
    target: str
    action: str  # apply | rollback
    diff_digest: str
    added: int
    removed: int
    result: str  # applied | rolled-back | unchanged | failed | reverted-by-timer | unknown
    detail: str = ""


def who() -> str:
    user = os.environ.get("SUDO_USER") or getpass.getuser()
    return f"{user}@{socket.gethostname()}"


def audit(fabric: str, entry: AuditEntry) -> None:
    entry.detail = scrub(entry.detail)
    line = scrub(entry.model_dump_json())
    path = state_dir(fabric) / "audit.jsonl"
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    with os.fdopen(fd, "a") as f:
        f.write(line + "\n")


def now() -> str:
    return dt.datetime.now(dt.UTC).isoformat(timespec="seconds")


# -- records: the state before the last apply, per device -----------------------------------------
def save_record(fabric: str, txn: Txn) -> None:
    """Before the commit: `records/<device>.pending.json` (kept if the outcome is unknown)."""
    d = state_dir(fabric) / "records"
    d.mkdir(exist_ok=True, mode=0o700)
    tmp = d / f"{txn.device}.json.tmp"
    tmp.write_text(txn.model_dump_json(indent=2))
    tmp.chmod(0o600)
    tmp.replace(d / f"{txn.device}.pending.json")


def settle_record(fabric: str, device: str, applied: bool) -> None:
    """After the transaction: an applied change's record becomes the one `fabric rollback` uses."""
    d = state_dir(fabric) / "records"
    pending = d / f"{device}.pending.json"
    if applied and pending.exists():
        pending.replace(d / f"{device}.json")
    elif not applied:
        pending.unlink(missing_ok=True)


def load_record(fabric: str, device: str) -> Txn | None:
    path = state_dir(fabric) / "records" / f"{device}.json"
    return Txn.model_validate_json(path.read_text()) if path.exists() else None


# -- one apply at a time ----------------------------------------------------------------------------
class LockInfo(BaseModel):
    pid: int
    host: str
    time: str
    who: str


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


@contextlib.contextmanager
def apply_lock(fabric: str) -> Iterator[Path]:
    """Hold `apply.lock` for the duration; a stale lock (its pid gone on this host) is taken over."""
    path = state_dir(fabric) / "apply.lock"
    info = LockInfo(pid=os.getpid(), host=socket.gethostname(), time=now(), who=who())
    for _ in range(3):
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        except FileExistsError:
            try:
                held = LockInfo.model_validate_json(path.read_text())
            except (OSError, ValueError):
                held = None
            if held is None or (held.host == info.host and not _alive(held.pid)):
                path.unlink(missing_ok=True)  # stale: the process that held it is gone
                continue
            raise UsageError(f"another apply of {fabric} is running (pid {held.pid} on {held.host} by {held.who} "
                             f"since {held.time}); lock {path}") from None
        with os.fdopen(fd, "w") as f:
            f.write(info.model_dump_json())
        break
    else:
        raise UsageError(f"could not take the apply lock {path}")
    try:
        yield path
    finally:
        with contextlib.suppress(OSError):
            if json.loads(path.read_text()).get("pid") == info.pid:
                path.unlink()
