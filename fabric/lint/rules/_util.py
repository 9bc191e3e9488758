"""Helpers shared by the rule modules."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING

from fabric.design.intent import SwitchIntent
from fabric.lint.context import Context
from fabric.lint.core import Finding, Rule
from fabric.lint.view import QosView, facts_view

if TYPE_CHECKING:
    from fabric.lint.configs.model import ConfigSet  # --configs only: not imported by a cold `lint INV`

# (item, message, key of the location)
Hit = tuple[str, str, str]


def prios(values: list[int]) -> str:
    return ",".join(str(v) for v in sorted(values)) or "none"


def policy_groups(ctx: Context) -> list[tuple[QosView, list[SwitchIntent]]]:
    """Switches grouped by the QoS policy object they carry (normally one for the whole fabric)."""
    groups: dict[tuple[int, int], tuple[QosView, list[SwitchIntent]]] = {}
    for sw in ctx.switches:
        key = (id(sw.qos), sw.buffer_bytes)
        if key not in groups:
            groups[key] = (facts_view("qos", sw.qos, ctx.qos_at, sw.buffer_bytes), [])
        groups[key][1].append(sw)
    return list(groups.values())


def on_policies(rule: Rule, ctx: Context, fn: Callable[[QosView], list[Hit]]) -> Iterator[Finding]:
    """Run a per-view check once per distinct policy; name the switch when only one carries it."""
    hits = []
    for view, switches in policy_groups(ctx):
        for item, message, key in fn(view):
            for sw in switches:
                hits.append((sw.name, message, view.at(key), item))
    yield from rule.grouped(hits, "qos", "switches")


def on_configs(rule: Rule, cs: ConfigSet, fn: Callable[[QosView], list[Hit]]) -> Iterator[Finding]:
    for dev in cs.devices:
        if dev.qos is not None:
            for item, message, key in fn(dev.qos):
                yield rule.finding(dev.name, message, dev.at(key), item)
