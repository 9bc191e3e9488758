"""`plan --running`'s quick paths give what the leaf-by-leaf diff gives.

- The NVUE driver diffs the renderer's own tree of the patch it rendered last (`nvue.render.rendered_tree`)
  instead of reading the YAML again: reading every rendered patch of every example and fixture inventory, and of a
  generated fabric, gives that tree, with keys of str only.
- A switch whose applied tree equals the intent's is `unchanged` without enumerating leaves
  (`NvueDriver.diff_of`): its diff equals the scoped leaf diff's (`device_diff(scoped(...))`), also where the
  trees are equal as Python values but not as leaves (a YAML key `1.0` equals the int 1).
- A saved file that is byte for byte the rendered patch is `unchanged` without being read
  (`NvueDriver.unchanged_text`): the full reading and diff of every rendered patch of every example and fixture
  inventory and of a generated fabric give the same empty diff; any other text is read.
- `engine.plan_saved_all` (each switch rendered then diffed, in forked workers) gives the results the serial
  plan of main gave — every switch diffed leaf by leaf against its parsed patch — on a generated fabric with some
  switches changed, added to and emptied, and on the saved NVUE running configs of tests/fixtures/running.
- What a live plan reads of every NVUE switch, `nv config show -o json`, is read once by the JSON reader, not by the
  YAML loaders (ten times the cost; a plan of 1,792 switches reads 1,792 of them), and a reply that is not such JSON
  is still one located problem.
- A live diff (`NvueDriver.diff`) gives what diffing the indented running text gives, without writing that text.
"""

from __future__ import annotations

import json
import shutil
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from fabric.access import SwitchEndpoint
from fabric.design.derive import derive
from fabric.design.intent import FabricIntent, SwitchIntent
from fabric.errors import InputError
from fabric.generate import GpuRailSpec
from fabric.generate import write as write_inventory
from fabric.model.load import load
from fabric.model.running import read_running, taken_document
from fabric.nos.nvue.driver import NvueDriver, _plain_keys, _yaml
from fabric.nos.nvue.render import render, rendered_tree
from fabric.push import engine
from fabric.render import render_switch
from fabric.replies import ReplyError
from fabric.targets import driver
from fabric.targets.base import Driver
from fabric.targets.owned import tree_leaves
from fabric.targets.treediff import _merge
from tests.conftest import ROOT
from tests.support.timing import cpu_seconds

NVUE_INVENTORIES = [p for p in sorted((ROOT / "inventories").iterdir()) + sorted(
    (ROOT / "tests" / "fixtures" / "inventories").iterdir())
    if p.is_dir() and "nvue" in (p / "fabric.yaml").read_text()]


