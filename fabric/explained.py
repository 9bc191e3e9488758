"""`explain`'s answer about one device, kept beside the derive cache's entries (`fabric.design.cachekey`): every
row of the device as JSON under the inventory's key, so that explaining a device explained before (same inventory,
same code) reads that entry alone and imports neither the models nor pydantic (their import was most of it).
The rows are made by `fabric.explain.rows`; `select` applies the path filter exactly as `fabric.explain.explain`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from json.encoder import encode_basestring  # type: ignore[attr-defined]
from pathlib import Path

from fabric.design.cachekey import answer_path, read_entry, write_entry

Row = tuple[str, str, str]  # (path, value, origin)
FullRow = tuple[str, str, str, bool]  # … and whether it is an `effective.` row (no `[` after the filter's path)


def matches(p: str, path: str, effective: bool) -> bool:
    """Whether the row at `p` is under the filter `path` ("" is every row)."""
    return not path or p == path or p.startswith(path + ".") or (not effective and p.startswith(path + "["))


def select(rows: list[FullRow], path: str) -> list[Row]:
    return [(p, v, o) for p, v, o, effective in rows if matches(p, path, effective)]


@dataclass
class Answer:
    """The fabric's name (to say a device is not in it) and every row of the device; rows None: no such device."""

    fabric: str
    rows: list[FullRow] | None


def read(directory: Path, name: str) -> Answer | None:
    """The kept answer about `name`; None where there is none (or it is damaged: a miss)."""
    path = answer_path(directory, "explain", name)
    raw = read_entry(path) if path is not None else None
    if raw is None:
        return None
    try:
        data = json.loads(raw)
        rows = data["rows"]
        if not isinstance(data["fabric"], str) or (rows is not None and not all(
                len(r) == 4 and all(isinstance(x, str) for x in r[:3]) and isinstance(r[3], bool) for r in rows)):
            return None
        return Answer(data["fabric"], None if rows is None else [(p, v, o, e) for p, v, o, e in rows])
    except (ValueError, KeyError, TypeError):
        return None


def keep(directory: Path, name: str, answer: Answer) -> None:
    """Keep `answer` about `name` (only text values: JSON gives them back exactly)."""
    path = answer_path(directory, "explain", name)
    if path is None or (answer.rows is not None and not all(
            isinstance(x, str) for r in answer.rows for x in r[:3])):
        return
    write_entry(path, json.dumps({"fabric": answer.fabric, "rows": answer.rows}, ensure_ascii=False).encode())


def to_json(rows: list[Row]) -> str:
    """`json.dumps([{"path": …, "value": …, "origin": …}, …], indent=2, ensure_ascii=False) + "\\n"`, written
    directly where every value is text (json's indenting encoder is pure Python: most of a large device's output)."""
    if not rows or not all(isinstance(x, str) for r in rows for x in r):
        return json.dumps([{"path": p, "value": v, "origin": o} for p, v, o in rows], indent=2,
                          ensure_ascii=False) + "\n"
    e = encode_basestring
    return "[\n" + ",\n".join(f'  {{\n    "path": {e(p)},\n    "value": {e(v)},\n    "origin": {e(o)}\n  }}'
                              for p, v, o in rows) + "\n]\n"
