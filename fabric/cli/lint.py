"""`fabric lint`: cross-layer consistency rules over an inventory and/or device configs, for people and CI."""

from __future__ import annotations

import io
import sys
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import typer

from fabric.cli.console import console
from fabric.cli.progress import Tracker, track
from fabric.errors import InputError, Problem
from fabric.fast.batch import LARGE, gc_paused, hold
from fabric.fast.memo import Memo
from fabric.lint.core import RULES, Severity
from fabric.lint.rules import all_rules
from fabric.safefile import write_output


def lint(
    inventory: Path | None = typer.Argument(None, help="inventory directory (inventories/<name>)"),
    configs: Path | None = typer.Option(
        None,
        "--configs",
        help="directory of config_db.json, NVUE YAML, EOS CLI (*.cfg, *.eos) and frr.conf files to lint",
    ),
    fmt: str = typer.Option("table", "--format", "-f", help="table, json, junit, sarif or github"),
    fail_on: Severity = typer.Option(Severity.error, "--fail-on", help="exit 1 on findings at or above this"),
    select: list[str] = typer.Option([], "--select", help="only these rule ids or prefixes (repeatable)"),
    ignore: list[str] = typer.Option([], "--ignore", help="skip these rule ids or prefixes (repeatable)"),
    output: Path | None = typer.Option(
        None, "--output", "-o", help="write the report here instead of stdout"
    ),
    list_rules: bool = typer.Option(False, "--list", help="print the rule table and exit"),
    markdown: bool = typer.Option(False, "--markdown", help="with --list: a Markdown table"),
    explain: str | None = typer.Option(None, "--explain", help="explain one rule (e.g. RF101) and exit"),
) -> None:
    """Lint a fabric: QoS across the cable, NCCL, L1-L3, operations. Exit 0 clean, 1 findings, 2 bad input."""
    from fabric.lint import output as out

    con = console(soft_wrap=True)
    if list_rules:
        if markdown:
            typer.echo(out.rule_markdown(), nl=False)
        else:
            out.rule_table(con)
        return
    if explain:
        all_rules()
        rule = RULES.get(explain.upper())
        if rule is None:
            raise InputError(
                Problem("--explain", None, "", "a rule id (see fabric lint --list)", repr(explain))
            )
        typer.echo(out.explain(rule), nl=False)
        return
    if fmt not in out.FORMATS:
        raise InputError(Problem("--format", None, "", f"one of {', '.join(out.FORMATS)}", repr(fmt)))
    if inventory is None and configs is None:
        raise InputError(
            Problem("fabric lint", None, "", "an inventory directory, --configs DIR, or both", "none")
        )
    with track("lint") as progress:
        result = run_lint(inventory, configs, select, ignore, progress)
    if fmt == "table":
        if output:  # findings of --configs quote device configs: a private file (fabric.safefile.write_output)
            buf = io.StringIO()
            out.table(result, console(file=buf, width=200))
            write_output(output, buf.getvalue())
        else:
            out.table(result, con)
    else:
        text = {
            "json": lambda: out.to_json(result),
            "junit": lambda: out.to_junit(result, fail_on),
            "sarif": lambda: out.to_sarif(result, Path.cwd()),
            "github": lambda: out.to_github(result),
        }[fmt]()
        if output:
            write_output(output, text)
        else:
            typer.echo(text, nl=False)
    if result.failed(fail_on):
        sys.exit(1)  # not typer.Exit: the app runs with standalone_mode=False, which swallows it


def _renderer(intent: Any) -> Callable[[str], tuple[str, str, Any] | None]:
    """A switch's name → (its target, the file its NOS pushes, as rendered, and the renderer's own tree of it) where
    the NOS's renderer keeps that tree (NVUE's `rendered_tree`): a saved config byte for byte the render is then
    not read again (`fabric.lint.configs.Rendered`)."""
    from fabric.nos import NOS

    memo = Memo()

    def rendered(name: str) -> tuple[str, str, Any] | None:
        sw = intent.switches.get(name)
        module = NOS[sw.target].module("render") if sw is not None else None
        if module is None or not hasattr(module, "rendered_tree"):
            return None
        text = module.render(sw, intent, extras=False, memo=memo)[NOS[sw.target].intended]
        tree = module.rendered_tree(text)
        return None if tree is None else (sw.target, text, tree)

    return rendered


