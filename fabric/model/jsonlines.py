"""Parse JSON and remember the line of every key (json.loads forgets it). Small, strict, linear."""

from __future__ import annotations

import json
import re
from typing import Any

Path_ = tuple[str | int, ...]
_WS = re.compile(r"[ \t\r\n]*")
_NUM = re.compile(r"-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?")
_STR = re.compile(r'"(?:[^"\\]|\\.)*"', re.S)


class JsonLines:
    """`value` is what json.loads returns; `lines[path]` the 1-based line of each key or item."""

    def __init__(self, text: str):
        self.text, self.pos, self.lines = text, 0, {}
        self._nl = [i for i, c in enumerate(text) if c == "\n"]
        self.value = self._value(())
        self._ws()
        if self.pos != len(text):
            self._fail("end of document")

    def line_of(self, pos: int) -> int:
        from bisect import bisect_left

        return bisect_left(self._nl, pos) + 1

    def _fail(self, expected: str) -> None:
        raise ValueError(f"line {self.line_of(self.pos)}: expected {expected}")

    def _ws(self) -> None:
        self.pos = _WS.match(self.text, self.pos).end()  # type: ignore[union-attr]

    def _value(self, path: Path_) -> Any:
        self._ws()
        c = self.text[self.pos : self.pos + 1]
        if c == "{":
            self.pos += 1
            out: dict[str, Any] = {}
            self._ws()
            if self.text.startswith("}", self.pos):
                self.pos += 1
                return out
            while True:
                self._ws()
                m = _STR.match(self.text, self.pos)
                if not m:
                    self._fail("a quoted key")
                key = json.loads(m.group())  # type: ignore[union-attr]
                self.lines[(*path, key)] = self.line_of(self.pos)
                self.pos = m.end()  # type: ignore[union-attr]
                self._ws()
                if not self.text.startswith(":", self.pos):
                    self._fail("':'")
                self.pos += 1
                out[key] = self._value((*path, key))
                self._ws()
                if self.text.startswith(",", self.pos):
                    self.pos += 1
                elif self.text.startswith("}", self.pos):
                    self.pos += 1
                    return out
                else:
                    self._fail("',' or '}'")
        if c == "[":
            self.pos += 1
            items: list[Any] = []
            self._ws()
            if self.text.startswith("]", self.pos):
                self.pos += 1
                return items
            while True:
                self._ws()
                self.lines[(*path, len(items))] = self.line_of(self.pos)
                items.append(self._value((*path, len(items))))
                self._ws()
                if self.text.startswith(",", self.pos):
                    self.pos += 1
                elif self.text.startswith("]", self.pos):
                    self.pos += 1
                    return items
                else:
                    self._fail("',' or ']'")
        if c == '"':
            m = _STR.match(self.text, self.pos)
            if not m:
                self._fail("a closed string")
            self.pos = m.end()  # type: ignore[union-attr]
            return json.loads(m.group())  # type: ignore[union-attr]
        for word, val in (("true", True), ("false", False), ("null", None)):
            if self.text.startswith(word, self.pos):
                self.pos += len(word)
                return val
        m = _NUM.match(self.text, self.pos)
        if not m:
            self._fail("a JSON value")
        self.pos = m.end()  # type: ignore[union-attr]
        return json.loads(m.group())  # type: ignore[union-attr]
