"""Structured mutations (hypothesis strategies) of inventories, device configs, tool outputs and host intents:
types, units, ranges, names with shell and path characters, YAML bombs, control characters, deep nesting and
special files."""

from __future__ import annotations

import copy
import os
from pathlib import Path
from typing import Any

from hypothesis import strategies as st

HOSTILE_STRINGS = [
    "", " ", "../x", "../../etc/passwd", "/etc/passwd", "a/b", "a\nb", "a\rb", "a\0b", "a\x1bb", "\u202e", "é",
    "swp1;touch /tmp/x", "swp1;touch${IFS}/tmp/x", "$(reboot)", "`id`", "a b", "'", '"', "\\", "*", "~", "-x",
    "{x}", "{0}", "{", "}", "{su!z}", "{n:999999999}", "{n.real}", "%s", "x" * 300, "x" * 5000, ":100:", "[bold]x",
    "400G", "99999G", "0G", "-1G", "5m", "-5m", "9" * 400 + "m", "99999999m", "150KB", "1.5MB", "9" * 400 + "MB",
    "1e400", "nan", "inf", "200ms", "99999999s", "0s", "300s", "5min", "0x10", "10.0.0.0/8", "255.255.255.255/32",
    "0.0.0.0/0", "fd00::1/64", "10.0.0.300/24", "mlx5_0", "eth0", "rail1", "yes", "no", "null", "~", "&a", "*a",
    "!!python/object:os.system", "<<",
]
HOSTILE_NUMBERS = [0, -1, 1, 2, 7, 8, 63, 64, 255, 256, 4094, 4096, 65535, 65536, 2**31, 2**32, 2**63, 2**64,
                   10**30, -(10**30), 10**400, 0.5, -0.0, 1e308, float("inf"), float("-inf"), float("nan")]

values = st.one_of(
    st.sampled_from(HOSTILE_STRINGS),
    st.sampled_from(HOSTILE_NUMBERS),
    st.integers(min_value=-(10**6), max_value=10**6),
    st.text(max_size=20),
    st.sampled_from([None, True, False, [], {}, [1, 2], {"a": 1}, [[[[[]]]]], {"k": {"k": {"k": {}}}}]),
)


@st.composite
def perturbed(draw: st.DrawFn, value: Any) -> Any:
    """A value close to `value`: a number moved, scaled or negated; a string with a hostile suffix or its number
    changed; a list with an item dropped or repeated."""
    if isinstance(value, bool):
        return not value
    if isinstance(value, int | float):
        return draw(st.sampled_from([value + 1, value - 1, value * 2, value * 1000, -value, 0, value * 10**12]))
    if isinstance(value, str):
        digits = "".join(c for c in value if c.isdigit())
        if digits and draw(st.booleans()):
            return value.replace(digits, draw(st.sampled_from(["0", "1", "99999", "9" * 40, digits + "0"])), 1)
        return value + draw(st.sampled_from(["", "x", ";id", "/..", "\n", " ", "{x}", "0", ".1", ":"]))
    if isinstance(value, list) and value:
        i = draw(st.integers(0, len(value) - 1))
        return value[:i] + value[i + 1:] if draw(st.booleans()) else [*value, value[i]]
    return draw(values)


