"""A bash shell on a Linux-based switch over netmiko: commands with exit codes, file upload.

FRR white-boxes, community SONiC and Cumulus (NVUE) all give a bash shell; netmiko's `linux` (or
`cumulus_linux`) device type drives it. Files go up as a base64 here-document, checked by sha256.
"""

from __future__ import annotations

import base64
import hashlib
import re
import secrets
import shlex
import textwrap
import time
from collections.abc import Iterable
from typing import Any

from fabric.replies import reader
from fabric.targets.base import TargetError

_RC = re.compile(r"__RF_RC=(\d+)[ \t]*(?:\n[^\n]*)?$")  # the status line, then perhaps a prompt netmiko did not strip


def run(conn: Any, command: str, *, timeout: float = 60) -> tuple[int, str]:
    """Run a shell command; returns (exit code, output without the echo and the markers).

    The shell itself prints a begin line before the command runs and the exit-status line after it; `printf`
    joins the begin line from two words and a token new for each call, so that line never appears in the echo of
    the command line, however the terminal wraps, scrolls or repeats that echo (a command typed ahead of the
    prompt is echoed twice), and a late line of an earlier command never matches. The output is what lies
    between the two lines.
    """
    token = secrets.token_hex(4)
    begin = re.compile(rf"__RF_BEGIN_{token}[ \t]*(?:\n|$)")
    line = f"printf '%s_%s\\n' __RF_BEGIN {token}; {command}; echo __RF_RC=$?"
    out = conn.send_command(line, read_timeout=timeout, expect_string=_AFTER_RC,
                            cmd_verify=False, strip_command=False, strip_prompt=True)
    out = out.replace("\r", "")
    start = begin.search(out)
    if start is None:
        raise TargetError(f"no output framing from {command.split()[0]!r} (output: {out.strip()[-120:]!r})")
    out = out[start.end():]
    m = _RC.search(out.rstrip())
    if not m:
        raise TargetError(f"no exit status from {command.split()[0]!r} (output: {out.strip()[-120:]!r})")
    return int(m.group(1)), out[: m.start()].rstrip("\n")


def check(conn: Any, command: str, *, timeout: float = 60, what: str = "") -> str:
    """Run a command that must succeed; TargetError with its last output line otherwise."""
    rc, out = run(conn, command, timeout=timeout)
    if rc != 0:
        last = next((ln for ln in reversed(out.splitlines()) if ln.strip()), "no output")
        raise TargetError(f"{what or command.split()[0]} exited {rc}: {last.strip()}")
    return out


# The prompt after the exit-status line (or after the here-document's end), whatever the host is called: an
# apply may change the hostname, and with it the prompt netmiko learned at login
_PROMPT = r"[^\n]*[#$]\s*$"
_AFTER_RC = r"__RF_RC=\d+\s*[\r\n]+" + _PROMPT
_AFTER_EOF = r"__RF_EOF__\s*[\r\n]+" + _PROMPT



def upload(conn: Any, path: str, content: str) -> None:
    """Write `content` to `path` on the device (a base64 here-document, its directory created), then
    verify its sha256 and move it into place in one command."""
    data = content.encode()
    b64 = "\n".join(textwrap.wrap(base64.b64encode(data).decode(), 76))
    q, part = shlex.quote(path), shlex.quote(path + ".part")
    parent = shlex.quote(path.rsplit("/", 1)[0] or "/")
    conn.write_channel(f"mkdir -p {parent} && base64 -d > {part} <<'__RF_EOF__'\n{b64}\n__RF_EOF__\n")
    conn.read_until_pattern(pattern=_AFTER_EOF, read_timeout=60)
    digest = hashlib.sha256(data).hexdigest()
    rc, _ = run(conn, f"echo '{digest}  '{part} | sha256sum -c --status && mv -f {part} {q}")
    if rc != 0:
        raise TargetError(f"upload of {path} failed its checksum")


def quote(s: str) -> str:
    return shlex.quote(s)


_SEPARATOR = re.compile(r"[./]")
_SWAP = str.maketrans("./", "/.")


def sysctl_read(keys: Iterable[str]) -> str:
    """One procps `sysctl -e` reading every key (it prints `key = value`; a key the kernel lacks is left out)."""
    return f"sysctl -e {' '.join(quote(k) for k in keys)} 2>/dev/null; true"


def sysctl_printed(key: str) -> str:
    """The key as procps prints it: asked with `/` first (net/ipv4/conf/rail1.1001/rp_filter), the separators
    become `.` and a `.` inside a name `/` (net.ipv4.conf.rail1/1001.rp_filter); asked with `.` first, as asked."""
    first = _SEPARATOR.search(key)
    return key.translate(_SWAP) if first is not None and first.group() == "/" else key


@reader('sysctl -e <keys>')
def sysctl_values(text: str) -> dict[str, str]:
    """The `key = value` lines of `sysctl_read`'s answer, by the printed key (`sysctl_printed`)."""
    return {key: value.strip() for line in text.splitlines()
            for key, sep, value in [line.partition(" = ")] if sep}


def job_state(conn: Any, directory: str) -> str:
    """The state word a device-side transaction job (FRR, SONiC) keeps in `<directory>/state`; '' if none."""
    return run(conn, f"cat {quote(directory + '/state')} 2>/dev/null")[1].strip()


def wait_job_state(conn: Any, directory: str, states: set[str], timeout: float) -> str:
    """Poll `job_state` until it is one of `states` or `timeout` seconds pass; returns the last state read."""
    deadline = time.monotonic() + timeout
    while True:
        s = job_state(conn, directory)
        if s in states or time.monotonic() > deadline:
            return s
        time.sleep(0.3)
