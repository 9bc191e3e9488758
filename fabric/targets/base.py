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

import functools
import hashlib
import json
import time
from abc import ABC, abstractmethod
from collections.abc import Callable
from typing import Any, TypeVar

from pydantic import BaseModel

from fabric.errors import InputError
from fabric.nos import NOS
from fabric.parsers.lldp import PARSERS as LLDP_PARSERS
from fabric.parsers.lldp import Lldp
from fabric.secrets import mask_change
from fabric.targets.owned import (
    Change,
    Leaves,
    Lines,
    Path,
    ScopedDiff,
    manifest_paths,
    namesake_error,
    namesakes,
    reading,
    renumbered,
    scope,
    scoped_diff,
)

__all__ = ["Change", "DeviceDiff", "Driver", "Health", "TargetError", "Txn"]


class DeviceDiff(BaseModel):
    device: str
    target: str
    changes: list[Change] = []
    unmanaged: int = 0  # settings on the device outside what the tool owns, left alone
    notes: list[str] = []  # what the driver left out of the change for this device, and why (SONiC brownfield)

    @property
    def empty(self) -> bool:
        return not self.changes

    @property
    def added(self) -> int:
        return sum(c.op == "+" for c in self.changes)

    @property
    def removed(self) -> int:
        return sum(c.op == "-" for c in self.changes)

    @property
    def changed(self) -> int:
        return sum(c.op == "~" for c in self.changes)

    @property
    def foreign(self) -> list[Change]:
        """Removals of lines the tool never rendered (`apply` wants --allow-unowned-removal)."""
        return [c for c in self.changes if c.foreign]

    def sections(self) -> dict[str, list[str]]:
        """Each section's `-`/`+` lines as shown everywhere (plan, audit, JSON): secrets masked by the NOS's
        structure (fabric.secrets.mask_change, the scheme its row names)."""
        return self._masked_view()[0]

    @property
    def masked(self) -> int:
        """How many lines of `sections()` had a secret masked."""
        return self._masked_view()[1]

    def _masked_view(self) -> tuple[dict[str, list[str]], int]:
        """`sections()` and `masked`, worked out once for this list of changes (a plan reads them several times
        per device: its JSON, its table, the digest); a copy with other changes or another target works out its
        own. The list is never edited in place once the diff is built."""
        memo = self.masked_memo
        if not memo or memo[0][0] is not self.changes or memo[0][1] != self.target:
            scheme = NOS[self.target].secrets
            out: dict[str, list[str]] = {}
            hits = 0
            for c in self.changes:
                section, line, hit = mask_change(scheme, c.section, c.line)
                old, hit_old = mask_change(scheme, c.section, c.old)[1:] if c.old else ("", False)
                shown = c.model_copy(update={"line": line, "old": old}) if hit or hit_old else c
                out.setdefault(section, []).append(shown.text())
                hits += hit + hit_old
            memo[:] = [(self.changes, self.target, out, hits)]
        return memo[0][2], memo[0][3]

    @functools.cached_property
    def masked_memo(self) -> list[tuple[list[Change], str, dict[str, list[str]], int]]:
        """Where `_masked_view` keeps its last result: no field (never dumped, never compared)."""
        return []

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


class Shifted(BaseModel):
    """What a NOS's own traffic-shift command did (`Driver.traffic_shift`): whether the switch's mode changed, and
    the command's words for it."""

    changed: bool
    detail: str


class TargetError(Exception):
    """The device refused a step (a command failed): one readable line."""


def lldp_reply(kind: str, text: str, device: str, command: str) -> Lldp:
    """A switch's LLDP reply parsed as `kind` (fabric.parsers.lldp.PARSERS); one it cannot read is a TargetError
    saying why."""
    try:
        return LLDP_PARSERS[kind](text, f"{device}: {command}")
    except InputError as exc:
        raise TargetError(str(exc).splitlines()[0]) from None


ProgressFn = Callable[[str], None]


T = TypeVar("T")
READ_KEPT = 4  # the results `Driver.read_once` keeps: the intent, and the running texts of one transaction


