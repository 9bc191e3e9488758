"""Lint building blocks: the Finding boundary model (on the shared severities and findings of fabric.findings),
the Rule base class and its registry."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, ClassVar

from pydantic import ConfigDict, Field

from fabric.findings import Finding as BaseFinding
from fabric.findings import Severity
from fabric.order import natural

if TYPE_CHECKING:
    from fabric.lint.configs.model import ConfigSet
    from fabric.lint.context import Context


__all__ = ["RULES", "Finding", "Rule", "Severity", "rule"]


class Finding(BaseFinding):
    """One rule violated by one object, located in the inventory or a config file (severity, title, file:
    the shared fields of fabric.findings)."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    rule: str
    object: str  # device or host name, or "fabric"
    item: str = ""  # port, queue, key or environment variable
    message: str  # "<what>: expected …, found …"
    line: int | None = None
    waived: str | None = None  # the waiver's reason
    # a cause shared by many objects, reported once under its section (`object`): every one of them and
    # what they are, so a waiver can name them (not in the outputs: the message lists the first few)
    members: tuple[str, ...] = Field(default=(), exclude=True)
    kind: str = Field(default="", exclude=True)

    @property
    def code(self) -> str:
        return self.rule

    @property
    def where(self) -> str:
        return f"{self.file}:{self.line}" if self.line else self.file

    @property
    def target(self) -> str:
        return f"{self.object}:{self.item}" if self.item else self.object

    def sort_key(self) -> tuple[object, ...]:
        # every field, so no two different findings tie: the order (and every output) never depends on the
        # hash seed of the run (findings are deduplicated through a set)
        return (-self.severity.rank, self.rule, natural(self.object), natural(self.item), self.message,
                natural(self.file), self.line or 0, self.waived or "", self.title)


class Rule:
    """A rule: a stable id, a severity, a one-line title, an explanation with the fix, and checks.

    `check` runs over the derived intent of an inventory; `check_configs` over parsed device configs.
    A rule that does not apply to one of the two simply yields nothing there.
    """

    id: ClassVar[str]
    severity: ClassVar[Severity]
    title: ClassVar[str]
    explanation: ClassVar[str]
    fix: ClassVar[str]
    configs: ClassVar[bool] = False  # also runs on `--configs`

    def check(self, ctx: Context) -> Iterator[Finding]:
        return iter(())

    def check_configs(self, cs: ConfigSet) -> Iterator[Finding]:
        return iter(())

    def finding(
        self,
        obj: str,
        message: str,
        where: tuple[str, int | None] = ("", None),
        item: str = "",
        severity: Severity | None = None,
    ) -> Finding:
        return Finding(
            rule=self.id,
            severity=severity or self.severity,
            title=self.title,
            object=obj,
            item=item,
            message=message,
            file=where[0],
            line=where[1],
        )

    def grouped(self, hits: list[tuple], section: str, kind: str) -> Iterator[Finding]:
        """One finding per distinct (message, location, item, severity); a cause shared by many objects (one
        line of the inventory) is reported once, named after its inventory section, listing a few of them.

        A hit is (object, message, where, item) or, when its severity differs from the rule's,
        (object, message, where, item, severity)."""
        groups: dict[tuple, list[str]] = {}
        for obj, message, where, item, *sev in hits:
            groups.setdefault((message, where, item, Severity(sev[0]) if sev else None), []).append(obj)
        for (message, where, item, severity), objs in groups.items():
            if len(objs) == 1:
                yield self.finding(objs[0], message, where, item, severity)
            else:
                yield group(self.finding(section, message, where, item, severity), objs, kind)


def on_many(objs: list[str] | tuple[str, ...], kind: str) -> str:
    """The suffix of a grouped finding's message: ` (on 12 hosts: a, b, c, …)`."""
    return f" (on {len(objs)} {kind}: {', '.join(objs[:3])}{', …' if len(objs) > 3 else ''})"


def group(f: Finding, objs: list[str] | tuple[str, ...], kind: str) -> Finding:
    """`f` (its message without the suffix) standing for `objs`; one object is a finding of its own."""
    if len(objs) == 1:
        return f.model_copy(update={"object": objs[0], "members": (), "kind": ""})
    return f.model_copy(update={"message": f.message + on_many(objs, kind), "members": tuple(objs), "kind": kind})


RULES: dict[str, Rule] = {}  # filled by the rule modules; fabric.lint.rules.catalog() imports them all


def rule(cls: type[Rule]) -> type[Rule]:
    """Class decorator: register one instance under its id (ids are unique)."""
    assert cls.id not in RULES, f"duplicate rule id {cls.id}"
    RULES[cls.id] = cls()
    return cls
