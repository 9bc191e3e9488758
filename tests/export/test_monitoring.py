"""`fabric export -f prometheus` assembled (`fabric.export.monitoring.files`): the switches are grouped by the
series their NOS, release and ASIC emit once per export, and what the rules cannot see is said once, the same in
the rule file's head and on stderr."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

import fabric.export.monitoring
import fabric.export.prometheus
import fabric.export.promtests
from fabric.cli import app

ROOT = Path(__file__).resolve().parents[2]


def test_one_grouping_of_the_switches_per_export(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    real = fabric.export.prometheus.switch_groups
    calls: list[str] = []

    def counted(intent):  # type: ignore[no-untyped-def]
        calls.append(intent.name)
        return real(intent)

    for module in (fabric.export.prometheus, fabric.export.promtests, fabric.export.monitoring):
        monkeypatch.setattr(module, "switch_groups", counted, raising=False)  # every name it is reached by
    out = tmp_path / "out"
    res = CliRunner().invoke(app, ["export", str(ROOT / "inventories" / "sonic-example"), "-f", "prometheus", "-o",
                                   str(out)])
    assert res.exit_code == 0, res.output
    assert calls == ["sonic-example"]
    head = [line.removeprefix("# warning: ") for line in (out / "sonic-example.rules.yml").read_text().splitlines()
            if line.startswith("# warning: ")]
    said = [line.removeprefix("warning: ") for line in res.stderr.splitlines() if line.startswith("warning: ")]
    assert head and said == head
