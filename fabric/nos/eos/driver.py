"""Arista EOS (netmiko `arista_eos`): configuration sessions with `commit timer`.

diff: a session (`configure session <name>`, `rollback clean-config`, the rendered lines), then
`show session-config diffs` (a unified diff against running-config, parsed per top-level section)
and `abort`. Transaction: the same session, `commit timer hh:mm:ss`, post-check, then
`configure session <name> commit` to confirm — or `configure session <name> abort`; the switch
rolls back by itself when the timer expires unconfirmed.
"""

from __future__ import annotations

import json
import re
import time
import uuid

from fabric.parsers import switch_counters
from fabric.targets.base import Change, DeviceDiff, Driver, Health, TargetError, Txn


def config_lines(text: str) -> list[str]:
    """Rendered EOS text as CLI lines: comments, `!` separators and `end` dropped."""
    return [ln.rstrip() for ln in text.splitlines() if ln.strip() and not ln.lstrip().startswith("!")
            and ln.strip() != "end"]


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


class EosDriver(Driver):
    target = "eos"
    has_confirm_timer = True
    bgp_commands = ("show ip bgp summary | json", "show ip route | json")
    counter_commands = ("show priority-flow-control counters | json", "show qos interfaces ecn counters queue | json",
                        "show interfaces counters queue drops | json",
                        "show priority-flow-control counters watchdog | json")

    def routes(self) -> dict[str, int]:
        return switch_counters.eos_route_widths(self._json("show ip route | json"))

    def counters(self) -> dict[str, dict[str, int]]:
        """PFC frames per port, ECN-marked and dropped packets per queue, watchdog stuck/recovered per queue
        (fabric.parsers.switch_counters.eos)."""
        return switch_counters.eos(*(self._json(c) for c in self.counter_commands))

    def _json(self, command: str) -> dict:
        self._prepare()
        try:
            data = json.loads(self._cmd(command) or "{}")
        except ValueError as exc:
            raise TargetError(f"{command}: not JSON ({exc})") from None
        return data if isinstance(data, dict) else {}

    def _cmd(self, command: str, timeout: float = 60) -> str:
        out = self.conn.send_command(command, read_timeout=timeout, expect_string=r"[>#]\s*$")
        if out.lstrip().startswith("% "):
            raise TargetError(f"{command}: {out.strip().splitlines()[0]}")
        return out

    def _prepare(self) -> None:
        if not self.conn.check_enable_mode():
            self.conn.enable()

    def running(self) -> str:
        self._prepare()
        return self._cmd("show running-config")

    def _session(self, name: str) -> str:
        """Open a session with the intended lines; returns its diffs (still in the session)."""
        self._prepare()
        self.conn.send_command(f"configure session {name}", expect_string=r"\(config-s-[^)]*\)#\s*$")
        # one write for all lines (netmiko's per-line pacing costs 50 ms a line), then read until the
        # session prompt came back once per line (echoes arrive early; prompts only once processed)
        lines = ["rollback clean-config", *config_lines(self.intended)]
        self.conn.write_channel("\n".join(lines) + "\n")
        buf, deadline = "", time.monotonic() + 120
        while len(re.findall(r"\(config-s-[^)]*\)#", buf)) < len(lines):
            if time.monotonic() > deadline:
                raise TargetError(f"configure session {name}: the device did not take the configuration in time")
            chunk = self.conn.read_channel()
            buf += chunk
            if not chunk:
                time.sleep(0.02)
        errors = [ln.strip() for ln in buf.splitlines() if ln.lstrip().startswith("% ")]
        if errors:
            self._cmd("abort")
            raise TargetError(f"configure session {name}: {errors[0]}")
        return self._cmd("show session-config diffs")

    def diff(self) -> DeviceDiff:
        name = f"rf-plan-{uuid.uuid4().hex[:6]}"
        try:
            diffs = self._session(name)
        finally:
            self._cmd("abort")
        return DeviceDiff(device=self.device, target=self.target, changes=parse_session_diff(diffs))

    def health(self) -> Health:
        self._prepare()
        data = json.loads(self._cmd("show ip bgp summary | json") or "{}")
        peers = {n: p.get("peerState", "") for v in data.get("vrfs", {}).values()
                 for n, p in v.get("peers", {}).items()}
        running = self._cmd("show running-config")
        want = len(re.findall(r"priority-flow-control priority \d no-drop", self.intended))
        have = len(re.findall(r"priority-flow-control priority \d no-drop", running))
        problems = [] if have >= want else [f"PFC: expected {want} no-drop priority lines, actual {have}"]
        return Health(bgp_established=sum(s == "Established" for s in peers.values()), bgp_peers=peers,
                      lossless=problems, lossless_checked=True)

    def begin(self) -> Txn:
        snapshot = self.running()
        name = f"rf-{time.strftime('%m%d%H%M%S')}-{uuid.uuid4().hex[:4]}"
        diffs = self._session(name)
        if not parse_session_diff(diffs):
            self._cmd("abort")
            raise TargetError("show session-config diffs: the session changes nothing")
        return Txn(device=self.device, target=self.target, started=time.time(), snapshot=snapshot,
                   native={"session": name})

    def commit(self, txn: Txn, confirm_seconds: int) -> None:
        txn.committed = True
        h, rest = divmod(int(confirm_seconds), 3600)
        self._cmd(f"commit timer {h:02d}:{rest // 60:02d}:{rest % 60:02d}")

    def confirm(self, txn: Txn) -> None:
        self._prepare()
        self._cmd(f"configure session {txn.native['session']} commit")

    def rollback(self, txn: Txn) -> None:
        self._prepare()
        self._cmd(f"configure session {txn.native['session']} abort")


DRIVER = EosDriver
