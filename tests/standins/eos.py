"""Arista EOS stand-in: an interactive CLI with configuration sessions and timed commits.

State: `running.cfg`, `sessions/<name>.cfg`, `pending.json` (a `commit timer` waiting for
`configure session <name> commit`: the session, the configuration before it, the deadline). A
detached timer process restores the configuration before the commit when the timer expires;
`configure session <name> abort` does that at once. See the package docstring.

A session starts as a copy of the running-config (as on EOS) and each line is merged into it by mode:
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
import sys
import time
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


def _tree(text: str) -> list:
    """[line, children] nodes by indentation; `!` separators and `end` are nodes too, so that an untouched
    configuration prints back byte for byte (EOS prints its running-config in one canonical form)."""
    root: list = []
    stack: list[tuple[int, list]] = [(-1, root)]
    for raw in text.splitlines():
        s = raw.strip()
        if not s:
            continue
        indent = len(raw) - len(raw.lstrip())
        while stack[-1][0] >= indent:
            stack.pop()
        node = [s, []]
        stack[-1][1].append(node)
        stack.append((indent, node[1]))
    return root


def _text(nodes: list, depth: int = 0) -> str:
    out = []
    for line, children in nodes:
        out.append("   " * depth + line)
        if children:
            out.append(_text(children, depth + 1).rstrip("\n"))
    return "\n".join(out) + "\n"


def shown(text: str) -> str:
    """A session's text as the configuration it holds (no holes)."""
    return "".join(ln + "\n" for ln in text.splitlines() if not ln.lstrip().startswith(HOLE))


def merge_line(cfg: str, ctx: list[str], raw: str) -> tuple[str, list[str], str]:
    """Apply one session line: (new config text, new context, error or '')."""
    line = raw.strip()
    words = line.split()
    if words[0] not in KNOWN:
        return cfg, ctx, f"% Invalid input (at token 0: '{words[0]}')"
    if words[0] == "mtu" and len(words) == 2 and words[1].isdigit() and not 68 <= int(words[1]) <= MTU_MAX:
        return cfg, ctx, f"% Invalid input (at token 1: '{words[1]}')"
    depth = (len(raw) - len(raw.lstrip())) // 3
    ctx = ctx[:depth]
    nodes = _tree(cfg)
    siblings = nodes
    for sec in ctx:
        node = next((n for n in siblings if n[0] == sec), None)
        if node is None:
            return cfg, ctx, "% Invalid input (not in that mode)"
        siblings = node[1]
    other = next((n[0] for n in nodes if n[0].startswith("router bgp ") and n[0] != line), None)
    if not ctx and line.startswith("router bgp ") and other:
        return cfg, ctx, f"% BGP is already running with AS number {other.split()[2]}"
    rest = " ".join(words[1:])
    if words[0] in ("no", "default") and len(words) > 1 and not any(n[0] == line for n in siblings):
        # `no X` takes a configured X out; of a setting that is on by default it is itself the setting and
        # shows as `no X` (`no switchport`, `no priority`, `no autostate`); `default X` takes out both forms
        hit = [n for n in siblings if n[0] == rest] or [n for n in siblings if _key(n[0]) == _key(rest)
                                                        and (words[0] == "default" or not n[0].startswith("no "))]
        for i, n in enumerate(hit):
            if i == 0 and not n[1]:
                siblings[siblings.index(n)] = [HOLE + _key(rest), []]
            else:
                siblings.remove(n)
        if not hit and words[0] == "no":
            _add(siblings, ctx, line)
    elif words[0] not in ("no", "default") and not any(n[0] == line for n in siblings):
        _add(siblings, ctx, line)
    return _text(nodes), [*ctx, line], ""


def _add(siblings: list, ctx: list[str], line: str) -> None:
    hole = next((i for i, n in enumerate(siblings) if n[0] == HOLE + _key(line)), None)
    if hole is not None:  # a new value of a setting the session took out: in its place, as EOS prints it
        siblings[hole] = [line, []]
    elif not ctx and siblings and siblings[-1][0] == "end":  # a new section: before `end`
        siblings.insert(len(siblings) - 1, [line, []])
    else:
        siblings.append([line, []])


