"""`fabric cabling -f html`: the page the command writes for the miswired example fabric, loaded in Debian's real
headless chromium (tests/support/browser.py): no console error, exception or failed load, the faults as text and
the picture drawn at a readable size."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.conftest import ROOT, require
from tests.inproc import fabric
from tests.support.browser import chromium, load

MISWIRED = ROOT / "tests" / "fixtures" / "lldp" / "example-miswired"


@pytest.fixture(autouse=True)
def prerequisites() -> None:
    require(chromium() is not None, "Debian's chromium (make deps)")
    require(shutil.which("dot") is not None, "graphviz's dot (make deps)")


def test_cabling_report_loads_clean_and_shows_the_faults_and_the_picture(tmp_path: Path) -> None:
    report = tmp_path / "cabling.html"
    result = fabric("cabling", ROOT / "inventories" / "example", "--from", MISWIRED, "-f", "html", "-o", report)
    assert result.returncode == 1, result.stderr
    loaded = load(report)
    (tmp_path / "cabling.png").write_bytes(loaded.png)  # looked at by hand: docs/img/cabling-miswired.png
    assert loaded.errors == []
    assert loaded.text > 300  # the numbered faults and the counts, as text
    assert loaded.width <= 1280, loaded.width  # the fault lines wrap in the window (they ran to 1,450 px)
    [(width, height)] = loaded.svg
    assert width > 600 and height > 300, loaded.svg
    assert loaded.height >= height and loaded.png.startswith(b"\x89PNG")
