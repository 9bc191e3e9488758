"""`lint INV --configs DIR` on both cores after deriving: a forked process renders each switch's file to
compare it with the saved one and runs the intent's rules while this one builds the configs from the renderer's
trees (`fabric.cli.lint._split`). The same findings, problems and outputs as one process doing it all, on renders,
edited and malformed copies, a `fabric render` directory, a bad `--select`, and where the other process fails.
`lint INV` alone of a fabric as large splits the intent's rules so (`fabric.cli.lint._on_switches`, `_rules_beside`):
the same findings, outputs and exit codes as one process, with --select/--ignore, where the other processes fail,
and where a rule run on the switches alone reads the hosts.

A cold `fabric lint INV` (cache off, output not a terminal) imports neither the progress display
(rich.progress), nor what `--configs` reads configs with (fabric.lint.configs, its model and the running-config
parsers), nor multiprocessing, nor the XML writer of `--format junit`; `lint --configs`, `--format junit` and a
display on a terminal still import what they use.
"""

from __future__ import annotations

import json
import multiprocessing
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from fabric.cli import lint as cli_lint
from fabric.design.derive import derive
from fabric.errors import InputError
from fabric.fast import batch
from fabric.fast.memo import Memo
from fabric.generate import GpuRailSpec
from fabric.generate import write as write_inventory
from fabric.lint import configs as lint_configs
from fabric.lint import engine, output
from fabric.lint.core import Severity
from fabric.model.load import load
from fabric.nos.nvue.render import intended_text, intended_tree, render, rendered_tree
from tests.conftest import ROOT

INVENTORIES = [p for p in sorted((ROOT / "inventories").iterdir()) + sorted(
    (ROOT / "tests" / "fixtures" / "inventories").iterdir()) if (p / "fabric.yaml").is_file()]


