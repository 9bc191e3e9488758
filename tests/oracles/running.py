"""Readers of saved and replied running configs (fabric.model.running) as they read before the C decoder read the
text first: the nesting scan ran on every text, then the decoder (`config_db`: then the shape check, and a reply was
decoded again by its reader; `json_document`: NVUE's JSON). Held against by tests/model/test_running.py."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from fabric.errors import InputError, Problem
from fabric.model.running import _SCALAR, NO_DOC, _constant, _json_depth, _kind, _unique
from fabric.model.source import MAX_DEPTH, dotted
from fabric.replies import nesting_past


def config_db(path: Path, text: str) -> dict:
    _json_depth(path, text)
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(Problem(str(path), exc.lineno, "", "valid JSON", exc.msg)) from None
    except ValueError as exc:  # an integer of more than 4,300 digits
        raise InputError(Problem(str(path), None, "", "valid JSON", str(exc)[:120])) from None
    if not isinstance(doc, dict):
        raise InputError(Problem(str(path), None, "", "CONFIG_DB: a mapping of tables", type(doc).__name__))
    for table, entries in doc.items():
        if not isinstance(entries, dict):
            raise InputError(Problem(str(path), None, table, "a mapping of keys to entries", _kind(entries)))
        for key, fields in entries.items():
            if not isinstance(fields, dict):
                raise InputError(Problem(str(path), None, dotted((table, key)), "a mapping of fields", _kind(fields)))
            for name, value in fields.items():
                if not (isinstance(value, _SCALAR) or (isinstance(value, list)
                                                       and all(isinstance(v, _SCALAR) for v in value))):
                    raise InputError(Problem(str(path), None, dotted((table, key, name)),
                                             "a string or a list of strings", _kind(value)))
    return json.loads(text)


def json_document(text: str) -> Any:
    if text.lstrip()[:1] not in ("[", "{") or nesting_past(text, MAX_DEPTH) is not None:
        return NO_DOC
    try:
        return json.loads(text, object_pairs_hook=_unique, parse_constant=_constant)
    except (ValueError, RecursionError):
        return NO_DOC
