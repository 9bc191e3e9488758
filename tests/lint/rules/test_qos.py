"""Lint rules that judge a switch once per shape or through C loops — RF111 its NOS-dependent settings once
per switch shape (the NOS, the watchdog facts, the MTU, whether a port runs the watchdog, how many run adaptive
routing and where the inventory sets it), RF402 no port where every speed of the switch supports adaptive routing —
find what the rules as they read before (tests/oracles/lint_qos.py) found, on every example and fixture inventory
(SONiC, NVUE, EOS and Linux/FRR switches, a written PFC watchdog, waivers), each changed in the ways
tests/lint/rules/test_rules.py changes them and in the values these rules read, switch by switch. (RF301, RF302 and
RF304, with a shortcut for the usual fabric, are held to their earlier code by tests/lint/rules/test_rules.py.)"""

from __future__ import annotations

import dataclasses

import pytest

from fabric.lint.context import Context
from fabric.lint.core import RULES
from fabric.lint.rules import all_rules
from fabric.model.load import load
from tests.lint.rules.test_rules import INVENTORIES, MUTATIONS, assert_rules_find_what_the_oracle_finds
from tests.oracles.lint_qos import REFERENCE


# -- changes, switch by switch, of what RF111 reads ---------------------------------------------------------------
def _per_switch(ctx: Context) -> None:
    for i, sw in enumerate(ctx.intent.switches.values()):
        if i % 4 == 1 and sw.ports:  # no watchdog on this switch's ports
            for p in sw.ports:
                p.watchdog = False
        if i % 4 == 2:  # another MTU on this one
            ctx.intent.switches[sw.name] = sw.model_copy(update={"mtu": sw.mtu - 2})
        if i % 5 == 3 and sw.ports:  # AR on one more port, at a speed the platform may not support
            sw.ports[-1].adaptive_routing = True
            sw.ports[-1].speed = 100
        if i % 6 == 5 and sw.ports:  # a port without headroom, one lossy, one with a larger headroom
            sw.ports[0].headroom = None
            sw.ports[-1].lossless = False
            if sw.ports[1:2] and sw.ports[1].headroom is not None:
                sw.ports[1].headroom = sw.ports[1].headroom.model_copy(update={"size": sw.buffer_bytes})
        if i % 7 == 6:  # another watchdog object (the same values) and another target
            ctx.intent.switches[sw.name] = sw.model_copy(update={
                "qos": sw.qos.model_copy(update={"watchdog": dataclasses.replace(sw.qos.watchdog)
                                                 if dataclasses.is_dataclass(sw.qos.watchdog)
                                                 else (sw.qos.watchdog.model_copy() if sw.qos.watchdog else None)}),
                "target": "eos" if sw.target != "eos" else "nvue"})


CHANGES = {**MUTATIONS, "per-switch": _per_switch}


@pytest.fixture(scope="module", params=INVENTORIES, ids=lambda p: p.name)
def loaded(request: pytest.FixtureRequest):
    return load(request.param)


@pytest.mark.parametrize("change", list(CHANGES))
def test_rules_find_what_they_found_before(loaded, change: str) -> None:
    ctx = Context(loaded)
    CHANGES[change](ctx)
    assert_rules_find_what_the_oracle_finds(ctx, REFERENCE, change)


@pytest.mark.parametrize("rule_id", ["RF111", "RF402"])
def test_the_changes_reach_the_rules(rule_id: str) -> None:
    """Each rule finds something on some inventory changed switch by switch, and other findings than unchanged."""
    found = {}
    for inv in INVENTORIES:
        for change in ("as-is", "per-switch"):
            ctx = Context(load(inv))
            CHANGES[change](ctx)
            all_rules()
            found[(inv.name, change)] = {f.message for f in RULES[rule_id].check(ctx)}
    assert any(found[(i.name, "per-switch")] for i in INVENTORIES)
    assert any(found[(i.name, "per-switch")] != found[(i.name, "as-is")] for i in INVENTORIES)