@pytest.fixture(scope="module")
def generated(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("gen") / "g"
    write_inventory(GpuRailSpec(gpus=1024, hosts_per_su=16), out)
    return out


def _running(generated: Path, where: Path) -> Path:
    """Every switch's rendered patch saved as its running config, four of them edited, one foreign file."""
    running = where / "running"
    running.mkdir()
    fabric = derive(load(generated))
    for name, sw in fabric.switches.items():
        (running / f"{name}.yaml").write_text(render(sw, fabric, extras=False)["nvue-patch.yaml"])
    shutil.copy(running / f"{next(iter(fabric.switches))}.yaml", running / "unknown-switch.yaml")
    files = sorted(running.glob("leaf*.yaml"))
    files[0].write_text(files[0].read_text().replace("mtu: 9216", "mtu: 1500", 1))
    files[1].write_text(files[1].read_text().replace("    interface:\n", "    interface:\n      swp77:\n        "
                                                     "link:\n          mtu: 1400\n        type: swp\n", 1))
    files[2].write_text(files[2].read_text() + "\n")  # the same tree, another text
    files[3].write_text(files[3].read_text().replace("state: enable", "state: disable"))
    text = files[4].read_text()
    at = text.index("autonomous-system: ") + len("autonomous-system: ")
    files[4].write_text(text[:at] + "1" + text[at:])  # a public ASN
    return running


def _both(monkeypatch: pytest.MonkeyPatch, *args: object, **kw: object) -> tuple[object, object, int]:
    """run_lint in two processes (forced) and in one; how many second processes the first started."""
    started: list[object] = []
    real = batch.Beside

    def counted(fn: object) -> object:
        started.append(fn)
        return real(fn)  # type: ignore[arg-type]

    monkeypatch.setattr(batch, "Beside", counted)
    outcomes = []
    for split_min in (0, 10**9):
        monkeypatch.setattr(cli_lint, "SPLIT_MIN", split_min)
        monkeypatch.setattr(cli_lint, "SPLIT_DEVICES", split_min)
        try:
            outcomes.append(cli_lint.run_lint(*args, **kw))  # type: ignore[arg-type]
        except InputError as exc:
            outcomes.append([repr(p) for p in exc.problems])
    return outcomes[0], outcomes[1], len(started)


def _same_reports(split: object, one: object) -> None:
    assert split.model_dump() == one.model_dump()  # type: ignore[attr-defined]
    for show in (output.to_json, output.to_sarif, output.to_github, lambda r: output.to_junit(r, Severity.warning)):
        assert show(split) == show(one)


def test_split_lint_of_edited_renders_is_one_process_lint(generated: Path, tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    running = _running(generated, tmp_path)
    split, one, started = _both(monkeypatch, generated, running)
    assert started == 1
    _same_reports(split, one)
    rules = {f.rule for f in split.findings}  # type: ignore[attr-defined]
    assert {"RF302", "RF307", "RF106"} <= rules, rules  # from the configs and from the intent
    for select, ignore in ((["RF3"], None), (None, ["RF30"]), (["RF1", "RF40"], None)):
        split, one, _ = _both(monkeypatch, generated, running, select, ignore)
        _same_reports(split, one)


def test_split_lint_of_a_malformed_file_and_a_bad_select(generated: Path, tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    running = _running(generated, tmp_path)
    split, one, started = _both(monkeypatch, generated, running, ["RF9"])
    assert started == 1 and isinstance(split, list) and split == one and "--select" in str(split)
    bad = sorted(running.glob("spine*.yaml"))[0]
    bad.write_text(bad.read_text().replace("    interface:\n", "    interface: [\n", 1))
    split, one, _ = _both(monkeypatch, generated, running)
    assert isinstance(split, list) and split == one and bad.name in str(split)


def _broken(*_a: object, **_k: object) -> object:
    raise RuntimeError("broken")


def _dies(*_a: object, **_k: object) -> object:
    os._exit(3)  # in the other process: it ends without an answer


@pytest.mark.parametrize("how", ["raises", "dies"])
def test_split_lint_where_the_other_process_fails(generated: Path, tmp_path: Path, how: str,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """Its part is then done here, as without it: where its steps raise, or it ends without an answer."""
    running = _running(generated, tmp_path)

    monkeypatch.setattr(lint_configs, "rendered_same", _broken if how == "raises" else _dies)
    monkeypatch.setattr(engine, "intent_findings", _broken)
    split, one, started = _both(monkeypatch, generated, running)
    assert started == 1
    _same_reports(split, one)


def test_split_lint_of_a_file_rewritten_after_it_was_stamped(generated: Path, tmp_path: Path,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """Each process reads a rendered file itself (`fabric.lint.configs._stamped`): one rewritten after `ahead_of`
    stamped it, even with the same bytes, is not taken as the render by either (they might have read two versions),
    and the report is one process' of the file as it is now."""
    running = _running(generated, tmp_path)
    fabric = derive(load(generated))
    victim = sorted(running.glob("leaf*.yaml"))[6]
    trees = {n: (sw.target, intended_tree(sw, fabric), intended_text) for n, sw in fabric.switches.items()}
    ahead = lint_configs.ahead_of(sorted(running.iterdir()), running, {n: "nvue" for n in trees}, trees.__contains__)
    assert victim in ahead and running / "unknown-switch.yaml" not in ahead
    order = list(ahead)
    assert victim in lint_configs.same_files(order, lint_configs.rendered_same(ahead, trees.get))
    victim.write_text(victim.read_text())  # the same bytes, saved again
    os.utime(victim, ns=(1, 1))
    same = lint_configs.same_files(order, lint_configs.rendered_same(ahead, trees.get))
    assert victim not in same and sorted(running.glob("leaf*.yaml"))[7] in same

    real = lint_configs.ahead_of

    def then_edited(*args: object, **kw: object) -> object:
        stamped = real(*args, **kw)  # type: ignore[arg-type]
        victim.write_text(victim.read_text().replace("mtu: 9216", "mtu: 1500", 1))
        return stamped

    monkeypatch.setattr(lint_configs, "ahead_of", then_edited)
    split, one, started = _both(monkeypatch, generated, running)
    assert started == 1
    _same_reports(split, one)
    assert any(f.rule == "RF302" and f.file == str(victim) for f in split.findings)  # type: ignore[attr-defined]


@pytest.mark.parametrize("name", ["h100-400g", "example", "sonic-example", "eos-example"])
def test_split_lint_of_a_render_directory(name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    inv = ROOT / "inventories" / name
    out = tmp_path / "out"
    subprocess.run([str(Path(sys.executable).parent / "fabric"), "render", str(inv), "-o", str(out)], check=True,
                   capture_output=True)
    split, one, started = _both(monkeypatch, inv, out)
    assert started == 1
    _same_reports(split, one)


# -- `lint INV` alone: rules in a process once the switches are derived, others once the hosts are ---------------
EDITS = {  # findings of rules in each of the three processes (cli_lint.ON_SWITCHES, BESIDE, the others), one of them
    # waived for some of its hosts
    "qos": {"dscp_to_priority": {26: 0}},  # RF101
    "hosts": {"defaults": {"mtu": 4000, "nccl_env": {"NCCL_IB_TC": 0}},  # RF302, RF201
              "list": [{"name": "gpu-su1-01", "management": "198.18.0.1"}]},  # RF304: the first switch's
    "switching": {"neighbor": {"aging": "1200s"}},  # RF404
    "lint": {"waive": [{"rule": "RF302", "objects": ["gpu-su1-*"], "reason": "lab hosts, jumbo frames later"}]},
}


def _edited(generated: Path, where: Path) -> Path:
    """The generated inventory with EDITS deep-merged into its sections."""
    from fabric.model.qos import merge

    out = where / "inv"
    shutil.copytree(generated, out)
    sections = dict(EDITS)
    for f in sorted(out.glob("*.yaml")):
        doc = yaml.safe_load(f.read_text())
        for key in [k for k in sections if k in doc]:
            doc[key] = merge(doc[key], sections.pop(key))
        f.write_text(yaml.safe_dump(doc, sort_keys=False))
    (out / "lint.yaml").write_text(yaml.safe_dump(sections, sort_keys=False))
    return out


def test_split_plain_lint_is_one_process_lint(generated: Path, tmp_path: Path,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    inv = _edited(generated, tmp_path)
    split, one, started = _both(monkeypatch, inv, None)
    assert started == 2 and not multiprocessing.active_children()
    _same_reports(split, one)
    rules = {f.rule for f in split.findings}  # type: ignore[attr-defined]
    assert {"RF101", "RF201", "RF302", "RF304", "RF404"} <= rules, rules  # found in each of the three
    assert {f.waived for f in split.findings} > {None}  # type: ignore[attr-defined]
    for select, ignore in ((["RF2"], None), (["RF3"], None), (None, ["RF30"]), (["RF1", "RF40"], ["RF101"])):
        split, one, _ = _both(monkeypatch, inv, None, select, ignore)
        _same_reports(split, one)
    split, one, started = _both(monkeypatch, inv, None, ["RF9"])
    assert started == 0 and isinstance(split, list) and split == one and "--select" in str(split)


def test_split_plain_lint_prints_and_exits_as_one_process(generated: Path, tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    from typer.testing import CliRunner

    from fabric.cli import app

    inv = _edited(generated, tmp_path)
    codes = set()
    for argv in (["--format", "json"], ["--format", "table"], ["--select", "RF4", "--select", "RF30"],
                 ["--select", "RF4", "--select", "RF308", "--format", "github"]):
        seen = []
        for devices in (0, 10**9):
            monkeypatch.setattr(cli_lint, "SPLIT_DEVICES", devices)
            res = CliRunner().invoke(app, ["lint", str(inv), *argv])
            seen.append((res.exit_code, res.output))
        assert seen[0] == seen[1] and seen[0][1], argv
        codes.add(seen[0][0])
    assert codes == {0, 1}


@pytest.mark.parametrize("how", ["raises", "dies"])
def test_split_plain_lint_where_the_other_process_fails(generated: Path, tmp_path: Path, how: str,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """Its rules are then run here: where they raise, or the process ends without an answer."""
    inv = _edited(generated, tmp_path)

    monkeypatch.setattr(engine, "intent_findings", _broken if how == "raises" else _dies)
    split, one, started = _both(monkeypatch, inv, None)
    assert started == 2 and not multiprocessing.active_children()
    _same_reports(split, one)
    assert {"RF101", "RF302", "RF404"} <= {f.rule for f in split.findings}  # type: ignore[attr-defined]


def test_split_plain_lint_where_a_rule_on_the_switches_reads_the_hosts(generated: Path, tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """A rule run once the switches are derived that reads the hosts' intents fails there (they are not derived
    yet): this process runs the rules of that part, and the findings are one process's."""
    inv = _edited(generated, tmp_path)
    monkeypatch.setattr(cli_lint, "ON_SWITCHES", [*cli_lint.ON_SWITCHES, "RF101", "RF201"])
    split, one, started = _both(monkeypatch, inv, None)
    assert started == 2 and not multiprocessing.active_children()
    _same_reports(split, one)
    assert {"RF101", "RF201", "RF404"} <= {f.rule for f in split.findings}  # type: ignore[attr-defined]


def test_intended_tree_and_text_are_the_rendered_patchs() -> None:
    seen = 0
    for inv in INVENTORIES:
        try:
            fabric = derive(load(inv), "nvue")
        except InputError:  # a fixture that is invalid on purpose
            continue
        for sw in fabric.switches.values():
            patch = render(sw, fabric, extras=False)["nvue-patch.yaml"]
            assert intended_tree(sw, fabric) == rendered_tree(patch), sw.name
            assert intended_text(intended_tree(sw, fabric)) == patch, sw.name
            seen += 1
    assert seen > 20


def test_beside_gives_the_other_process_answers_or_its_exception() -> None:
    here = [1, 2]

    def answers() -> object:
        yield sum(here)
        yield os.getpid()

    b = batch.Beside(answers)
    assert b.get(0) == 3 and b.get(1) != os.getpid() and b.get(0) == 3
    with pytest.raises(RuntimeError, match="without an answer"):
        b.get(2)
    b.close()

    def fails() -> object:
        yield 1
        raise ValueError("in the other process")

    b = batch.Beside(fails)
    assert b.get(0) == 1
    with pytest.raises(ValueError, match="in the other process"):
        b.get(1)

    def dies() -> object:
        yield 1
        os._exit(1)

    b = batch.Beside(dies)
    assert b.get(0) == 1
    with pytest.raises(RuntimeError, match="without an answer"):
        b.get(1)
    with pytest.raises(RuntimeError, match="no answer"):
        batch.Beside(lambda: iter([lambda: 1])).get(0)  # an answer that does not pickle
    with pytest.raises(ZeroDivisionError):
        batch.Beside(lambda: iter([1 // 0])).get(0)  # `fn` itself fails

    def slow() -> object:
        __import__("time").sleep(60)
        yield 1

    b = batch.Beside(slow)
    b.close()  # before its answer: ended, not waited for
    assert b.process is None


def test_qos_of_a_rendered_patch_shared_is_qos_of_it(generated: Path) -> None:
    """`_qos_of` takes a QoS tree judged before (same tree, same text) with its lines shifted: as `_Qos.of`."""
    from fabric.lint.configs.model import DeviceConfig
    from fabric.nos.nvue import configs as nvue_configs

    fabric = derive(load(generated))
    rendering, reading = Memo(), Memo()
    hits = 0
    for name, sw in fabric.switches.items():
        patch = render(sw, fabric, extras=False, memo=rendering)["nvue-patch.yaml"]
        tree = nvue_configs._in_yaml_order(rendered_tree(patch), reading)
        shared, plain = (DeviceConfig(name=name, file="f", kind="nvue") for _ in range(2))
        hits += reading.find(tree["qos"], "nvue qos judged") is not None
        q = nvue_configs._qos_of(tree["qos"], shared, nvue_configs._PatchLines(patch, rendered_tree(patch)), reading)
        assert q == nvue_configs._Qos.of(tree["qos"], plain, nvue_configs._PatchLines(patch, rendered_tree(patch)))
        assert shared.lines == plain.lines and plain.lines, name
    assert hits >= len(fabric.switches) - 4


# -- what a cold lint imports ----------------------------------------------------------------------------------------
NEVER = ("rich.progress", "fabric.lint.configs", "fabric.lint.configs.model", "fabric.model.running", "multiprocessing",
         "xml.etree.ElementTree")

PROBE = """
import json, sys, contextlib, io
sys.argv = ["fabric", *sys.argv[1:]]
from fabric.cli.main import main
out = io.StringIO()
with contextlib.redirect_stdout(out), contextlib.suppress(SystemExit):
    main()
sys.stderr.write(json.dumps(sorted(sys.modules)))
"""


def _modules(*argv: str) -> set[str]:
    p = subprocess.run([sys.executable, "-c", PROBE, *argv], capture_output=True, text=True, check=False,
                       cwd=ROOT, stdin=subprocess.DEVNULL)
    return set(json.loads(p.stderr.strip().splitlines()[-1]))


def test_cold_lint_imports_only_what_it_needs() -> None:
    mods = _modules("lint", str(ROOT / "inventories" / "example"), "--format", "json")
    assert "fabric.lint.engine" in mods and "fabric.design.derive" in mods  # it did lint
    assert not set(NEVER) & mods, set(NEVER) & mods


def test_lint_configs_still_imports_them(tmp_path: Path) -> None:
    (tmp_path / "leaf1.cfg").write_text("hostname leaf1\n")
    mods = _modules("lint", "--configs", str(tmp_path), "--format", "json")
    assert "fabric.lint.configs" in mods and "fabric.lint.configs.model" in mods
    mods = _modules("lint", str(ROOT / "inventories" / "example"), "--format", "junit")
    assert "xml.etree.ElementTree" in mods
