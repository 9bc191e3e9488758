"""A page loaded in Debian's real headless chromium, driven over the Chrome DevTools Protocol on a pipe.

`--remote-debugging-pipe` makes chromium read protocol commands from fd 3 and write replies and events to fd 4, each
a JSON object ended by a NUL byte (chromedevtools.github.io/devtools-protocol: Target.createTarget,
Target.attachToTarget with `flatten`, Page.navigate, Page.loadEventFired, Runtime.consoleAPICalled,
Runtime.exceptionThrown, Log.entryAdded, Runtime.evaluate, Page.captureScreenshot, Browser.close). A pipe, not a
port: nothing listens on the network. What the page logged at error level, threw, or failed to load is kept with
what it shows (text, the size of its SVG) and a PNG screenshot of the whole page.
"""

from __future__ import annotations

import base64
import contextlib
import fcntl
import json
import os
import selectors
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ERROR_CONSOLE = ("error", "assert")  # Runtime.consoleAPICalled types that are errors
MEASURE = """JSON.stringify({
  text: document.body ? document.body.innerText.trim().length : 0,
  height: document.body ? Math.ceil(document.body.getBoundingClientRect().bottom) + 16 : 0,
  width: document.documentElement.scrollWidth,
  svg: Array.from(document.querySelectorAll('svg')).map(s => {const r = s.getBoundingClientRect();
                                                            return [Math.round(r.width), Math.round(r.height)];})
})"""


def chromium() -> str | None:
    """Debian's chromium (apt install chromium), or None."""
    return shutil.which("chromium")


@dataclass
class Loaded:
    """What chromium made of a page."""

    errors: list[str] = field(default_factory=list)  # console errors, uncaught exceptions, failed loads
    text: int = 0  # characters of visible text
    width: int = 0
    height: int = 0  # CSS pixels: the page's content, not the window
    svg: list[tuple[int, int]] = field(default_factory=list)  # rendered size of each <svg>
    png: bytes = b""


class _Pipe:
    """The protocol over chromium's fds 3 (commands) and 4 (replies and events)."""

    def __init__(self, write_fd: int, read_fd: int, deadline: float):
        self.write_fd, self.read_fd, self.deadline = write_fd, read_fd, deadline
        self.buffer = b""
        self.events: list[dict[str, Any]] = []
        self.next_id = 0
        self.selector = selectors.DefaultSelector()
        self.selector.register(read_fd, selectors.EVENT_READ)

    def call(self, method: str, session: str | None = None, **params: Any) -> dict[str, Any]:
        self.next_id += 1
        message: dict[str, Any] = {"id": self.next_id, "method": method, "params": params}
        if session:
            message["sessionId"] = session
        os.write(self.write_fd, json.dumps(message).encode() + b"\0")
        while True:
            reply = self._message()
            if reply.get("id") == self.next_id:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                return reply.get("result", {})
            self.events.append(reply)

    def wait(self, method: str) -> dict[str, Any]:
        """The first event `method` (already received or coming)."""
        while True:
            for event in self.events:
                if event.get("method") == method:
                    return event
            self.events.append(self._message())

    def _message(self) -> dict[str, Any]:
        while b"\0" not in self.buffer:
            left = self.deadline - time.monotonic()
            if left <= 0 or not self.selector.select(left):
                raise TimeoutError("chromium did not answer in time")
            chunk = os.read(self.read_fd, 1 << 20)
            if not chunk:
                raise EOFError("chromium closed its DevTools pipe")
            self.buffer += chunk
        line, self.buffer = self.buffer.split(b"\0", 1)
        return json.loads(line)


def _errors(events: list[dict[str, Any]]) -> list[str]:
    out = []
    for e in events:
        p = e.get("params", {})
        if e.get("method") == "Runtime.consoleAPICalled" and p.get("type") in ERROR_CONSOLE:
            out.append("console." + p["type"] + ": " + " ".join(str(a.get("value", a.get("description", "")))
                                                              for a in p.get("args", [])))
        elif e.get("method") == "Runtime.exceptionThrown":
            d = p.get("exceptionDetails", {})
            out.append("exception: " + d.get("exception", {}).get("description", d.get("text", "")))
        elif e.get("method") == "Log.entryAdded" and p.get("entry", {}).get("level") == "error":
            out.append(f"log: {p['entry'].get('text', '')} {p['entry'].get('url', '')}".rstrip())
    return out


