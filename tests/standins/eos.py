"""Arista EOS stand-in: an interactive CLI with configuration sessions and timed commits.

State: `running.cfg`, `sessions/<name>.cfg` (a pending session: made when it starts, its lines written when
its login leaves it or ends; `Cli`), `pending.json` (a `commit timer` waiting for
`configure session <name> commit`: the session, the configuration before it, the deadline). A
detached timer process restores the configuration before the commit when the timer expires;
`configure session <name> abort` does that at once. See the package docstring.

A session starts as a copy of the running-config (as on EOS) and each line is merged into it by mode (`Config`):
a line at the indentation of a section enters that section (creating it), `no <line>` / `default
<line>` remove the matching setting, any other line is added where it is not already — a new value of a
setting the session took out goes where the old one was, so a configuration that a session changes and a
second session changes back prints byte for byte as before (EOS prints one canonical form). Like EOS, the
CLI rejects what it does not know with `% Invalid input`: it takes the commands the tool renders, the
session/show commands, and the commands of the brownfield corpus (`CORPUS`, with the EOS User Manual
chapter of each), and refuses an MTU above the platform's 9214 (EOS L3 MTU range 68-9214,
arista.com/en/um-eos/eos-ipv4 "mtu (Interface configuration)"; DCS-7060X5 maximum frame 9236 B). The
prompt carries the running hostname, so an apply that changes it changes the prompt.
"""

from __future__ import annotations

import difflib
import json
import re
import signal
import sys
import time
from collections.abc import Iterable
from pathlib import Path

from tests.standins import telemetry
from tests.standins.common import dev_dir, locked, peers, read_json, spawn, write_json

KNOWN = frozenset((
    "hostname", "service", "qos", "priority-flow-control", "vlan", "name", "interface", "description", "mtu", "speed",
    "switchport", "tx-queue", "bandwidth", "random-detect", "priority", "ip", "ipv6", "router", "router-id",
    "neighbor", "address-family", "network", "maximum-paths", "bgp", "route-map", "match", "set", "arp", "timers",
    "peer-group", "shutdown", "no", "default"))
# What a running config of the brownfield corpus (tests/fixtures/brownfield/eos: AVD's single-dc-l3ls) holds and a
# rollback session re-enters, by the EOS User Manual chapter (arista.com/en/um-eos/…) that documents it:
CORPUS = {
    "eos-maintenance-mode": ("maintenance", "unit", "quiesce"),  # `fabric drain` (Maintenance Mode)
    "eos-port-channels-and-lacp": ("channel-group",),
    "eos-multi-chassis-link-aggregation": ("mlag", "domain-id", "local-interface", "peer-address", "peer-link",
                                           "reload-delay"),
    "eos-vxlan-configuration": ("vxlan",),
    "eos-bgp": ("redistribute", "rd", "route-target", "vrf"),  # VRF/VLAN sections of `router bgp`, EVPN
    "eos-virtual-lans-vlans": ("trunk", "autostate"),  # `trunk group`, `no autostate` (VLAN interfaces)
    "eos-bidirectional-forwarding-detection": ("multihop",),  # `router bfd`
    "eos-spanning-tree-protocol": ("spanning-tree",),
    "eos-user-security / eos-aaa": ("aaa", "username", "enable"),
    "eos-management-api / eos-ntp / eos-dns": ("management", "protocol", "ntp", "daemon", "exec", "transceiver"),
    "eos-route-maps / eos-prefix-lists": ("seq",),
}
KNOWN = KNOWN | {w for words in CORPUS.values() for w in words}
MTU_MAX = 9214


SETTINGS = ("maximum-paths", "random-detect ecn", "description", "hostname")  # one setting whatever follows
HOLE = "#hole# "  # where a session's `no <line>` took a setting out: a new value of it goes back there


def _key(line: str) -> str:
    words = line.split()
    if words[:1] in (["no"], ["default"]) and len(words) > 1:
        words = words[1:]
    rest = " ".join(words)
    for s in SETTINGS:
        if rest == s or rest.startswith(s + " "):
            return s
    return " ".join(words[:-1]) if len(words) > 1 else rest


class Node:
    """One configuration line and the mode it opens (the lines under it)."""

    __slots__ = ("line", "mode")

    def __init__(self, line: str) -> None:
        self.line, self.mode = line, Mode()


