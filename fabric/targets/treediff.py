"""Diffs of configuration trees: SONiC CONFIG_DB tables (→ RFC 6902 JSON Patch) and NVUE trees."""

from __future__ import annotations

from typing import Any

from fabric.targets.base import Change


def _ptr(*parts: str) -> str:
    return "".join("/" + p.replace("~", "~0").replace("/", "~1") for p in parts)


def _fmt(v: Any) -> str:
    return v if isinstance(v, str) else repr(v)


def configdb_diff(running: dict, intended: dict) -> tuple[list[Change], list[dict]]:
    """Per `TABLE|key` field changes and the JSON Patch that makes running equal intended.

    Only tables the intent has are compared (platform tables the intent does not own stay); inside
    them, keys and fields missing from the intent are removals.
    """
    changes: list[Change] = []
    patch: list[dict] = []
    for table in sorted(intended):
        want, have = intended[table], running.get(table)
        if have is None:
            patch.append({"op": "add", "path": _ptr(table), "value": want})
            have = {}
        for key in sorted(set(have) | set(want)):
            section = f"{table}|{key}"
            old, new = have.get(key), want.get(key)
            if new is None:
                if table in running:
                    patch.append({"op": "remove", "path": _ptr(table, key)})
                changes += [Change(section=section, op="-", line=f"{f}={_fmt(v)}") for f, v in sorted(old.items())]
                changes += [] if old else [Change(section=section, op="-", line="(key)")]
                continue
            if old is None:
                if table in running:
                    patch.append({"op": "add", "path": _ptr(table, key), "value": new})
                changes += [Change(section=section, op="+", line=f"{f}={_fmt(v)}") for f, v in sorted(new.items())]
                changes += [] if new else [Change(section=section, op="+", line="(key)")]
                continue
            for f in sorted(set(old) | set(new)):
                if f not in new:
                    patch.append({"op": "remove", "path": _ptr(table, key, f)})
                    changes.append(Change(section=section, op="-", line=f"{f}={_fmt(old[f])}"))
                elif f not in old:
                    patch.append({"op": "add", "path": _ptr(table, key, f), "value": new[f]})
                    changes.append(Change(section=section, op="+", line=f"{f}={_fmt(new[f])}"))
                elif old[f] != new[f]:
                    patch.append({"op": "replace", "path": _ptr(table, key, f), "value": new[f]})
                    changes.append(Change(section=section, op="-", line=f"{f}={_fmt(old[f])}"))
                    changes.append(Change(section=section, op="+", line=f"{f}={_fmt(new[f])}"))
    return changes, patch


def flatten(tree: Any, path: tuple[str, ...] = ()) -> dict[tuple[str, ...], Any]:
    """Leaves of a nested dict by path; an empty dict is a leaf (NVUE `{}` objects)."""
    if not isinstance(tree, dict) or not tree:
        return {path: tree}
    out: dict[tuple[str, ...], Any] = {}
    for k, v in tree.items():
        out.update(flatten(v, (*path, str(k))))
    return out


def nest(path: tuple[str, ...], value: Any) -> dict:
    out: Any = value
    for p in reversed(path):
        out = {p: out}
    return out


def tree_diff(running: dict, intended: dict, *, depth: int = 2) -> tuple[list[Change], list[dict]]:
    """NVUE: `nv config diff`-like changes and a patch of `set`/`unset` operations.

    Removals: leaves of running under an object the intent defines at `depth` (e.g. `interface
    swp1`), so objects the intent does not mention (e.g. the management interface) stay.
    """
    a, b = flatten(running), flatten(intended)
    owned = {p[:depth] for p in b if len(p) >= depth}
    changes: list[Change] = []
    ops: list[dict] = []
    for p in sorted(set(a) - set(b)):
        if p[:depth] in owned and not any(p[:i] in b for i in range(1, len(p))):
            ops.append({"unset": nest(p, None)})
            changes.append(Change(section=" ".join(p[:-1]), op="-", line=f"{p[-1]}: {_fmt(a[p])}"))
    sets: dict = {}
    for p in sorted(b):
        if p not in a or a[p] != b[p]:
            if p in a:
                changes.append(Change(section=" ".join(p[:-1]), op="-", line=f"{p[-1]}: {_fmt(a[p])}"))
            changes.append(Change(section=" ".join(p[:-1]), op="+", line=f"{p[-1]}: {_fmt(b[p])}"))
            _merge(sets, nest(p, b[p]))
    if sets:
        ops.append({"set": sets})
    changes.sort(key=lambda c: c.section)
    return changes, ops


def _merge(dst: dict, src: dict) -> None:
    for k, v in src.items():
        if isinstance(v, dict) and v and isinstance(dst.get(k), dict):
            _merge(dst[k], v)
        else:
            dst[k] = v
