"""Text rendering of a host plan/result: one line per item that matters, then a summary line."""

from __future__ import annotations

from fabric.host.model import HostPlan, Item

_MARK = {"add": "+", "remove": "-", "set": "~", "create": "+", "check": "?"}


def _line(item: Item, plan: bool) -> str:
    if item.status == "changed":
        mark = _MARK[item.op]
    else:
        mark = {"unchanged": "=", "skipped": "s", "failed": "!"}[item.status]
    what = f"{item.section:<8} {item.target:<14} {item.name}"
    if item.status == "changed" and item.op in ("set",) and item.current is not None:
        detail = f"{item.current} -> {item.desired}"
    elif item.status == "changed":
        detail = item.desired or item.current or ""
    elif item.status in ("skipped", "failed"):
        detail = f"{item.status}: {item.reason}"
    else:
        detail = item.current or ""
    if item.status == "changed" and plan and item.reason:
        detail += f" ({item.reason})"
    if item.warning:
        detail += f"  WARNING: {item.warning}"
    return f"  {mark} {what}: {detail}" if detail else f"  {mark} {what}"


def render(result: HostPlan, verbose: bool = False) -> str:
    """Changed, skipped and failed items (unchanged ones only when verbose), then the counts."""
    plan = result.mode == "plan"
    where = f" (netns {result.netns})" if result.netns else ""
    lines = [f"host {result.host}{where}: {result.mode}"]
    for item in result.items:
        if verbose or item.status != "unchanged" or item.warning:
            lines.append(_line(item, plan))
    c = result.counts
    if c.changed == 0 and c.failed == 0:
        lines.append(
            "no changes: the host already matches its intent" + (f" ({c.skipped} items skipped)" if c.skipped else "")
        )
    verb = "to change" if plan else "changed"
    lines.append(f"{c.changed} {verb}, {c.unchanged} unchanged, {c.skipped} skipped, {c.failed} failed")
    return "\n".join(lines)


def render_checks(result: HostPlan, title: str, verbose: bool = False) -> str:
    """Checks only (nothing to change): the unmet and unchecked ones (all with verbose), then the counts."""
    lines = [f"host {result.host}: {title}"]
    lines += [_line(item, False) for item in result.items if verbose or item.status != "unchanged"]
    c = result.counts
    lines.append(f"{c.unchanged} met, {c.failed} not met, {c.skipped} not checked")
    return "\n".join(lines)
