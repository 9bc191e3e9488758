"""The push state directory: audit log, apply lock, and what each device looked like before an apply.

`$FABRIC_STATE/<fabric>/` or `~/.local/state/roce-fabric/<fabric>/` (mode 0700):
`audit.jsonl` (one JSON line per device change), `apply.lock` (flock; pid, host, time), `journal.json`
(a rollout in flight), `remediated.json` (the hosts remediation acted on, for its budget across runs; flock
`remediated.lock`), `records/<device>.json` (the Txn of the last confirmed apply: snapshot, native
checkpoint/revision, owned scope and manifest) and `records/<device>.pending.json` (a transaction
between its commit and its outcome; kept when the outcome is not known).
Credentials are never written here; `scrub` removes any secret value that reaches a message.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import fcntl
import getpass
import os
import socket
import tempfile
from collections.abc import Iterator
from pathlib import Path

from pydantic import AwareDatetime, BaseModel, ValidationError

from fabric.errors import UsageError
from fabric.safefile import append_private, private_dir, write_private
from fabric.targets.base import Txn


def state_root(fabric: str) -> Path:
    base = os.environ.get("FABRIC_STATE")
    return (Path(base) if base else Path.home() / ".local" / "state" / "roce-fabric") / fabric


def state_dir(fabric: str) -> Path:
    return private_dir(state_root(fabric))


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
        fd, probe = tempfile.mkstemp(prefix=".probe-", dir=d)  # an unpredictable name, created exclusively
        try:
            os.write(fd, b"\0" * need)
            os.fsync(fd)
        finally:
            os.close(fd)
            os.unlink(probe)
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
    changed: int = 0  # settings changed old → new (`~`)
    result: str  # applied | rolled-back | unchanged | failed | reverted-by-timer | unknown
    detail: str = ""


def who() -> str:
    user = os.environ.get("SUDO_USER") or getpass.getuser()
    return f"{user}@{socket.gethostname()}"


def audit(fabric: str, entry: AuditEntry) -> None:
    entry.detail = scrub(entry.detail)
    line = scrub(entry.model_dump_json())
    append_private(state_dir(fabric) / "audit.jsonl", line + "\n")


def now() -> str:
    return dt.datetime.now(dt.UTC).isoformat(timespec="seconds")


# -- records: the state before the last apply, per device -----------------------------------------
def save_record(fabric: str, txn: Txn) -> None:
    """Before the commit: `records/<device>.pending.json` (kept if the outcome is unknown)."""
    write_private(state_dir(fabric) / "records" / f"{txn.device}.pending.json", txn.model_dump_json(indent=2))


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


@contextlib.contextmanager
def apply_lock(fabric: str) -> Iterator[Path]:
    """Hold `apply.lock` for the duration: an exclusive `flock` on the file, with its holder written in it.

    The kernel (or the NFS lock manager, when `$FABRIC_STATE` is a shared mount so that several machines
    and users take the same lock) releases it when the holder exits or is killed, so a stale lock is
    never a file to clean up, and two processes can never both take one over.
    """
    path = state_dir(fabric) / "apply.lock"
    info = LockInfo(pid=os.getpid(), host=socket.gethostname(), time=now(), who=who())
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            try:
                held = LockInfo.model_validate_json(path.read_text())
                holder = f"pid {held.pid} on {held.host} by {held.who} since {held.time}"
            except (OSError, ValueError):
                holder = "holder unknown"
            raise UsageError(f"another apply of {fabric} is running ({holder}); lock {path}") from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, info.model_dump_json().encode(), 0)
        yield path
    finally:
        os.close(fd)  # releases the flock


def lock_held(fabric: str) -> bool:
    """Whether an apply or rollback of `fabric` holds the lock now (read without taking it for long)."""
    path = state_root(fabric) / "apply.lock"
    if not path.exists():
        return False
    fd = os.open(path, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        return False
    except OSError:
        return True
    finally:
        os.close(fd)


# -- the journal of a rollout in flight -------------------------------------------------------------
class Journal(BaseModel):
    """`journal.json` while a rollout runs: who runs it and on which devices. Left behind by a crash
    (SIGKILL, power loss), it tells the next run that the pending records are an interrupted rollout's."""

    pid: int
    host: str
    who: str
    started: str
    action: str
    devices: list[str]


