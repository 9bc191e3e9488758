"""Host and switch replies of a wrong shape or with absurd numbers (found by the reply fuzz family):
a located InputError from a parser, no counters (never an exception) from a switch counter reader."""

from __future__ import annotations

import json

import pytest

from fabric.errors import InputError
from fabric.parsers import parse_iperf3, parse_nccl, parse_nccl_json, parse_perftest_json, switch_counters
from fabric.parsers.frr import route_widths
from fabric.parsers.iproute import port_counters, queue_counters
from fabric.replies import json_reply

NCCL_ROW = "#  size count type redop root time algbw busbw #wrong time algbw busbw #wrong\n" \
           "  8388608  2097152  float  sum  -1  1e999  80.00  150.00  0  99.0  80.0  150.0  0\n"


def test_a_number_past_float_range_is_not_a_number() -> None:
    with pytest.raises(InputError):  # 1e999 was float inf, then int(inf) raised OverflowError
        parse_nccl(NCCL_ROW, "nccl.txt")


@pytest.mark.parametrize("doc", [
    '{"results": {"MsgSize": ' + "9" * 5000 + ', "n_iterations": 5, "BW_average": 1}}',  # past 4,300 digits
    '{"results": {"MsgSize": 1e999, "n_iterations": 5, "BW_average": 1}}',
])
def test_perftest_json_absurd_numbers(doc: str) -> None:
    with pytest.raises(InputError) as exc:
        parse_perftest_json(doc, "bw.json")
    assert str(exc.value.problems[0]).startswith("bw.json")


@pytest.mark.parametrize("doc", [
    {"results": [1]}, {"results": [{"size": 8, "in_place": {"alg_bw": 1, "bus_bw": 1}}], "config": [1]},
    {"results": [{"size": 8, "in_place": {"alg_bw": 1, "bus_bw": 1}}],
     "config": {"devices": [{"rank": 0, "pid": 1e999}]}},
    {"results": [], "out_of_bounds": [1]},
])
def test_nccl_json_of_another_shape(doc: dict) -> None:
    with pytest.raises(InputError):
        parse_nccl_json(json.dumps(doc), "nccl.json")


def test_iperf3_json_deep() -> None:
    with pytest.raises(InputError):
        parse_iperf3("{" + '"a":[' * 100_000, "iperf3.json")


@pytest.mark.parametrize("reply", [[], 1, "x", {"egress-queue-stats": []}, {"egress-queue-stats": {"3": 5}},
                                   {"pfc-stats": {"3": [1]}}, {"port-stats": {"tx-stats": 7}}])
def test_switch_counters_of_another_shape(reply: object) -> None:
    assert switch_counters.nvue("swp1", reply, reply) in ({}, {"swp1": {"queue:3:drops": 0}})  # type: ignore[arg-type]
    assert switch_counters.eos(reply, reply, reply, reply) == {}  # type: ignore[arg-type]
    assert switch_counters.sonic(reply, reply, reply, reply) == {}  # type: ignore[arg-type]
    assert switch_counters.eos_route_widths(reply) == {}  # type: ignore[arg-type]
    assert route_widths({"10.0.0.0/24": [{"selected": True, "nexthops": reply}]}) == {"10.0.0.0/24": 0}


def test_counter_values_that_are_no_counters() -> None:
    """Superscript digits pass str.isdigit() but not int(); a 5,000-digit int cannot be printed."""
    qos = {"egress-queue-stats": {"3": {"tx-bytes": "²", "tx-frames": 10**5000, "tx-uc-buffer-discards": "1,000"}}}
    assert switch_counters.nvue("swp1", qos, {}) == {"swp1": {"queue:3:drops": 1000}}


def test_tc_and_link_replies_of_another_shape() -> None:
    assert queue_counters("", [{"dev": "swp1", "kind": "red", "parent": "1:zz", "xstats": []}], "swp1") == {}
    assert queue_counters("", [{"dev": "swp1", "kind": "red", "parent": "1:5", "marked": 1, "drops": "x"}],
                          "swp1") == {}
    assert port_counters('{"swp1": 1}\n@@qdisc\n[]') == {}
    with pytest.raises(ValueError):  # what the drivers turn into "not readable"
        port_counters("[" * 100_000)
    with pytest.raises(ValueError):
        json_reply("{" + '"a":[' * 100_000, "a JSON reply")
