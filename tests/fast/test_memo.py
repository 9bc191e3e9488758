"""What switches share is kept only in the `Memo` their caller passes (`fabric.fast.memo`), never in a module of
the renderer: the same files with it and without it, and nothing shared without it (the configs reader's:
tests/nos/nvue/test_configs.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from fabric.design.load import load_fabric
from fabric.fast.memo import Memo
from fabric.nos.nvue.render import rendered_tree
from fabric.render import render_switch

ROOT = Path(__file__).resolve().parents[2]
INVENTORIES = [ROOT / "inventories" / "example", ROOT / "tests" / "fixtures" / "inventories" / "irregular"]


@pytest.mark.parametrize(("inv", "shares"), [(INVENTORIES[0], True), (INVENTORIES[1], False)],
                         ids=lambda p: getattr(p, "name", ""))
def test_renders_with_a_memo_are_those_without(inv: Path, shares: bool) -> None:
    f = load_fabric(inv, target="nvue")
    rendering = Memo()
    alone_trees, shared_trees = [], []
    for name, sw in f.intent.switches.items():
        shared = render_switch(sw, f.intent, memo=rendering)
        shared_trees.append(rendered_tree(shared["nvue-patch.yaml"])["qos"])  # type: ignore[index]
        alone = render_switch(sw, f.intent)
        alone_trees.append(rendered_tree(alone["nvue-patch.yaml"])["qos"])  # type: ignore[index]
        assert shared == alone, name
    # with the memo the switches of one QoS share its tree; without it nothing was kept between them
    assert (len({id(t) for t in shared_trees}) < len(shared_trees)) is shares
    assert len({id(t) for t in alone_trees}) == len(alone_trees) > 1


def test_a_memo_keeps_an_object_s_value_only_for_that_object() -> None:
    memo, made = Memo(limit=2), []
    one, two = [1], [1]

    def make(x: object) -> object:
        made.append(x)
        return ("value", id(x))

    assert memo.get(one, "k", lambda: make(one)) == memo.get(one, "k", lambda: make(one))
    assert memo.get(two, "k", lambda: make(two)) != memo.get(one, "k", lambda: make(one))
    assert memo.find(one, "other") is None
    memo.get([3], "k", lambda: make(3))  # beyond the limit: everything dropped, then kept again
    assert memo.find(one, "k") is None and len(made) == 3
