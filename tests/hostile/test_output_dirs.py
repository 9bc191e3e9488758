"""Accept artefacts: a symlink planted at `-o` is refused before anything is written through it
(`accept --dry-run` wrote its launch files through it, then refused the report)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.fuzz.harness import run
from tests.hostile.helpers import EXAMPLE


@pytest.mark.parametrize("args", [["--dry-run", "--quick"],
                                  ["--render-only", "--launcher", "k8s", "--image", "registry.example/nccl:1"]])
def test_accept_refuses_a_symlinked_output_before_writing(tmp_path: Path, args: list[str]) -> None:
    target = tmp_path / "elsewhere"
    target.mkdir()
    (tmp_path / "out").symlink_to(target)
    outcome = run("accept", str(EXAMPLE), *args, "-o", str(tmp_path / "out"))
    assert outcome.rc == 2 and "found a symlink (not followed)" in outcome.stderr, outcome
    assert list(target.iterdir()) == []
