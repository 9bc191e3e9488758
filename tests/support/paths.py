"""Where the tests find the repository and their data, the same from every folder of tests/."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]  # the repository
TESTS = ROOT / "tests"
FIXTURES = TESTS / "fixtures"  # inputs nobody here wrote, each folder with its SOURCE.md
GOLDEN = TESTS / "golden"  # the renders the renderer tests compare with
INVENTORIES = ROOT / "inventories"  # the shipped inventories