class Driver(ABC):
    """A switch target over one open netmiko connection."""

    target: str = ""
    has_confirm_timer: bool = False  # the device reverts by itself when not confirmed in time
    bgp_commands: tuple[str, ...] = ()  # what `health()` and `routes()` read (acceptance --dry-run shows them)
    counter_commands: tuple[str, ...] = ()  # what `counters()` reads
    lldp_commands: tuple[str, ...] = ()  # what `lldp()` reads

    def __init__(self, conn: Any, device: str, intended: str, *, progress: ProgressFn = lambda _s: None,
                 options: dict[str, Any] | None = None):
        self.conn = conn
        self.device = device
        self.intended = intended
        self.progress = progress
        self.options = options or {}
        self._read: dict[tuple, Any] = {}  # `read_once`'s last results

    def read_once(self, key: tuple, read: Callable[[], T]) -> T:
        """`read()`, worked out once for `key` on this driver: a transaction reads the same rendered and running
        texts several times (the last READ_KEPT keys are kept; nothing from a call that failed; nobody edits what
        it returns)."""
        if key in self._read:
            return self._read[key]
        while len(self._read) >= READ_KEPT:
            del self._read[next(iter(self._read))]
        got = self._read[key] = read()
        return got

    # -- plan ---------------------------------------------------------------------------------------
    @abstractmethod
    def running(self) -> str: ...

    def saved(self) -> str:
        """The running configuration as the NOS's own show command writes it (`fabric fetch`)."""
        return self.running()

    @abstractmethod
    def scoped(self, running: str) -> ScopedDiff:
        """Pure: the diff of a running configuration (as `running()` returns it, or a saved one) against
        the intent, inside what the tool owns (`fabric.targets.owned`)."""

    def diff(self) -> DeviceDiff:
        return self.diff_of(self.running())

    _last_scoped: tuple[str, str, ScopedDiff] | None = None

    def scoped_once(self, running: str, scoped: Callable[[str], ScopedDiff]) -> ScopedDiff:
        """`scoped(running)` (a driver's `scoped`), worked out once while the running text and the intent stay the
        same: an apply diffs the running config it read in its plan, again before the transaction, and again in
        `begin`, and a switch nobody changed meanwhile answers the same text each time (a driver's options never
        change). The last result only; none kept from a call that failed, nor read by anyone who edits it."""
        last, self._last_scoped = self._last_scoped, None
        if last is not None and last[0] == running and last[1] == self.intended:
            self._last_scoped = last
            return last[2]
        sd = scoped(running)
        self._last_scoped = (running, self.intended, sd)
        return sd

    def diff_of(self, running: str) -> DeviceDiff:
        """The device's diff against a running configuration (live or saved): `scoped`'s, as `device_diff` gives it."""
        return self.device_diff(self.scoped(running))

    def unchanged_text(self, running: str) -> DeviceDiff | None:
        """`diff_of(running)` where a saved text alone proves it empty without reading it (a NOS whose driver
        knows; tests/nos/nvue/test_driver.py compares it with the full reading); None: read and diff it."""
        return None

    def pushed(self) -> set[str]:
        """The rendered files this driver diffs and applies: the NOS row's `intended`, plus those of options `files`
        its transaction takes (a rendered file neither here nor in the row's `not_pushed` would never reach a
        switch)."""
        return {NOS[self.target].intended}

    def device_diff(self, sd: ScopedDiff) -> DeviceDiff:
        return DeviceDiff(device=self.device, target=self.target, changes=sd.changes, unmanaged=sd.unmanaged)

    def owned_scope(self, intent: Leaves, running: Leaves, lines: Lines) -> tuple[set[Path], Leaves, set[Path]]:
        """(scope, target leaves, manifest): normally the intent in the NOS's owned scope; for
        `fabric rollback` (option `scope`) the recorded scope with the recorded snapshot as the target.
        TargetError where the device holds objects with the render's names that are someone else's (`namesakes`),
        naming their lines as the plan prints them (`lines`), secrets masked."""
        if self.options.get("scope") is not None:
            owned = manifest_paths(self.options["scope"])
            return owned, {p: v for p, v in intent.items() if p in owned}, set()
        manifest = manifest_paths(self.options.get("manifest"))
        nos = NOS[self.target]
        read = reading(intent, running, nos.owned_whole, nos.owned_objects)  # once for both
        if found := namesakes(intent, running, nos.owned_whole, manifest, nos.owned_objects, read=read):
            raise TargetError(namesake_error(found, running, lines,
                                             lambda sec, ln: mask_change(nos.secrets, sec, ln)[:2]))
        owned = scope(intent, running, nos.owned_whole, manifest, nos.owned_objects, nos.owned_implied,
                      nos.never_owned, read=read)
        return owned | self.contradicting(intent, running), intent, manifest

    def contradicting(self, intent: Leaves, running: Leaves) -> set[Path]:
        """Device leaves that contradict a rendered setting in a way `Nos.owned_implied` cannot say (they sit
        under another object): owned with the setting, their removal marked never rendered. None by default."""
        return set()

    def scoped_from(self, running: Leaves, intent: Leaves, lines: Lines) -> ScopedDiff:
        owned, target, manifest = self.owned_scope(intent, running, lines)
        restore = self.options.get("scope") is not None  # fabric rollback: every owned line is the tool's
        return scoped_diff(running, target, owned, lines, earlier=manifest, rendered=owned if restore else None)

    def check_renumber(self, running: str, intended: str) -> None:
        """A device whose one `router bgp <asn>` (`Nos.no_renumber`) differs from the intent's: a located error,
        never a change (text NOS)."""
        pattern = NOS[self.target].no_renumber
        if pattern and self.options.get("scope") is None and (why := renumbered(running, intended, pattern)):
            raise TargetError(why)

    def record_scope(self, txn: Txn, sd: ScopedDiff, intent: Leaves) -> None:
        """Keep the scope (for `fabric rollback`) and the intent's leaves (the next apply's manifest)."""
        txn.native["scope"] = sorted(list(p) for p in sd.owned)
        txn.native["manifest"] = sorted(list(p) for p in intent)

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

    def bgp_state(self) -> tuple[Health, dict[str, int] | None]:
        """`health()` and `routes()` (acceptance `bgp`); a driver may read both in one command."""
        return self.health(), self.routes()

    def counters(self) -> dict[str, dict[str, int]] | None:
        """port → counter name → value (`source:name`), for acceptance and `fabric counters`; None: not read."""
        return None

    def lldp(self) -> Lldp | None:
        """The LLDP neighbours the switch sees (acceptance `cabling`); None: not read on this NOS."""
        return None

    # -- optics (fabric optics) ---------------------------------------------------------------------
    def transceivers(self, ports: list[str]) -> dict[str, Any] | None:
        """port → its pluggable module (fabric.parsers.transceiver.Module) or why there is none
        (`no module: …`); None: not read on this NOS."""
        return None

    def traffic_shift(self, away: bool) -> Shifted | None:
        """Take the switch out of service (`away`) or back with the NOS's own command, where the switch's BGP is not
        the tool's to render (`fabric drain`); None: the drain is the intent's graceful-shutdown setting
        (`drained`). TargetError when the command cannot act or its mode afterwards is not the one asked for."""
        return None

    @classmethod
    @abstractmethod
    def drained(cls, intended: str, release: str = "") -> str:
        """The intent with BGP graceful shutdown (RFC 8326) on, in the form of the switch's `release` (the
        NOS table's releases): what `fabric drain` applies; every target has one."""

    # -- transaction --------------------------------------------------------------------------------
    @abstractmethod
    def begin(self) -> Txn: ...

    @abstractmethod
    def commit(self, txn: Txn, confirm_seconds: int) -> None: ...

    @abstractmethod
    def confirm(self, txn: Txn) -> None: ...

    @abstractmethod
    def rollback(self, txn: Txn) -> None: ...

    def discard(self, txn: Txn) -> None:
        """Undo what `begin` prepared on the device when the commit never happens (a session, a pending
        revision); nothing by default."""
        return None

    def txn_state(self, txn: Txn) -> str | None:
        """Where a transaction stands on the device (after a lost session or a crash of the tool):
        `waiting` (committed, not confirmed), `confirmed`, `reverted`, `failed`…; None: not readable."""
        return None


def canonical_json(data: Any) -> str:
    return json.dumps(data, sort_keys=True, indent=2)
