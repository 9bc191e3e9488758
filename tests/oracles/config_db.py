"""The check of a saved or replied SONiC CONFIG_DB (fabric.model.running `_config_db`) as it read before the C decoder
read the text first: the nesting scan ran on every text, then the decoder, then the shape check, and a reply was
decoded again by its reader. Held against by tests/model/test_running.py."""

from __future__ import annotations

import json
from pathlib import Path

from fabric.errors import InputError, Problem
from fabric.model.running import _SCALAR, _json_depth, _kind
from fabric.model.source import dotted


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
