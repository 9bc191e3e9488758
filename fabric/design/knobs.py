"""The QoS knobs whose value a device can be checked on one by one: each declared once, with the name the
policy gives it (`qos.<group>.<key>`), the field of its fact (fabric.design.intent), how a finding names it and
its unit. `fabric explain` finds a fact's origin through it (fabric.explain), `fabric lint --configs` compares a
saved config with the policy through it (fabric.lint.rules.qos: RF104 ECN, RF106 watchdog), and the requested
beside effective values per NOS are listed through it (fabric.design.effective).

A NOS's configs parser records what a config sets under the knob's `key` (fabric.lint.configs.model); its
renderer writes the fact under the NOS's own name (fabric/nos/<nos>/render.py)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Knob:
    key: str  # the policy's name: qos.pfc_watchdog.<key>, qos.ecn.<tc>.<key>
    fact: str  # the field of the fact: WatchdogFacts.<fact>, EcnFacts.<fact>
    what: str  # how a finding names it
    unit: str = ""  # ms, B, %; "" for a word or a count

    def text(self, value: object) -> str:
        """The value with its unit, as findings and `explain effective` print it ('200 ms', '150,000 B')."""
        if not self.unit or not isinstance(value, int):
            return str(value)
        return f"{value:,} {self.unit}" if self.unit != "ms" else f"{value} ms"


WATCHDOG: tuple[Knob, ...] = (
    Knob("detection", "detection_ms", "detection time", "ms"),
    Knob("restoration", "restoration_ms", "restoration time", "ms"),
    Knob("action", "action", "action"),
    Knob("poll_interval", "poll_interval_ms", "poll interval", "ms"),
    Knob("robustness", "robustness", "robustness"),
)
ECN: tuple[Knob, ...] = (
    Knob("min_bytes", "min_bytes", "min threshold", "B"),
    Knob("max_bytes", "max_bytes", "max threshold", "B"),
    Knob("probability", "probability", "mark probability", "%"),
)
WATCHDOG_BY_FACT = {k.fact: k for k in WATCHDOG}
ECN_BY_FACT = {k.fact: k for k in ECN}
