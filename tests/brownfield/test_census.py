"""In one test: over the whole brownfield corpus (tests/fixtures/brownfield/, every target),
every change a plan makes is classified, and there are 0 foreign removals and 0 foreign modifications — no leaf
outside the owned scope differs after the change. The census (printed with `-s`) is what docs/plan-apply.md reports.

Classes: `+` a rendered setting added; `~` a setting changed old → new (a SONiC port's overlapping lossless PG
replaced by the rendered one included); `- earlier` a line an earlier apply rendered; `- contradicting` a device
setting that contradicts a rendered one, marked never rendered (apply wants --allow-unowned-removal). A SONiC
switch the pre-flight refuses, and a switch that holds an object with a name the tool gives its own (metal-stack's
peer group FABRIC), are counted as refused (nothing is touched); that metal-stack leaf, its group renamed as the
refusal asks, is planned (its `log syslog warnings` stays)."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from fabric.targets.base import TargetError
from tests.brownfield.test_plan import CASES, CORPUS, INVENTORY, NAMESAKE, SUFFIX, renamed
from tests.nos.sonic.test_brownfield import ADOPT, SWITCHES
from tests.nos.sonic.test_brownfield import _driver as _sonic_driver
from tests.nos.sonic.test_brownfield import _inventory as _sonic_inventory
from tests.push.test_plan_running import _applied, _driver, _inventory


def _classify(op: str, earlier: bool, foreign: bool) -> str:
    if op == "-":
        assert earlier or foreign, "an unmarked removal"
        return "- earlier" if earlier else "- contradicting"
    assert op in ("+", "~") and not foreign
    return op


def test_census_every_change_classified_nothing_foreign_touched(tmp_path: Path) -> None:
    runs = [(nos, sw, (CORPUS / nos / f"{sw}{SUFFIX[nos]}").read_text(),
             lambda nos=nos, sw=sw: _driver(_inventory(tmp_path, INVENTORY[nos], None), sw)) for nos, sw in CASES]
    runs += [("sonic", f"{name}:{sw}", (CORPUS / "sonic" / name).read_text(),
              lambda a=a, sw=sw: _sonic_driver(_sonic_inventory(tmp_path, *(a or ("msn2700", None))), sw))
             for name, a in ADOPT.items() for sw in SWITCHES]
    frr_leaf = lambda: _driver(_inventory(tmp_path, "example", None), "leaf-su1-r1")  # noqa: E731
    runs += [("frr", "namesake", NAMESAKE.read_text(), frr_leaf),
             ("frr", "namesake renamed", renamed(NAMESAKE.read_text()), frr_leaf)]
    census: dict[str, Counter] = {}
    for nos, what, text, make in runs:
        tally = census.setdefault(nos, Counter())
        drv = make()
        try:
            sd = drv.scoped(text)
        except TargetError as exc:
            assert (nos == "sonic" and str(exc).startswith("pre-flight: ")) or (
                what == "namesake" and "`router bgp 65101 / FABRIC` is used by" in str(exc)), (what, exc)
            tally["refused"] += 1
            continue
        tally["configs"] += 1
        for c in sd.changes:
            kind = _classify(c.op, c.earlier, c.foreign)
            tally["~ PG replaced" if kind == "~" and c.section.startswith("BUFFER_PG|") else kind] += 1
        _, before, after = _applied(drv, text)
        outside = {p for p in set(before) | set(after) if p not in sd.owned and before.get(p) != after.get(p)}
        tally["foreign removed"] += sum(1 for p in outside if p not in after)
        tally["foreign modified"] += sum(1 for p in outside if p in after)
        tally["left alone"] += sd.unmanaged
    print("\n" + "\n".join(f"{nos}: " + ", ".join(f"{k} {v}" for k, v in sorted(t.items()))
                           for nos, t in sorted(census.items())))
    assert set(census) == {"eos", "frr", "nvue", "sonic"}
    for nos, t in census.items():
        assert t["foreign removed"] == 0 and t["foreign modified"] == 0, (nos, t)
        assert t["configs"] >= 4, (nos, t)
    assert census["frr"]["configs"] == 6 and census["frr"]["refused"] == 1, census["frr"]
