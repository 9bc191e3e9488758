"""A page loaded in Debian's real headless chromium, driven by Playwright (its Python package; the browser is the
system's `/usr/bin/chromium`, none is downloaded). What the page logged at error level, threw, or failed to load is
kept with what it shows (text, the size of its SVG) and a PNG screenshot of the whole page. Nothing leaves the
machine: every request that is not a local file is aborted, which chromium logs as a console error."""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass, field
from pathlib import Path

from playwright.sync_api import ConsoleMessage, Error, Route, sync_playwright

ERROR_CONSOLE = ("error", "assert")  # console message types that are errors
MEASURE = """() => JSON.stringify({
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


def _local_only(route: Route) -> None:
    if route.request.url.startswith("file:"):
        route.continue_()
    else:
        route.abort("blockedbyclient")


def load(page: Path, width: int = 1280, timeout_s: float = 60.0) -> Loaded:
    """`page` (a local file) loaded in headless chromium at `width` CSS pixels: its errors, what it shows, and a
    screenshot of the whole page."""
    exe = chromium()
    if exe is None:
        raise FileNotFoundError("chromium")
    errors: list[str] = []

    def console(message: ConsoleMessage) -> None:
        if message.type in ERROR_CONSOLE:
            where = message.location.get("url", "")  # a failed load's console line names the resource here
            errors.append(f"console.{message.type}: {message.text} {where}".rstrip())

    def thrown(error: Error) -> None:
        errors.append(f"exception: {error.name}: {error.message}")

    with sync_playwright() as playwright:
        # --no-sandbox: the tests run as root (CI, the lab), and chromium refuses to start its sandbox as root; the
        # page is a report this project wrote, loaded from a local file with nothing fetched from the network.
        browser = playwright.chromium.launch(executable_path=exe, args=["--no-sandbox"], timeout=timeout_s * 1000)
        try:
            tab = browser.new_page(viewport={"width": width, "height": 800})
            tab.set_default_timeout(timeout_s * 1000)
            tab.route("**/*", _local_only)
            tab.on("console", console)
            tab.on("pageerror", thrown)
            tab.goto(page.resolve().as_uri(), wait_until="load")
            tab.wait_for_timeout(50)  # a task queued by the page's scripts (setTimeout 0) runs and may throw
            shown = json.loads(tab.evaluate(MEASURE))
            png = tab.screenshot(full_page=True)
        finally:
            browser.close()
    return Loaded(errors=errors, text=shown["text"], width=shown["width"], height=shown["height"],
                  svg=[(w, h) for w, h in shown["svg"]], png=png)