FREEZE_MIN = 1000  # parsed configs from which they are kept out of the collector's reach to the end of the process
SPLIT_MIN = 500  # files from which `lint INV --configs DIR` uses a second process after deriving (`_split`)
SPLIT_DEVICES = LARGE  # switches and hosts from which `lint INV` runs its rules in two more processes
# the rules that read the switches' intents alone, run in a process forked once those are derived, while this one
# derives the hosts' (`_on_switches`): about 0.7 of the rules' 1.8 CPU-s at 131,072 GPUs (RF309 alone 0.4). Where one
# of them reads the hosts' intents it raises there, and this process runs them all.
ON_SWITCHES = ["RF104", "RF105", "RF106", "RF107", "RF109", "RF111", "RF307", "RF308", "RF309", "RF310", "RF4"]
# of the others, those a process forked once the hosts are derived runs (`_rules_beside`), rule ids or prefixes:
# the QoS and host families and two of L3, about half of the others' time at 131,072 GPUs
BESIDE = ["RF1", "RF2", "RF301", "RF302"]


def _split(ctx: Any, early: Any, select: list[str] | None, ignore: list[str] | None) -> tuple[Any, Any]:
    """Both cores after deriving: the files that start as rendered are stamped here (`fabric.lint.configs.ahead_of`);
    then a forked process reads each, builds its switch's tree and writes it as text to compare it with the file,
    and runs the intent's rules (`fabric.lint.engine.intent_findings`), while this one reads each file and builds
    its config from the tree (`fabric.lint.configs.Split`) and runs the config rules. The other's answers, each sent
    when found: the files equal to their render, then the intent's findings; where one is None (that step failed,
    or the process ended), this process does that part as without it.
    tests/cli/test_lint.py holds the findings to those of one process."""
    from fabric.fast.batch import Beside
    from fabric.lint.configs import Split, ahead_of, rendered_same
    from fabric.lint.engine import intent_findings
    from fabric.nos import NOS

    memo = Memo()

    def renderer(name: str) -> Any:
        """The render module of switch `name` where it keeps the tree of the file its NOS pushes; None otherwise."""
        sw = ctx.intent.switches.get(name)
        module = NOS[sw.target].module("render") if sw is not None else None
        return module if module is not None and hasattr(module, "intended_tree") else None

    def trees(name: str) -> tuple[str, Any, Callable[[Any], str]] | None:
        module = renderer(name)
        if module is None:
            return None
        sw = ctx.intent.switches[name]
        return sw.target, module.intended_tree(sw, ctx.intent, memo), module.intended_text

    targets = {n: sw.target for n, sw in ctx.intent.switches.items()}
    ahead = ahead_of(early.paths, early.root, targets, lambda name: renderer(name) is not None)

    def other() -> Iterator[Any]:
        try:
            yield rendered_same(ahead, trees)
        except Exception:  # this process' own way says what went wrong
            yield None
        try:
            yield intent_findings(ctx, select, ignore)
        except Exception:
            yield None

    beside = Beside(other)
    return beside, Split(ahead, trees, lambda: _answer(beside, 0))


def _answer(beside: Any, i: int) -> Any:
    """The other process' i-th answer (`_split`); None where it gave none."""
    try:
        return beside.get(i)
    except Exception:
        return None


def run_lint(
    inventory: Path | None,
    configs: Path | None,
    select: list[str] | None = None,
    ignore: list[str] | None = None,
    progress: Tracker | None = None,
):
    """Load, derive and lint; parse `configs` when given. Bad input raises InputError (exit 2)."""
    stage = progress.stage if progress is not None else lambda _d: None
    if inventory is not None and configs is None:  # the inventory alone: the configs' readers are not imported
        from fabric.design.load import load_fabric
        from fabric.lint.context import Context
        from fabric.lint.engine import run

        early: list[Any] = []  # the process running ON_SWITCHES (`_on_switches`)
        try:
            f = load_fabric(inventory, progress=stage,
                            switches_derived=lambda deriver, switches: early.extend(
                                _on_switches(deriver, switches, select, ignore)))
            stage("run the rules")
            ctx = Context(f.loaded, f.intent, f.deriver)
            if not early:
                return run(ctx, None, select, ignore)
            return _rules_beside(ctx, select, ignore, early[0])
        finally:
            for beside in early:
                beside.close()
    return _with_configs(inventory, configs, select, ignore, stage)


class _Underived(Mapping[str, Any]):
    """The hosts' intents while they are not derived yet: reading them raises (`_on_switches`)."""

    def _unread(self, *_args: object) -> Any:
        raise RuntimeError("the hosts' intents are not derived yet")

    __getitem__ = __iter__ = __len__ = _unread


