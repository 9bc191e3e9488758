"""A planned step: the item to report and, when something differs, the action that fixes it."""

from __future__ import annotations

import errno
import os
from collections.abc import Callable
from dataclasses import dataclass

from fabric.host.model import Item


@dataclass
class Step:
    item: Item
    action: Callable[[], None] | None = None


def change(action: Callable[[], None], **item: object) -> Step:
    return Step(Item(status="changed", **item), action)  # type: ignore[arg-type]


def same(**item: object) -> Step:
    return Step(Item(status="unchanged", **item))  # type: ignore[arg-type]


def skip(reason: str, **item: object) -> Step:
    return Step(Item(status="skipped", reason=reason, **item))  # type: ignore[arg-type]


def fail(reason: str, **item: object) -> Step:
    return Step(Item(status="failed", reason=reason, **item))  # type: ignore[arg-type]


def describe(exc: BaseException) -> str:
    """One line for an exception raised by an action (netlink, file or process errors)."""
    code = getattr(exc, "code", None)
    if isinstance(code, int) and code > 0 and not isinstance(exc, OSError):
        text = os.strerror(code)
        name = errno.errorcode.get(code, "")
        return f"{text} ({name})" if name else text
    if isinstance(exc, OSError) and exc.strerror:
        where = f": {exc.filename}" if exc.filename else ""
        return f"{exc.strerror}{where}"
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__
