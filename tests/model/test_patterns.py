"""An NCCL environment value's length limit is a limit of its own (`ENV_MAX`) beside a pattern without a
bounded repetition (pydantic-core took 15-30 ms to compile `{0,4096}` in every process): the inventory and the
host intent accept exactly the values the bounded pattern accepted."""

from __future__ import annotations

from typing import Annotated

import pytest
from pydantic import StringConstraints, TypeAdapter, ValidationError

from fabric.design.intent import HostIntent
from fabric.model.inventory import ENV_MAX, EnvValue

BEFORE = TypeAdapter(Annotated[str, StringConstraints(pattern=r"^[^\x00-\x1f\x7f]{0,4096}$")])
VALUES = ["", "a", "=mlx5_0:1,mlx5_1:1", "x" * 4095, "x" * 4096, "x" * 4097, "é" * 4096, "é" * 4097, "a\nb",
          "a\n", "\n", "a\x7f", "a\x00", "tab\there", "a b", "日本" * 2048, "日本" * 2049, "\u2028", "x" * 10000]


def _ok(adapter: TypeAdapter, value: str) -> bool:  # type: ignore[type-arg]
    try:
        adapter.validate_python(value)
    except ValidationError:
        return False
    return True


@pytest.mark.parametrize("value", VALUES, ids=lambda v: f"{v[:12]!r}x{len(v)}")
def test_the_same_values_as_the_bounded_pattern(value: str) -> None:
    want = _ok(BEFORE, value)
    assert _ok(TypeAdapter(EnvValue), value) == want
    nccl = TypeAdapter(HostIntent.model_fields["nccl_env"].annotation)
    assert _ok(nccl, {"NCCL_X": value}) == want


def test_the_limit_is_4096() -> None:
    assert ENV_MAX == 4096
