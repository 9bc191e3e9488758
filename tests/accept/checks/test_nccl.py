"""The NCCL check's judgement (`judge_run`, `nccl_verdict`): pure functions of what the launched runs printed, one
row per case. `nccl_all_reduce_2node_h200_v2.18_format.txt` is a real 2-node H200 all_reduce_perf output
(tests/fixtures/samples, its first line names its source); the failure and `-J` JSON files are synthetic, written as
nccl-tests prints them (tests/fixtures/samples/README.md)."""

from __future__ import annotations

from pathlib import Path

import pytest

from fabric.accept.checks.nccl import NcclInput, judge_run, nccl_verdict
from fabric.accept.launchers import RunOutput
from fabric.accept.results import Measurement

SAMPLES = Path(__file__).resolve().parents[2] / "fixtures" / "samples"
H200 = (SAMPLES / "nccl_all_reduce_2node_h200_v2.18_format.txt").read_text()
FAILED = (SAMPLES / "extra_nccl_test_failure.txt").read_text()
JSON = (SAMPLES / "extra_nccl_all_reduce_2node.json").read_text()

RUNS = [  # what a run printed, its hosts, the line-rate busbw (GB/s) → value, threshold, ok, how the detail starts
    pytest.param(RunOutput(text=H200), ["a", "b"], 400.0, 485.01, 360.0, True, "text; avg line 178.222 GB/s",
                 id="h200-above-0.9-of-line-rate"),
    pytest.param(RunOutput(text=H200), ["a", "b"], 600.0, 485.01, 540.0, False, "text; avg line 178.222 GB/s",
                 id="h200-below-0.9-of-line-rate"),
    pytest.param(RunOutput(text=H200, json=JSON), ["a", "b"], 400.0, 485.01, 360.0, True, "JSON; avg line",
                 id="json-preferred"),
    pytest.param(RunOutput(text=FAILED), ["a", "b"], 400.0, None, 360.0, False, "pair-0:11: nccl.rows: expected",
                 id="test-failure-located"),
    pytest.param(RunOutput(text="", error="mpirun: exit 1"), ["a", "b", "c"], 400.0, None, 360.0, False,
                 "mpirun: exit 1", id="launch-failed"),
]


@pytest.mark.parametrize(("got", "hosts", "line_rate", "value", "threshold", "ok", "detail"), RUNS)
def test_judge_run(got: RunOutput, hosts: list[str], line_rate: float, value: float | None, threshold: float,
                   ok: bool, detail: str) -> None:
    m = judge_run(got, "pair-0", hosts, line_rate, NcclInput())
    assert (m.value, m.threshold, m.ok, m.unit) == (value, threshold, ok, "GB/s")
    assert m.detail.startswith(detail), m.detail
    assert (m.src, m.dst) == (hosts[0], hosts[1] if len(hosts) == 2 else f"{len(hosts)} hosts")


def _m(value: float | None, ok: bool, src: str = "a", dst: str = "b", detail: str = "") -> Measurement:
    return Measurement(value=value, unit="GB/s", threshold=360.0, ok=ok, src=src, dst=dst, detail=detail)


VERDICTS = [  # the runs' measurements, how many largest sizes are judged → status, message
    pytest.param([_m(485.01, True), _m(401.5, True, "a", "4 hosts")], 2, "pass",
                 "2 runs; lowest busbw 401.5 GB/s at the largest sizes", id="all-pass"),
    pytest.param([_m(485.01, True), _m(120.0, False, "c", "d"), _m(None, False, "a", "4 hosts", "mpirun: exit 1")], 2,
                 "fail", "Expected busbw ≥ 360 GB/s at the 2 largest sizes. Actual: 120 GB/s (c, d)",
                 id="the-first-failure-named"),
    pytest.param([_m(None, False, "a", "4 hosts", "mpirun: exit 1")], 3, "fail",
                 "Expected busbw ≥ 360 GB/s at the 3 largest sizes. Actual: mpirun: exit 1 (a, 4 hosts)",
                 id="nothing-measured"),
]


@pytest.mark.parametrize(("ms", "largest", "status", "message"), VERDICTS)
def test_nccl_verdict(ms: list[Measurement], largest: int, status: str, message: str) -> None:
    assert nccl_verdict(ms, largest) == (status, message)
