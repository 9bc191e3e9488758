"""Run the catalog: select/ignore by id or prefix, apply waivers, sort deterministically."""

from __future__ import annotations

from collections.abc import Callable
from fnmatch import fnmatchcase
from typing import TYPE_CHECKING

from pydantic import BaseModel, ConfigDict

from fabric.errors import InputError, Problem
from fabric.fast.batch import gc_paused, hold
from fabric.lint.context import Context
from fabric.lint.core import Finding, Rule, Severity, group, on_many
from fabric.lint.rules import all_rules
from fabric.model.inventory import Waiver

if TYPE_CHECKING:
    from fabric.lint.configs.model import ConfigSet  # --configs only: not imported by a cold `lint INV`


class Result(BaseModel):
    """Findings of one lint run, waived ones included (and marked), in a stable order."""

    model_config = ConfigDict(extra="forbid")
    findings: list[Finding]
    rules: list[str]  # ids of the rules that ran

    def active(self) -> list[Finding]:
        return [f for f in self.findings if f.waived is None]

    def failed(self, fail_on: Severity) -> bool:
        return any(f.severity.rank >= fail_on.rank for f in self.active())

    def counts(self) -> dict[str, int]:
        out = {s.value: 0 for s in Severity}
        for f in self.active():
            out[f.severity.value] += 1
        out["waived"] = len(self.findings) - len(self.active())
        return out


def matches(rule_id: str, patterns: list[str]) -> bool:
    return any(rule_id.upper().startswith(p.upper()) for p in patterns)


def selected(select: list[str] | None = None, ignore: list[str] | None = None) -> list[Rule]:
    """The rules to run: `select` and `ignore` take ids or prefixes (RF1, RF20, RF301)."""
    rules = all_rules()
    for p in [*(select or []), *(ignore or [])]:
        if not any(r.id.upper().startswith(p.upper()) for r in rules):
            raise InputError(
                Problem(
                    "--select/--ignore",
                    None,
                    "",
                    "a rule id or prefix such as RF1 or RF101 (see fabric lint --list)",
                    repr(p),
                )
            )
    if select:
        rules = [r for r in rules if matches(r.id, select)]
    return [r for r in rules if not matches(r.id, ignore or [])]


def waive(findings: list[Finding], waivers: list[Waiver]) -> list[Finding]:
    """Mark findings whose rule and object (or object:item; shell patterns allowed) a waiver names.

    A finding reported once for many objects (named after its section) is matched object by object: the
    objects a waiver names are waived, the others stay a finding of their own."""

    def reason(f: Finding, obj: str) -> str | None:
        target = f"{obj}:{f.item}" if f.item else obj
        return next((w.reason for w in waivers if w.rule == f.rule
                     and any(fnmatchcase(obj, o) or fnmatchcase(target, o) for o in w.objects)), None)

    out = []
    for f in findings:
        why = reason(f, f.object)
        if why or not f.members:
            out.append(f.model_copy(update={"waived": why}) if why else f)
            continue
        by_reason: dict[str | None, list[str]] = {}
        for m in f.members:
            by_reason.setdefault(reason(f, m), []).append(m)
        if list(by_reason) == [None]:
            out.append(f)
            continue
        base = f.model_copy(update={"message": f.message.removesuffix(on_many(f.members, f.kind))})
        for why, objs in by_reason.items():
            out.append(group(base, objs, f.kind).model_copy(update={"waived": why}))
    return out


def intent_findings(ctx: Context, select: list[str] | None = None, ignore: list[str] | None = None,
                    part: list[str] | None = None) -> list[Finding]:
    """The findings of the intent's rules that `run(ctx, …, select, ignore)` finds (before waivers), in any order;
    of those among `part` (rule ids or prefixes) where it is given."""
    rules = [r for r in selected(select, ignore) if part is None or matches(r.id, part)]
    ctx.reset()
    with gc_paused():
        return [f for r in rules for f in r.check(ctx)]


def run(
    ctx: Context | None = None,
    configs: ConfigSet | None = None,
    select: list[str] | None = None,
    ignore: list[str] | None = None,
    checked: Callable[[], list[Finding] | None] | None = None,
    part: list[str] | None = None,
) -> Result:
    """Lint the inventory's intent, the parsed configs, or both; `checked`: the findings of the intent's rules
    (of those among `part`, rule ids or prefixes, where it is given: the others are run here), found elsewhere
    (`intent_findings` of `ctx` with the same rules and part, in another process), asked for once the rules here
    ran; None from it: they are found here. The findings' order is their sort order, whichever process found
    them."""
    rules = selected(select, ignore)
    away = {r.id for r in rules if checked is not None and (part is None or matches(r.id, part))}
    findings: list[Finding] = []
    if ctx is not None and len(away) < len(rules):
        ctx.reset()
    with gc_paused():  # the rules' many short-lived objects would make the collector rescan the whole fabric
        for r in rules:
            if ctx is not None and r.id not in away:
                findings += r.check(ctx)
            if configs is not None and r.configs:
                findings += r.check_configs(configs)
        if ctx is not None and checked is not None:
            found = checked()
            if found is None:
                if len(away) == len(rules):
                    ctx.reset()
                found = [f for r in rules if r.id in away for f in r.check(ctx)]
            findings += found
        if ctx is not None:  # the rules' lookups of a large fabric live as long as it: no collection walks them
            hold(ctx, len(ctx.intent.switches) + len(ctx.intent.hosts))
    if ctx is not None:
        findings = waive(findings, ctx.inv.lint.waive)
    findings = sorted(set(findings), key=Finding.sort_key)
    return Result(findings=findings, rules=[r.id for r in rules])