def _high(fds: tuple[int, int]) -> tuple[int, int]:
    """The pipe's ends moved to fds ≥ 10, so that putting one at 3 or 4 never closes the other."""
    moved = tuple(fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 10) for fd in fds)
    for fd in fds:
        os.close(fd)
    return moved[0], moved[1]


def load(page: Path, width: int = 1280, timeout_s: float = 60.0) -> Loaded:
    """`page` (a local file) loaded in headless chromium at `width` CSS pixels: its errors, what it shows, and a
    screenshot of the whole page."""
    exe = chromium()
    if exe is None:
        raise FileNotFoundError("chromium")
    to_chrome_r, to_chrome_w = _high(os.pipe())
    from_chrome_r, from_chrome_w = _high(os.pipe())
    with tempfile.TemporaryDirectory(prefix="chromium-") as profile, open(Path(profile) / "stderr", "w+b") as log:
        # --no-sandbox: the tests run as root (CI, the lab), and chromium refuses to start its sandbox as root; the
        # page is a report this project wrote, loaded from a local file with nothing fetched from the network.
        # Nothing leaves the machine: no name resolves and every http(s) request goes to a closed loopback port (a
        # report that fetched anything would log a failed load and fail its test).
        argv = [exe, "--headless", "--no-sandbox", "--disable-gpu", "--remote-debugging-pipe", "--no-first-run",
                f"--user-data-dir={profile}/data", "--disable-extensions", "--disable-background-networking",
                "--disable-component-update", "--disable-sync", "--no-pings", "--host-resolver-rules=MAP * ~NOTFOUND",
                "--proxy-server=127.0.0.1:9", "--hide-scrollbars", "--mute-audio"]
        # fds 3 and 4 are where chromium looks for the pipe: bash (dash takes one-digit fds only) moves ours there
        shell = f'exec "$@" 3<&{to_chrome_r} 4>&{from_chrome_w}'
        proc = subprocess.Popen(["bash", "-c", shell, "bash", *argv], pass_fds=(to_chrome_r, from_chrome_w),
                                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=log)
        os.close(to_chrome_r)
        os.close(from_chrome_w)
        pipe = _Pipe(to_chrome_w, from_chrome_r, time.monotonic() + timeout_s)
        try:
            return _drive(pipe, page, width)
        except (EOFError, TimeoutError) as exc:
            log.seek(0)
            raise RuntimeError(f"{exc}; chromium's stderr ends: {log.read()[-2000:].decode(errors='replace')}") \
                from exc
        finally:
            pipe.selector.close()
            os.close(to_chrome_w)
            os.close(from_chrome_r)
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


def _drive(pipe: _Pipe, page: Path, width: int) -> Loaded:
    target = pipe.call("Target.createTarget", url="about:blank")["targetId"]
    session = pipe.call("Target.attachToTarget", targetId=target, flatten=True)["sessionId"]
    for domain in ("Page", "Runtime", "Log"):
        pipe.call(f"{domain}.enable", session)
    pipe.call("Emulation.setDeviceMetricsOverride", session, width=width, height=800, deviceScaleFactor=1,
              mobile=False)
    pipe.call("Page.navigate", session, url=page.resolve().as_uri())
    pipe.wait("Page.loadEventFired")
    shown = json.loads(pipe.call("Runtime.evaluate", session, expression=MEASURE, returnByValue=True)["result"]
                       ["value"])
    clip = {"x": 0, "y": 0, "width": shown["width"], "height": max(shown["height"], 1), "scale": 1}
    png = base64.b64decode(pipe.call("Page.captureScreenshot", session, format="png", captureBeyondViewport=True,
                                     clip=clip)["data"])
    loaded = Loaded(errors=_errors(pipe.events), text=shown["text"], width=shown["width"], height=shown["height"],
                    svg=[tuple(s) for s in shown["svg"]], png=png)
    with contextlib.suppress(EOFError):  # chromium may close the pipe before it answers
        pipe.call("Browser.close")
    return loaded
