"""Shared fixtures: inventories written to tmp_path, and a CI guard for prerequisites."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "inventories" / "example"
IN_CI = os.environ.get("CI", "").lower() in ("1", "true", "yes")


def require(condition: bool, what: str) -> None:
    """Skip when a prerequisite is missing on a laptop; fail in CI, where it must exist."""
    if not condition:
        if IN_CI:
            pytest.fail(f"prerequisite missing in CI: {what}")
        pytest.skip(f"prerequisite missing: {what}")


@pytest.fixture
def example_copy(tmp_path: Path) -> Path:
    """A writable copy of inventories/example."""
    dst = tmp_path / "example"
    shutil.copytree(EXAMPLE, dst)
    return dst
