"""Arista EOS (netmiko `arista_eos`): configuration sessions with `commit timer`.

diff: `show running-config` against the rendered lines, inside what the tool owns
(`fabric.targets.owned`, `Nos.owned_whole`): the settings (line keys) of the sections the render has, its
tx-queue blocks and route-maps as a whole, and what an earlier apply rendered. AAA, usernames,
Management1, `management api`, SNMP, logging, NTP, other static routes… are never in a session.
Transaction: a session that starts from the running-config (never `rollback clean-config`) holding only
the owned lines — `no <section>` for a section of which every line goes (an old `router bgp <asn>`), the
section lines to enter, `no <line>` (`default <…>` for a `no …` line) for an owned setting to remove, each
new setting — then `show session-config diffs` (the device's view; a
rejected line aborts the session), `commit timer hh:mm:ss`, post-check, then
`configure session <name> commit` to confirm — or `configure session <name> abort`; the switch rolls
back by itself when the timer expires unconfirmed.
"""

from __future__ import annotations

import re
import time
import uuid
from typing import Any

from fabric.model.running import check_reply
from fabric.nos import row_of
from fabric.parsers import switch_counters
from fabric.parsers.lldp import Lldp
from fabric.parsers.switch_state import eos_bgp_peers, eos_inventory
from fabric.replies import json_reply, reader
from fabric.targets.base import Change, Driver, Health, TargetError, Txn, lldp_reply
from fabric.targets.owned import Leaves, Path, ScopedDiff, parse_text, text_leaves
from fabric.targets.transceivers import eos_inventory_modules

INDENT = "   "
KEEP = ("maintenance",)  # modes never removed whole: EOS's own built-in units live there; only `quiesce` goes
SETTINGS = row_of(__name__).setting_keys


def leaves(text: str) -> Leaves:
    """The text's leaves, EOS setting keys applied (`maximum-paths 4 ecmp 4` is the setting `maximum-paths`)."""
    return text_leaves(parse_text(text), settings=SETTINGS)


def _lines(path: Path, value: tuple[str, ...]) -> tuple[str, list[str]]:
    return " / ".join(path[:-1]) or "(global)", list(value)


def session_lines(sd: ScopedDiff, running: dict[Path, tuple[str, ...]]) -> list[str]:
    """The CLI lines of a session that makes the owned changes and nothing else."""
    out: list[str] = []
    gone = {p[0] for p in sd.removes if len(p) > 1}  # sections whose every line goes: `no <section>`
    gone -= {p[0] for p in running if p not in sd.removes} | {p[0] for p in sd.sets}
    gone = {sec for sec in gone if not sec.startswith(KEEP)}
    out += [f"no {sec}" for sec in sorted(gone)]
    # the hostname last: the prompt changes with it (the driver refreshes netmiko's prompt after a commit)
    todo = sorted((p for p in set(sd.sets) | sd.removes if not (len(p) > 1 and p[0] in gone)),
                  key=lambda p: (p == ("hostname",), p))
    for path in todo:
        old, new = running.get(path, ()), sd.sets.get(path, ())
        out += [INDENT * i + sec for i, sec in enumerate(path[:-1])]
        pad = INDENT * (len(path) - 1)
        out += [pad + (f"default {ln[3:]}" if ln.startswith("no ") else f"no {ln}") for ln in old if ln not in new]
        out += [pad + ln for ln in new if ln not in old]
    return out


def config_lines(text: str) -> list[str]:
    """Rendered EOS text as CLI lines: comments, `!` separators and `end` dropped."""
    return [ln.rstrip() for ln in text.splitlines() if ln.strip() and not ln.lstrip().startswith("!")
            and ln.strip() != "end"]


@reader("show running-config")
def running_reply(text: str) -> str:
    """The running configuration as the switch printed it, checked as a saved one is (fabric.model.running)."""
    return check_reply("eos", "show running-config", text)


@reader("show session-config diffs")
def parse_session_diff(text: str) -> list[Change]:
    """`show session-config diffs` → changes under their top-level section."""
    changes: list[Change] = []
    section = "(global)"
    for raw in text.splitlines():
        if raw.startswith(("---", "+++", "@@")) or not raw:
            continue
        op, line = raw[0], raw[1:]
        if op not in "+- ":
            continue
        if line and not line.startswith(" "):
            section = line.strip()
            if op != " ":
                changes.append(Change(section="(global)", op=op, line=line.strip()))
            continue
        if op != " ":
            changes.append(Change(section=section, op=op, line=line.strip()))
    return changes


