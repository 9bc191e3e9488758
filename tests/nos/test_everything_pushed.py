"""Everything rendered is pushed: for every row of the NOS table, a switch of that NOS is rendered from a
shipped inventory and every file it gets is applied by the row's driver — given the rendered files the way the
push gives them (fabric.access.InventorySite) — or declared in the row's `not_pushed` with a reason. A new NOS is
covered by this test as soon as it is in the table and an inventory has a switch of it."""

from __future__ import annotations

import pytest

from fabric.design.derive import derive
from fabric.model.load import load
from fabric.nos import NOS
from fabric.render import render_switch
from fabric.targets import driver
from tests.conftest import ROOT


def _switch_of(nos: str):
    for inv in sorted((ROOT / "inventories").iterdir()):
        if f"target: {nos}" in (inv / "fabric.yaml").read_text():
            fabric = derive(load(inv))
            return fabric, next(sw for sw in fabric.switches.values() if sw.target == nos)
    raise AssertionError(f"no inventory under inventories/ has a {nos} switch: add one")


@pytest.mark.parametrize("nos", sorted(NOS))
def test_every_rendered_file_is_applied_or_declared_not_pushed(nos: str) -> None:
    row = NOS[nos]
    fabric, sw = _switch_of(nos)
    files = render_switch(sw, fabric)
    assert set(files) == set(row.files), "the row's `files` are what the render writes"
    not_pushed = dict(row.not_pushed)
    assert all(why.strip() for why in not_pushed.values()), "every file not pushed says why"
    drv = driver(nos, None, sw.name, files[row.intended],
                 options={"files": {n: t for n, t in files.items() if n != row.intended}})
    pushed = drv.pushed()
    assert not pushed & set(not_pushed), "a file is either pushed or declared not pushed"
    assert set(files) - set(not_pushed) <= pushed, f"rendered, never applied: {sorted(set(files) - pushed)}"
    assert row.intended in pushed
