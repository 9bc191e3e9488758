"""The documentation the tests hold to the code: the README, then every page of the docs site in its nav order
(mkdocs.yml), so that examples run in the order a reader meets them."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def pages() -> list[Path]:
    """README.md and the docs pages, in the order of mkdocs.yml's nav (the generated reference pages included)."""
    nav = re.findall(r":\s+(\S+\.md)\s*$", (ROOT / "mkdocs.yml").read_text(), re.M)
    return [ROOT / "README.md", *(ROOT / "docs" / page for page in nav)]


def text() -> str:
    """Every page's text, one after another."""
    return "\n".join(page.read_text() for page in pages())


def page(name: str) -> str:
    """One docs page's text, e.g. `adding-a-nos.md`."""
    return (ROOT / "docs" / name).read_text()
