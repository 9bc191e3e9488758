"""Derivation: an intent validated the first time of its shape, then trusted (`fabric.design.intent.trusted`) — a
part of `Deriver` that both switches and hosts use."""

from __future__ import annotations

from typing import TypeVar

from fabric.design.intent import Model, trusted

_M = TypeVar("_M", bound=Model)


class Shapes:
    _parts: dict[object, object]  # what devices of one shape share; a shape seen: True

    def _once(self, model: type[_M], shape: tuple[object, ...], fields: dict[str, object]) -> _M:
        """`model` of `fields`: validated the first time of its `shape`, then trusted (`intent.trusted`); the shape
        holds every field that is not computed here from validated values (addresses) nor a checked topology
        name."""
        if shape in self._parts:
            return trusted(model, fields)
        obj = model(**fields)
        self._parts[shape] = True
        return obj
