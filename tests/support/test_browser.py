"""The headless-chromium check itself (tests/support/browser.py, Playwright driving Debian's chromium): a page
with a deliberate console error, an uncaught exception, a resource that does not load (a file not there, or anything
from the network: nothing leaves the machine), or nothing on it is caught; a plain page is clean."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import require
from tests.support.browser import chromium, load

HEAD = '<!DOCTYPE html><html><head><meta charset="utf-8"><title>t</title></head><body>'


@pytest.fixture(autouse=True)
def browser() -> None:
    require(chromium() is not None, "Debian's chromium (make deps)")


def page(tmp_path: Path, body: str) -> Path:
    path = tmp_path / "page.html"
    path.write_text(f"{HEAD}{body}</body></html>\n")
    return path


def test_a_clean_page_loads_without_errors(tmp_path: Path) -> None:
    loaded = load(page(tmp_path, "<p>links: 24 ok</p><svg width='200' height='100'><rect width='50' height='50'/>"
                                 "</svg><script>console.log('informational')</script>"))
    assert loaded.errors == [] and loaded.text == len("links: 24 ok") and loaded.svg == [(200, 100)]
    assert loaded.png.startswith(b"\x89PNG\r\n\x1a\n")


@pytest.mark.parametrize(("body", "error"), [
    ("<p>x</p><script>console.error('deliberate console error')</script>", "console.error: deliberate console error"),
    ("<p>x</p><script>notAFunction()</script>", "exception: ReferenceError: notAFunction is not defined"),
    ("<p>x</p><script>setTimeout(() => { throw new Error('late') }, 0)</script>", "exception: Error: late"),
    ("<p>x</p><img src='missing.png'>", "console.error: Failed to load resource: net::ERR_FILE_NOT_FOUND"),
    ("<p>x</p><img src='https://example.com/a.png'>",
     "console.error: Failed to load resource: net::ERR_BLOCKED_BY_CLIENT"),
])
def test_a_deliberate_error_is_caught(tmp_path: Path, body: str, error: str) -> None:
    loaded = load(page(tmp_path, body))
    assert len(loaded.errors) == 1 and loaded.errors[0].startswith(error), loaded.errors


def test_a_blank_page_shows_no_text(tmp_path: Path) -> None:
    loaded = load(page(tmp_path, ""))
    assert loaded.errors == [] and loaded.text == 0 and loaded.svg == []
