"""The acceptance check framework: a check is a small class with a pydantic `Input`, selected and
parameterized by the catalog (fabric.accept.catalog), registered by name in `CHECKS`. Failure messages read
"Expected … Actual …". The checks themselves live one family per module beside this one.

A check whose tool is missing on the hosts (no RDMA NIC, no nccl-tests, no switch access) returns
`skipped` with the reason — never a pass.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar, Literal, TypeVar

from pydantic import BaseModel, ConfigDict

from fabric.accept import counters as cn
from fabric.accept.results import CheckResult, Measurement, Planned
from fabric.access import Site
from fabric.design.intent import FabricIntent


class Input(BaseModel):
    model_config = ConfigDict(extra="forbid")


@dataclass
class Context:
    """What a check may use: the site (its intent, hosts and switches) and what ran before."""

    site: Site
    quick: bool = False
    report_dir: Path | None = None
    progress: Callable[[str], None] = lambda _m: None
    traffic: list[Measurement] = field(default_factory=list)  # links exercised by traffic checks
    # (node, port) → priorities (host NICs) or TCs (switch ports) a check loaded on purpose beside the RoCE
    # class (the ets check's bulk TCP), left out when the traffic-class check attributes bytes
    off_class: dict[tuple[str, str], set[int]] = field(default_factory=dict)
    before: cn.Snapshot | None = None
    after: cn.Snapshot | None = None

    @property
    def fabric(self) -> FabricIntent:
        return self.site.fabric


class Check:
    """Base class: `name`, default `tags`, `phase` (pre → traffic → post), an `Input` and `run`."""

    name: ClassVar[str] = ""
    tags: ClassVar[list[str]] = []
    phase: ClassVar[Literal["pre", "traffic", "post"]] = "pre"
    gate: ClassVar[bool] = False  # failed, the traffic and counter checks after it do not run (their paths are wrong)
    Input: ClassVar[type[Input]] = Input

    def __init__(self, inputs: Input, *, name: str | None = None, tags: list[str] | None = None) -> None:
        self.inputs = inputs
        self.id = name or self.name
        self.tag_list = list(tags) if tags is not None else list(self.tags)

    @property
    def on_hosts(self) -> bool:
        """Whether the check reaches hosts over SSH (False: it reads switches, or a scheduler launches it)."""
        return True

    def result(self, status: str, message: str = "", **kw: object) -> CheckResult:
        return CheckResult(name=self.id, check=self.name, tags=self.tag_list, status=status,  # type: ignore[arg-type]
                           message=message, **kw)  # type: ignore[arg-type]

    def run(self, ctx: Context) -> CheckResult:
        raise NotImplementedError

    def plan(self, ctx: Context) -> Iterable[Planned]:
        """The commands `run` would issue, with their hosts and rounds, running nothing (`--dry-run`); a check
        with rounds yields them as it makes them (the dry run writes each as it comes). Launch files are written
        to `ctx.report_dir` as a real run writes them. Empty: the check only reads what the engine's counter
        snapshots read."""
        return []


CHECKS: dict[str, type[Check]] = {}  # name → class, in the order the family modules register them


C = TypeVar("C", bound=type[Check])


def register(cls: C) -> C:
    """Class decorator: make a check selectable by its `name` in catalogs (names are unique)."""
    assert cls.name and cls.name not in CHECKS, f"check name {cls.name!r} missing or taken"
    CHECKS[cls.name] = cls
    return cls


def run_check(check: Check, ctx: Context) -> CheckResult:
    """Run one check; an unexpected exception becomes an `error` result, never a crashed run."""
    t0 = time.monotonic()
    try:
        res = check.run(ctx)
    except Exception as exc:
        res = check.result("error", f"{type(exc).__name__}: {exc}")
    res.seconds = round(time.monotonic() - t0, 2)
    return res


def hosts_per_rail(fabric: FabricIntent, rails: list[int] | None) -> dict[int, list[str]]:
    """The hosts on each rail (all rails, or only `rails`)."""
    out: dict[int, list[str]] = {}
    for h in fabric.hosts.values():
        for r in h.rails:
            if rails is None or r.rail in rails:
                out.setdefault(r.rail, []).append(h.name)
    return out