_SESSION_PROMPT = re.compile(r"\(config-s-[^)]*\)#")


class Prompts:
    """The output of a configuration session read chunk by chunk, and how many session prompts it holds so far: a
    prompt split between two chunks is found once the second arrives, and no character is scanned again after it
    lies before a prompt or before the last `(` that may still open one (rescanning the whole output for each
    chunk made a session of many lines quadratic in its output)."""

    def __init__(self) -> None:
        self.parts: list[str] = []
        self.seen = 0
        self.tail = ""  # the output from where a prompt may still begin

    def add(self, chunk: str) -> None:
        if not chunk:
            return
        self.parts.append(chunk)
        text, end = self.tail + chunk, 0
        for m in _SESSION_PROMPT.finditer(text):
            self.seen, end = self.seen + 1, m.end()
        start = text.rfind("(", end)  # a `)` after it, not the last character: not followed by `#`, no prompt
        self.tail = text[start:] if start >= 0 and ")" not in text[start:-1] else ""

    def text(self) -> str:
        return "".join(self.parts)


class EosDriver(Driver):
    target = row_of(__name__).name
    has_confirm_timer = True
    bgp_commands = ("show ip bgp summary | json", "show ip route | json")
    counter_commands = ("show priority-flow-control counters | json", "show qos interfaces ecn counters queue | json",
                        "show interfaces counters queue drops | json",
                        "show priority-flow-control counters watchdog | json")
    lldp_commands = ("show lldp neighbors detail | json",)

    @classmethod
    def drained(cls, intended: str, release: str = "") -> str:
        """EOS maintenance mode quiescing the built-in `System` unit (`maintenance` / `unit System` /
        `quiesce`; arista.com/en/um-eos/eos-maintenance-mode "Maintenance Mode", same in EOS 4.32): BGP then
        announces the switch's routes with GRACEFUL_SHUTDOWN (RFC 8326) and its peers' receiver route-map sets
        LOCAL_PREF 0 (eos.arista.com "Configurable Maintenance Mode Receiver Route-Map"); the form AVD's
        eos_cli_config_gen `maintenance.units[].quiesce` renders."""
        body = intended.rstrip("\n")
        if body.endswith("end"):
            body = body[:-3].rstrip("\n")
        return f"{body}\nmaintenance\n{INDENT}unit System\n{INDENT * 2}quiesce\n!\nend\n"

    def routes(self) -> dict[str, int]:
        return switch_counters.eos_route_widths(self._json("show ip route | json"))

    def counters(self) -> dict[str, dict[str, int]]:
        """PFC frames per port, ECN-marked and dropped packets per queue, watchdog stuck/recovered per queue
        (fabric.parsers.switch_counters.eos)."""
        return switch_counters.eos(*(self._json(c) for c in self.counter_commands))

    def lldp(self) -> Lldp:
        """`show lldp neighbors detail | json` (the shape ANTA's VerifyLLDPNeighbors reads)."""
        self._prepare()
        command = self.lldp_commands[0]
        return lldp_reply("lldp-eos", self._cmd(command), self.device, command)

    def _json(self, command: str) -> dict:
        self._prepare()
        try:
            data = json_reply(self._cmd(command), command)
        except ValueError as exc:
            raise TargetError(f"{command}: not JSON ({exc})") from None
        return data if isinstance(data, dict) else {}

    def _cmd(self, command: str, timeout: float = 60) -> str:
        out = self.conn.send_command(command, read_timeout=timeout, expect_string=r"[>#]\s*$")
        if out.lstrip().startswith("% "):
            raise TargetError(f"{command}: {out.strip().splitlines()[0]}")
        return out

    def _refresh_prompt(self) -> None:
        """A committed or reverted `hostname` changes the prompt: netmiko learns the new one, so that the
        post-check, the confirm and the abort do not wait for the old prompt."""
        self.conn.set_base_prompt()

    def _prepare(self) -> None:
        if not self.conn.check_enable_mode():
            self.conn.enable()

    def running(self) -> str:
        self._prepare()
        return running_reply(self._cmd("show running-config"))

    def scoped(self, running: str) -> ScopedDiff:
        return self.scoped_once(running, self._scoped)

    def _scoped(self, running: str) -> ScopedDiff:
        self.check_renumber(running, self.intended)
        return self.scoped_from(self._leaves(running), self._leaves(self.intended), _lines)

    def _leaves(self, text: str) -> Leaves:
        """`leaves(text)`, read once per text on this driver: a transaction diffs, writes its session and records
        its scope from the same two texts."""
        return self.read_once(("leaves", text), lambda: leaves(text))

    def _session(self, name: str, lines: list[str]) -> str:
        """Open a session with `lines`; returns its diffs (still in the session)."""
        self._prepare()
        self.conn.send_command(f"configure session {name}", read_timeout=60,  # as any other command (netmiko: 10)
                               expect_string=r"\(config-s-[^)]*\)#\s*$")
        # one write for all lines (netmiko's per-line pacing costs 50 ms a line), then read until the
        # session prompt came back once per line (echoes arrive early; prompts only once processed)
        self.conn.write_channel("\n".join(lines) + "\n")
        buf = self._read_prompts(name, len(lines))
        # an error line starts a line, or follows a prompt when the echoes came first (one write, many lines)
        errors = [e.strip() for e in re.findall(r"(?m)(?:^|[#>])[ \t]*(% [^\r\n]*)", buf)]
        if errors:
            self._cmd("abort")
            raise TargetError(f"configure session {name}: {errors[0]}")
        return self._cmd("show session-config diffs")

    def _read_prompts(self, name: str, count: int) -> str:
        """What the switch prints until the session prompt has come back `count` times, each chunk scanned once
        (`Prompts`)."""
        prompts, deadline = Prompts(), time.monotonic() + 120
        while prompts.seen < count:
            if time.monotonic() > deadline:
                raise TargetError(f"configure session {name}: the device did not take the configuration in time")
            chunk = self.conn.read_channel()
            prompts.add(chunk)
            if not chunk:
                time.sleep(0.02)
        return prompts.text()

    def health(self) -> Health:
        self._prepare()
        peers = eos_bgp_peers(self._cmd("show ip bgp summary | json"))
        running = self._cmd("show running-config")
        want = len(re.findall(r"priority-flow-control priority \d no-drop", self.intended))
        have = len(re.findall(r"priority-flow-control priority \d no-drop", running))
        problems = [] if have >= want else [f"PFC: expected {want} no-drop priority lines, actual {have}"]
        return Health(bgp_established=sum(s == "Established" for s in peers.values()), bgp_peers=peers,
                      lossless=problems, lossless_checked=True)

    # -- optics ---------------------------------------------------------------------------------------
    def transceivers(self, ports: list[str]) -> dict[str, Any]:
        """Module identity from `show inventory | json` (xcvrSlots: mfgName, modelName, serialNum, hardwareRev, as
        ANTA's VerifyTransceiversManufacturers reads it); EOS diagnostics (DOM) are not read here."""
        return eos_inventory_modules(eos_inventory(self._cmd("show inventory | json")), ports)

    def begin(self) -> Txn:
        snapshot = self.running()
        sd = self.scoped(snapshot)
        name = f"rf-{time.strftime('%m%d%H%M%S')}-{uuid.uuid4().hex[:4]}"
        diffs = self._session(name, session_lines(sd, self._leaves(snapshot)))
        if not parse_session_diff(diffs):
            self._cmd("abort")
            raise TargetError("show session-config diffs: the session changes nothing")
        txn = Txn(device=self.device, target=self.target, started=time.time(), snapshot=snapshot,
                  native={"session": name})
        self.record_scope(txn, sd, self._leaves(self.intended))
        return txn

    def commit(self, txn: Txn, confirm_seconds: int) -> None:
        txn.committed = True
        h, rest = divmod(int(confirm_seconds), 3600)
        self._cmd(f"commit timer {h:02d}:{rest // 60:02d}:{rest % 60:02d}")
        self._refresh_prompt()

    def confirm(self, txn: Txn) -> None:
        self._prepare()
        self._cmd(f"configure session {txn.native['session']} commit", timeout=20)  # answers at once when alive

    def discard(self, txn: Txn) -> None:
        self._prepare()
        self._cmd(f"configure session {txn.native['session']} abort")

    def txn_state(self, txn: Txn) -> str | None:
        """`show configuration sessions detail`: the session's row says `pending-commit-timer` while the
        timer runs; otherwise the change is in place (confirmed) or not (reverted)."""
        self._prepare()
        rows = [ln for ln in self._cmd("show configuration sessions detail").splitlines()
                if ln.split()[:1] == [txn.native["session"]]]
        if rows and "pending" in rows[0]:
            return "waiting"
        return "confirmed" if self.scoped(self._cmd("show running-config")).empty else "reverted"

    def rollback(self, txn: Txn) -> None:
        self._prepare()
        self._cmd(f"configure session {txn.native['session']} abort")
        self._refresh_prompt()


DRIVER = EosDriver
