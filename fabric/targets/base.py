"""What every switch target provides: a section-aware diff, a device transaction, health for post-checks.

A driver wraps one open netmiko connection to one switch and speaks that target's own transactional
commands; the rollout engine (`fabric.push`) only calls the methods below, in this order::

    diff()                      running vs intended, removals included (plan stops here)
    health()                    BGP sessions established, lossless settings seen (before the change)
    begin()                     snapshot + native checkpoint → Txn (recorded before anything changes)
    commit(txn, confirm_s)      apply with the device's own confirm timer where it has one
    postcheck(before)           problems, empty when the device is healthy again
    confirm(txn) | rollback(txn)

`fabric rollback` runs the same transaction with the recorded snapshot as the intended config.
"""

from __future__ import annotations

import hashlib
import json
import time
from abc import ABC, abstractmethod
from collections.abc import Callable
from typing import Any

from pydantic import BaseModel, ConfigDict


class Change(BaseModel):
    """One line of a section-aware diff: `+` to add, `-` to remove, under a section path."""

    model_config = ConfigDict(frozen=True)
    section: str
    op: str  # "+" or "-"
    line: str


class DeviceDiff(BaseModel):
    device: str
    target: str
    changes: list[Change] = []

    @property
    def empty(self) -> bool:
        return not self.changes

    @property
    def added(self) -> int:
        return sum(c.op == "+" for c in self.changes)

    @property
    def removed(self) -> int:
        return sum(c.op == "-" for c in self.changes)

    def sections(self) -> dict[str, list[str]]:
        out: dict[str, list[str]] = {}
        for c in self.changes:
            out.setdefault(c.section, []).append(f"{c.op} {c.line}")
        return out

    def text(self) -> str:
        """Readable, stable: each section, then its `-`/`+` lines."""
        lines = []
        for section, items in self.sections().items():
            lines.append(section)
            lines += [f"    {i}" for i in items]
        return "\n".join(lines)

    @property
    def digest(self) -> str:
        return "sha256:" + hashlib.sha256(self.text().encode()).hexdigest()[:16]


class Health(BaseModel):
    """What a post-check compares: established BGP sessions and lossless settings seen running."""

    bgp_established: int
    bgp_peers: dict[str, str] = {}  # peer → state
    lossless: list[str] = []  # problems with lossless settings in the running state (empty: ok / n/a)
    lossless_checked: bool = False


class Txn(BaseModel):
    """One device transaction: the snapshot before it and the target's native handle (checkpoint…)."""

    device: str
    target: str
    started: float
    snapshot: str  # running configuration before the change (text or JSON)
    native: dict[str, Any] = {}  # checkpoint name, revision, session name, device-side job dir
    committed: bool = False  # the change has reached the device (a revert is needed to undo it)


class TargetError(Exception):
    """The device refused a step (a command failed): one readable line."""


ProgressFn = Callable[[str], None]


class Driver(ABC):
    """A switch target over one open netmiko connection."""

    target: str = ""
    has_confirm_timer: bool = False  # the device reverts by itself when not confirmed in time
    bgp_commands: tuple[str, ...] = ()  # what `health()` and `routes()` read (acceptance --dry-run shows them)
    counter_commands: tuple[str, ...] = ()  # what `counters()` reads

    def __init__(self, conn: Any, device: str, intended: str, *, progress: ProgressFn = lambda _s: None,
                 options: dict[str, Any] | None = None):
        self.conn = conn
        self.device = device
        self.intended = intended
        self.progress = progress
        self.options = options or {}

    # -- plan ---------------------------------------------------------------------------------------
    @abstractmethod
    def running(self) -> str: ...

    @abstractmethod
    def diff(self) -> DeviceDiff: ...

    # -- health -------------------------------------------------------------------------------------
    @abstractmethod
    def health(self) -> Health: ...

    def postcheck(self, before: Health, *, timeout: float = 30, settle: float = 3) -> list[str]:
        """Wait `settle` seconds, then up to `timeout` for BGP sessions ≥ before; lossless settings seen."""
        time.sleep(settle)
        deadline = time.monotonic() + timeout
        while True:
            now = self.health()
            if now.bgp_established >= before.bgp_established and not now.lossless:
                return []
            if time.monotonic() > deadline:
                problems = []
                if now.bgp_established < before.bgp_established:
                    down = sorted(p for p, s in now.bgp_peers.items() if s != "Established")
                    problems.append(f"BGP: expected ≥ {before.bgp_established} sessions established, actual "
                                    f"{now.bgp_established}" + (f" (down: {', '.join(down)})" if down else ""))
                problems += now.lossless
                return problems
            time.sleep(1)

    def routes(self) -> dict[str, int] | None:
        """IPv4 prefix → ECMP width of its selected route (acceptance `bgp`); None: not read on this NOS."""
        return None

    def counters(self) -> dict[str, dict[str, int]] | None:
        """port → counter name → value (`source:name`), for acceptance and `fabric counters`; None: not read."""
        return None

    # -- transaction --------------------------------------------------------------------------------
    @abstractmethod
    def begin(self) -> Txn: ...

    @abstractmethod
    def commit(self, txn: Txn, confirm_seconds: int) -> None: ...

    @abstractmethod
    def confirm(self, txn: Txn) -> None: ...

    @abstractmethod
    def rollback(self, txn: Txn) -> None: ...


def canonical_json(data: Any) -> str:
    return json.dumps(data, sort_keys=True, indent=2)