def begin_journal(fabric: str, action: str, devices: list[str]) -> None:
    j = Journal(pid=os.getpid(), host=socket.gethostname(), who=who(), started=now(), action=action, devices=devices)
    write_private(state_dir(fabric) / "journal.json", j.model_dump_json(indent=2))


def end_journal(fabric: str) -> None:
    with contextlib.suppress(OSError):
        (state_root(fabric) / "journal.json").unlink()


def interrupted(fabric: str) -> tuple[Journal | None, dict[str, Txn]]:
    """An earlier rollout's journal (if it never ended) and every pending record (device → Txn)."""
    root = state_root(fabric)
    journal = None
    with contextlib.suppress(OSError, ValueError):
        journal = Journal.model_validate_json((root / "journal.json").read_text())
    pending: dict[str, Txn] = {}
    for path in sorted((root / "records").glob("*.pending.json")) if (root / "records").is_dir() else []:
        with contextlib.suppress(OSError, ValueError):
            pending[path.name.removesuffix(".pending.json")] = Txn.model_validate_json(path.read_text())
    return journal, pending


def load_pending(fabric: str, device: str) -> Txn | None:
    path = state_root(fabric) / "records" / f"{device}.pending.json"
    try:
        return Txn.model_validate_json(path.read_text())
    except (OSError, ValueError):
        return None


# -- the hosts remediation acted on, for its budget across runs --------------------------------------
class Remediated(BaseModel):
    """A host one remediation run acted on (its commands were run, whatever they answered)."""

    host: str
    time: AwareDatetime  # when the run took the host from the budget; the same for every host of the run
    who: str


class RemediationLedger(BaseModel):
    """`remediated.json`: every host remediated within the longest window a run may count over."""

    hosts: list[Remediated] = []


def _read_ledger(path: Path) -> RemediationLedger:
    try:
        text = path.read_text()
    except FileNotFoundError:
        return RemediationLedger()
    except OSError as exc:
        raise UsageError(f"{path}: expected a readable remediation ledger, found {exc.strerror or exc}") from None
    try:
        return RemediationLedger.model_validate_json(text)
    except ValidationError as exc:
        e = exc.errors()[0]
        where = ".".join(str(x) for x in e["loc"]) or "(document)"
        raise UsageError(f"{path}: {where}: expected the remediation ledger ({{\"hosts\": [{{host, time, who}}]}}), "
                         f"found {e['msg']}; nothing was run (move it aside to start the budget afresh)") from None


@contextlib.contextmanager
def remediation_ledger(fabric: str, *, write: bool, keep: dt.timedelta) -> Iterator[RemediationLedger]:
    """The ledger of hosts remediated. With `write`: held under an exclusive flock of `remediated.lock` for the
    block (concurrent runs wait, then count what this one added) and saved at its end, without the entries
    older than `keep`; without it: read only, nothing created."""
    if not write:
        yield _read_ledger(state_root(fabric) / "remediated.json")
        return
    lock = state_dir(fabric) / "remediated.lock"
    try:
        fd = os.open(lock, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o600)
    except OSError as exc:
        raise UsageError(f"{lock}: expected a lock file of this user, found {exc.strerror or exc}; "
                         "nothing was run") from None
    d = lock.parent
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        ledger = _read_ledger(d / "remediated.json")
        yield ledger
        keep_from = dt.datetime.now(dt.UTC) - keep
        ledger.hosts = [e for e in ledger.hosts if e.time >= keep_from]
        write_private(d / "remediated.json", ledger.model_dump_json(indent=1))
    finally:
        os.close(fd)  # releases the flock
