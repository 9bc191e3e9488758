"""`Memo`: values made once from an object that many devices share (the QoS facts every switch of one policy
holds, the QoS tree every switch's patch holds), for one batch of work. The caller that renders or reads many
devices creates one and passes it down; None there means nothing is shared, and the result is the same."""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import Any, TypeVar

V = TypeVar("V")


class Memo:
    """Keyed by an object's identity and a hashable detail: the object is kept beside its value, so its id is
    never another object's while the entry lives. At most `limit` entries (all dropped beyond it)."""

    def __init__(self, limit: int = 256) -> None:
        self.limit = limit
        self._entries: dict[tuple[int, Hashable], tuple[object, Any]] = {}

    def find(self, obj: object, detail: Hashable = None) -> Any:
        """The value kept for `obj` and `detail`; None where there is none."""
        hit = self._entries.get((id(obj), detail))
        return hit[1] if hit is not None and hit[0] is obj else None

    def put(self, obj: object, detail: Hashable, value: V) -> V:
        if len(self._entries) >= self.limit:
            self._entries.clear()
        self._entries[(id(obj), detail)] = (obj, value)
        return value

    def get(self, obj: object, detail: Hashable, make: Callable[[], V]) -> V:
        """The value kept for `obj` and `detail`, else `make()`, kept."""
        found = self.find(obj, detail)
        return found if found is not None else self.put(obj, detail, make())


def made(memo: Memo | None, obj: object, detail: Hashable, make: Callable[[], V]) -> V:
    """`memo.get(obj, detail, make)`, or `make()` where there is no memo."""
    return make() if memo is None else memo.get(obj, detail, make)