@pytest.fixture(scope="module")
def generated(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("gen") / "g"
    write_inventory(GpuRailSpec(gpus=1024, hosts_per_su=16), out)
    return out


def _read_patch(text: str) -> dict:
    """The intended tree as read from the patch's YAML (main's way)."""
    data, _ = _yaml(text)
    tree: dict = {}
    for op in data:
        _merge(tree, op.get("set") or {})
    return tree


def _str_keys(tree: dict) -> bool:
    return all(type(k) is str and (not isinstance(v, dict) or _str_keys(v)) for k, v in tree.items())


def _nvue_switches(generated: Path) -> Iterator[tuple[SwitchIntent, FabricIntent]]:
    """Every NVUE switch of the NVUE inventories and of the generated fabric, with its fabric."""
    assert NVUE_INVENTORIES
    for inv in [*NVUE_INVENTORIES, generated]:
        fabric = derive(load(inv))
        yield from ((sw, fabric) for sw in fabric.switches.values() if sw.target == "nvue")


def test_the_rendered_tree_is_what_reading_its_patch_gives(generated: Path) -> None:
    seen = 0
    for sw, fabric in _nvue_switches(generated):
        patch = render(sw, fabric)["nvue-patch.yaml"]
        tree = rendered_tree(patch)
        assert tree is not None and _str_keys(tree), sw.name
        assert tree == _read_patch(patch) and tree_leaves(tree) == tree_leaves(_read_patch(patch)), sw.name
        seen += 1
    assert rendered_tree("- set: {}\n") is None  # only the patch rendered last
    assert seen > 50


def _both(drv: NvueDriver, running: str) -> tuple[dict, dict]:
    quick = drv.diff_of(running).model_dump()
    full = drv.device_diff(drv.scoped(running)).model_dump()
    return quick, full


def test_equal_trees_give_the_leaf_diffs_answer() -> None:
    fabric = derive(load(ROOT / "inventories" / "h100-400g"))
    for sw in fabric.switches.values():
        patch = render_switch(sw, fabric)["nvue-patch.yaml"]
        drv = driver("nvue", None, sw.name, patch)
        quick, full = _both(drv, patch)
        assert quick == full and not full["changes"] and full["unmanaged"] == 0
        for manifest in ([["interface", "swp99", "type"]], None):  # an earlier apply's leaf: nothing on the device
            drv = driver("nvue", None, sw.name, patch, options={"manifest": manifest} if manifest else {})
            assert _both(drv, patch)[0] == _both(drv, patch)[1]
    # a rollback (`scope`): the recorded scope decides, never the quick path
    sw = next(iter(fabric.switches.values()))
    patch = render_switch(sw, fabric)["nvue-patch.yaml"]
    drv = driver("nvue", None, sw.name, patch, options={"scope": [["system", "hostname"]]})
    quick, full = _both(drv, patch)
    assert quick == full


def test_trees_equal_as_values_but_not_as_leaves_take_the_leaf_diff() -> None:
    intended = "- set:\n    x:\n      1: a\n      2: b\n"  # int keys
    running = "x:\n  1.0: a\n  2: b\n"  # 1.0 == 1: equal dicts, another leaf ("1.0")
    drv = driver("nvue", None, "s1", intended)
    tree, _ = _yaml(running)
    assert tree == drv._intended() and not _plain_keys(tree)
    quick, full = _both(drv, running)
    assert quick == full and full["changes"]


def test_a_saved_copy_of_the_render_is_unchanged_as_the_full_diff_says(generated: Path) -> None:
    seen = 0
    for sw, fabric in _nvue_switches(generated):
        patch = render_switch(sw, fabric, extras=False)["nvue-patch.yaml"]
        drv = driver("nvue", None, sw.name, patch)
        quick = drv.unchanged_text(patch)
        assert quick is not None and quick == drv.device_diff(drv.scoped(patch)) == drv.diff_of(patch), sw.name
        assert drv.unchanged_text(patch + "\n") is None and drv.unchanged_text(patch.replace(" ", "  ", 1)) is None
        scoped = driver("nvue", None, sw.name, patch, options={"scope": [["system", "hostname"]]})
        assert scoped.unchanged_text(patch) is None  # a rollback: the recorded scope decides
        seen += 1
    assert seen > 50


def _changed(running: Path) -> None:
    """Some switches changed: a value, a port removed, a foreign leaf added, a file emptied."""
    files = sorted(running.glob("*.yaml"))
    text = files[0].read_text()
    files[0].write_text(text.replace("mtu: 9216", "mtu: 1500", 1))
    text = files[1].read_text()
    files[1].write_text(text.replace("    interface:\n", "    interface:\n      swp77:\n        type: swp\n", 1))
    text = files[2].read_text()
    start = text.index("      swp1")
    end = text.index("\n      swp", start + 1)
    files[2].write_text(text[:start] + text[end + 1:])
    files[3].write_text("- set: {}\n")
    files[4].write_text("- set:\n    router:\n      bgp:\n        autonomous-system: 1\n")  # another ASN: an error
    files[5].unlink()


def _main_plan(inv: Path, running: Path, monkeypatch: pytest.MonkeyPatch) -> list[dict]:
    """The plan as main computed it: every endpoint rendered first (the patch read back as YAML), then diffed leaf
    by leaf (`device_diff(scoped(...))`, the base driver's `diff_of`)."""
    fabric = derive(load(inv))
    eps = [SwitchEndpoint(device=name, target=sw.target, address="192.0.2.1", device_type="x",
                          intended=render_switch(sw, fabric)["nvue-patch.yaml"])
           for name, sw in fabric.switches.items()]
    render_switch(fabric.switches[eps[0].device], fabric)  # the memo holds another switch's patch
    with monkeypatch.context() as m:
        m.setattr(NvueDriver, "diff_of", Driver.diff_of)
        m.setattr(NvueDriver, "unchanged_text", Driver.unchanged_text)
        return [engine.plan_saved(ep, running).model_dump() for ep in eps]


def _new_plan(inv: Path, running: Path, per_worker: int) -> list[dict]:
    fabric = derive(load(inv))

    def endpoint(name: str) -> SwitchEndpoint:
        sw = fabric.switches[name]
        return SwitchEndpoint(device=name, target=sw.target, address="192.0.2.1", device_type="x",
                              intended=render_switch(sw, fabric, extras=False)["nvue-patch.yaml"])

    return [r.model_dump() for r in engine.plan_saved_all(list(fabric.switches), endpoint, running,
                                                          per_worker=per_worker)]


def test_plan_saved_all_gives_mains_plan_on_a_changed_fabric(generated: Path, tmp_path: Path,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    running = tmp_path / "running"
    running.mkdir()
    fabric = derive(load(generated))
    for name, sw in fabric.switches.items():
        (running / f"{name}.yaml").write_text(render_switch(sw, fabric)["nvue-patch.yaml"])
    _changed(running)
    want = _main_plan(generated, running, monkeypatch)
    statuses = {r["status"] for r in want}
    assert {"unchanged", "changed", "no-file", "error"} <= statuses, statuses
    assert _new_plan(generated, running, per_worker=10**9) == want  # one process
    assert _new_plan(generated, running, per_worker=1) == want  # forked workers


def test_plan_saved_all_on_the_saved_running_fixtures(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    running = tmp_path / "running"
    shutil.copytree(ROOT / "tests" / "fixtures" / "running" / "nvue", running)
    inv = ROOT / "inventories" / "h100-400g"
    want = _main_plan(inv, running, monkeypatch)
    assert sum(r["status"] == "changed" for r in want) == 3
    assert _new_plan(inv, running, per_worker=1) == want


@pytest.mark.parametrize("text", ["- 5\n", "- set:\n    a: 1\n- 7\n", "- set:\n    a: 1\n- set:\n  - 1\n", "5\n",
                                  "- set: [1]\n", "- set:\n    a: 1\n"])
def test_a_file_read_without_lines_locates_its_problem_as_before(tmp_path: Path, text: str) -> None:
    """`plan --running` reads a saved NVUE file without the lines of its keys; a malformed one is still located at
    its line (read then), as `lint --configs`, which reads the lines at once, locates it."""
    path = tmp_path / "s1.yaml"
    path.write_text(text)
    answers = []
    for located in (True, False):
        try:
            read_running("nvue", path, located=located)
            answers.append(None)
        except InputError as exc:
            answers.append([(p.file, p.line, p.path, p.expected, p.found) for p in exc.problems])
        taken_document(text)  # what the driver takes
    assert answers[0] == answers[1]
    if text.startswith("- 5") or text.endswith("- 7\n"):  # the last line's item
        assert answers[1] and answers[1][0][1] == text.count("\n"), answers


JSON_LEAF = "leaf-su1-r1"


def _h100_leaf() -> SwitchEndpoint:
    from fabric.access import InventorySite
    from fabric.design.derive import derive
    from fabric.model.inventory import Access
    from fabric.model.load import load

    site = InventorySite(derive(load(ROOT / "inventories" / "h100-400g")), Access(known_hosts=__file__))
    return site.switch(JSON_LEAF)


def _json_reply(tree: dict) -> str:
    """The applied tree as the switch prints `nv config show -o json` (tests.standins.nvue: a header and a set)."""
    return json.dumps([{"header": {"model": "SN5600"}}, {"set": tree}], indent=2, sort_keys=True)


def test_a_json_reply_is_read_and_diffed_in_a_few_cpu_milliseconds() -> None:
    from fabric.nos.nvue.driver import applied_reply, load_running

    ep = _h100_leaf()
    text = _json_reply(load_running(ep.intended))
    drv = driver(ep.target, None, ep.device, ep.intended, options=ep.options)
    assert applied_reply(text) == load_running(ep.intended) and drv.diff_of(text).empty
    def read_and_diff() -> None:
        drv._last_scoped = None  # worked out anew each round, not the result kept from the last (scoped_once)
        applied_reply(text)
        drv.diff_of(text)

    per_switch = cpu_seconds(read_and_diff, rounds=5)
    # 3 here; the YAML loaders took 18 (one round under the whole suite on 2 cores took 15.9)
    assert per_switch < 0.008, f"{per_switch * 1000:.1f} CPU-ms"


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


def _live(drv: Driver, reply: str, tmp_path: Path) -> Driver:
    """`drv` reading the switch's shell through bash, whose `nv` prints `reply` (fabric.access.CommandConn)."""
    from fabric.access import CommandConn

    (tmp_path / "reply.json").write_text(reply)
    (tmp_path / "nv").write_text(f"#!/bin/sh\ncat {tmp_path / 'reply.json'}\n")
    (tmp_path / "nv").chmod(0o755)
    drv.conn = CommandConn(["env", f"PATH={tmp_path}:/usr/bin:/bin", "bash", "-c"])
    return drv


class _Answered:
    """A shell that answers every framed line (fabric.targets.shell.run) with `reply` at once: the tool's CPU alone."""

    def __init__(self, reply: str) -> None:
        self.reply = reply

    def send_command(self, line: str, **_kw: object) -> str:
        token = line.split(" __RF_BEGIN ", 1)[1].split(";", 1)[0]
        return f"__RF_BEGIN_{token}\n{self.reply}\n__RF_RC=0\n"


def test_a_live_diff_is_the_diff_of_the_running_text_without_the_indented_text(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`diff()`, what a live plan and apply read of every NVUE switch, gives `diff_of(running())` on an unchanged
    and a changed switch, without writing the applied tree out indented: that is the JSON encoder's Python half, a
    third of the CPU of reading and diffing an sn5600 leaf, half of a spine's (4.7 → 2.9 CPU-ms for this leaf)."""
    from fabric.nos.nvue.driver import load_running

    ep = _h100_leaf()
    applied = load_running(ep.intended)
    changed = json.loads(json.dumps(applied))
    changed["system"]["hostname"] = "someone-elses"
    changed["router"]["bgp"]["autonomous-system"] = applied["router"]["bgp"]["autonomous-system"]
    changed.setdefault("service", {})["ntp"] = {"mgmt": {"server": {"192.0.2.1": {}}}}
    changed["interface"].pop(sorted(k for k in changed["interface"] if k.startswith("swp"))[0])
    for tree in (applied, changed):
        drv = _live(driver(ep.target, None, ep.device, ep.intended, options=ep.options), _json_reply(tree), tmp_path)
        live, of_text = drv.diff(), drv.diff_of(drv.running())
        assert live.model_dump() == of_text.model_dump() and live.text() == of_text.text()
        assert live.empty == (tree is applied) and live.unmanaged == of_text.unmanaged
    drv = driver(ep.target, _Answered(_json_reply(applied)), ep.device, ep.intended, options=ep.options)
    python_half = json.encoder._make_iterencode  # what json.dumps runs for an indented text (C otherwise)
    monkeypatch.setattr(json.encoder, "_make_iterencode", lambda *a, **kw: pytest.fail("the Python encoder ran"))
    t0 = time.process_time()
    assert drv.diff().empty
    live = time.process_time() - t0
    monkeypatch.setattr(json.encoder, "_make_iterencode", python_half)
    t0 = time.process_time()
    assert drv.diff_of(drv.running()).empty
    assert live < 0.02 and time.process_time() - t0 < 0.05  # a few ms each: nothing read twice over


def test_an_apply_diffs_the_same_applied_tree_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """An apply diffs the applied tree in its plan, again before the transaction, and `begin` diffs the text the plan
    diffed: one leaf-by-leaf diff for them all while the switch answers the same tree; another tree is diffed anew."""
    from fabric.nos.nvue.driver import load_running

    ep = _h100_leaf()
    changed = load_running(ep.intended)
    changed["system"]["hostname"] = "someone-elses"
    drv = driver(ep.target, _Answered(_json_reply(changed)), ep.device, ep.intended, options=ep.options)
    calls: list[int] = []
    real = drv._scoped_tree
    monkeypatch.setattr(drv, "_scoped_tree", lambda tree: calls.append(1) or real(tree))
    plan, again = drv.diff(), drv.diff()
    begin = drv.scoped(json.dumps(drv._applied(), sort_keys=True))
    assert not plan.empty and plan.changes == again.changes == begin.changes and calls == [1]
    other = json.loads(json.dumps(changed))
    other["system"]["hostname"] = "another"
    assert drv.scoped(json.dumps(other, sort_keys=True)).changes != plan.changes and calls == [1, 1]
