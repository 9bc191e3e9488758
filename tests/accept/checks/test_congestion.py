"""The incast check's judgement on a real VM-lab round (tests/fixtures/netstat/SOURCE.md: the leaf port's `tc -s`
before and after a 2-sender incast into gpu-su1-01, 73 CE marks): a sender below its fair share is a fault only
where it is slow alone too."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pytest

from fabric.accept import counters as cn
from fabric.accept.checks import congestion
from fabric.accept.checks.base import Context
from fabric.accept.checks.congestion import Incast, IncastInput
from fabric.accept.results import Measurement
from fabric.design.derive import derive
from fabric.model.load import load
from fabric.parsers.iproute import queue_counters

ROOT = Path(__file__).resolve().parents[3]
FX = ROOT / "tests" / "fixtures" / "netstat"
RECEIVER, SENDERS = "gpu-su1-01", ["gpu-su1-02", "gpu-su1-03"]
FLOOR = 0.016  # the VM lab's aggregate floor: 0.8 × its 20 Mb/s port


def _snap(tag: str) -> cn.Snapshot:
    port = queue_counters((FX / f"incast-leaf-{tag}-class-swp1.txt").read_text(),
                          json.loads((FX / f"incast-leaf-{tag}-qdisc.json").read_text()), "swp1")
    return {"leaf-su1-r1": {"swp1": port}}


def _judge(alone_gbps: float | None) -> tuple[list[Measurement], list[str], list]:
    """The round as the VM measured it (17.9 and 1.44 Mb/s), the slow sender measured alone at `alone_gbps`."""
    fabric = derive(load(ROOT / "inventories" / "example"))
    got = [Measurement(rail=1, src=s, dst=RECEIVER, value=v, unit="Gb/s", tool="iperf3")
           for s, v in zip(SENDERS, [0.0179, 0.00144], strict=True)]
    alone = {} if alone_gbps is None else {SENDERS[1]: Measurement(rail=1, src=SENDERS[1], dst=RECEIVER,
                                                                     value=alone_gbps, unit="Gb/s", tool="iperf3")}
    inputs = IncastInput(threshold_gbps=FLOOR)
    problems: list[str] = []
    locations: list = []
    d = cn.delta(_snap("fault-before"), _snap("fault-after"))
    ms = Incast(inputs)._judge(fabric, d, inputs, 1, RECEIVER, SENDERS, got, problems, locations, alone)
    return ms, problems, locations


@pytest.mark.parametrize("alone", [0.0198, 0.0039, None])
def test_a_sender_below_its_share_is_located_only_where_its_path_is_slow_alone(alone: float | None) -> None:
    """Alone at the port's rate (0.0198 Gb/s ≥ 0.016): the share it got is its congestion control's, reported in its
    detail, not failed, not located. Alone at 0.0039 (a rail shaped to 4 Mb/s), or not measured alone: the located
    fault, its leaf port named. The receiver port's 73 CE marks are judged either way."""
    ms, problems, locations = _judge(alone)
    slow = next(m for m in ms if m.src == SENDERS[1] and m.unit == "Gb/s")
    marks = next(m for m in ms if m.unit == "CE-marked packets")
    assert marks.value == 73 and marks.ok
    if alone == 0.0198:
        assert slow.ok and not problems and not locations, problems
        assert "alone 0.0198 Gb/s ≥ 0.016: its path carries the port's rate" in slow.detail, slow.detail
    else:
        assert not slow.ok and [loc.hosts for loc in locations] == [[SENDERS[1]]], problems
        assert "(its port leaf-su1-r1:swp3)" in problems[0]
        assert ("alone 0.0039 Gb/s at best of 2 runs (< 0.016)" in problems[0]) == (alone is not None), problems[0]


@pytest.mark.parametrize(("runs", "kept", "measured"), [([0.003, 0.0195], 0.0195, 2), ([0.0198], 0.0198, 1),
                                                         ([0.003, 0.0039], 0.0039, 2)])
def test_a_slow_sender_alone_is_measured_again_once_where_its_first_run_is_below_the_floor(
        monkeypatch: pytest.MonkeyPatch, runs: list[float], kept: float, measured: int) -> None:
    """A sender alone at 0.003 Gb/s (a run an emulated host starved of CPU: the VM lab under the whole suite) and
    then at the port's rate is judged by its better run; one at the floor is not measured again; one below it twice
    keeps its best, and the judgement says so. The slow sender alone is measured at most twice, the fair one never."""
    fabric = derive(load(ROOT / "inventories" / "example"))
    calls: list[tuple[str, str]] = []

    def measure(site, tool, links, **kw) -> list[Measurement]:
        [(src, dst)] = links
        calls.append((src.host, dst.host))
        return [Measurement(rail=1, src=src.host, dst=dst.host, value=runs[len(calls) - 1], unit="Gb/s")]

    monkeypatch.setattr(congestion, "measure_links", measure)
    got = [Measurement(rail=1, src=s, dst=RECEIVER, value=v, unit="Gb/s", tool="iperf3")
           for s, v in zip(SENDERS, [0.0179, 0.00144], strict=True)]
    inputs = IncastInput(threshold_gbps=FLOOR)
    alone = Incast(inputs)._alone(Context(site=SimpleNamespace(fabric=fabric)), congestion._tool("iperf3", 1), 1,
                                  RECEIVER, got)
    assert calls == [(SENDERS[1], RECEIVER)] * measured and alone[SENDERS[1]].value == kept, (calls, alone)