def paths(tree: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every data path of a YAML/JSON tree (containers and leaves), root excluded."""
    out: list[tuple[Any, ...]] = []
    items = tree.items() if isinstance(tree, dict) else enumerate(tree) if isinstance(tree, list) else []
    for key, value in items:
        out.append((*prefix, key))
        out += paths(value, (*prefix, key))
    return out


def _parent(tree: Any, path: tuple[Any, ...]) -> Any:
    for key in path[:-1]:
        tree = tree[key]
    return tree


@st.composite
def tree_mutation(draw: st.DrawFn, tree: Any) -> Any:
    """`tree` (copied) with one structured change at a drawn path."""
    tree = copy.deepcopy(tree)
    all_paths = paths(tree)
    if not all_paths:
        return draw(values)
    path = draw(st.sampled_from(all_paths))
    parent, key = _parent(tree, path), path[-1]
    op = draw(st.sampled_from(["perturb", "perturb", "perturb", "replace", "replace", "delete", "unknown-key",
                               "duplicate", "wrap", "deep", "key"]))
    if op == "perturb":  # near the valid value: reaches derivation and rendering, not only the schema
        parent[key] = draw(perturbed(parent[key]))
    elif op == "replace":
        parent[key] = draw(values)
    elif op == "delete":
        del parent[key]
    elif op == "unknown-key" and isinstance(parent, dict):
        parent[draw(st.sampled_from(HOSTILE_STRINGS[:30]))] = draw(values)
    elif op == "duplicate" and isinstance(parent, list):
        parent.extend([copy.deepcopy(parent[key])] * draw(st.sampled_from([1, 2, 100])))
    elif op == "wrap":
        parent[key] = [parent[key]]
    elif op == "deep":
        value: Any = parent[key]
        for _ in range(draw(st.sampled_from([10, 70, 150]))):
            value = {"k": value} if draw(st.booleans()) else [value]
        parent[key] = value
    elif op == "key" and isinstance(parent, dict):
        parent[draw(st.sampled_from(HOSTILE_STRINGS))] = parent.pop(key)
    return tree


YAML_BOMB = "a: &a [x, x, x, x, x, x, x, x, x]\n" + "".join(
    f"{chr(98 + i)}: &{chr(98 + i)} [{', '.join([f'*{chr(97 + i)}'] * 9)}]\n" for i in range(9))


@st.composite
def text_mutation(draw: st.DrawFn, text: str, yaml: bool = False) -> str:
    """`text` with one change at the character or line level."""
    lines = text.splitlines(keepends=True) or [""]
    i = draw(st.integers(0, max(len(lines) - 1, 0)))
    pos = draw(st.integers(0, len(text)))
    op = draw(st.sampled_from(["control", "truncate", "dup-line", "del-line", "long-line", "digits", "junk",
                               *(["bomb", "deep", "tab", "alias"] if yaml else ["cut-line", "nul"])]))
    if op == "control":
        return text[:pos] + draw(st.sampled_from(["\0", "\x01", "\x1b", "\x7f", "\ufeff", "\ud7ff", "\r"])) + text[pos:]
    if op == "truncate":
        return text[:pos]
    if op == "dup-line":  # at most ~2 MB more
        times = min(draw(st.sampled_from([2, 50, 5000])), 2_000_000 // max(len(lines[i]), 1) + 1)
        return "".join(lines[:i] + [lines[i]] * times + lines[i + 1:])
    if op == "del-line":
        return "".join(lines[:i] + lines[i + 1:])
    if op == "long-line":
        return "".join([*lines[:i], draw(st.sampled_from(["x", "1", " ", ":", "a:"])) * 200_000 + "\n", *lines[i:]])
    if op == "digits":
        return text[:pos] + draw(st.sampled_from(["9" * 400, "-1", "0", "1e999", "nan"])) + text[pos:]
    if op == "junk":
        return text[:pos] + draw(st.text(max_size=40)) + text[pos:]
    if op == "bomb":
        return YAML_BOMB + text
    if op == "deep":
        n = draw(st.sampled_from([100, 10_000]))
        return text + "\nzz: " + "[" * n + "]" * n + "\n"
    if op == "tab":
        return text.replace("  ", "\t", 1)
    if op == "alias":
        return text.replace(":", ": &x", 1) + "\nyy: *x\n"
    if op == "cut-line":
        return "".join(lines[:i]) + lines[i][: len(lines[i]) // 2]
    return text[:pos] + "\0" * 100 + text[pos:]


SPECIAL = ["fifo", "dev-zero", "directory", "empty", "binary", "dangling"]


def make_special(path: Path, kind: str) -> None:
    """Replace `path` with a special file."""
    if path.is_dir() and not path.is_symlink():
        import shutil

        shutil.rmtree(path)
    elif path.exists() or path.is_symlink():
        path.unlink()
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "dev-zero":
        path.symlink_to("/dev/zero")
    elif kind == "directory":
        path.mkdir()
    elif kind == "empty":
        path.write_text("")
    elif kind == "binary":
        path.write_bytes(bytes(range(256)) * 4)
    else:
        path.symlink_to(path.parent / "nowhere")
