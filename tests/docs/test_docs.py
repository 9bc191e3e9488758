"""The reference pages made from the code (tools/docs_reference.py) are current, and every inventory key has a
description: a new field without one, or a rule or check the pages do not have yet, fails here."""

from __future__ import annotations

import subprocess
import sys

from tests.support.docs import ROOT


def test_the_reference_pages_are_what_the_code_makes() -> None:
    p = subprocess.run([sys.executable, str(ROOT / "tools" / "docs_reference.py"), "--check"], capture_output=True,
                       text=True, timeout=120)
    assert p.returncode == 0, p.stderr


def test_an_inventory_key_without_a_description_is_named() -> None:
    sys.path.insert(0, str(ROOT / "tools"))
    try:
        import docs_reference
    finally:
        sys.path.remove(str(ROOT / "tools"))
    section = {"properties": {"rails": {"type": "integer", "description": "rails"},
                              "names": {"$ref": "#/$defs/Names"}}}
    defs = {"Names": {"title": "Names", "properties": {"leaf": {"type": "string"}}}}
    missing: list[str] = []
    rows = docs_reference._rows(section, defs, "topology.", missing)
    assert missing == ["topology.names", "topology.names.leaf"]
    assert rows[0] == "| `topology.rails` | integer |  | rails |"


def test_every_page_is_in_the_site() -> None:
    """mkdocs' strict build fails on a page left out of the nav (`make docs`); this says which, without mkdocs."""
    from tests.support.docs import pages

    listed = {p.relative_to(ROOT / "docs").as_posix() for p in pages()[1:]}
    on_disk = {p.relative_to(ROOT / "docs").as_posix() for p in (ROOT / "docs").rglob("*.md")}
    assert on_disk == listed
