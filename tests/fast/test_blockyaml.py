"""The one-pass block-YAML reader answers exactly what the full hardened loader answers, or steps aside.

For every NVUE file the tool renders and every saved NVUE running config among the fixtures, and for thousands of
seeded mutations of them (a character inserted, a line dropped, doubled or re-indented), `load_block` either
says "outside the subset" (LookupError) or gives the same value and the same line for every key and item as the
event-driven loader; wherever the full loader refuses a text, the one-pass reader never accepts it."""

from __future__ import annotations

import random

import pytest

from fabric.design.derive import derive
from fabric.errors import InputError
from fabric.fast.blockyaml import load_block
from fabric.model.load import load
from fabric.model.source import MAX_DEPTH, SourceMap, yaml_text
from fabric.render import render_switch
from tests.support.paths import ROOT

FIXTURES = sorted((ROOT / "tests" / "fixtures").glob("*/nvue/*.yaml")) + sorted(ROOT.glob("inventories/*/*.yaml"))


def _rendered() -> dict[str, str]:
    fabric = derive(load(ROOT / "inventories" / "h100-400g"))
    out = {}
    for name, sw in fabric.switches.items():
        for fname, text in render_switch(sw, fabric).items():
            if fname.endswith(".yaml"):
                out[f"{name}/{fname}"] = text
    return out


RENDERED = _rendered()
TEXTS = {**RENDERED, **{str(p.relative_to(ROOT)): p.read_text() for p in FIXTURES}}


def full(text: str) -> tuple[object, dict]:
    smap = SourceMap()
    value = yaml_text(text, "f.yaml", smap, fast=False)
    return value, dict(smap.lines)


def fast(text: str) -> tuple[object, dict]:
    lines: dict = {}
    return load_block(text, lines, "f.yaml", (), MAX_DEPTH), lines


def test_rendered_and_saved_files_are_read_in_one_pass_with_the_full_loaders_answer() -> None:
    assert RENDERED and FIXTURES
    for name, text in TEXTS.items():
        if name in RENDERED:  # what the tool writes is inside the subset, always
            assert fast(text) == full(text), name
        else:
            try:
                got = fast(text)
            except LookupError:
                continue
            assert got == full(text), name


@pytest.mark.parametrize("text", [
    "a: &x 1\nb: *x\n", "a: !!binary aGk=\n", "<<: {a: 1}\n", "a: {b: 1}\n", "a: |\n  x\n", "a: 1 # c\n",
    "a: 1\na: 2\n", "a:\tb\n", "a: 'x''y'\n", '"a\\tb": 1\n', "a: b: c\n", "a: b\n c\n", "? a\n: 1\n",
    "a: 0x" + "f" * 40 + "\n", "a: " + "9" * 5000 + "\n", "- - 1\n", "---\na: 1\n", "a: 1\n...\n", "", "x\n",
    "a: 1 \n", "a: =\n",
    "on: 1\n", "1.5: x\n", "~: x\n", "a:  b\n", "a: 12:30\n", "a: [1, 2]\n", "a: \x85\n", "...: 1\n",
    "".join(f"{' ' * (2 * i)}k{i}:\n" for i in range(MAX_DEPTH + 2)),
])
def test_texts_outside_the_subset_are_left_to_the_full_loader(text: str) -> None:
    with pytest.raises(LookupError):
        fast(text)


@pytest.mark.parametrize("text", [
    "a: ...\nb: .inf\nc: 2024-01-01\nd: on\nf: 0x1f\ng: 1_000\nh: '1'\ni: \"x y\"\nj: {}\nk: []\n",
    "- a: 1\n  b:\n  - 2\n  - c: 3\n- 4\n", "a:\n- 1\nb:\n  c: 2\n", "1001: x\n'2': y\n",
])
def test_texts_inside_the_subset_read_as_the_full_loader_reads_them(text: str) -> None:
    assert fast(text) == full(text)


def _mutants(text: str, rng: random.Random, n: int) -> list[str]:
    lines = text.split("\n")
    out = []
    for _ in range(n):
        ls = list(lines)
        i = rng.randrange(len(ls))
        op = rng.randrange(5)
        if op == 0:
            ls.insert(i, ls[i])  # a doubled line: a duplicate key, or a second item
        elif op == 1:
            del ls[i]
        elif op == 2:
            ls[i] = " " * rng.choice((1, 2, 4)) + ls[i]
        elif op == 3:
            ls[i] = ls[i][2:] if ls[i].startswith("  ") else ls[i]
        else:
            pos = rng.randrange(len(ls[i]) + 1)
            ls[i] = ls[i][:pos] + rng.choice(":-#&*!'\"{}[] \t|>?%@,x1") + ls[i][pos:]
        out.append("\n".join(ls))
    return out


def test_mutated_files_are_read_alike_or_left_to_the_full_loader() -> None:
    rng = random.Random(27)
    seeds = [t for t in TEXTS.values() if t.count("\n") < 400][:4] or list(TEXTS.values())[:2]
    accepted = 0
    for seed in seeds:
        for text in _mutants(seed, rng, 400):
            try:
                got = fast(text)
            except LookupError:
                continue
            accepted += 1
            try:
                want = full(text)
            except InputError as exc:
                pytest.fail(f"the one-pass reader accepted a text the full loader refuses: {exc.problems[0]}")
            assert got == want
    assert accepted > 100  # most mutants stay inside the subset: the comparison is not vacuous