def _on_switches(deriver: Any, switches: dict[str, Any], select: list[str] | None,
                 ignore: list[str] | None) -> list[Any]:
    """Of a fabric of SPLIT_DEVICES or more, once its switches are derived: a forked process that runs the rules
    among ON_SWITCHES on them (the hosts' intents raise there, `_Underived`) while this one derives the hosts'; none
    for a smaller fabric, none of those rules selected, or a bad --select/--ignore (refused later, where one process
    refuses it)."""
    from fabric.errors import InputError
    from fabric.fast.batch import Beside
    from fabric.lint.context import Context
    from fabric.lint.engine import intent_findings, matches, selected

    if len(deriver.topo.switches) + len(deriver.topo.hosts) < SPLIT_DEVICES:
        return []
    try:
        if not any(matches(r.id, ON_SWITCHES) for r in selected(select, ignore)):
            return []
    except InputError:
        return []
    ctx = Context(deriver.loaded, deriver.intent(switches, _Underived()), deriver)

    def other() -> Iterator[Any]:
        try:
            yield intent_findings(ctx, select, ignore, ON_SWITCHES)
        except Exception:  # a rule that reads the hosts: this process runs them
            yield None

    return [Beside(other)]


def _rules_beside(ctx: Any, select: list[str] | None, ignore: list[str] | None, early: Any) -> Any:
    """The intent's rules on both cores once the fabric is derived: a forked process runs those among BESIDE but not
    ON_SWITCHES (`fabric.lint.engine.intent_findings`) while this one runs the others but those `early` runs
    (`_on_switches`); where either gives no answer (it failed, or ended), this one runs their rules too.
    tests/cli/test_lint.py holds the findings to those of one process."""
    from fabric.fast.batch import Beside
    from fabric.lint.engine import intent_findings, matches, run, selected

    beside_ids = [r.id for r in selected(select, ignore) if matches(r.id, BESIDE) and not matches(r.id, ON_SWITCHES)]

    def other() -> Iterator[Any]:
        try:
            yield intent_findings(ctx, select, ignore, beside_ids)
        except Exception:  # this process' own run says what went wrong
            yield None

    def checked() -> Any:
        found = [_answer(early, 0), _answer(beside, 0)]
        return None if None in found else found[0] + found[1]

    beside = Beside(other)
    try:
        return run(ctx, None, select, ignore, checked, [*ON_SWITCHES, *beside_ids])
    finally:
        beside.close()


def _with_configs(inventory: Path | None, configs: Path | None, select: list[str] | None, ignore: list[str] | None,
                  stage: Callable[[str], Any]) -> Any:
    """The findings of `inventory` and/or the configs in `configs`."""
    from fabric.design.load import load_fabric
    from fabric.lint.configs import EarlyParse, load_configs
    from fabric.lint.context import Context
    from fabric.lint.engine import run

    ctx = None
    # the configs are parsed on the other cores while the inventory is derived
    early = EarlyParse(configs) if configs is not None and inventory is not None else None
    beside = None
    try:
        if inventory is not None:
            f = load_fabric(inventory, progress=stage)
            ctx = Context(f.loaded, f.intent, f.deriver)
        if configs is not None:
            stage(f"parse the configs in {configs}")
        rendered = _renderer(f.intent) if inventory is not None else None
        split = None
        # hundreds of thousands of ports and the switches' trees that all stay: nothing for the collector to find (a
        # collection between the trees and the configs walked every tree: 0.46 s at 262,144 GPUs)
        with gc_paused():
            if ctx is not None and early is not None and rendered is not None and len(early.paths) >= SPLIT_MIN:
                beside, split = _split(ctx, early, select, ignore)
            cs = load_configs(configs, ctx, early, rendered, split) if configs is not None else None
            if cs is not None:  # as for the fabric: out of the collector's reach, left to the OS at exit
                hold(cs, len(cs.devices), FREEZE_MIN)
    except BaseException:
        if beside is not None:
            beside.close()
        raise
    finally:
        if early is not None:
            early.close()
    stage("run the rules")
    try:  # the intent's findings are the other process' second answer
        result = run(ctx if cs is None or inventory is not None else None, cs, select, ignore,
                     None if beside is None else lambda: _answer(beside, 1))
    finally:
        if beside is not None:
            beside.close()
    return result
