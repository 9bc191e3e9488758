"""Issue 27: lint RF111 judges a switch's NOS-dependent settings once per switch shape (the NOS, the watchdog facts,
the MTU, whether a port runs the watchdog, how many run adaptive routing and where the inventory sets it); its
findings equal those of the rule as it read before (kept below, verbatim) on every example and fixture inventory
(SONiC, NVUE, EOS and Linux/FRR switches, a written PFC watchdog, waivers), each changed in the ways
tests/test_lint_fast.py changes them and in the values RF111 reads, switch by switch."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator

import pytest

from fabric.lint.context import Context
from fabric.lint.core import RULES, Finding, Rule, Severity
from fabric.lint.engine import run
from fabric.lint.rules import all_rules
from fabric.model.load import load
from tests.test_lint_fast import INVENTORIES, MUTATIONS


# -- the rule as it read before -----------------------------------------------------------------------------------
def _rf111(self: Rule, ctx: Context) -> Iterator[Finding]:
    from fabric.design.effective import settings
    from fabric.nos import NOS

    hits = []
    for sw in ctx.switches:
        for s in settings(ctx.loaded, sw):
            if s.written and s.differs:  # an MTU 2 bytes short still carries the hosts' 9000, and a fabric
                # without AR still forwards (as RF402 says where the platform lacks it): warnings
                hits.append((sw.name, f"{s.key}: requested {s.requested}, {NOS[sw.target].title} runs "
                             f"{s.effective} ({s.how})", ctx.at(*s.loc), s.key,
                             self.severity if s.key.startswith("qos.") else Severity.warning))
    yield from self.grouped(hits, "switches", "switches")


# -- changes, switch by switch, of what RF111 reads ---------------------------------------------------------------
def _per_switch(ctx: Context) -> None:
    for i, sw in enumerate(ctx.intent.switches.values()):
        if i % 4 == 1 and sw.ports:  # no watchdog on this switch's ports
            for p in sw.ports:
                p.watchdog = False
        if i % 4 == 2:  # another MTU on this one
            ctx.intent.switches[sw.name] = sw.model_copy(update={"mtu": sw.mtu - 2})
        if i % 5 == 3 and sw.ports:  # AR on one more port
            sw.ports[-1].adaptive_routing = True
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
def test_rf111_finds_what_it_found_before(loaded, change: str) -> None:
    ctx = Context(loaded)
    CHANGES[change](ctx)
    all_rules()
    rule = RULES["RF111"]
    ctx.reset()
    want = sorted(set(_rf111(rule, ctx)), key=Finding.sort_key)
    ctx.reset()
    got = sorted(set(rule.check(ctx)), key=Finding.sort_key)
    assert got == want, change
    assert run(ctx, select=["RF111"]).findings == run(ctx, select=["RF111"]).findings


def test_the_changes_reach_rf111() -> None:
    """Some inventory has RF111 findings as it is and more or other ones once changed switch by switch."""
    found = {}
    for inv in INVENTORIES:
        for change in ("as-is", "per-switch"):
            ctx = Context(load(inv))
            CHANGES[change](ctx)
            all_rules()
            found[(inv.name, change)] = {f.message for f in RULES["RF111"].check(ctx)}
    assert any(found[(i.name, "as-is")] for i in INVENTORIES)
    assert any(found[(i.name, "per-switch")] != found[(i.name, "as-is")] for i in INVENTORIES)
