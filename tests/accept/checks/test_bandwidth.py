"""The bandwidth checks' judgement (`judge_bandwidth`): a pure function of what the tool measured, one row per case.

The measured values are what the real parser reads from real ib_write_bw client outputs (tests/fixtures/samples,
each file's first line names its source): 98.02 Gb/s (a bidirectional `-D 5 --report_gbits` run) and 83.75 Gb/s (an
`-a -F --report_gbits` run)."""

from __future__ import annotations

from pathlib import Path

import pytest

from fabric.accept.checks.bandwidth import judge_bandwidth
from fabric.accept.results import Measurement
from fabric.accept.tools import TOOLS

SAMPLES = Path(__file__).resolve().parents[2] / "fixtures" / "samples"
TOOL = TOOLS["ib_write_bw"](size=1 << 20, qps=4, rdma_cm=False)  # type: ignore[call-arg]
BIDIR = TOOL.value((SAMPLES / "ib_write_bw_client_bidir_duration_newheader.txt").read_text(), "")
SWEEP = TOOL.value((SAMPLES / "ib_write_bw_client_all_sizes_report_gbits.txt").read_text(), "")
REFUSED = Measurement(rail=2, src="h3", dst="h4", unit="Gb/s", tool="ib_write_bw", ok=False,
                      detail="no result: Couldn't connect to 10.1.2.4:18517")


def measured(rail: int, src: str, dst: str, value: float) -> Measurement:
    """A measurement as `measure_links` returns it before judgement (no threshold)."""
    return Measurement(rail=rail, src=src, dst=dst, value=value, unit="Gb/s", tool="ib_write_bw")


CASES = [  # measurements, thresholds per rail → status, message, failing rails with their hosts, ok per measurement
    pytest.param([measured(1, "h1", "h2", BIDIR), measured(1, "h2", "h1", SWEEP)], {1: 80.0},
                 "pass", "2 tests ≥ threshold; lowest 83.75 Gb/s (h2→h1 rail 1)", {}, [True, True], id="all-pass"),
    pytest.param([measured(1, "h1", "h2", BIDIR), measured(2, "h3", "h4", SWEEP), measured(2, "h4", "h3", BIDIR)],
                 {1: 80.0, 2: 90.0}, "fail",
                 "Expected ≥ 90 Gb/s on every rail and direction. Actual: 1/3 below, worst h3→h4 rail 2 83.75 Gb/s",
                 {2: ["h3", "h4"]}, [True, False, True], id="one-rail-below-its-own-threshold"),
    pytest.param([measured(1, "h1", "h2", SWEEP), REFUSED, measured(2, "h4", "h3", BIDIR)], {1: 90.0, 2: 90.0}, "fail",
                 "Expected ≥ 90 Gb/s on every rail and direction. Actual: 2/3 below, worst h3→h4 rail 2 "
                 "no result: Couldn't connect to 10.1.2.4:18517", {1: ["h1", "h2"], 2: ["h3", "h4"]},
                 [False, False, True], id="nothing-measured-is-the-worst"),
    pytest.param([measured(1, "h1", "h2", 90.0)], {1: 90.0}, "pass",
                 "1 tests ≥ threshold; lowest 90 Gb/s (h1→h2 rail 1)", {}, [True], id="at-the-threshold-passes"),
]


@pytest.mark.parametrize(("ms", "thresholds", "status", "message", "failing", "oks"), CASES)
def test_judge_bandwidth(ms: list[Measurement], thresholds: dict[int, float], status: str, message: str,
                         failing: dict[int, list[str]], oks: list[bool]) -> None:
    before = [m.model_copy() for m in ms]
    judged = judge_bandwidth(ms, thresholds, TOOL.unit)
    assert (judged.status, judged.message, judged.failing) == (status, message, failing)
    assert [m.ok for m in judged.measurements] == oks
    assert [m.threshold for m in judged.measurements] == [thresholds[m.rail or 0] for m in ms]
    assert ms == before  # judged copies: what was collected stays as it was
