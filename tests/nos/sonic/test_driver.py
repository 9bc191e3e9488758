"""The SONiC driver's diff of a running CONFIG_DB against the intent, as an apply reads it several times."""

from __future__ import annotations

import json

import pytest

from fabric.design.derive import derive
from fabric.model.load import load
from fabric.nos.sonic.driver import SonicDriver
from fabric.render import render_switch
from fabric.targets.base import TargetError
from tests.conftest import ROOT

RUNNING = ROOT / "tests" / "fixtures" / "running" / "sonic"


def test_the_same_running_config_is_diffed_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """An apply diffs the running CONFIG_DB in its plan, again before the transaction and in `begin`: the same text
    is diffed once, with the notes it gave; another text, or one whose diff failed, is diffed again."""
    fabric = derive(load(ROOT / "inventories" / "sonic-example"))
    sw = fabric.switches["leaf-su1-r1"]
    drv = SonicDriver(None, "leaf-su1-r1", render_switch(sw, fabric)["config_db.json"])
    calls: list[int] = []
    real = drv.owned_scope
    monkeypatch.setattr(drv, "owned_scope", lambda *a: calls.append(1) or real(*a))
    base = json.loads((RUNNING / f"{sw.platform}.json").read_text())
    text = json.dumps(base, sort_keys=True)
    first = drv.diff_of(text)
    again = drv.diff_of(text)
    assert (first.changes, first.notes) == (again.changes, again.notes) and not first.empty and calls == [1]
    other = json.dumps({**base, "DEVICE_METADATA": {"localhost": {**base["DEVICE_METADATA"]["localhost"],
                                                                   "hostname": "other"}}}, sort_keys=True)
    assert drv.diff_of(other).changes != first.changes and calls == [1, 1]
    assert drv.diff_of(text).changes == first.changes and calls == [1, 1, 1]
    monkeypatch.setattr(drv, "owned_scope", lambda *a: (_ for _ in ()).throw(TargetError("refused")))
    with pytest.raises(TargetError):
        drv.diff_of(other)
    with pytest.raises(TargetError):
        drv.diff_of(text)  # the failed diff kept nothing: diffed again
