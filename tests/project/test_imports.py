"""The import graph of `fabric` has no loops between modules, function-level imports included (grimp, the graph
`lint-imports` checks the layer contracts on), every top-level module sits in one layer of the contract, and
`row_of` finds only NOS folders (each folder's own name from the table: tests/nos/test_table.py)."""

from __future__ import annotations

import pkgutil
import tomllib

import grimp
import pytest

import fabric
from fabric.nos import row_of
from tests.support.paths import ROOT

PYPROJECT = ROOT / "pyproject.toml"

# Loops allowed for now (each with the work that removes it).
KNOWN: set[frozenset[str]] = set()  # none left: the Kubernetes work split accept.k8s into a package


def _loops(adj: dict[str, set[str]]) -> list[frozenset[str]]:
    """Strongly connected components of more than one module (iterative Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[frozenset[str]] = []
    for root in sorted(adj):
        if root in index:
            continue
        work = [(root, iter(sorted(adj[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on.add(root)
        while work:
            v, it = work[-1]
            w = next(it, None)
            if w is not None:
                if w not in index:
                    index[w] = low[w] = len(index)
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(sorted(adj[w]))))
                elif w in on:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = set()
                while True:
                    w = stack.pop()
                    on.discard(w)
                    comp.add(w)
                    if w == v:
                        break
                if len(comp) > 1:
                    out.append(frozenset(comp))
    return out


def test_loops_finder_finds_a_loop() -> None:
    assert _loops({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [frozenset("abc")]
    assert _loops({"a": {"b"}, "b": set()}) == []


def test_no_import_loops_between_modules() -> None:
    graph = grimp.build_graph("fabric")
    mods = set(graph.modules)
    adj = {m: graph.find_modules_directly_imported_by(m) & mods for m in mods}
    assert set(_loops(adj)) <= KNOWN, [sorted(c) for c in _loops(adj) if c not in KNOWN]


def test_every_top_level_module_sits_in_one_layer() -> None:
    contracts = tomllib.loads(PYPROJECT.read_text())["tool"]["importlinter"]["contracts"]
    layers = next(c["layers"] for c in contracts if c["type"] == "layers" and "containers" not in c)
    placed = [name.strip() for layer in layers for name in layer.split("|")]
    top = sorted(f"fabric.{m.name}" for m in pkgutil.iter_modules(fabric.__path__))
    assert len(placed) == len(set(placed)), placed
    assert sorted(placed) == top


def test_row_of_refuses_a_module_outside_the_nos_folders() -> None:
    with pytest.raises(LookupError):
        row_of("fabric.render.host")
