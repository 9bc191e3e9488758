"""Arista EOS stand-in: an interactive CLI with configuration sessions and timed commits.

State: `running.cfg`, `sessions/<name>.cfg`, `pending.json` (a `commit timer` waiting for
`configure session <name> commit`: the session, the configuration before it, the deadline). A
detached timer process restores the configuration before the commit when the timer expires;
`configure session <name> abort` does that at once. See the package docstring.
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


def repl(d: Path) -> None:
    enabled = False
    session: str | None = None

    def out(text: str) -> None:
        sys.stdout.write(text.rstrip("\n") + "\n" if text else "")

    while True:
        running = (d / "running.cfg").read_text()
        host = hostname(running)
        prompt = f"{host}(config-s-{session[:6]})#" if session else f"{host}{'#' if enabled else '>'}"
        sys.stdout.write(prompt)
        sys.stdout.flush()
        line = sys.stdin.readline()
        if not line:
            return
        cmd = line.strip()
        if not cmd or cmd.startswith("!"):
            continue
        with locked(d):
            running = (d / "running.cfg").read_text()
            sess_file = d / "sessions" / f"{session}.cfg" if session else None
            if (t := re.fullmatch(r"terminal width (\d+)", cmd)):
                out(f"Width set to {t.group(1)} columns.")
                continue
            if cmd.startswith("terminal length"):
                out("Pagination disabled.")
                continue
            if cmd == "enable":
                enabled = True
                continue
            if cmd == "exit" and not session:
                return
            if not enabled:
                out("% Invalid input (privileged mode required)")
                continue
            if cmd == "show running-config":
                out(running)
                continue
            if cmd == "show ip bgp summary | json":
                out(json.dumps(bgp_summary(d, running), indent=2))
                continue
            if (answer := telemetry.answer_eos(cmd, d)) is not None:
                out(answer)
                continue
            m = re.fullmatch(r"configure session (\S+)(?: (commit|abort))?", cmd)
            if m:
                name, action = m.groups()
                pend = read_json(d / "pending.json")
                if action == "commit":
                    if pend and pend["session"] == name:
                        (d / "pending.json").unlink()
                    else:
                        out(f"% No pending commit timer for session {name}")
                elif action == "abort":
                    if pend and pend["session"] == name:
                        (d / "running.cfg").write_text(pend["before"])
                        (d / "pending.json").unlink()
                    (d / "sessions" / f"{name}.cfg").unlink(missing_ok=True)
                else:
                    if pend:
                        out(f"% Session {pend['session']} has a pending commit timer")
                        continue
                    session = name
                    f = d / "sessions" / f"{name}.cfg"
                    if not f.exists():
                        f.write_text(running)  # a new session starts from the running-config
                continue
            if session and sess_file is not None:
                if cmd in ("end", "exit"):
                    session = None
                elif cmd == "rollback clean-config":
                    sess_file.write_text("")
                elif cmd == "show session-config diffs":
                    out(session_diff(running, sess_file.read_text(), session))
                elif cmd == "abort":
                    sess_file.unlink(missing_ok=True)
                    session = None
                elif cmd == "commit":
                    (d / "running.cfg").write_text(sess_file.read_text())
                    sess_file.unlink()
                    session = None
                elif (t := re.fullmatch(r"commit timer (\d\d):(\d\d):(\d\d)", cmd)):
                    secs = int(t.group(1)) * 3600 + int(t.group(2)) * 60 + int(t.group(3))
                    write_json(d / "pending.json", {"session": session, "before": running,
                                                    "deadline": time.time() + secs})
                    (d / "running.cfg").write_text(sess_file.read_text())
                    spawn("tests.standins.eos", "--expire", str(d), session, str(secs))
                    sess_file.unlink()
                    session = None
                else:
                    with sess_file.open("a") as f:
                        f.write(line.rstrip("\n") + "\n")
                continue
            out(f"% Invalid input: {cmd}")


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
