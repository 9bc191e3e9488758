"""The QoS knob declarations (fabric.design.knobs): each names a real policy field and a real fact, and one
override of each knob shows in `explain` as that override, at its file and line."""

from __future__ import annotations

from pathlib import Path

import pytest

from fabric.design.derive import derive
from fabric.design.intent import EcnFacts, WatchdogFacts
from fabric.design.knobs import ECN, WATCHDOG, Knob
from fabric.explain import explain
from fabric.model.load import load
from fabric.model.qos import EcnProfile, PfcWatchdog

VALUES = {"detection": "300ms", "restoration": "400ms", "action": "forward", "poll_interval": "50ms",
          "robustness": 5, "min_bytes": 160000, "max_bytes": 1600000, "probability": 50}


@pytest.mark.parametrize(("knob", "policy", "facts"), [(k, PfcWatchdog, WatchdogFacts) for k in WATCHDOG]
                         + [(k, EcnProfile, EcnFacts) for k in ECN], ids=lambda x: getattr(x, "key", ""))
def test_each_knob_names_a_policy_field_and_a_fact(knob: Knob, policy: type, facts: type) -> None:
    assert knob.key in policy.model_fields and knob.fact in facts.model_fields
    assert knob.key in VALUES


@pytest.mark.parametrize("knob", [*WATCHDOG, *ECN], ids=lambda k: k.key)
def test_explain_finds_the_override_of_each_knob(knob: Knob, example_copy: Path) -> None:
    group = "pfc_watchdog" if knob in WATCHDOG else "ecn:\n    3"
    indent = "    " if knob in WATCHDOG else "      "
    (example_copy / "qos.yaml").write_text(f"qos:\n  preset: nvidia-roce\n  {group}:\n{indent}{knob.key}: "
                                           f"{VALUES[knob.key]}\n")
    loaded = load(example_copy)
    leaf = derive(loaded).switches["leaf-su1-r1"]
    fact = f"qos.watchdog.{knob.fact}" if knob in WATCHDOG else f"qos.queues.3.ecn.{knob.fact}"
    [(_path, _value, origin)] = explain(loaded, leaf, fact)
    line = 4 if knob in WATCHDOG else 5
    assert origin.startswith(f"override ({example_copy}/qos.yaml:{line})"), origin


def test_knob_text_is_what_findings_print() -> None:
    detection, min_bytes, probability = WATCHDOG[0], ECN[0], ECN[2]
    assert (detection.text(200), min_bytes.text(150000), probability.text(5)) == ("200 ms", "150,000 B", "5 %")
    assert WATCHDOG[2].text("drop") == "drop"