class Mode:
    """The lines of one configuration mode in order, the first node of each text found without a scan (a mode of a
    few hundred interfaces is entered once per typed interface line)."""

    __slots__ = ("_first", "nodes")

    def __init__(self) -> None:
        self.nodes: list[Node] = []
        self._first: dict[str, Node] | None = None  # built at a lookup, kept while lines are only added

    def find(self, line: str) -> Node | None:
        """The first node of text `line`."""
        if self._first is None:
            self._first = {}
            for n in self.nodes:
                self._first.setdefault(n.line, n)
        return self._first.get(line)

    def insert(self, at: int, node: Node) -> None:
        self.nodes.insert(at, node)
        if self._first is not None and node.line not in self._first:
            self._first[node.line] = node
        else:
            self._first = None  # another of that text: which comes first is looked up anew

    def append(self, node: Node) -> None:
        self.insert(len(self.nodes), node)

    def replace(self, old: Node, new: Node) -> None:
        self.nodes[self.nodes.index(old)] = new
        self._first = None

    def remove(self, node: Node) -> None:
        self.nodes.remove(node)
        self._first = None


class Config:
    """A session's configuration: its lines as nodes by indentation, `!` separators and `end` nodes too, so that an
    untouched configuration prints back byte for byte (EOS prints its running-config in one canonical form). The text
    it was read from is its text until a line is merged into it (then the tree is printed in the canonical form)."""

    def __init__(self, text: str) -> None:
        self.raw: str | None = text
        self.top = Mode()
        stack: list[tuple[int, Mode]] = [(-1, self.top)]
        for raw in text.splitlines():
            s = raw.strip()
            if not s:
                continue
            indent = len(raw) - len(raw.lstrip())
            while stack[-1][0] >= indent:
                stack.pop()
            node = Node(s)
            stack[-1][1].append(node)
            stack.append((indent, node.mode))

    def text(self) -> str:
        """The session's text as kept in its file (with its holes)."""
        if self.raw is not None:
            return self.raw
        out: list[str] = []
        todo: list[tuple[int, Node]] = [(0, n) for n in reversed(self.top.nodes)]
        while todo:
            depth, node = todo.pop()
            out.append("   " * depth + node.line)
            todo += [(depth + 1, n) for n in reversed(node.mode.nodes)]
        return "\n".join(out) + "\n"

    def shown(self) -> str:
        """The configuration the session holds (no holes)."""
        return shown(self.text())

    def merge(self, ctx: list[str], raw: str) -> tuple[list[str], str]:
        """Apply one session line typed in context `ctx` (the section lines entered): (the new context, an error or
        '')."""
        line = raw.strip()
        words = line.split()
        if words[0] not in KNOWN:
            return ctx, f"% Invalid input (at token 0: '{words[0]}')"
        if words[0] == "mtu" and len(words) == 2 and words[1].isdigit() and not 68 <= int(words[1]) <= MTU_MAX:
            return ctx, f"% Invalid input (at token 1: '{words[1]}')"
        ctx = ctx[:(len(raw) - len(raw.lstrip())) // 3]
        mode = self.top
        for sec in ctx:
            node = mode.find(sec)
            if node is None:
                return ctx, "% Invalid input (not in that mode)"
            mode = node.mode
        if not ctx and line.startswith("router bgp ") and (other := self._other_bgp(line)):
            return ctx, f"% BGP is already running with AS number {other.split()[2]}"
        self.raw = None
        if mode.find(line) is None:
            if words[0] not in ("no", "default"):
                _add(mode, ctx, line)
            elif len(words) > 1:
                _take_out(mode, ctx, words, line)
        return [*ctx, line], ""

    def _other_bgp(self, line: str) -> str | None:
        return next((n.line for n in self.top.nodes if n.line.startswith("router bgp ") and n.line != line), None)


def _take_out(mode: Mode, ctx: list[str], words: list[str], line: str) -> None:
    """`no X` takes a configured X out; of a setting that is on by default it is itself the setting and shows as
    `no X` (`no switchport`, `no priority`, `no autostate`); `default X` takes out both forms."""
    verb, rest = words[0], " ".join(words[1:])
    key = _key(rest)
    hit = [n for n in mode.nodes if n.line == rest] or [n for n in mode.nodes if _key(n.line) == key
                                                        and (verb == "default" or not n.line.startswith("no "))]
    for i, n in enumerate(hit):
        if i == 0 and not n.mode.nodes:
            mode.replace(n, Node(HOLE + key))
        else:
            mode.remove(n)
    if not hit and verb == "no":
        _add(mode, ctx, line)


def _add(mode: Mode, ctx: list[str], line: str) -> None:
    hole = mode.find(HOLE + _key(line))
    if hole is not None:  # a new value of a setting the session took out: in its place, as EOS prints it
        mode.replace(hole, Node(line))
    elif not ctx and mode.nodes and mode.nodes[-1].line == "end":  # a new section: before `end`
        mode.insert(len(mode.nodes) - 1, Node(line))
    else:
        mode.append(Node(line))


def shown(text: str) -> str:
    """A session's text as the configuration it holds (no holes)."""
    return "".join(ln + "\n" for ln in text.splitlines() if not ln.lstrip().startswith(HOLE))


def hostname(lines: Iterable[str]) -> str:
    """The configuration's hostname (its lines read only as far as the `hostname` line)."""
    for ln in lines:
        if m := re.match(r"hostname (\S+)", ln):
            return m.group(1)
    return "switch"


def session_diff(running: str, session: str, name: str) -> str:
    return "".join(difflib.unified_diff(running.splitlines(True), session.splitlines(True),
                                        "system:/running-config", f"session:/{name}-session-config", n=3))


def bgp_summary(d: Path, running: str) -> dict:
    m = re.search(r"^router bgp (\d+)", running, re.M)
    asn = int(m.group(1)) if m else 0
    expect = peers(d)
    nbrs = re.findall(r"^\s+neighbor interface (\S+)", running, re.M)
    return {"vrfs": {"default": {"asn": str(asn), "peers": {
        n: {"peerState": "Established" if expect.get(n) == asn else "Active"} for n in nbrs}}}}


def expire(d: Path, name: str, secs: int) -> None:
    time.sleep(secs)
    with locked(d):
        pend = read_json(d / "pending.json")
        if pend and pend["session"] == name:
            (d / "running.cfg").write_text(pend["before"])
            (d / "pending.json").unlink()


def out(text: str) -> None:
    sys.stdout.write(text.rstrip("\n") + "\n" if text else "")


def show(d: Path, cmd: str) -> str | None:
    """What a privileged `show` command prints; None: not a show command the stand-in answers."""
    if not cmd.startswith("show "):
        return None
    if cmd == "show running-config":
        return (d / "running.cfg").read_text()
    if cmd.startswith("show configuration sessions"):
        # shape: arista.com um-eos "Configure Session" / null.53bits.co.uk "Configuration Session"
        # (`show configuration sessions` after `commit timer`); the state names are inferred
        pend = read_json(d / "pending.json")
        rows = [(p.stem, "pending") for p in sorted((d / "sessions").glob("*.cfg"))]
        rows += [(pend["session"], "pending-commit-timer")] if pend else []
        return ("Maximum number of completed sessions: 1\nMaximum number of pending sessions: 5\n\n"
                f"  {'Name':<24} {'State':<24} {'User':<8} Terminal\n  {'-' * 24} {'-' * 24} {'-' * 8} --------\n"
                + "".join(f"  {n:<24} {st:<24} {'admin':<8} vty3\n" for n, st in rows))
    if cmd == "show ip bgp summary | json":
        return json.dumps(bgp_summary(d, (d / "running.cfg").read_text()), indent=2)
    return telemetry.answer_eos(cmd, d)


class Cli:
    """One CLI login: privileged mode, the configuration session it is in with that session's configuration, and the
    configuration-mode context. The session's configuration is kept here while the login is in it (a typed line is
    merged into it, not into its file: a session's work grows with its lines, not with lines times the configuration)
    and written to `sessions/<name>.cfg` when the login leaves the session (`end`, `exit`, another `configure
    session`) or ends (`close`); its file is made when the session starts, so that it is listed at once."""

    def __init__(self, d: Path) -> None:
        self.d = d
        self.enabled = False
        self.session: str | None = None
        self.config: Config | None = None
        self.ctx: list[str] = []

    def prompt(self) -> str:
        with open(self.d / "running.cfg") as f:
            host = hostname(f)
        return f"{host}(config-s-{self.session[:6]})#" if self.session else f"{host}{'#' if self.enabled else '>'}"

    def typed(self, line: str) -> bool:
        """A line typed at the prompt (blank and `!` lines do nothing), under the device's lock; False: the login
        ends."""
        cmd = line.strip()
        if not cmd or cmd.startswith("!"):
            return True
        with locked(self.d):
            return self.command(cmd, line)

    def close(self) -> None:
        """The login ends: the session it was in stays, with its lines (as EOS keeps a pending session)."""
        with locked(self.d):
            self.leave()

    def leave(self) -> None:
        """Out of the session, its configuration written to its file (unless another login aborted it)."""
        if self.session and self.config and (f := self.d / "sessions" / f"{self.session}.cfg").exists():
            f.write_text(self.config.text())
        self.session, self.config = None, None

    def command(self, cmd: str, line: str) -> bool:
        """Act on one command line (`cmd`: stripped); False: the login ends."""
        if (t := re.fullmatch(r"terminal width (\d+)", cmd)):
            out(f"Width set to {t.group(1)} columns.")
        elif cmd.startswith("terminal length"):
            out("Pagination disabled.")
        elif cmd == "enable":
            self.enabled = True
        elif cmd == "exit" and not self.session:
            return False
        elif not self.enabled:
            out("% Invalid input (privileged mode required)")
        elif (answer := show(self.d, cmd)) is not None:
            out(answer)
        elif m := re.fullmatch(r"configure session (\S+)(?: (commit|abort))?", cmd):
            return self.configure_session(m.group(1), m.group(2))
        elif self.session:
            self.in_session(self.session, cmd, line)
        else:
            out(f"% Invalid input: {cmd}")
        return True

    def configure_session(self, name: str, action: str | None) -> bool:
        """`configure session NAME [commit|abort]`; False: the line dropped after a commit (a fault the tests
        inject)."""
        d = self.d
        pend = read_json(d / "pending.json")
        if action == "commit":
            if pend and pend["session"] == name:
                (d / "pending.json").unlink()
                if (d / "drop-after-commit").exists():  # a fault the tests inject: the line drops
                    (d / "drop-after-commit").unlink()
                    return False
            else:
                out(f"% No pending commit timer for session {name}")
        elif action == "abort":
            if pend and pend["session"] == name:
                (d / "running.cfg").write_text(pend["before"])
                (d / "pending.json").unlink()
            (d / "sessions" / f"{name}.cfg").unlink(missing_ok=True)
        elif pend:
            out(f"% Session {pend['session']} has a pending commit timer")
        else:
            self.leave()
            f = d / "sessions" / f"{name}.cfg"
            if not f.exists():
                f.write_text((d / "running.cfg").read_text())  # a new session starts from the running-config
            self.session, self.config, self.ctx = name, Config(f.read_text()), []
        return True

    def in_session(self, session: str, cmd: str, line: str) -> None:
        """A command inside configuration session `session`: leave, diff, abort, commit (with a timer) or a
        configuration line merged into the session's config."""
        d, sess_file, config = self.d, self.d / "sessions" / f"{session}.cfg", self.config
        assert config is not None
        if cmd in ("end", "exit"):
            self.leave()
        elif cmd == "rollback clean-config":
            self.config = Config("")
        elif cmd == "show session-config diffs":
            out(session_diff((d / "running.cfg").read_text(), config.shown(), session))
        elif cmd == "abort":
            sess_file.unlink(missing_ok=True)
            self.session, self.config = None, None
        elif cmd == "commit":
            (d / "running.cfg").write_text(config.shown())
            sess_file.unlink()
            self.session, self.config = None, None
        elif (t := re.fullmatch(r"commit timer (\d\d):(\d\d):(\d\d)", cmd)):
            secs = int(t.group(1)) * 3600 + int(t.group(2)) * 60 + int(t.group(3))
            before = (d / "running.cfg").read_text()
            write_json(d / "pending.json", {"session": session, "before": before, "deadline": time.time() + secs})
            (d / "running.cfg").write_text(config.shown())
            spawn("tests.standins.eos", "--expire", str(d), session, str(secs))
            sess_file.unlink()
            self.session, self.config = None, None
        else:
            self.ctx, err = config.merge(self.ctx, line.rstrip("\n"))
            if err:
                out(err)


def repl(d: Path) -> None:
    cli = Cli(d)
    try:
        while True:
            sys.stdout.write(cli.prompt())
            sys.stdout.flush()
            line = sys.stdin.readline()
            if not line or not cli.typed(line):
                return
    finally:
        cli.close()


def main(argv: list[str]) -> int:
    if argv[:1] == ["--expire"]:
        expire(Path(argv[1]), argv[2], int(argv[3]))
        return 0
    d = dev_dir()
    (d / "sessions").mkdir(exist_ok=True)
    # a hung-up terminal (the client gone) ends the login at its next read, as end of input does: its session stays
    signal.signal(signal.SIGHUP, signal.SIG_IGN)
    repl(d)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
