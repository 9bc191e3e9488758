"""Linear-time regular expressions (RE2) for everything matched against log lines: a hostile line (1 MB of
`NET/IB: Got completion with error 12`) costs time in proportion to its length, never its square, whatever
pattern a catalog holds. RE2 has no lookaround or backreferences; a catalog pattern that needs them is refused."""

from __future__ import annotations

from typing import Any

import re2

_OPTIONS = re2.Options()
_OPTIONS.max_mem = 64 << 20  # the compiled automaton's memory; a pattern needing more is refused
_OPTIONS.log_errors = False

Pattern = Any  # re2._Regexp: search/match/findall/finditer like re.Pattern


def linear(pattern: str) -> Pattern:
    """`pattern` compiled by RE2; raises ValueError with RE2's reason when it is not a linear-time pattern."""
    try:
        return re2.compile(pattern, _OPTIONS)
    except re2.error as exc:
        raise ValueError(f"a regular expression RE2 accepts (linear time: no lookaround or backreferences; "
                         f"{exc})") from None
