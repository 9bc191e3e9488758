"""What a live NVUE plan reads of every switch, `nv config show -o json`: read once by the JSON reader, not by the
YAML loaders (they cost ten times as much, and a plan of 1,792 switches reads 1,792 of these), and a reply that is
not such JSON still one located problem."""

from __future__ import annotations

import json
import time

import pytest

from fabric.replies import ReplyError
from tests.conftest import ROOT

LEAF = "leaf-su1-r1"


def _switch():
    from fabric.access import InventorySite
    from fabric.design.derive import derive
    from fabric.model.inventory import Access
    from fabric.model.load import load

    site = InventorySite(derive(load(ROOT / "inventories" / "h100-400g")), Access(known_hosts=__file__))
    return site.switch(LEAF)


def _reply(tree: dict) -> str:
    """The applied tree as the switch prints `nv config show -o json` (tests.standins.nvue: a header and a set)."""
    return json.dumps([{"header": {"model": "SN5600"}}, {"set": tree}], indent=2, sort_keys=True)


def test_a_json_reply_is_read_and_diffed_in_a_few_cpu_milliseconds() -> None:
    from fabric.nos.nvue.driver import applied_reply, load_running
    from fabric.targets import driver

    ep = _switch()
    text = _reply(load_running(ep.intended))
    drv = driver(ep.target, None, ep.device, ep.intended, options=ep.options)
    assert applied_reply(text) == load_running(ep.intended) and drv.diff_of(text).empty
    runs = 10
    t0 = time.process_time()
    for _ in range(runs):
        applied_reply(text)
        drv.diff_of(text)
    per_switch = (time.process_time() - t0) / runs
    assert per_switch < 0.008, f"{per_switch * 1000:.1f} CPU-ms"  # 3 here; the YAML loaders took 18


@pytest.mark.parametrize(("text", "found"), [
    ('[{"set": {"system": {"hostname": "a", "hostname": "b"}}}]', "duplicate key"),
    ('[{"set": {"interface": {"swp1": {"link": {"mtu": NaN}}}}}]', ""),
    ("[" * 300 + "]" * 300, "levels"),
])
def test_a_reply_that_is_not_such_json_is_still_one_located_problem(text: str, found: str) -> None:
    from fabric.nos.nvue.driver import applied_reply

    try:
        tree = applied_reply(text)
    except ReplyError as exc:
        assert found in str(exc) and "line" in str(exc), str(exc)
    else:  # NaN: YAML reads it as a word, as the saved config's reader does
        assert not found and tree["interface"]["swp1"]["link"]["mtu"] == "NaN"