def hostname(text: str) -> str:
    m = re.search(r"^hostname (\S+)", text, re.M)
    return m.group(1) if m else "switch"


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


def show(d: Path, cmd: str, running: str) -> str | None:
    """What a privileged `show` command prints; None: not a show command the stand-in answers."""
    if cmd == "show running-config":
        return running
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
        return json.dumps(bgp_summary(d, running), indent=2)
    return telemetry.answer_eos(cmd, d)


class Cli:
    """One CLI login: privileged mode, the configuration session it is in and its configuration-mode context."""

    def __init__(self, d: Path) -> None:
        self.d = d
        self.enabled = False
        self.session: str | None = None
        self.ctx: list[str] = []

    def prompt(self) -> str:
        host = hostname((self.d / "running.cfg").read_text())
        return f"{host}(config-s-{self.session[:6]})#" if self.session else f"{host}{'#' if self.enabled else '>'}"

    def typed(self, line: str) -> bool:
        """A line typed at the prompt (blank and `!` lines do nothing), under the device's lock; False: the login
        ends."""
        cmd = line.strip()
        if not cmd or cmd.startswith("!"):
            return True
        with locked(self.d):
            return self.command(cmd, line)

    def command(self, cmd: str, line: str) -> bool:
        """Act on one command line (`cmd`: stripped); False: the login ends."""
        running = (self.d / "running.cfg").read_text()
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
        elif (answer := show(self.d, cmd, running)) is not None:
            out(answer)
        elif m := re.fullmatch(r"configure session (\S+)(?: (commit|abort))?", cmd):
            return self.configure_session(m.group(1), m.group(2), running)
        elif self.session:
            self.in_session(self.session, cmd, line, running)
        else:
            out(f"% Invalid input: {cmd}")
        return True

    def configure_session(self, name: str, action: str | None, running: str) -> bool:
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
            self.session, self.ctx = name, []
            f = d / "sessions" / f"{name}.cfg"
            if not f.exists():
                f.write_text(running)  # a new session starts from the running-config
        return True

    def in_session(self, session: str, cmd: str, line: str, running: str) -> None:
        """A command inside configuration session `session`: leave, diff, abort, commit (with a timer) or a
        configuration line merged into the session's config."""
        d, sess_file = self.d, self.d / "sessions" / f"{session}.cfg"
        if cmd in ("end", "exit"):
            self.session = None
        elif cmd == "rollback clean-config":
            sess_file.write_text("")
        elif cmd == "show session-config diffs":
            out(session_diff(running, shown(sess_file.read_text()), session))
        elif cmd == "abort":
            sess_file.unlink(missing_ok=True)
            self.session = None
        elif cmd == "commit":
            (d / "running.cfg").write_text(shown(sess_file.read_text()))
            sess_file.unlink()
            self.session = None
        elif (t := re.fullmatch(r"commit timer (\d\d):(\d\d):(\d\d)", cmd)):
            secs = int(t.group(1)) * 3600 + int(t.group(2)) * 60 + int(t.group(3))
            write_json(d / "pending.json", {"session": session, "before": running, "deadline": time.time() + secs})
            (d / "running.cfg").write_text(shown(sess_file.read_text()))
            spawn("tests.standins.eos", "--expire", str(d), session, str(secs))
            sess_file.unlink()
            self.session = None
        else:
            new, self.ctx, err = merge_line(sess_file.read_text(), self.ctx, line.rstrip("\n"))
            if err:
                out(err)
            else:
                sess_file.write_text(new)


def repl(d: Path) -> None:
    cli = Cli(d)
    while True:
        sys.stdout.write(cli.prompt())
        sys.stdout.flush()
        line = sys.stdin.readline()
        if not line:
            return
        if not cli.typed(line):
            return


def main(argv: list[str]) -> int:
    if argv[:1] == ["--expire"]:
        expire(Path(argv[1]), argv[2], int(argv[3]))
        return 0
    d = dev_dir()
    (d / "sessions").mkdir(exist_ok=True)
    repl(d)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
